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
	w.engine.Restarts.slots <- struct{}{} // another instance is restarting
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
	<-w.engine.Restarts.slots
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
	busy <- struct{}{} // another instance of the same host (spelled otherwise) is restarting
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

	<-busy
	if _, err := w.engine.Apply(context.Background(), defaultTarget, enable); err != nil {
		t.Fatalf("Apply once the host is free: %v", err)
	}
	if len(busy) != 0 {
		t.Error("the host's slot was not given back")
	}
}
