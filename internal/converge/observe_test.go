package converge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

// errEarlyPort is what SQL Server answers at a port it does not listen on.
var errEarlyPort = errors.New("connection refused")

// When the SQL port is known before the read, SQL Server is asked while the host is
// read; the early answer counts only when the host then reports a running Engine at
// that port.
func TestObserveOverlapsSQLCheck(t *testing.T) {
	for _, tc := range []struct {
		name     string
		target   Target
		setup    func(*world)
		overlap  bool // read_instance waits until the SQL check has started
		stale    int  // a check at this port fails (SQL Server is not there)
		wantErr  bool
		wantSrc  ifi.Source
		wantWarn string
		wantAt   []int // the ports SQL Server was asked at, in order
	}{
		{name: "configured sql_port", target: Target{SQLPort: 1433}, overlap: true,
			wantSrc: ifi.SourceSQLDMV, wantAt: []int{1433}},
		{name: "port from the last observation", target: Target{SQLPortHint: 1433}, overlap: true,
			wantSrc: ifi.SourceSQLDMV, wantAt: []int{1433}},
		{name: "the host reports another port: checked again there", target: Target{SQLPortHint: 1500}, overlap: true, stale: 1500,
			wantSrc: ifi.SourceSQLDMV, wantAt: []int{1500, 1433}},
		{name: "sql_port wins over the hint", target: Target{SQLPort: 1433, SQLPortHint: 1500}, overlap: true, stale: 1500,
			wantSrc: ifi.SourceSQLDMV, wantAt: []int{1433}},
		{name: "the Engine is stopped: the early answer is discarded", target: Target{SQLPortHint: 1433}, overlap: true, stale: 1433,
			setup:   func(w *world) { w.host.ri.ServiceState = contract.StateStopped },
			wantSrc: ifi.SourceNone, wantAt: []int{1433}},
		{name: "the host reports no port: the early answer is discarded", target: Target{SQLPortHint: 1433}, overlap: true,
			setup:   func(w *world) { w.host.ri.TCPPort = 0 },
			wantSrc: ifi.SourceErrorLog, wantWarn: WarnSQLPortUnknown, wantAt: []int{1433}},
		{name: "the early check fails", target: Target{SQLPortHint: 1433}, overlap: true,
			setup:   func(w *world) { w.checker.checkErr = errBoom },
			wantSrc: ifi.SourceErrorLog, wantWarn: WarnSQLCheck, wantAt: []int{1433}},
		{name: "read_instance fails", target: Target{SQLPortHint: 1433}, overlap: true,
			setup:   func(w *world) { w.host.readErr = func(int) error { return errBoom } },
			wantErr: true, wantAt: []int{1433}},
		{name: "no port known up front: the check follows the read", wantSrc: ifi.SourceSQLDMV, wantAt: []int{1433}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The bound only turns a missing overlap into a failure instead of a hang.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			w := newWorld(newFakeHost())
			w.host.ri.ErrorLog = contract.ErrorLogInfo{Found: true, Enabled: ptr(false)}
			if tc.setup != nil {
				tc.setup(w)
			}
			started := make(chan struct{})
			var once sync.Once
			w.checker.onCheck = func(_ context.Context, st contract.SQLTarget) error {
				once.Do(func() { close(started) })
				if st.Port == tc.stale {
					return errEarlyPort
				}
				return nil
			}
			w.host.beforeRead = func(ctx context.Context) error {
				if !tc.overlap {
					select {
					case <-started:
						return errors.New("SQL Server was asked before read_instance although no port was known")
					default:
						return nil
					}
				}
				select {
				case <-started:
					return nil
				case <-ctx.Done():
					return fmt.Errorf("the SQL check did not start before read_instance answered: %w", ctx.Err())
				}
			}
			tgt := defaultTarget
			tgt.SQLPort, tgt.SQLPortHint = tc.target.SQLPort, tc.target.SQLPortHint

			o, err := w.engine.Observe(ctx, tgt)
			if got := ports(w.checker); !slices.Equal(got, tc.wantAt) {
				t.Errorf("SQL Server asked at ports %v, want %v", got, tc.wantAt)
			}
			if tc.wantErr {
				var ce *Error
				if !errors.As(err, &ce) || ce.Kind != KindObserveFailed || !errors.Is(err, errBoom) {
					t.Errorf("error %v, want an observe_failed error carrying the host's error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := o.Observed.Verification.Source; got != tc.wantSrc {
				t.Errorf("verified by %s, want %s", got, tc.wantSrc)
			}
			if tc.wantWarn == "" {
				if len(o.Warnings) > 0 {
					t.Errorf("unexpected warnings %v", codes(o.Warnings))
				}
				return
			}
			wantWarning(t, o.Warnings, tc.wantWarn)
			if tc.wantWarn == WarnSQLCheck {
				if d := o.Warnings[0].Detail; !strings.Contains(d, tgt.Host+":1433") || !strings.Contains(d, tgt.Instance) {
					t.Errorf("warning %q does not name the instance, host and port", d)
				}
				if !errors.Is(o.Warnings[0].Err, errBoom) {
					t.Errorf("warning carries %v, want the check's error", o.Warnings[0].Err)
				}
			}
		})
	}
}

// An early check that is not used is cancelled, and Observe returns only once it
// has ended: nothing outlives the observation.
func TestObserveEndsDiscardedCheck(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := newWorld(newFakeHost())
	w.host.ri.ServiceState = contract.StateStopped
	started, ended := make(chan struct{}), make(chan error, 1)
	w.checker.onCheck = func(ctx context.Context, _ contract.SQLTarget) error {
		close(started)
		<-ctx.Done() // a connection to a stopped Engine that hangs
		ended <- ctx.Err()
		return ctx.Err()
	}
	w.host.beforeRead = func(ctx context.Context) error {
		select {
		case <-started:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	tgt := defaultTarget
	tgt.SQLPortHint = 1433
	if _, err := w.engine.Observe(ctx, tgt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the discarded check ended with %v, want it cancelled", err)
		}
	default:
		t.Error("Observe returned while the discarded check was still running")
	}
}

// Read reports the port the host reported, for the next read's hint.
func TestReadReportsSQLPort(t *testing.T) {
	w := newWorld(newFakeHost())
	w.host.ri.TCPPort = 1500
	out, err := w.engine.Read(context.Background(), defaultTarget, enable)
	if err != nil {
		t.Fatal(err)
	}
	if out.SQLPort != 1500 {
		t.Errorf("Outcome.SQLPort = %d, want 1500", out.SQLPort)
	}
}

func ports(c *fakeChecker) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ps []int
	for _, t := range c.targets {
		ps = append(ps, t.Port)
	}
	return ps
}

// sleepClock is a clock whose Sleep moves it on at once (the engine's pauses take
// no real time).
type sleepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *sleepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *sleepClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return ctx.Err()
}

