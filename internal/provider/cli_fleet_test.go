package provider

import (
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// Availability groups, fleets and one instance claimed twice, through the real CLI.

// agHost makes the default instance a replica of AG1 with the given role.
func agHost(role string) func(*host.HostConfig) {
	return func(hc *host.HostConfig) {
		hc.Instances[0].AvailabilityGroup = &host.AvailabilityGroupConfig{Name: "AG1", Role: role}
	}
}

// A primary replica that needs a restart: the apply refuses before changing
// anything and says how to fail over or opt in; after a failover (the simulator's
// control plane) the same apply grants and restarts, and the state reports the
// group and the new role.
func TestCLI_primaryReplicaIsNotRestarted(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, agHost(host.AGRolePrimary))
	before := e.serviceStart("MSSQLSERVER")
	w.write(e.providerConfig(true) + resourceConfig(e.addr, ""))
	r := w.apply()
	if r.Exit == 0 {
		t.Fatalf("the apply restarted a primary replica:\n%s", r.describe())
	}
	r.wantDiag(t, "error", `^Primary availability replica: refusing to restart it$`,
		`primary replica of the Always On availability group AG1(.|\n)*Nothing was changed(.|\n)*FAILOVER(.|\n)*restart = "if_needed_including_primary"`)
	if e.holds(defaultSvcSID) {
		t.Error("the refused apply granted the right")
	}
	if s := e.serviceStart("MSSQLSERVER"); !s.Equal(before) {
		t.Errorf("the refused apply restarted the Engine: started %v, was %v", s, before)
	}

	if err := e.sim.Do(e.name, winsim.Action{Action: winsim.ActionSetAGRole, Instance: "MSSQLSERVER", Role: host.AGRoleSecondary}); err != nil {
		t.Fatal(err)
	}
	w.mustApply()
	if !e.holds(defaultSvcSID) {
		t.Error("the apply on the secondary did not grant the right")
	}
	if s := e.serviceStart("MSSQLSERVER"); s.Equal(before) {
		t.Error("the apply on the secondary did not restart the Engine")
	}
	a := w.attrs(resName)
	if a["availability_group"] != "AG1" || a["availability_role"] != "secondary" || a["ifi_enabled"] != true {
		t.Errorf("state: availability_group %v, availability_role %v, ifi_enabled %v; want AG1, secondary, true",
			a["availability_group"], a["availability_role"], a["ifi_enabled"])
	}
	w.plan().wantPlanExit(t, 0)
}

// restart = "if_needed_including_primary" restarts a primary, with a warning.
func TestCLI_primaryReplicaRestartsWhenOptedIn(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, agHost(host.AGRolePrimary))
	n := len(e.operations())
	w.write(e.providerConfig(true) + resourceConfig(e.addr, `restart = "if_needed_including_primary"`))
	r := w.mustApply()
	r.wantDiag(t, "warning", `^Restarting a primary availability replica$`, `primary replica of the availability group AG1`)
	if ops := e.opsSince(n); countOp(ops, contract.OpRestartInstance) != 1 {
		t.Errorf("operations %v, want one restart_instance", ops)
	}
	if a := w.attrs(resName); a["availability_role"] != "primary" || a["ifi_enabled"] != true {
		t.Errorf("state: availability_role %v, ifi_enabled %v; want primary, true", a["availability_role"], a["ifi_enabled"])
	}
}

// Without SQL credentials the role is unknown: a restart proceeds and says so, and
// the attributes are null.
func TestCLI_unknownReplicaRoleWarnsWhenRestarting(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, agHost(host.AGRolePrimary))
	w.write(e.providerConfig(false) + resourceConfig(e.addr, ""))
	r := w.mustApply()
	r.wantDiag(t, "warning", `^Availability group role unknown: restarting anyway$`, `SQL Server was not asked(.|\n)*sql block`)
	if a := w.attrs(resName); a["availability_group"] != nil || a["availability_role"] != nil {
		t.Errorf("state: availability_group %v, availability_role %v; want null, null", a["availability_group"], a["availability_role"])
	}
}
