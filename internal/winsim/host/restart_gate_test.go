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
