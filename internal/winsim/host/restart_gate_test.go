package host

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/wsman"
)

// lineWriter collects a command's stdout and tells each complete line as it comes.
type lineWriter struct {
	mu    sync.Mutex
	buf   strings.Builder
	lines chan string
	part  string
}

func newLineWriter() *lineWriter { return &lineWriter{lines: make(chan string, 16)} }

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	w.part += string(p)
	for {
		i := strings.IndexByte(w.part, '\n')
		if i < 0 {
			break
		}
		w.lines <- strings.TrimRight(w.part[:i], "\r")
		w.part = w.part[i+1:]
	}
	return len(p), nil
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// gatedRun starts a gated restart_instance of MSSQLSERVER (restart id "ab…") whose
// stdin stays open; it returns the stdin's writer, the stdout and the exit code's
// channel.
func gatedRun(t *testing.T, ctx context.Context, h *Host, goSeconds int) (*io.PipeWriter, *lineWriter, chan int) {
	t.Helper()
	in, err := contract.EncodeInput(contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30,
		RestartID: strings.Repeat("ab", 16), Changes: []contract.RightChange{{SID: engineSID, Grant: true}}, AwaitGo: true, GoSeconds: goSeconds})
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	out := newLineWriter()
	code := make(chan int, 1)
	go func() {
		code <- h.Execute(ctx, wsman.Command{User: "Administrator", Command: contract.Shell, Arguments: contract.CommandArgs(), Stdin: pr}, out, io.Discard)
	}()
	go func() { _, _ = pw.Write(in) }()
	return pw, out, code
}

// nextLine is the command's next complete stdout line.
func nextLine(t *testing.T, out *lineWriter) string {
	t.Helper()
	select {
	case l := <-out.lines:
		return l
	case <-time.After(20 * time.Second):
		t.Fatalf("no line on stdout; so far: %q", out.String())
		return ""
	}
}

// holdsRight reports whether sid directly holds SeManageVolumePrivilege.
func holdsRight(h *Host, sid string) bool {
	for _, p := range h.Snapshot().Rights[contract.RightManageVolume] {
		if strings.EqualFold(p.SID, sid) {
			return true
		}
	}
	return false
}

func gatedHost(t *testing.T) (*Host, *Instance) {
	t.Helper()
	cfg := baseConfig()
	cfg.Instances[0].StartMS, cfg.Instances[0].StopMS = 15, 15
	cfg.Rights = map[string][]string{contract.RightManageVolume: {winsid.Administrators}}
	h := newHost(t, cfg)
	inst, _ := h.Instance("MSSQLSERVER")
	return h, inst
}

// With the go line, a gated restart says it is prepared, then that the Engine runs
// again, and answers as an ungated one: the grant made, the Engine restarted.
func TestGatedRestartGoes(t *testing.T) {
	t.Parallel()
	h, inst := gatedHost(t)
	before := inst.Process().Started
	pw, out, code := gatedRun(t, context.Background(), h, 30)
	id := strings.Repeat("ab", 16)
	if l := nextLine(t, out); l != contract.ProgressPrefix+"prepared "+id {
		t.Fatalf("first line %q; want the prepared line", l)
	}
	if holdsRight(h, engineSID) || !inst.Process().Started.Equal(before) {
		t.Fatal("the gated restart changed the host before its go line")
	}
	_, _ = pw.Write([]byte(contract.GoLine(id)))
	_ = pw.Close()
	if l := nextLine(t, out); l != contract.ProgressPrefix+"started "+id {
		t.Fatalf("second line %q; want the started line", l)
	}
	if c := <-code; c != contract.ExitOK {
		t.Fatalf("exit %d: %s", c, out.String())
	}
	var res contract.RestartInstanceResult
	if err := json.Unmarshal(contract.StripProgress([]byte(out.String())), &res); err != nil || !res.Finished || res.Error != "" || !res.Changed {
		t.Fatalf("result %+v (%v): %s", res, err, out.String())
	}
	if !holdsRight(h, engineSID) || !inst.Process().Started.After(before) {
		t.Error("after the go line: the grant or the restart is missing")
	}
}