// refusedErr is a refused connection, as remote.Error reports it (Refused, Transient).
type refusedErr struct{}

func (refusedErr) Error() string {
	return "cannot connect to the WinRM listener at sql01.example.com:5986: connection refused"
}
func (refusedErr) Transient() bool { return true }
func (refusedErr) Refused() bool   { return true }

// ridingWorld is a world whose clock steps, and a context whose deadline is left
// from that clock's now.
func ridingWorld(t *testing.T, left time.Duration) (*world, context.Context, *sleepClock) {
	w := newWorld(newFakeHost())
	c := &sleepClock{now: time.Now()}
	w.engine.Clock = c
	ctx, cancel := context.WithDeadline(context.Background(), c.now.Add(left))
	t.Cleanup(cancel)
	return w, ctx, c
}

// Every read of an apply rides through a refused connection within its timeout:
// the apply's first read_instance refused for a while, then answered.
func TestApplyRidesThroughARefusedRead(t *testing.T) {
	w, ctx, c := ridingWorld(t, time.Minute)
	start := c.Now()
	w.host.readErr = func(n int) error {
		if c.Now().Sub(start) < 20*time.Second {
			return refusedErr{}
		}
		return nil
	}
	out, err := w.engine.Apply(ctx, defaultTarget, enable)
	if err != nil {
		t.Fatalf("the apply failed although the host answered again within its timeout: %v", err)
	}
	if !out.Assessment.PrivilegeGranted || w.host.reads < 3 {
		t.Errorf("granted %v after %d reads; want the grant after the refusals", out.Assessment.PrivilegeGranted, w.host.reads)
	}
}

