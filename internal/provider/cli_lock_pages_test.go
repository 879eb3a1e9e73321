package provider

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// IFI and Lock Pages in Memory turned on for one instance in one apply: the plan
// says "grants two rights and restarts once" and warns once of the unlimited max
// server memory; the apply restarts SQL Server once, after both rights are in
// place, and the state verifies both on; the next plan is empty and says nothing.
func TestCLI_ifiAndLockPagesRestartOnce(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, nil)
	w.write(e.providerConfig(true) + resourceConfig(e.addr, "  lock_pages_in_memory = true"))

	plan := w.plan()
	plan.wantPlanExit(t, 2)
	plan.wantDiag(t, "warning", "grants two rights and restarts once", "Lock pages in memory")
	if ws := plan.find("warning", "Lock pages in memory with unlimited max server memory", "2147483647"); len(ws) != 1 {
		t.Errorf("the plan warns %d times of the unlimited max server memory; want once:\n%s", len(ws), plan.describe())
	}

	stopsBefore := e.stops("MSSQLSERVER")
	mark := len(e.operations())
	w.mustApply()
	if n := e.stops("MSSQLSERVER") - stopsBefore; n != 1 {
		t.Errorf("the apply stopped MSSQLSERVER %d times; want one restart for both rights", n)
	}
	if n := countOp(e.opsSince(mark), contract.OpRestartInstance); n != 1 {
		t.Errorf("the apply sent %d restart_instance requests; want 1 (ops %s)", n, strings.Join(e.opsSince(mark), ", "))
	}
	in := e.instance("MSSQLSERVER")
	if in.Process == nil || in.Process.MemoryModel != contract.MemoryModelLockPages || in.InstantFileInitialization == nil || !*in.InstantFileInitialization {
		t.Fatalf("the Engine after the apply: %+v (process %+v); want IFI on and LOCK_PAGES", in, in.Process)
	}
	a := w.attrs()
	for k, want := range map[string]any{"ifi_enabled": true, "privilege_granted": true, "lock_pages_in_memory": true,
		"lock_pages_in_memory_granted": true, "memory_model": contract.MemoryModelLockPages, "verified_by": "sql_dmv"} {
		if a[k] != want {
			t.Errorf("state %s = %v, want %v", k, a[k], want)
		}
	}

	again := w.plan()
	again.wantPlanExit(t, 0)
	if ws := again.bySeverity("warning"); len(ws) != 0 {
		t.Errorf("the converged plan is not quiet:\n%s", again.describe())
	}

	// The destroy revokes both rights and restarts nothing, saying the locked pages
	// stay until the next restart.
	stops := e.stops("MSSQLSERVER")
	d := w.destroy()
	if d.Exit != 0 {
		t.Fatalf("terraform destroy failed (exit %d):\n%s", d.Exit, d.describe())
	}
	sid := winsid.ServiceSID("MSSQLSERVER")
	if e.holds(sid) || e.holdsRight(contract.RightLockMemory, sid) || e.stops("MSSQLSERVER") != stops {
		t.Errorf("after the destroy: IFI's right %v, Lock pages %v, stops %d → %d; want both revoked, no restart",
			e.holds(sid), e.holdsRight(contract.RightLockMemory, sid), stops, e.stops("MSSQLSERVER"))
	}
	d.wantDiag(t, "warning", "Locked pages stay until the next restart", "destroy never restarts")
}

// IFI and Lock Pages in Memory granted without a restart run one set_right for both
// rights: the create runs three commands on the host (the plan's read, the final
// plan's read, which the create reuses, and the set_right), where it ran four, a
// set_right per right (issue 41); both rights are held after it.
func TestCLI_bothRightsWithoutRestartInOneSetRight(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, nil)
	w.write(e.providerConfig(true) + resourceConfig(e.addr, "  lock_pages_in_memory = true\n  restart = \"never\""))
	stops := e.stops("MSSQLSERVER")
	w.mustApply()
	want := []string{string(contract.OpReadHost), string(contract.OpReadHost), string(contract.OpSetRight)}
	if ops := e.operations(); strings.Join(ops, ",") != strings.Join(want, ",") {
		t.Errorf("the create of both rights without a restart ran %s on the host; want %s", strings.Join(ops, ", "), strings.Join(want, ", "))
	}
	sid := winsid.ServiceSID("MSSQLSERVER")
	if !e.holds(sid) || !e.holdsRight(contract.RightLockMemory, sid) || e.stops("MSSQLSERVER") != stops {
		t.Errorf("after the create: IFI's right %v, Lock pages %v, stops %d → %d; want both granted, no restart",
			e.holds(sid), e.holdsRight(contract.RightLockMemory, sid), stops, e.stops("MSSQLSERVER"))
	}
	if a := w.attrs(); a["privilege_granted"] != true || a["lock_pages_in_memory_granted"] != true {
		t.Errorf("state privilege_granted = %v, lock_pages_in_memory_granted = %v; want both true", a["privilege_granted"], a["lock_pages_in_memory_granted"])
	}
}