// Without the go line (stdin ended, another line, the deadline, the command
// stopped) nothing changes, and the lease is free for the next request.
func TestGatedRestartWithoutTheGoLineChangesNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		do   func(pw *io.PipeWriter, cancel context.CancelFunc)
		want int
	}{
		{"stdin ended", func(pw *io.PipeWriter, _ context.CancelFunc) { _ = pw.Close() }, contract.ExitRefused},
		{"another line", func(pw *io.PipeWriter, _ context.CancelFunc) {
			_, _ = pw.Write([]byte(contract.GoLine(strings.Repeat("cd", 16))))
		}, contract.ExitRefused},
		{"the deadline", func(*io.PipeWriter, context.CancelFunc) {}, contract.ExitRefused},
		{"the shell deleted", func(_ *io.PipeWriter, cancel context.CancelFunc) { cancel() }, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, inst := gatedHost(t)
			before := inst.Process().Started
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pw, out, code := gatedRun(t, ctx, h, 1)
			if l := nextLine(t, out); !strings.HasPrefix(l, contract.ProgressPrefix+"prepared ") {
				t.Fatalf("first line %q", l)
			}
			tc.do(pw, cancel)
			if c := <-code; c != tc.want {
				t.Fatalf("exit %d, want %d: %s", c, tc.want, out.String())
			}
			if tc.want == contract.ExitRefused && !strings.Contains(out.String(), contract.CodeRestartNotStarted) {
				t.Errorf("answer %q; want %s", out.String(), contract.CodeRestartNotStarted)
			}
			if holdsRight(h, engineSID) || !inst.Process().Started.Equal(before) {
				t.Error("a gated restart without its go line changed the host")
			}
			// The lease is free: an ungated restart of the instance goes at once.
			r := execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30})
			if res := decode[contract.RestartInstanceResult](t, r); r.code != 0 || !res.Finished || res.Joined {
				t.Errorf("the next restart: exit %d %+v", r.code, res)
			}
		})
	}
}

// waitGuardEnded waits (at most 20 s) until no guard of h waits in its prepared
// phase: the prepared restart's has ended (or watches a restart let go).
func waitGuardEnded(t *testing.T, h *Host) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.WaitPreparedGuards(ctx); err != nil {
		t.Fatalf("a prepared restart's guard did not end: %v", err)
	}
}

// The guard's prepared phase: the guard runs before the prepared line (its start is
// not in the slot), the marker says nothing happened yet (restart_status: no
// record), and without the go line the guard ends having changed nothing, its
// scheduled task (where a task started it) removed.
func TestGatedRestartGuardIsPreparedBeforeTheGoLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		asr  int // the ASR rule's mode: block makes the scheduled task the launcher
		do   func(pw *io.PipeWriter, cancel context.CancelFunc)
		want int
	}{
		{"by WMI, stdin ended", ASRNotConfigured, func(pw *io.PipeWriter, _ context.CancelFunc) { _ = pw.Close() }, contract.ExitRefused},
		{"by WMI, the connection lost", ASRNotConfigured, func(_ *io.PipeWriter, cancel context.CancelFunc) { cancel() }, 1},
		{"by a task, the deadline", ASRBlock, func(*io.PipeWriter, context.CancelFunc) {}, contract.ExitRefused},
		{"by a task, the connection lost", ASRBlock, func(_ *io.PipeWriter, cancel context.CancelFunc) { cancel() }, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, inst := gatedHost(t)
			if err := h.SetASRRule(ASRRulePsExecWMI, tc.asr); err != nil {
				t.Fatal(err)
			}
			before := inst.Process().Started
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pw, out, code := gatedRun(t, ctx, h, 1)
			if l := nextLine(t, out); !strings.HasPrefix(l, contract.ProgressPrefix+"prepared ") {
				t.Fatalf("first line %q", l)
			}
			if st := h.Stats(); st.GuardsByWMI+st.GuardsByTask != 1 {
				t.Fatalf("at the prepared line the guard has not started (%+v)", st)
			}
			if tc.asr == ASRBlock && len(h.ScheduledTasks()) != 1 {
				t.Fatalf("the guard's task is not there: %v", h.ScheduledTasks())
			}
			if r := h.RestartStatus("MSSQLSERVER"); r.Found {
				t.Errorf("restart_status reports the prepared restart as a record: %+v", r)
			}
			tc.do(pw, cancel)
			if c := <-code; c != tc.want {
				t.Fatalf("exit %d, want %d: %s", c, tc.want, out.String())
			}
			waitGuardEnded(t, h)
			if holdsRight(h, engineSID) || !inst.Process().Started.Equal(before) {
				t.Error("a gated restart without its go line changed the host")
			}
			if tasks := h.ScheduledTasks(); len(tasks) != 0 {
				t.Errorf("the guard left its task behind: %v", tasks)
			}
			if r := h.RestartStatus("MSSQLSERVER"); r.Found {
				t.Errorf("restart_status after no go: %+v", r)
			}
		})
	}
}

// The guard's own deadline: a guard that gave up waiting for the go (its marker's
// GoSeconds) has ended, so a go line after it is refused, nothing changed: the
// restart would have had no guard.
func TestGatedRestartAfterTheGuardsDeadlineChangesNothing(t *testing.T) {
	t.Parallel()
	h, inst := gatedHost(t)
	h.SetGuardGoLimit(time.Nanosecond)
	before := inst.Process().Started
	pw, out, code := gatedRun(t, context.Background(), h, 30)
	id := strings.Repeat("ab", 16)
	if l := nextLine(t, out); l != contract.ProgressPrefix+"prepared "+id {
		t.Fatalf("first line %q", l)
	}
	waitGuardEnded(t, h)
	_, _ = pw.Write([]byte(contract.GoLine(id)))
	_ = pw.Close()
	// The grant comes before the go (Set-RestartGo), as for an ungated request's
	// changes; nothing was stopped. The refusal says so with its own exit code
	// (issue 37), naming what changed: not restart_not_started's "nothing changed".
	if c := <-code; c != contract.ExitChangedNotStarted || !strings.Contains(out.String(), contract.CodeChangedNotRestarted) || !strings.Contains(out.String(), "guard") ||
		!strings.Contains(out.String(), "granted "+contract.RightManageVolume+" to "+engineSID) {
		t.Fatalf("exit %d: %s; want %d, %s, naming the grant", c, out.String(), contract.ExitChangedNotStarted, contract.CodeChangedNotRestarted)
	}
	if !holdsRight(h, engineSID) || !inst.Process().Started.Equal(before) {
		t.Error("the grant was not made, or the Engine restarted without a guard")
	}
}

