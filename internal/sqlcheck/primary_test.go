package sqlcheck

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds"
)

// simReplica serves one simulated instance's TDS endpoint: go-mssqldb against the
// simulator's T-SQL (sp_getapplock, the HADR views).
func simReplica(t *testing.T, h *host.Host) Target {
	t.Helper()
	inst, ok := h.Instance("MSSQLSERVER")
	if !ok {
		t.Fatal("no instance")
	}
	ep := serve(t, inst.TDSHandler(), tds.Options{}, nil)
	return Target{Host: "127.0.0.1", Port: ep.port, Instance: "MSSQLSERVER"}
}

func simGroup(t *testing.T) (primary, secondary *host.Host) {
	t.Helper()
	dir := &host.AGDirectory{}
	mk := func(name, role string) *host.Host {
		h, err := host.New(host.HostConfig{Name: name, Address: "127.0.0.1", Instances: []host.InstanceConfig{{Name: "MSSQLSERVER",
			Logins:            []host.LoginConfig{{Name: testLogin, Password: testPassword}},
			AvailabilityGroup: &host.AvailabilityGroupConfig{Name: "AG1", Role: role}}}}, host.Options{AGs: dir})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.Close)
		return h
	}
	return mk("SQL01", host.AGRolePrimary), mk("SQL02", host.AGRoleSecondary)
}

// A secondary names its primary; the primary's health sees every replica; the
// restart lock is one run's at a time, the second told which replica restarts,
// and the session's end releases it.
func TestGroupHealthAndLockOnThePrimary(t *testing.T) {
	ph, sh := simGroup(t)
	pt, st := simReplica(t, ph), simReplica(t, sh)
	c, ok := New(plainConfig()).(*checker)
	if !ok {
		t.Fatalf("New returned a %T, not a *checker", New(plainConfig()))
	}
	ctx := ctxFor(t, 20*time.Second)
	rep, err := c.Check(ctx, st)
	if err != nil {
		t.Fatalf("Check on the secondary: %v", err)
	}
	if rep.Primaries["AG1"] != "SQL01" || len(rep.Replicas) != 1 {
		t.Fatalf("secondary: primaries %v, replicas %v; want SQL01 and only its own row", rep.Primaries, rep.Replicas)
	}
	rs, err := c.GroupHealth(ctx, pt, "AG1")
	if err != nil || len(rs) != 2 {
		t.Fatalf("GroupHealth on the primary: %v %v, want both replicas", rs, err)
	}
	if _, err := c.GroupHealth(ctx, st, "AG1"); err == nil {
		t.Error("GroupHealth accepted a secondary as the primary")
	}
	first, err := c.LockGroup(ctx, pt, "AG1", "SQL02")
	if err != nil {
		t.Fatalf("first lock: %v", err)
	}
	_, err = c.LockGroup(ctx, pt, "ag1", "SQL03")
	var locked *contract.GroupLockedError
	if !errors.As(err, &locked) || locked.Replica != "SQL02" {
		t.Fatalf("second lock: %v, want a GroupLockedError naming SQL02", err)
	}
	if rs, err := first.Health(ctx); err != nil || len(rs) != 2 {
		t.Errorf("health on the lock's session: %v %v", rs, err)
	}
	first.Release()
	// The session's end reaches the simulator after the client closed it: ask
	// until the lock is free or the deadline.
	for {
		again, err := c.LockGroup(ctx, pt, "AG1", "SQL03")
		if err == nil {
			again.Release()
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the lock was not released with its session: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestLockNameFitsAndIsCaseBlind(t *testing.T) {
	long := fmt.Sprintf("%0200d", 1)
	if n := lockName(long, long); len(n) > 255 || lockName("ag1") != lockName("AG1") {
		t.Errorf("lock names %q", n)
	}
}

// A failover after the lock was taken: the lock's session is on an instance that
// now hosts a secondary, and its health read says so with a NotPrimaryError naming
// the new primary (the engine stops waiting on it).
func TestLockHealthAfterAFailoverNamesTheNewPrimary(t *testing.T) {
	ph, sh := simGroup(t)
	pt := simReplica(t, ph)
	c, ok := New(plainConfig()).(*checker)
	if !ok {
		t.Fatalf("New returned a %T, not a *checker", New(plainConfig()))
	}
	ctx := ctxFor(t, 20*time.Second)
	lock, err := c.LockGroup(ctx, pt, "AG1", "SQL02")
	if err != nil {
		t.Fatalf("lock: %v", err)
	}
	defer lock.Release()
	if err := ph.SetAGRole("MSSQLSERVER", "", host.AGRoleSecondary); err != nil {
		t.Fatal(err)
	}
	if err := sh.SetAGRole("MSSQLSERVER", "", host.AGRolePrimary); err != nil {
		t.Fatal(err)
	}
	_, err = lock.Health(ctx)
	var moved *contract.NotPrimaryError
	if !errors.As(err, &moved) || moved.Group != "AG1" || moved.Primary != "SQL02" {
		t.Fatalf("health after the failover: %v (%+v), want a NotPrimaryError naming SQL02", err, moved)
	}
}