// When only Lock Pages in Memory changes, only it restarts SQL Server; an instance
// whose configuration leaves it unset never restarts for it.
func TestCLI_lockPagesAloneAndUnmanaged(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, nil)
	w.write(e.providerConfig(true) + resourceConfig(e.addr, ""))
	w.mustApply() // IFI only: one restart, Lock pages in memory untouched
	sid := winsid.ServiceSID("MSSQLSERVER")
	if e.holdsRight(contract.RightLockMemory, sid) {
		t.Fatalf("an apply without lock_pages_in_memory granted %s", contract.RightLockMemory)
	}
	if a := w.attrs(); a["lock_pages_in_memory"] != nil || a["lock_pages_in_memory_granted"] != false || a["memory_model"] != contract.MemoryModelConventional {
		t.Errorf("unmanaged: lock_pages_in_memory %v, granted %v, memory_model %v; want null, false, CONVENTIONAL",
			a["lock_pages_in_memory"], a["lock_pages_in_memory_granted"], a["memory_model"])
	}
	w.plan().wantPlanExit(t, 0)

	w.write(e.providerConfig(true) + resourceConfig(e.addr, "  lock_pages_in_memory = true"))
	p := w.plan()
	p.wantPlanExit(t, 2)
	p.wantDiag(t, "warning", "grants Lock pages in memory and restarts SQL Server", "")
	stops := e.stops("MSSQLSERVER")
	w.mustApply()
	if n := e.stops("MSSQLSERVER") - stops; n != 1 {
		t.Errorf("turning Lock Pages in Memory on stopped MSSQLSERVER %d times; want 1", n)
	}
	if a := w.attrs(); a["memory_model"] != contract.MemoryModelLockPages || a["ifi_enabled"] != true {
		t.Errorf("after the apply: memory_model %v, ifi_enabled %v", a["memory_model"], a["ifi_enabled"])
	}
}

// Lock pages in memory revoked outside Terraform shows as drift: the plan names it
// and grants it again, with no restart (the running Engine keeps its locked pages).
func TestCLI_lockPagesDriftShowsInPlan(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, nil)
	w.write(e.providerConfig(true) + resourceConfig(e.addr, "  lock_pages_in_memory = true"))
	w.mustApply()
	if _, err := e.host().RevokeRight(contract.RightLockMemory, winsid.ServiceSID("MSSQLSERVER")); err != nil {
		t.Fatal(err)
	}
	p := w.plan()
	p.wantPlanExit(t, 2)
	p.wantDiag(t, "warning", "Changed outside Terraform: .*grants Lock pages in memory, no restart", "no longer holds Lock pages in memory")
	stops := e.stops("MSSQLSERVER")
	w.mustApply()
	if e.stops("MSSQLSERVER") != stops || !e.holdsRight(contract.RightLockMemory, winsid.ServiceSID("MSSQLSERVER")) {
		t.Errorf("the drift's apply: stops %d → %d, holds %v; want the grant again and no restart", stops, e.stops("MSSQLSERVER"),
			e.holdsRight(contract.RightLockMemory, winsid.ServiceSID("MSSQLSERVER")))
	}
	w.plan().wantPlanExit(t, 0)
}

// An import adopts IFI as the host has it and leaves lock_pages_in_memory unset: a
// configuration that sets it plans an update that starts managing the right,
// planned_action none when the host already has it, and the apply changes nothing
// on the host; the next plan is empty.
func TestCLI_importThenManageLockPages(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	sid := winsid.ServiceSID("MSSQLSERVER")
	e := startSim(t, func(hc *host.HostConfig) {
		hc.Rights = map[string][]string{contract.RightManageVolume: {sid}, contract.RightLockMemory: {sid}}
	})
	w.write(e.providerConfig(true) + fmt.Sprintf(`
import {
  to = %s
  id = "%s/MSSQLSERVER"
}
`, resName, e.addr) + resourceConfig(e.addr, "  lock_pages_in_memory = true"))
	r, c := w.planOut("import.tfplan")
	r.wantPlanExit(t, 2)
	wantPlanned(t, c, "none")
	if c.Before["lock_pages_in_memory"] != nil || c.After["lock_pages_in_memory"] != true {
		t.Errorf("lock_pages_in_memory %v -> %v; want null (the import) -> true", c.Before["lock_pages_in_memory"], c.After["lock_pages_in_memory"])
	}
	mark := len(e.operations())
	if ap := w.run("apply", "-auto-approve", "-json", "-no-color", "import.tfplan"); ap.Exit != 0 {
		t.Fatalf("terraform apply failed (exit %d):\n%s", ap.Exit, ap.describe())
	}
	if n := countOp(e.opsSince(mark), contract.OpSetRight) + countOp(e.opsSince(mark), contract.OpRestartInstance); n != 0 {
		t.Errorf("the apply changed the host: %v", e.opsSince(mark))
	}
	if a := w.attrs(); a["lock_pages_in_memory"] != true || a["memory_model"] != contract.MemoryModelLockPages {
		t.Errorf("state: lock_pages_in_memory %v, memory_model %v", a["lock_pages_in_memory"], a["memory_model"])
	}
	w.plan().wantPlanExit(t, 0)
}
