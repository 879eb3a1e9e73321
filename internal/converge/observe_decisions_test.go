package converge

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

// The unhealthy replicas say which replica, whether it is this one, and of which group.
func TestAGMembershipNamesUnhealthyReplicas(t *testing.T) {
	m := agMembership(&contract.SQLReport{Replicas: []contract.Replica{
		{Group: "AG1", Server: "SQL01", Local: true, Role: "SECONDARY", Connected: "CONNECTED", Health: "PARTIALLY_HEALTHY"},
		{Group: "AG1", Server: "", Connected: "DISCONNECTED"},
		{Server: "SQL03", Connected: "CONNECTED", Health: "HEALTHY"},
		{Server: "SQL04", Health: "NOT_HEALTHY", Connected: "CONNECTED"},
	}})
	want := []string{
		"SQL01 (this replica) of AG1: PARTIALLY_HEALTHY, CONNECTED",
		"a replica of AG1: UNKNOWN, DISCONNECTED",
		"SQL04: NOT_HEALTHY, CONNECTED",
	}
	if strings.Join(m.Unhealthy, "|") != strings.Join(want, "|") {
		t.Errorf("unhealthy %q, want %q", m.Unhealthy, want)
	}
	if m.Role != ifi.RoleSecondary || strings.Join(m.Groups, ",") != "AG1" {
		t.Errorf("role %q in %v, want the secondary of AG1", m.Role, m.Groups)
	}
}

// What SQL Server answered goes into the verification: its version, whether it is
// clustered, and the encrypted databases (none is an empty list, not unknown).
func TestObserveKeepsSQLServersAnswer(t *testing.T) {
	w := newWorld(newFakeHost())
	o, err := New(withChecker{w.clients, clusteredChecker{w.checker}}).Observe(context.Background(), defaultTarget)
	if err != nil {
		t.Fatal(err)
	}
	v := o.Observed.Verification
	if v.SQLVersion != "16.0.4135.4" || !v.Clustered || v.TDEDatabases == nil || len(v.TDEDatabases) != 0 {
		t.Errorf("verification %+v: want the version, clustered, and an empty list of TDE databases", v)
	}
}

// A missing instance is not asked about through SQL Server.
func TestObserveMissingInstanceAsksNoSQL(t *testing.T) {
	h := newFakeHost()
	h.installed = false
	w := newWorld(h)
	o, err := w.engine.Observe(context.Background(), defaultTarget)
	if err != nil || o.Instance.Found {
		t.Fatalf("observe: %+v, %v", o, err)
	}
	if w.checker.checks != 0 || o.SQLTarget != nil || len(o.Warnings) != 0 {
		t.Errorf("SQL Server asked %d times about a missing instance; warnings %v", w.checker.checks, codes(o.Warnings))
	}
}

// The plan's read counts as fresh from the moment it was read, and only for an
// installed instance.
func TestFreshReadEdges(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	w := newWorld(newFakeHost())
	w.engine.Clock = fakeClock{now: now}
	plan, err := w.engine.Read(context.Background(), defaultTarget, enable)
	if err != nil {
		t.Fatal(err)
	}
	target := defaultTarget
	target.Read, target.ReadAt = plan.Read, now
	if w.engine.freshRead(target) == nil {
		t.Error("a read of this instant is not fresh")
	}
	missing := *plan.Read
	missing.Found = false
	target.Read = &missing
	if w.engine.freshRead(target) != nil {
		t.Error("a read that found no instance is reused")
	}
}

type clusteredChecker struct{ *fakeChecker }

func (c clusteredChecker) Check(ctx context.Context, t contract.SQLTarget) (*contract.SQLReport, error) {
	rep, err := c.fakeChecker.Check(ctx, t)
	if rep != nil {
		rep.Clustered = true
	}
	return rep, err
}

// withChecker are the fake clients with another SQL checker.
type withChecker struct {
	*fakeClients
	ch contract.SQLChecker
}

func (c withChecker) SQLChecker() (contract.SQLChecker, error) { return c.ch, nil }

