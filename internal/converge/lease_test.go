package converge

import (
	"context"
	"strings"
	"testing"
)

// The host refuses the restart because another of its instances is restarting (the
// host's restart lease): the apply fails with its own kind, saying nothing changed,
// and the grant the restart request carried was not made.
func TestApplyRefusedByTheHostsRestartLease(t *testing.T) {
	w := newWorld(newFakeHost())
	w.host.otherRestarting = true
	out, err := w.engine.Apply(context.Background(), defaultTarget, enable)
	e := wantError(t, err, KindRestartInProgress)
	if e.Changed || out.Changed || out.Restarted {
		t.Errorf("error %+v, outcome %+v: want nothing changed", e, out)
	}
	if w.host.holds(svcSID) || w.host.restarts != 0 {
		t.Errorf("the refused request changed the host: holders granted %v, restarts %d", w.host.holds(svcSID), w.host.restarts)
	}
	if msg := err.Error(); !strings.Contains(msg, defaultTarget.String()) || !strings.Contains(msg, "instance ETL on SQL01 is in progress") {
		t.Errorf("the error %q does not name the instance refused and the one restarting", msg)
	}
}
