package converge

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// The pause after failures in a row doubles from restartRetryPause up to
// maxRestartRetryPause.
func TestRetryPause(t *testing.T) {
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 5 * time.Second, 20: 5 * time.Second} {
		if got := retryPause(n); got != want {
			t.Errorf("retryPause(%d) = %s, want %s", n, got, want)
		}
	}
}

// notTransient says it is not the network's failure.
type notTransient struct{}

func (notTransient) Error() string   { return "401 Unauthorized" }
func (notTransient) Transient() bool { return false }

func TestTransient(t *testing.T) {
	for name, c := range map[string]struct {
		err  error
		want bool
	}{
		"the network's":         {transientErr{}, true},
		"wrapped":               {fmt.Errorf("read_instance: %w", transientErr{}), true},
		"the host's answer":     {notTransient{}, false},
		"says nothing about it": {errBoom, false},
	} {
		if got := transient(c.err); got != c.want {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
}

// The read-back after a failure runs until the operation's deadline, and at least
// RecoveryTimeout from now (also when the operation was cancelled).
func TestRecoveryContext(t *testing.T) {
	now := time.Now()
	e := New(&fakeClients{})
	e.Clock = fakeClock{now: now}
	e.RecoveryTimeout = 20 * time.Second
	later, cancelLater := context.WithDeadline(context.Background(), now.Add(time.Hour))
	defer cancelLater()
	sooner, cancelSooner := context.WithDeadline(context.Background(), now.Add(5*time.Second))
	defer cancelSooner()
	cancelled, cancel := context.WithDeadline(context.Background(), now.Add(time.Hour))
	cancel()
	for name, c := range map[string]struct {
		ctx  context.Context
		want time.Time
	}{
		"no deadline":                 {context.Background(), now.Add(20 * time.Second)},
		"a later deadline":            {later, now.Add(time.Hour)},
		"a sooner deadline":           {sooner, now.Add(20 * time.Second)},
		"cancelled, a later deadline": {cancelled, now.Add(20 * time.Second)},
	} {
		rctx, rcancel := e.recoveryContext(c.ctx)
		dl, ok := rctx.Deadline()
		if !ok || !dl.Equal(c.want) || rctx.Err() != nil {
			t.Errorf("%s: deadline %v (%v), err %v; want %v", name, dl, ok, rctx.Err(), c.want)
		}
		rcancel()
	}
	e.RecoveryTimeout = 0
	rctx, rcancel := e.recoveryContext(context.Background())
	defer rcancel()
	if dl, _ := rctx.Deadline(); !dl.Equal(now.Add(DefaultRecoveryTimeout)) {
		t.Errorf("default: deadline %v, want %v", dl, now.Add(DefaultRecoveryTimeout))
	}
}

// The read-back is asked again through the network's failures, not through the
// host's answer.
func TestObserveUntilDeadline(t *testing.T) {
	for name, c := range map[string]struct {
		err       error
		wantReads int
		wantErr   bool
	}{
		"the network's failure, twice": {transientErr{}, 3, false},
		"the host's answer":            {notTransient{}, 1, true},
	} {
		h := newFakeHost()
		h.readErr = func(n int) error {
			if n <= 2 {
				return c.err
			}
			return nil
		}
		w := newWorld(h)
		w.engine.Clock = fakeClock{now: time.Now()}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		o, err := w.engine.observeUntilDeadline(ctx, defaultTarget)
		cancel()
		if h.reads != c.wantReads || (err != nil) != c.wantErr || (err == nil && o == nil) {
			t.Errorf("%s: %d reads, %v; want %d reads", name, h.reads, err, c.wantReads)
		}
		if c.wantErr && !errors.As(err, new(notTransient)) {
			t.Errorf("%s: error %v does not carry the host's answer", name, err)
		}
	}
	// A deadline that passed ends the retries.
	h := newFakeHost()
	h.readErr = func(int) error { return transientErr{} }
	w := newWorld(h)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := w.engine.observeUntilDeadline(ctx, defaultTarget); err == nil || h.reads > 1 {
		t.Errorf("cancelled: %d reads, %v", h.reads, err)
	}
}

// recordingClock records the pauses it is asked for; failSleep makes them fail.
type recordingClock struct {
	fakeClock
	pauses    []time.Duration
	failSleep bool
}

func (c *recordingClock) Sleep(ctx context.Context, d time.Duration) error {
	c.pauses = append(c.pauses, d)
	if c.failSleep {
		return context.Canceled
	}
	return ctx.Err()
}

// The read-back's retries pause 1 s, then 2 s, ...; a pause cut short ends them.
func TestObserveUntilDeadlinePauses(t *testing.T) {
	h := newFakeHost()
	h.readErr = func(n int) error {
		if n <= 2 {
			return transientErr{}
		}
		return nil
	}
	w := newWorld(h)
	clock := &recordingClock{fakeClock: fakeClock{now: time.Now()}}
	w.engine.Clock = clock
	if _, err := w.engine.observeUntilDeadline(context.Background(), defaultTarget); err != nil {
		t.Fatal(err)
	}
	if len(clock.pauses) != 2 || clock.pauses[0] != time.Second || clock.pauses[1] != 2*time.Second {
		t.Errorf("pauses %v, want [1s 2s]", clock.pauses)
	}

	h = newFakeHost()
	h.readErr = func(int) error { return transientErr{} }
	w = newWorld(h)
	w.engine.Clock = &recordingClock{fakeClock: fakeClock{now: time.Now()}, failSleep: true}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := w.engine.observeUntilDeadline(ctx, defaultTarget); !errors.As(err, new(transientErr)) || h.reads != 1 {
		t.Errorf("pause cut short: %d reads, %v; want one read and its error", h.reads, err)
	}
}

// Whether SQL Server answered at its port (a login, or an error SQL Server sent)
// is kept for the wait after a restart.
func TestObserveRecordsWhetherSQLServerAnswered(t *testing.T) {
	for name, c := range map[string]struct {
		err  error
		want bool
	}{
		"it answered":            {nil, true},
		"it refused the login":   {sqlAnswered{}, true},
		"nothing answered there": {errBoom, false},
	} {
		w := newWorld(newFakeHost())
		w.checker.checkErr = c.err
		o, err := w.engine.Observe(context.Background(), defaultTarget)
		if err != nil {
			t.Fatal(err)
		}
		if o.SQLTarget == nil || o.SQLTarget.AnsweredTDS != c.want {
			t.Errorf("%s: target %+v, want AnsweredTDS %v", name, o.SQLTarget, c.want)
		}
	}
}

// sqlAnswered is an error SQL Server itself sent (a refused login), as the checker
// marks it (contract.SQLServerAnswered).
type sqlAnswered struct{}

func (sqlAnswered) Error() string     { return "Login failed for user 'probe' (18456)" }
func (sqlAnswered) AnsweredTDS() bool { return true }