// Refused for longer than the timeout: the refusal is the error (naming the host and
// what to check), nothing is changed, and no pause outlasts the deadline.
func TestApplyRefusedReadPastItsTimeout(t *testing.T) {
	w, ctx, c := ridingWorld(t, 30*time.Second)
	dl, _ := ctx.Deadline()
	w.host.readErr = func(int) error { return refusedErr{} }
	out, err := w.engine.Apply(ctx, defaultTarget, enable)
	e := wantError(t, err, KindObserveFailed)
	if !errors.As(e.Err, new(refusedErr)) || out.Changed {
		t.Errorf("error %v (changed %v); want the refusal itself, nothing changed", e.Err, out.Changed)
	}
	if w.host.reads < 2 || c.Now().After(dl) {
		t.Errorf("%d reads, clock %s past the deadline; want several reads, none after it", w.host.reads, c.Now().Sub(dl))
	}
}

// What is not a refusal is not ridden: a failure the host answered (or a name that
// does not resolve) fails the apply at once.
func TestApplyDoesNotRideOtherFailures(t *testing.T) {
	w, ctx, _ := ridingWorld(t, time.Minute)
	w.host.readErr = func(int) error { return transientErr{} }
	_, err := w.engine.Apply(ctx, defaultTarget, enable)
	_ = wantError(t, err, KindObserveFailed)
	if w.host.reads != 1 {
		t.Errorf("%d reads; want one (only a refused connection is asked again)", w.host.reads)
	}
}

// The plan of a create rides through a refused connection within the read timeout
// (ReadRiding); the refresh's Read asks once.
func TestReadRidingRidesThroughARefusal(t *testing.T) {
	w, ctx, _ := ridingWorld(t, time.Minute)
	w.host.readErr = func(n int) error {
		if n <= 2 {
			return refusedErr{}
		}
		return nil
	}
	if _, err := w.engine.Read(ctx, defaultTarget, enable); err == nil {
		t.Fatalf("Read succeeded on a refused connection; want one attempt")
	}
	out, err := w.engine.ReadRiding(ctx, defaultTarget, enable)
	if err != nil || out.Assessment == nil {
		t.Fatalf("ReadRiding: %v; want the read after the refusal", err)
	}
}