// A request sent again after the gated one ended before its go line (ungated, the
// same restart id) does not join the prepared marker: it replaces it and restarts
// once. Should the old request still get its go line, it finds its marker another
// request's and changes nothing, and its guard has ended.
func TestResentRestartReplacesItsPreparedMarker(t *testing.T) {
	t.Parallel()
	for _, lost := range []bool{true, false} {
		name := "the old runner waits on"
		if lost {
			name = "the old runner ended with its shell"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h, inst := gatedHost(t)
			before := inst.Process().Started
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			id := strings.Repeat("ab", 16)
			pw, out, code := gatedRun(t, ctx, h, 30)
			if l := nextLine(t, out); l != contract.ProgressPrefix+"prepared "+id {
				t.Fatalf("first line %q", l)
			}
			if lost {
				cancel()
				if c := <-code; c != 1 {
					t.Fatalf("the lost request: exit %d", c)
				}
			}
			r := execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30,
				RestartID: id, Changes: []contract.RightChange{{SID: engineSID, Grant: true}}})
			res := decode[contract.RestartInstanceResult](t, r)
			if r.code != 0 || !res.Finished || res.Joined || res.Error != "" || !res.Changed {
				t.Fatalf("the request sent again: exit %d %+v", r.code, res)
			}
			restarted := inst.Process().Started
			if !restarted.After(before) || !holdsRight(h, engineSID) {
				t.Fatal("the request sent again did not grant and restart")
			}
			waitGuardEnded(t, h)
			if lost {
				return
			}
			_, _ = pw.Write([]byte(contract.GoLine(id)))
			_ = pw.Close()
			if c := <-code; c != contract.ExitRefused || !strings.Contains(out.String(), contract.CodeRestartNotStarted) {
				t.Fatalf("the old request's go: exit %d: %s", c, out.String())
			}
			if !inst.Process().Started.Equal(restarted) {
				t.Error("the old request restarted the Engine a second time")
			}
		})
	}
}

// Another request's prepared restart of the instance (another run waiting for its
// slot) is never joined: a request with another id is refused, nothing changed.
func TestPreparedRestartOfAnotherRequestRefuses(t *testing.T) {
	t.Parallel()
	h, _ := gatedHost(t)
	pw, out, code := gatedRun(t, context.Background(), h, 30)
	if l := nextLine(t, out); !strings.HasPrefix(l, contract.ProgressPrefix+"prepared ") {
		t.Fatalf("first line %q", l)
	}
	r := execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30,
		RestartID: strings.Repeat("cd", 16)})
	// The refusal names the prepared request and until when it waits for its go
	// line (go_seconds 30 from its start), not "a restart in progress" (issue 37).
	if r.code != contract.ExitRefused || !strings.Contains(r.stdout, contract.CodeRestartInProgress) ||
		!strings.Contains(r.stdout, "request "+strings.Repeat("ab", 16)+" to restart it on ") || !strings.Contains(r.stdout, "waits for its go line until ") {
		t.Errorf("another request: exit %d %s", r.code, r.stdout)
	}
	_ = pw.Close()
	<-code
}

// A request that ends between its prepared marker and its go (here a change that
// fails) ends its process: its guard ends having changed nothing, and its marker is
// no restart, so the next request (another id) is not refused.
func TestRestartEndedBeforeItsGoLeavesNoLease(t *testing.T) {
	t.Parallel()
	h, inst := gatedHost(t)
	before := inst.Process().Started
	r := execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30,
		RestartID: strings.Repeat("ab", 16), Changes: []contract.RightChange{{SID: "not-a-sid", Grant: true}}})
	if r.code == contract.ExitOK {
		t.Fatalf("a change that fails: exit 0 %s", r.stdout)
	}
	waitGuardEnded(t, h)
	if !inst.Process().Started.Equal(before) {
		t.Fatal("a request whose change failed restarted the Engine")
	}
	if st := h.RestartStatus("MSSQLSERVER"); st.Found {
		t.Errorf("restart_status reports the request that never went: %+v", st)
	}
	r = execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30,
		RestartID: strings.Repeat("cd", 16)})
	if res := decode[contract.RestartInstanceResult](t, r); r.code != 0 || !res.Finished || res.Joined || res.Error != "" {
		t.Errorf("the next request: exit %d %+v", r.code, res)
	}
}
