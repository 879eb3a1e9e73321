package converge

import (
	"context"
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
	if NewRestartLimiter(0) != nil || NewRestartLimiter(-1) != nil || NewRestartLimiter(0).Limit() != 0 {
		t.Error("0 or less must mean no limit (nil)")
	}
	if l := NewRestartLimiter(3); l.Limit() != 3 {
		t.Errorf("limit %d, want 3", l.Limit())
	}
}