// A configured SQL login that SQL Server refuses is an error of every operation,
// before anything is changed, naming where it was asked; unless SQL verification
// is optional, when it is a warning saying SQL Server refused the login, and
// verification falls back to the error log. Any other failure of the check stays
// a warning.
func TestSQLLogonFailure(t *testing.T) {
	ops := map[string]func(e *Engine, tgt Target) (*Outcome, error){
		"read":        func(e *Engine, tgt Target) (*Outcome, error) { return e.Read(context.Background(), tgt, enable) },
		"plan's read": func(e *Engine, tgt Target) (*Outcome, error) { return e.ReadRiding(context.Background(), tgt, enable) },
		"apply":       func(e *Engine, tgt Target) (*Outcome, error) { return e.Apply(context.Background(), tgt, enable) },
		"destroy": func(e *Engine, tgt Target) (*Outcome, error) {
			return e.Destroy(context.Background(), tgt, ifi.Desired{Grantee: ifi.GranteeServiceSID})
		},
	}
	for _, tc := range []struct {
		name     string
		checkErr error
		optional bool
		hint     int // SQLPortHint: the check runs alongside read_instance
		wantErr  bool
	}{
		{name: "refused login", checkErr: logonErr{}, wantErr: true},
		{name: "refused login, asked alongside read_instance", checkErr: logonErr{}, hint: 1433, wantErr: true},
		{name: "refused login, SQL verification optional", checkErr: logonErr{}, optional: true},
		{name: "no answer", checkErr: errBoom},
		{name: "no answer, SQL verification optional", checkErr: errBoom, optional: true},
	} {
		for op, run := range ops {
			t.Run(tc.name+"/"+op, func(t *testing.T) {
				h := newFakeHost()
				if op == "destroy" {
					h.granted(svcSID)
				}
				w := newWorld(h)
				w.checker.checkErr = tc.checkErr
				w.engine.SQLOptional = tc.optional
				tgt := defaultTarget
				tgt.SQLPortHint = tc.hint
				out, err := run(w.engine, tgt)
				if tc.wantErr {
					var ce *Error
					if !errors.As(err, &ce) || ce.Kind != KindSQLLogonFailed || ce.SQLPort != 1433 || !errors.Is(err, logonErr{}) {
						t.Fatalf("error %v, want a sql_logon_failed error at port 1433 carrying the checker's", err)
					}
					if !strings.Contains(err.Error(), "instance MSSQLSERVER on sql01.example.com") || !strings.Contains(err.Error(), "login failed for ifi") {
						t.Errorf("error %q does not name the instance, the host and the login", err)
					}
					if out.Changed || ce.Changed || h.setRightOps != 0 || h.restarts != 0 {
						t.Errorf("the host was changed (set_right %d, restarts %d) before the refused login stopped the %s", h.setRightOps, h.restarts, op)
					}
					return
				}
				switch op {
				case "apply":
					// Today's behaviour: the restart gate refuses the restart that needs
					// SQL Server's answer, changing nothing.
					var ce *Error
					if !errors.As(err, &ce) || ce.Kind != KindRefused || h.setRightOps != 0 || h.restarts != 0 {
						t.Errorf("apply: %v (set_right %d, restarts %d), want the restart gate's refusal, nothing changed", err, h.setRightOps, h.restarts)
					}
					return
				case "destroy":
					if err != nil {
						t.Errorf("destroy: %v, want the revoke, which needs no SQL Server answer", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				wantWarning(t, out.Warnings, WarnSQLCheck)
				for _, wn := range out.Warnings {
					if wn.Code != WarnSQLCheck {
						continue
					}
					refused := strings.Contains(wn.Detail, "refused the SQL login")
					if refused != (tc.checkErr == logonErr{}) || !strings.Contains(wn.Detail, "falls back to the error log") ||
						!strings.Contains(wn.Detail, "sql01.example.com:1433") {
						t.Errorf("warning %q: want it to say what SQL Server answered at sql01.example.com:1433 and that verification falls back to the error log", wn.Detail)
					}
					if !errors.Is(wn.Err, tc.checkErr) {
						t.Errorf("warning carries %v, want the check's error", wn.Err)
					}
				}
				if out.Verification.Source == ifi.SourceSQLDMV {
					t.Error("verified through SQL Server although the check failed")
				}
			})
		}
	}
}

// The rule holds for a failover cluster instance too: its SQL Server is asked at
// the virtual name, which the error names.
func TestSQLLogonFailureCluster(t *testing.T) {
	for _, optional := range []bool{false, true} {
		e, k, ct := clusterWorld(newFakeCluster())
		k.err = logonErr{}
		e.SQLOptional = optional
		out, err := e.ReadCluster(context.Background(), ct, enable)
		if !optional {
			var ce *Error
			if !errors.As(err, &ce) || ce.Kind != KindSQLLogonFailed || !errors.Is(err, logonErr{}) {
				t.Errorf("error %v, want a sql_logon_failed error", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		wantWarning(t, out.Warnings, WarnSQLCheck)
		for _, wn := range out.Warnings {
			if wn.Code == WarnSQLCheck && !strings.Contains(wn.Detail, "virtual name sqlvs1.corp.example:1433 and refused the SQL login") {
				t.Errorf("warning %q does not say SQL Server refused the login at the virtual name", wn.Detail)
			}
		}
	}
}

// pauseClock is a sleepClock that records each pause and runs onSleep (when set)
// before it answers.
type pauseClock struct {
	sleepClock
	pauses  []time.Duration
	onSleep func()
}

func (c *pauseClock) Sleep(ctx context.Context, d time.Duration) error {
	c.pauses = append(c.pauses, d)
	if c.onSleep != nil {
		c.onSleep()
	}
	return c.sleepClock.Sleep(ctx, d)
}

// pauseWorld is a world on a pauseClock, and a context whose deadline is a minute
// from that clock's now.
func pauseWorld(t *testing.T) (*world, context.Context, context.CancelFunc, *pauseClock) {
	w := newWorld(newFakeHost())
	c := &pauseClock{sleepClock: sleepClock{now: time.Now()}}
	w.engine.Clock = c
	ctx, cancel := context.WithDeadline(context.Background(), c.now.Add(time.Minute))
	t.Cleanup(cancel)
	return w, ctx, cancel, c
}

// A read refused again and again is asked again after 1, 2, 4 s, then every 5 s.
func TestReadRidingPausesGrow(t *testing.T) {
	w, ctx, _, c := pauseWorld(t)
	w.host.readErr = func(n int) error {
		if n <= 4 {
			return refusedErr{}
		}
		return nil
	}
	if _, err := w.engine.ReadRiding(ctx, defaultTarget, enable); err != nil {
		t.Fatalf("ReadRiding: %v", err)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second}
	if !slices.Equal(c.pauses, want) {
		t.Errorf("pauses %v; want %v", c.pauses, want)
	}
}

// After a refusal, what ends the riding is said: a failure the host answered is
// the error; an attempt the deadline cut short leaves the refusal as the error
// (which names the host and what to check); so does a pause the deadline ended,
// without asking again.
func TestReadRidingSaysWhatEndedIt(t *testing.T) {
	t.Run("the host answers a failure", func(t *testing.T) {
		w, ctx, _, _ := pauseWorld(t)
		w.host.readErr = func(n int) error {
			if n == 1 {
				return refusedErr{}
			}
			return transientErr{}
		}
		_, err := w.engine.ReadRiding(ctx, defaultTarget, enable)
		if e := wantError(t, err, KindObserveFailed); !errors.As(e.Err, new(transientErr)) {
			t.Errorf("error %v; want the host's answer, not the refusal before it", e.Err)
		}
	})
	t.Run("the deadline cuts the next attempt", func(t *testing.T) {
		w, ctx, cancel, _ := pauseWorld(t)
		w.host.readErr = func(n int) error {
			if n == 1 {
				return refusedErr{}
			}
			cancel() // the operation's time ends during this attempt
			return ctx.Err()
		}
		_, err := w.engine.ReadRiding(ctx, defaultTarget, enable)
		if e := wantError(t, err, KindObserveFailed); !errors.As(e.Err, new(refusedErr)) {
			t.Errorf("error %v; want the refusal, not the deadline", e.Err)
		}
	})
	t.Run("the deadline ends the pause", func(t *testing.T) {
		w, ctx, cancel, c := pauseWorld(t)
		c.onSleep = cancel
		w.host.readErr = func(n int) error {
			if n > 1 {
				return transientErr{} // asked again: the test fails below
			}
			return refusedErr{}
		}
		_, err := w.engine.ReadRiding(ctx, defaultTarget, enable)
		if e := wantError(t, err, KindObserveFailed); !errors.As(e.Err, new(refusedErr)) || w.host.reads != 1 {
			t.Errorf("error %v after %d reads; want the refusal and no read after the pause", e.Err, w.host.reads)
		}
	})
}
