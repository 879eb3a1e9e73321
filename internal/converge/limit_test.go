package converge

import (
	"context"
	"strings"
	"testing"
	"time"
)

// While every restart slot is taken, an apply that needs a restart waits before it
// changes anything (the grant travels with the restart); when its deadline passes
// it has changed nothing, and says why.
func TestApplyWaitsForARestartSlotUntilTheDeadline(t *testing.T) {
	w := newWorld(newFakeHost())
	w.engine.Restarts = NewRestartLimiter(1)
	occupy(t, w.engine.Restarts.slots) // another instance is restarting
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	out, err := w.engine.Apply(ctx, defaultTarget, enable)
	e := wantError(t, err, KindRestartSlot)
	if e.MaxParallelRestarts != 1 || e.Changed || e.Restarted {
		t.Errorf("error %+v: want the limit 1, nothing changed, not restarted", e)
	}
	if w.host.restarts != 0 || w.host.holds(svcSID) {
		t.Errorf("without a slot the host restarted %d times, grant held %v; want neither", w.host.restarts, w.host.holds(svcSID))
	}
	if out.Assessment != nil {
		t.Errorf("an assessment to store although nothing changed: %+v", out.Assessment)
	}

	// Once the slot is free the same apply restarts, and gives the slot back.
	release(t, w.engine.Restarts.slots)
	if _, err := w.engine.Apply(context.Background(), defaultTarget, enable); err != nil {
		t.Fatalf("Apply with a free slot: %v", err)
	}
	if w.host.restarts != 1 || len(w.engine.Restarts.slots) != 0 {
		t.Errorf("restarts %d, slots in use %d; want 1 and 0", w.host.restarts, len(w.engine.Restarts.slots))
	}
}

func TestNewRestartLimiter(t *testing.T) {
	for _, n := range []int{0, -1} {
		if l := NewRestartLimiter(n); l == nil || l.Limit() != 0 {
			t.Errorf("NewRestartLimiter(%d): %v; want no limit on the number, still one restart per host", n, l)
		}
	}
	if l := NewRestartLimiter(3); l.Limit() != 3 {
		t.Errorf("limit %d, want 3", l.Limit())
	}
	var none *RestartLimiter
	if none.Limit() != 0 {
		t.Error("a nil limiter must mean no limit")
	}
}

// Whatever max_parallel_restarts says, a second instance of a host that is
// restarting in this run waits for it (the host's lease would refuse it), while an
// instance of another host goes ahead.
func TestInstancesOfOneHostRestartOneAtATime(t *testing.T) {
	w := newWorld(newFakeHost())
	w.engine.Restarts = NewRestartLimiter(0)
	busy := w.engine.Restarts.hostSlot(strings.ToUpper(defaultTarget.Host) + ".")
	occupy(t, busy) // another instance of the same host (spelled otherwise) is restarting
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := w.engine.Apply(ctx, defaultTarget, enable)
	if e := wantError(t, err, KindRestartSlot); !e.HostBusy || !strings.Contains(e.Error(), "another instance of the same host") ||
		e.Changed || e.Restarted || w.host.restarts != 0 || w.host.holds(svcSID) {
		t.Errorf("while its host restarts another instance: %+v, %d restarts, grant held %v; want nothing done", e, w.host.restarts, w.host.holds(svcSID))
	}

	other := defaultTarget
	other.Host = "sql99.example.com"
	if _, err := w.engine.Apply(context.Background(), other, enable); err != nil {
		t.Fatalf("an instance of another host: %v", err)
	}
	if w.host.restarts != 1 {
		t.Errorf("the other host's instance restarted %d times, want 1", w.host.restarts)
	}

	release(t, busy)
	if _, err := w.engine.Apply(context.Background(), defaultTarget, enable); err != nil {
		t.Fatalf("Apply once the host is free: %v", err)
	}
	if len(busy) != 0 {
		t.Error("the host's slot was not given back")
	}
}

// occupy takes a slot of c as another instance's restart would; the test fails,
// rather than hangs, when c has no room for it.
func occupy(t *testing.T, c chan struct{}) {
	t.Helper()
	select {
	case c <- struct{}{}:
	default:
		t.Fatalf("the slot (capacity %d, %d taken) has no room for another restart", cap(c), len(c))
	}
}

// release gives back a slot of c that occupy took; the test fails when none is taken.
func release(t *testing.T, c chan struct{}) {
	t.Helper()
	select {
	case <-c:
	default:
		t.Fatal("no slot is taken")
	}
}

// waitWatch is a Logger that calls cancel the moment the engine says it waits for
// a slot (ending the operation's context, or giving a slot back), and records
// what it waited for.
type waitWatch struct {
	cancel func()
	waits  []string
}

func (w *waitWatch) Debug(context.Context, string, map[string]any) {}
func (w *waitWatch) Info(_ context.Context, msg string, _ map[string]any) {
	if strings.HasPrefix(msg, "waiting for") {
		w.waits = append(w.waits, msg)
		w.cancel()
	}
}

// With no limit on their number (max_parallel_restarts = 0), and with a limit whose
// slots are free, a restart of a free host takes its slots without waiting, and the
// next restart of the same host finds them given back.
func TestFreeSlotsAreTakenWithoutWaiting(t *testing.T) {
	for _, n := range []int{0, 2} {
		w := newWorld(newFakeHost())
		w.engine.Restarts = NewRestartLimiter(n)
		for round := 1; round <= 2; round++ {
			ctx, cancel := context.WithCancel(context.Background())
			watch := &waitWatch{cancel: cancel}
			w.engine.Log = watch
			d := enable
			if round == 2 {
				d.Enabled = false
			}
			_, err := w.engine.Apply(ctx, defaultTarget, d)
			cancel()
			if err != nil || len(watch.waits) > 0 {
				t.Errorf("limit %d, restart %d: %v, waited %q; want a restart without waiting", n, round, err, watch.waits)
			}
		}
		if w.host.restarts != 2 || len(w.engine.Restarts.hostSlot(defaultTarget.Host)) != 0 {
			t.Errorf("limit %d: %d restarts, host slot taken %d; want 2 and the slot given back", n, w.host.restarts, len(w.engine.Restarts.hostSlot(defaultTarget.Host)))
		}
	}
}

// A restart that waits for a slot goes ahead once the other restart gives it back,
// and gives it back in turn.
func TestAWaitingRestartGoesAheadWhenTheSlotIsGivenBack(t *testing.T) {
	w := newWorld(newFakeHost())
	w.engine.Restarts = NewRestartLimiter(1)
	occupy(t, w.engine.Restarts.slots) // another instance is restarting
	watch := &waitWatch{cancel: func() { release(t, w.engine.Restarts.slots) }}
	w.engine.Log = watch
	if _, err := w.engine.Apply(context.Background(), defaultTarget, enable); err != nil {
		t.Fatalf("Apply once the other restart gave its slot back: %v", err)
	}
	if len(watch.waits) != 1 || w.host.restarts != 1 || len(w.engine.Restarts.slots) != 0 {
		t.Errorf("waited %q, %d restarts, %d slots taken; want one wait, one restart, the slot given back", watch.waits, w.host.restarts, len(w.engine.Restarts.slots))
	}
}
