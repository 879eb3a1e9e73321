package converge

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
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

// A lease held by a request prepared and not let go (its provider killed between
// the prepared line and the go line) is not "another instance restarting": the
// error gives the host's words, naming the request and until when it waits.
func TestApplyRefusedByAPreparedRequestNamesIt(t *testing.T) {
	w := newWorld(newFakeHost())
	w.host.otherRestarting, w.host.otherPrepared = true, true
	_, err := w.engine.Apply(context.Background(), defaultTarget, enable)
	msg := wantError(t, err, KindRestartInProgress).Error()
	if strings.Contains(msg, "another instance of the host is restarting") || !strings.Contains(msg, "request 0a1b to restart instance ETL") ||
		!strings.Contains(msg, "waits for its go line until 2026-12-01T10:00:30Z") {
		t.Errorf("the error %q: want the prepared request and its expiry named, not another instance restarting", msg)
	}
}

// The go refused after the changes were made (restart_instance's exit 6,
// changed_not_restarted): the outcome records them as made, unlike a request that
// did not start and changed nothing (restart_not_started).
func TestApplyGoRefusedAfterChangesRecordsThem(t *testing.T) {
	for _, tc := range []struct {
		code    string
		changed bool
	}{{contract.CodeChangedNotRestarted, true}, {contract.CodeRestartNotStarted, false}} {
		w := newWorld(newFakeHost())
		w.host.restartErr = &fakeScriptError{code: tc.code, err: errors.New("its guard process (4242) ended before the restart was let go")}
		w.host.restartNoEffect = true
		out, err := w.engine.Apply(context.Background(), defaultTarget, enable)
		e := wantError(t, err, KindRestartFailed)
		if e.Changed != tc.changed || out.Changed != tc.changed || out.Restarted {
			t.Errorf("%s: error changed %v, outcome changed %v restarted %v; want changed %v, not restarted", tc.code, e.Changed, out.Changed, out.Restarted, tc.changed)
		}
	}
}
