package converge

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

// secondaryOf is a world whose instance is SQL02, a secondary of AG1.
func secondaryOf(t *testing.T) *world {
	t.Helper()
	w := newWorld(newFakeHost())
	w.engine.Clock = fakeClock{now: time.Now()}
	w.checker.replicas = []contract.Replica{{Group: "AG1", Server: "SQL02", Local: true, Role: "SECONDARY", Connected: "CONNECTED", Health: "HEALTHY"}}
	return w
}

// A secondary restarts only after its primary said every replica is HEALTHY, under
// the group's lock on that primary, released once the replica is HEALTHY again.
func TestApplySecondaryAsksPrimaryAndHoldsTheLock(t *testing.T) {
	w := secondaryOf(t)
	tg := defaultTarget
	tg.ReplicaAddresses = NewReplicaAddresses(map[string]string{"sql01": "10.0.0.1:14330"})
	out, err := w.engine.Apply(context.Background(), tg, enable)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if !out.Restarted || w.host.restarts != 1 {
		t.Fatalf("restarted %v, restarts %d", out.Restarted, w.host.restarts)
	}
	if len(w.checker.primaryAsks) == 0 || w.checker.primaryAsks[0].Host != "10.0.0.1" || w.checker.primaryAsks[0].Port != 14330 {
		t.Errorf("the primary was asked at %+v, want 10.0.0.1:14330 (availability_replica_addresses)", w.checker.primaryAsks)
	}
	if len(w.checker.lockTargets) != 1 || w.checker.lockTargets[0].Host != "10.0.0.1" {
		t.Errorf("lock taken at %+v, want once on the primary", w.checker.lockTargets)
	}
	if w.checker.locksHeld != 0 || w.checker.healthPolls == 0 {
		t.Errorf("locks still held %d, health polls %d: want released after a HEALTHY poll", w.checker.locksHeld, w.checker.healthPolls)
	}
}

// Without a mapping, the primary is asked at its computer name and this replica's port.
func TestPrimaryTargetDefaultsToItsName(t *testing.T) {
	got := primaryTarget(defaultTarget, &contract.SQLTarget{Host: "sql02", Port: 1533}, `SQL01\INST`)
	if got == nil || got.Host != "SQL01" || got.Port != 1533 {
		t.Errorf("primary target %+v, want SQL01:1533", got)
	}
}

// The second run refuses, naming the group and the replica being restarted, and
// changes nothing.
func TestApplyRefusesWhileAnotherRunHoldsTheGroup(t *testing.T) {
	w := secondaryOf(t)
	w.checker.lockedBy = "SQL03"
	_, err := w.engine.Apply(context.Background(), defaultTarget, enable)
	ce := wantError(t, err, KindRefused)
	if ce.Refusal == nil || !strings.Contains(ce.Refusal.Summary, "AG1") || !strings.Contains(ce.Refusal.Detail, "SQL03") {
		t.Errorf("refusal %+v, want one naming AG1 and SQL03", ce.Refusal)
	}
	if w.host.restarts != 0 || w.checker.locksHeld != 0 {
		t.Errorf("restarts %d, locks held %d", w.host.restarts, w.checker.locksHeld)
	}
}

// A lock that cannot be asked for refuses too: unknown is unsafe.
func TestApplyRefusesWhenTheLockCannotBeAsked(t *testing.T) {
	w := secondaryOf(t)
	w.checker.lockErr = errors.New("login failed at the primary")
	_, err := w.engine.Apply(context.Background(), defaultTarget, enable)
	ce := wantError(t, err, KindRefused)
	if ce.Refusal == nil || !strings.Contains(ce.Refusal.Detail, "login failed at the primary") {
		t.Errorf("refusal %+v", ce.Refusal)
	}
	if w.host.restarts != 0 {
		t.Errorf("restarts %d", w.host.restarts)
	}
}

// What the primary says decides: another replica down there refuses the restart,
// and a primary that cannot be asked (or is not named) refuses it.
func TestApplySecondaryGateFromPrimary(t *testing.T) {
	for _, tc := range []struct {
		name, summary, detail string
		mod                   func(c *fakeChecker)
	}{
		{"another secondary down", "not healthy", "SQL03 of AG1: NOT_HEALTHY, DISCONNECTED", func(c *fakeChecker) {
			c.primarySees = func() []contract.Replica {
				return []contract.Replica{{Group: "AG1", Server: "SQL01", Local: true, Role: "PRIMARY", Connected: "CONNECTED", Health: "HEALTHY"},
					{Group: "AG1", Server: "SQL03", Connected: "DISCONNECTED", Health: "NOT_HEALTHY"}}
			}
		}},
		{"primary unreachable", "health unknown", "connection refused", func(c *fakeChecker) { c.groupErr = errors.New("dial tcp: connection refused") }},
		{"primary not named", "health unknown", "primary_replica is NULL", func(c *fakeChecker) { c.noPrimaryName = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := secondaryOf(t)
			tc.mod(w.checker)
			_, err := w.engine.Apply(context.Background(), defaultTarget, enable)
			ce := wantError(t, err, KindRefused)
			if ce.Refusal == nil || !strings.Contains(ce.Refusal.Summary, tc.summary) || !strings.Contains(ce.Refusal.Detail, tc.detail) {
				t.Errorf("refusal %+v, want %q / %q", ce.Refusal, tc.summary, tc.detail)
			}
			if w.host.restarts != 0 || len(w.checker.lockTargets) != 0 {
				t.Errorf("restarts %d, locks asked %d", w.host.restarts, len(w.checker.lockTargets))
			}
		})
	}
}

// A replica not HEALTHY by the apply's end is a warning; the lock is released.
func TestApplyWarnsWhenTheReplicaStaysUnhealthy(t *testing.T) {
	w := secondaryOf(t)
	polls := 0
	w.checker.primarySees = func() []contract.Replica {
		polls++
		if polls == 1 { // the gate's read before the restart
			return []contract.Replica{{Group: "AG1", Server: "SQL02", Connected: "CONNECTED", Health: "HEALTHY"}}
		}
		return []contract.Replica{{Group: "AG1", Server: "SQL02", Connected: "CONNECTED", Health: "NOT_HEALTHY"}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := w.engine.Apply(ctx, defaultTarget, enable)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if !ifi.HasWarning(out.Warnings, WarnGroupNotHealthy) || w.checker.locksHeld != 0 {
		t.Errorf("warnings %v, locks held %d", codes(out.Warnings), w.checker.locksHeld)
	}
}

func TestParseReplicaAddress(t *testing.T) {
	for in, want := range map[string]string{"sql01": "sql01:0", "sql01:1433": "sql01:1433", "[fe80::1]:1433": "fe80::1:1433", "10.0.0.1": "10.0.0.1:0"} {
		h, p, err := ParseReplicaAddress(in)
		if err != nil || h+":"+itoa(p) != want {
			t.Errorf("%q: %s:%d %v, want %s", in, h, p, err, want)
		}
	}
	for _, bad := range []string{"", "sql01:0", "sql01:70000", "sql01:x", "a b", ":1433"} {
		if _, _, err := ParseReplicaAddress(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestCheckReplicaName(t *testing.T) {
	for _, ok := range []string{"SQL01", `SQL01\INST`, "sql-01"} {
		if err := CheckReplicaName(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", `\INST`, " SQL01", "SQL01 ", "sql01:1433", "sql 01", `SQL01\A\B`, "a@b", "a/b"} {
		if err := CheckReplicaName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