// Primary in one group wins over resolving in another.
func TestAGMembershipPrimaryWins(t *testing.T) {
	m := agMembership(&contract.SQLReport{Replicas: []contract.Replica{
		{Group: "AG1", Local: true, Role: "PRIMARY", Connected: "CONNECTED", Health: "HEALTHY"},
		{Group: "AG2", Local: true, Role: "RESOLVING", Connected: "CONNECTED", Health: "HEALTHY"},
	}})
	if m.Role != ifi.RolePrimary || strings.Join(m.Groups, ",") != "AG1,AG2" || len(m.Unhealthy) != 0 {
		t.Errorf("%+v; want the primary of AG1 and AG2, all healthy", m)
	}
}

// changeFailed picks the step whose SID the host's lsa_error names; other errors
// are not a failed change.
func TestChangeFailed(t *testing.T) {
	steps := []ifi.Step{{Grant: false, SID: acctSID}, {Grant: true, SID: svcSID}}
	lsa := func(msg string) error { return &fakeScriptError{code: "lsa_error", err: errors.New(msg)} }
	for name, c := range map[string]struct {
		err   error
		steps []ifi.Step
		i     int
		ok    bool
	}{
		"names the second step": {lsa("LsaAddAccountRights for " + svcSID + " failed"), steps, 1, true},
		"names the first step":  {lsa("LsaRemoveAccountRights for " + acctSID + " failed"), steps, 0, true},
		"names no step":         {lsa("LsaOpenPolicy failed"), steps, 0, true},
		"no steps":              {lsa("LsaOpenPolicy failed"), nil, 0, false},
		"another script error":  {&fakeScriptError{code: "not_found", err: errBoom}, steps, 0, false},
		"not the host's answer": {errBoom, steps, 0, false},
	} {
		if i, ok := changeFailed(c.err, c.steps); i != c.i || ok != c.ok {
			t.Errorf("%s: %d, %v; want %d, %v", name, i, ok, c.i, c.ok)
		}
	}
}

func TestRestartErrorsSayWhatHappened(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&RestartOutcomeError{Result: contract.RestartInstanceResult{Error: "start_failed"}}, "the restart failed (start_failed)"},
		{&RestartOutcomeError{Result: contract.RestartInstanceResult{Message: "MSSQLSERVER did not start.", ErrorLogTail: []string{"a", "b"}}},
			"MSSQLSERVER did not start. Last lines of the SQL Server error log: a | b"},
		{&RestartOutcomeError{Result: contract.RestartInstanceResult{Message: "MSSQLSERVER did not start.", ErrorLogTail: []string{}}},
			"MSSQLSERVER did not start."},
		{&RestartUnfinishedError{NotReceived: true, Err: errBoom}, "the restart request did not reach the host after 3 attempts, so nothing was stopped: " + errBoom.Error()},
		{&RestartUnfinishedError{Err: errBoom}, "(last phase reported: unknown)"},
		{&RestartUnfinishedError{Phase: "stopping", Err: errBoom}, "(last phase reported: stopping)"},
	} {
		got := c.err.Error()
		if !strings.Contains(got, c.want) || strings.HasSuffix(c.want, ".") && got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}

// The host-side wait of one restart request: restartPollSeconds, less as the
// deadline nears, at least a second.
func TestWaitSeconds(t *testing.T) {
	e := New(&fakeClients{})
	if got := e.waitSeconds(context.Background()); got != restartPollSeconds {
		t.Errorf("no deadline: %d, want %d", got, restartPollSeconds)
	}
	for _, c := range []struct {
		left time.Duration
		want int
	}{{time.Hour, restartPollSeconds}, {4*time.Second + 500*time.Millisecond, 2}, {time.Second, 1}, {-time.Minute, 1}} {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(c.left))
		if got := e.waitSeconds(ctx); got != c.want {
			t.Errorf("%s left: %d, want %d", c.left, got, c.want)
		}
		cancel()
	}
}

// Without an early check (no port known before the read), Observe asks SQL Server
// after the read and returns: nothing waits on a check that never started.
func TestObserveWithoutAnEarlyCheckReturns(t *testing.T) {
	w := newWorld(newFakeHost())
	done := make(chan error, 1)
	go func() {
		_, err := w.engine.Observe(context.Background(), defaultTarget)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Observe did not return within 10 s")
	}
	if w.checker.checks != 1 {
		t.Errorf("SQL Server asked %d times, want once", w.checker.checks)
	}
}
