package converge

import (
	"context"
	"errors"
	"fmt"
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
	for _, tc := range [][2]string{{"sql01", "sql01:0"}, {"sql01:1433", "sql01:1433"}, {" sql01:1433 ", "sql01:1433"}, {"sql01:1", "sql01:1"},
		{"sql01:65535", "sql01:65535"}, {"[fe80::1]:1433", "fe80::1:1433"}, {"10.0.0.1", "10.0.0.1:0"}} {
		in, want := tc[0], tc[1]
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

// includingPrimary opts in to restarting a primary replica.
var includingPrimary = ifi.Desired{Enabled: true, Grantee: ifi.GranteeServiceSID, Restart: ifi.RestartIfNeededIncludingPrimary}

// plainChecker is an SQL client that cannot ask a primary (no contract.GroupChecker).
type plainChecker struct{ contract.SQLChecker }

type plainClients struct{ *fakeClients }

func (c plainClients) SQLChecker() (contract.SQLChecker, error) {
	return plainChecker{c.checker}, nil
}

// The lock names the replica being restarted (what another run's refusal shows),
// and a replica HEALTHY at the first poll ends the wait without a warning.
func TestApplySecondaryLocksForItsOwnName(t *testing.T) {
	w := secondaryOf(t)
	out, err := w.engine.Apply(context.Background(), defaultTarget, enable)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if len(w.checker.lockReplicas) != 1 || w.checker.lockReplicas[0] != "SQL02" {
		t.Errorf("the lock was asked for %q, want for SQL02", w.checker.lockReplicas)
	}
	if ifi.HasWarning(out.Warnings, WarnGroupNotHealthy) || w.checker.healthPolls != 1 {
		t.Errorf("warnings %v after %d health polls; want none after one", codes(out.Warnings), w.checker.healthPolls)
	}
}

// The locks of several groups are taken in one order, whatever the case of the
// groups' names, so that two runs never each hold one and wait for the other.
func TestApplyLocksGroupsInOneOrder(t *testing.T) {
	w := secondaryOf(t)
	w.checker.replicas = []contract.Replica{
		{Group: "Sales", Server: "SQL02", Local: true, Role: "SECONDARY", Connected: "CONNECTED", Health: "HEALTHY"},
		{Group: "accounts", Server: "SQL02", Local: true, Role: "SECONDARY", Connected: "CONNECTED", Health: "HEALTHY"},
	}
	if _, err := w.engine.Apply(context.Background(), defaultTarget, enable); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if strings.Join(w.checker.lockGroups, ",") != "accounts,Sales" {
		t.Errorf("locks asked for %q, want accounts then Sales", w.checker.lockGroups)
	}
}

// The primary of its group asks no one: it takes the lock on itself and, having
// restarted, has no lock left to wait on.
func TestApplyPrimaryLocksOnItself(t *testing.T) {
	w := secondaryOf(t)
	w.checker.replicas = []contract.Replica{{Group: "AG1", Server: "SQL02", Local: true, Role: "PRIMARY", Connected: "CONNECTED", Health: "HEALTHY"}}
	out, err := w.engine.Apply(context.Background(), defaultTarget, includingPrimary)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if w.host.restarts != 1 || len(w.checker.primaryAsks) != 0 {
		t.Errorf("restarts %d, primary asked at %+v; want one restart, no one asked", w.host.restarts, w.checker.primaryAsks)
	}
	if len(w.checker.lockTargets) != 1 || w.checker.lockTargets[0].Host != defaultTarget.Host || w.checker.lockTargets[0].Port != 1433 {
		t.Errorf("lock taken at %+v, want once at %s:1433", w.checker.lockTargets, defaultTarget.Host)
	}
	if w.checker.healthPolls != 0 || w.checker.locksHeld != 0 || ifi.HasWarning(out.Warnings, WarnGroupNotHealthy) {
		t.Errorf("health polls %d, locks held %d, warnings %v", w.checker.healthPolls, w.checker.locksHeld, codes(out.Warnings))
	}
}

// Primary of one group and secondary of another: nobody is asked for health (a
// primary sees every replica), but the other group's lock is taken on its primary
// and the wait is for that group only.
func TestApplyPrimaryOfOneGroupSecondaryOfAnother(t *testing.T) {
	w := secondaryOf(t)
	w.checker.replicas = []contract.Replica{
		{Group: "AG1", Server: "SQL02", Local: true, Role: "SECONDARY", Connected: "CONNECTED", Health: "HEALTHY"},
		{Group: "AG2", Server: "SQL02", Local: true, Role: "PRIMARY", Connected: "CONNECTED", Health: "HEALTHY"},
	}
	if _, err := w.engine.Apply(context.Background(), defaultTarget, includingPrimary); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if len(w.checker.primaryAsks) != 0 {
		t.Errorf("primary asked at %+v, want no one", w.checker.primaryAsks)
	}
	var at []string
	for _, lt := range w.checker.lockTargets {
		at = append(at, lt.Host)
	}
	if strings.Join(w.checker.lockGroups, ",") != "AG1,AG2" || strings.Join(at, ",") != "SQL01,"+defaultTarget.Host {
		t.Errorf("locks of %q taken at %q, want AG1 at SQL01 and AG2 at %s", w.checker.lockGroups, at, defaultTarget.Host)
	}
	if w.checker.healthPolls != 1 {
		t.Errorf("health polls %d, want one (AG1's)", w.checker.healthPolls)
	}
}

// A lock that cannot be taken after another was refuses, and gives back the one taken.
func TestApplyReleasesTheLocksTakenWhenALaterOneFails(t *testing.T) {
	w := secondaryOf(t)
	w.checker.replicas = []contract.Replica{
		{Group: "AG1", Server: "SQL02", Local: true, Role: "PRIMARY", Connected: "CONNECTED", Health: "HEALTHY"},
		{Group: "AG2", Server: "SQL02", Local: true, Role: "SECONDARY", Connected: "CONNECTED", Health: "HEALTHY"},
	}
	w.checker.lockErrFor = map[string]error{"AG2": errors.New("login failed at AG2's primary")}
	_, err := w.engine.Apply(context.Background(), defaultTarget, includingPrimary)
	ce := wantError(t, err, KindRefused)
	if ce.Refusal == nil || !strings.Contains(ce.Refusal.Detail, "login failed at AG2's primary") {
		t.Errorf("refusal %+v", ce.Refusal)
	}
	if len(w.checker.lockGroups) != 2 || w.checker.locksHeld != 0 || w.host.restarts != 0 {
		t.Errorf("locks asked %q, still held %d, restarts %d; want AG1's given back and no restart", w.checker.lockGroups, w.checker.locksHeld, w.host.restarts)
	}
}

// A group whose primary is not named has no lock to take: the restart refuses.
func TestApplyRefusesWhenAGroupsPrimaryIsUnknown(t *testing.T) {
	w := secondaryOf(t)
	w.checker.replicas = []contract.Replica{
		{Group: "AG1", Server: "SQL02", Local: true, Role: "PRIMARY", Connected: "CONNECTED", Health: "HEALTHY"},
		{Group: "AG2", Server: "SQL02", Local: true, Role: "SECONDARY", Connected: "CONNECTED", Health: "HEALTHY"},
	}
	w.checker.noPrimaryName = true
	_, err := w.engine.Apply(context.Background(), defaultTarget, includingPrimary)
	ce := wantError(t, err, KindRefused)
	if ce.Refusal == nil || !strings.Contains(ce.Refusal.Detail, "the primary's address is unknown") {
		t.Errorf("refusal %+v, want one saying the primary's address is unknown", ce.Refusal)
	}
	if w.checker.locksHeld != 0 || w.host.restarts != 0 {
		t.Errorf("locks held %d, restarts %d", w.checker.locksHeld, w.host.restarts)
	}
}

// An SQL client that cannot ask a primary leaves a secondary's group health
// unknown, and a primary's lock untaken: both refuse.
func TestApplyRefusesWithoutAClientThatAsksPrimaries(t *testing.T) {
	for _, tc := range []struct {
		name    string
		role    string
		d       ifi.Desired
		summary string
	}{{"secondary", "SECONDARY", enable, "health unknown"}, {"primary", "PRIMARY", includingPrimary, "restart lock unavailable"}} {
		t.Run(tc.name, func(t *testing.T) {
			w := secondaryOf(t)
			w.checker.replicas[0].Role = tc.role
			w.engine.Clients = plainClients{w.clients}
			_, err := w.engine.Apply(context.Background(), defaultTarget, tc.d)
			ce := wantError(t, err, KindRefused)
			if ce.Refusal == nil || !strings.Contains(ce.Refusal.Summary, tc.summary) || !strings.Contains(ce.Refusal.Detail, "this SQL client cannot ask a primary") {
				t.Errorf("refusal %+v, want %q saying the client cannot ask a primary", ce.Refusal, tc.summary)
			}
			if w.host.restarts != 0 {
				t.Errorf("restarts %d", w.host.restarts)
			}
		})
	}
}

// Where the primary is asked: a mapped address without a port at this replica's
// port; a name not mapped at its own name, whatever else is mapped; a mapping
// that gives no address refuses without asking anyone.
func TestApplyAsksThePrimaryWhereTheMappingSays(t *testing.T) {
	for _, tc := range []struct {
		name, host string
		m          map[string]string
	}{
		{"mapped without a port", "10.0.0.1", map[string]string{"sql01": "10.0.0.1"}},
		{"another replica mapped", "SQL01", map[string]string{"SQL09": "10.0.0.9:1444"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := secondaryOf(t)
			tg := defaultTarget
			tg.ReplicaAddresses = NewReplicaAddresses(tc.m)
			if _, err := w.engine.Apply(context.Background(), tg, enable); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if len(w.checker.primaryAsks) == 0 || w.checker.primaryAsks[0].Host != tc.host || w.checker.primaryAsks[0].Port != 1433 {
				t.Errorf("the primary was asked at %+v, want %s:1433", w.checker.primaryAsks, tc.host)
			}
		})
	}
	t.Run("mapped to no address", func(t *testing.T) {
		w := secondaryOf(t)
		tg := defaultTarget
		tg.ReplicaAddresses = NewReplicaAddresses(map[string]string{"SQL01": "not an address"})
		_, err := w.engine.Apply(context.Background(), tg, enable)
		var ce *Error
		if !errors.As(err, &ce) || ce.Kind != KindRefused {
			t.Fatalf("Apply: %v, want a refusal", err)
		}
		if ce.Refusal == nil || !strings.Contains(ce.Refusal.Summary, "health unknown") || !strings.Contains(ce.Refusal.Detail, "gives no address") {
			t.Errorf("refusal %+v", ce.Refusal)
		}
		if len(w.checker.primaryAsks) != 0 || w.host.restarts != 0 {
			t.Errorf("primary asked at %+v, restarts %d", w.checker.primaryAsks, w.host.restarts)
		}
	})
}

// A primary named without a computer part gives no address.
func TestPrimaryTargetOfANameWithoutComputer(t *testing.T) {
	if got := primaryTarget(defaultTarget, &contract.SQLTarget{Host: "sql02", Port: 1533}, `\INST`); got != nil {
		t.Errorf("primary target %+v, want none", got)
	}
}

// A primary that cannot be asked is named in the refusal with where it was asked.
func TestApplyRefusalSaysWhereThePrimaryWasAsked(t *testing.T) {
	w := secondaryOf(t)
	w.checker.groupErr = errors.New("dial tcp: connection refused")
	_, err := w.engine.Apply(context.Background(), defaultTarget, enable)
	ce := wantError(t, err, KindRefused)
	if ce.Refusal == nil || !strings.Contains(ce.Refusal.Detail, "asking SQL01 at SQL01:1433 failed") {
		t.Errorf("refusal %+v", ce.Refusal)
	}
}

// budgeted gives w's apply 3.5 s for the wait after the restart (three polls),
// and the primary sees the replica HEALTHY only from poll 11 on, so that a wait
// that kept going past its budget ends without the warning.
func budgeted(t *testing.T, w *world) context.Context {
	t.Helper()
	deadline := time.Now().Add(time.Hour)
	w.engine.Clock = fakeClock{now: deadline.Add(-readBackMargin/2 - 3500*time.Millisecond)}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	t.Cleanup(cancel)
	return ctx
}

// lateHealth is what the primary sees: the replica HEALTHY at the gate's read
// before the restart and from the 11th poll after it, else as during (nil: not listed).
func lateHealth(c *fakeChecker, during []contract.Replica) func() []contract.Replica {
	return func() []contract.Replica {
		if c.healthPolls == 0 || c.healthPolls > 10 {
			return []contract.Replica{{Group: "AG1", Server: "SQL02", Connected: "CONNECTED", Health: "HEALTHY"}}
		}
		return during
	}
}

// The warning of a replica not HEALTHY in time says what the primary said last.
func TestApplyUnhealthyWarningSaysWhatThePrimarySaidLast(t *testing.T) {
	for _, tc := range []struct {
		name, last string
		mod        func(c *fakeChecker)
	}{
		{"the primary does not list the replica", "(last: not reported by the primary)", func(c *fakeChecker) {
			c.primarySees = lateHealth(c, []contract.Replica{{Group: "AG1", Server: "SQL01", Local: true, Role: "PRIMARY", Connected: "CONNECTED", Health: "HEALTHY"}})
		}},
		{"asking fails", "(last: the primary's session ended)", func(c *fakeChecker) {
			c.healthErr = func(poll int) error {
				if poll > 10 {
					return nil
				}
				return errors.New("the primary's session ended")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := secondaryOf(t)
			ctx := budgeted(t, w)
			tc.mod(w.checker)
			out, err := w.engine.Apply(ctx, defaultTarget, enable)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			var detail string
			for _, wn := range out.Warnings {
				if wn.Code == WarnGroupNotHealthy {
					detail = wn.Detail
				}
			}
			if !strings.Contains(detail, tc.last) || w.checker.healthPolls != 3 {
				t.Errorf("warning %q after %d polls, want it to say %q after three", detail, w.checker.healthPolls, tc.last)
			}
		})
	}
}

// A replica HEALTHY at the second poll ends the wait there, without a warning.
func TestApplyWaitsUntilTheReplicaIsHealthy(t *testing.T) {
	w := secondaryOf(t)
	asked := 0
	w.checker.primarySees = func() []contract.Replica {
		asked++
		health := "HEALTHY"
		if asked == 2 { // the first poll after the restart
			health = "NOT_HEALTHY"
		}
		return []contract.Replica{{Group: "AG1", Server: "SQL02", Connected: "CONNECTED", Health: health}}
	}
	out, err := w.engine.Apply(budgeted(t, w), defaultTarget, enable)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if ifi.HasWarning(out.Warnings, WarnGroupNotHealthy) || w.checker.healthPolls != 2 {
		t.Errorf("warnings %v after %d polls; want none after two", codes(out.Warnings), w.checker.healthPolls)
	}
}

// The wait polls once a second until the deadline less half the read-back margin:
// with 3.5 s of that left, three polls, then the warning.
func TestApplyWaitsForHealthWithinTheDeadline(t *testing.T) {
	w := secondaryOf(t)
	ctx := budgeted(t, w)
	w.checker.primarySees = lateHealth(w.checker, []contract.Replica{{Group: "AG1", Server: "SQL02", Connected: "CONNECTED", Health: "NOT_HEALTHY"}})
	out, err := w.engine.Apply(ctx, defaultTarget, enable)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if !ifi.HasWarning(out.Warnings, WarnGroupNotHealthy) || w.checker.healthPolls != 3 {
		t.Errorf("warnings %v after %d polls; want the warning after three", codes(out.Warnings), w.checker.healthPolls)
	}
}

// A group that fails over while its secondary restarts: the instance the lock is
// on answers that it no longer hosts the primary replica. The wait stops at that
// answer (it would never see the replica HEALTHY, and the deadline is an hour
// away) and warns, naming the new primary; a create's apply keeps the warning.
func TestApplyStopsWaitingWhenTheGroupFailedOver(t *testing.T) {
	for _, create := range []bool{false, true} {
		w := secondaryOf(t)
		moved := &contract.NotPrimaryError{Group: "AG1", Address: "SQL01:1433", Primary: "SQL03"}
		w.checker.healthErr = func(int) error { return fmt.Errorf("SQL Server at SQL01:1433: %w", moved) }
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		res, err := NewSession(w.engine).Apply(ctx, ApplyRequest{Request: Request{Target: defaultTarget, Desired: enable}, Create: create})
		cancel()
		if err != nil {
			t.Fatalf("create %v: Apply: %v", create, err)
		}
		var got *ifi.Warning
		for i, wn := range res.Warnings {
			if wn.Code == WarnGroupNotHealthy {
				got = &res.Warnings[i]
			}
		}
		if got == nil || w.checker.healthPolls != 1 || w.host.restarts != 1 {
			t.Fatalf("create %v: warnings %v after %d polls, %d restarts; want the failover's warning after one poll", create, codes(res.Warnings),
				w.checker.healthPolls, w.host.restarts)
		}
		if got.Summary != "Availability group failed over during the restart" || !strings.Contains(got.Detail, "SQL03 as the primary now") ||
			!strings.Contains(got.Detail, "check it on SQL03") {
			t.Errorf("create %v: warning %q: %q; want the failover and the new primary named", create, got.Summary, got.Detail)
		}
		if w.checker.locksHeld != 0 {
			t.Errorf("create %v: %d locks still held", create, w.checker.locksHeld)
		}
	}
}

// A replica not HEALTHY in time is said by a create's apply too: the condition is
// the change's outcome, which the create's plan could not have said.
func TestCreateApplyKeepsTheGroupHealthWarning(t *testing.T) {
	w := secondaryOf(t)
	ctx := budgeted(t, w)
	w.checker.primarySees = lateHealth(w.checker, []contract.Replica{{Group: "AG1", Server: "SQL02", Connected: "CONNECTED", Health: "NOT_HEALTHY"}})
	res, err := NewSession(w.engine).Apply(ctx, ApplyRequest{Request: Request{Target: defaultTarget, Desired: enable}, Create: true})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if !ifi.HasWarning(res.Warnings, WarnGroupNotHealthy) {
		t.Errorf("a create's apply said %v, want the group-health warning", codes(res.Warnings))
	}
}
