package provider

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// fourInstanceHost is one host with the instances I01..I04, each managed by a
// resource, applied.
func fourInstanceHost(t *testing.T, w *cliWork) (*accEnv, func(skip int) string) {
	t.Helper()
	k := nextAddr.Add(1)
	hc := defaultHostConfig(fmt.Sprintf("sql%02d", k), fmt.Sprintf("127.0.0.%d", 10+k))
	fleetHost(4, 100, 100)(&hc)
	e := startHosts(t, []host.HostConfig{hc})[0]
	cfg := func(skip int) string {
		c := e.providerConfig(true)
		for i := 1; i <= 4; i++ {
			if i == skip {
				continue
			}
			c += fmt.Sprintf(`
resource "mssqlifi_instant_file_initialization" "i%02d" {
  host     = %q
  port     = %d
  instance = "I%02d"
}
`, i, e.addr, e.httpsPort, i)
		}
		return c
	}
	w.write(cfg(0))
	if r := w.run("apply", "-auto-approve", "-json", "-no-color", "-parallelism=10"); r.Exit != 0 {
		t.Fatalf("terraform apply failed (exit %d):\n%s", r.Exit, r.describe())
	}
	return e, cfg
}

// The plan of four instances on one host reads the host once: one read_host for
// the four refreshes (issue 28's "one read per host per run"), and the plan is
// empty.
func TestCLI_planOfFourInstancesReadsTheHostOnce(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e, _ := fourInstanceHost(t, w)
	mark := len(e.operations())
	r := w.run("plan", "-json", "-detailed-exitcode", "-no-color", "-parallelism=10")
	r.wantPlanExit(t, 0)
	if ops := e.opsSince(mark); len(ops) != 1 || ops[0] != string(contract.OpReadHost) {
		t.Errorf("the plan of four instances ran %d commands on the host (%s); want one read_host", len(ops), strings.Join(ops, ", "))
	}
}

// A plan longer than the engine's ReadFreshness (30 s) still reads the host once:
// the refreshes of a plan share the run's read however late Terraform visits the
// host's other instances (here one at a time, after a read_host whose answer comes
// 31 s late), as long as the run changes nothing on the host (issue 41).
func TestCLI_longPlanOfFourInstancesReadsTheHostOnce(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e, _ := fourInstanceHost(t, w)
	e.do(winsim.Action{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{
		Fault: winsim.FaultSlow, Request: "Receive", Operation: string(contract.OpReadHost), DelayMS: 31000, Count: 1}})
	mark := len(e.operations())
	start := time.Now()
	r := w.run("plan", "-json", "-detailed-exitcode", "-no-color", "-parallelism=1")
	took := time.Since(start)
	r.wantPlanExit(t, 0)
	if took <= 30*time.Second {
		t.Fatalf("the plan took %s; the test needs one longer than 30 s", took)
	}
	if ops := e.opsSince(mark); len(ops) != 1 || ops[0] != string(contract.OpReadHost) {
		t.Errorf("the plan of four instances over %s ran %d commands on the host (%s); want one read_host", took.Round(time.Second), len(ops), strings.Join(ops, ", "))
	}
}

// Removing one of four instances from the configuration runs two commands on the
// host, its run's refresh included: the refresh's read_host, which the destroy
// reuses, and the revoke.
func TestCLI_removingOneOfFourRunsTwoCommands(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e, cfg := fourInstanceHost(t, w)
	sid := winsid.ServiceSID("MSSQL$I03")
	mark := len(e.operations())
	w.write(cfg(3))
	if r := w.run("apply", "-auto-approve", "-json", "-no-color", "-parallelism=10"); r.Exit != 0 {
		t.Fatalf("terraform apply failed (exit %d):\n%s", r.Exit, r.describe())
	}
	want := []string{string(contract.OpReadHost), string(contract.OpSetRight)}
	if ops := e.opsSince(mark); strings.Join(ops, ",") != strings.Join(want, ",") {
		t.Errorf("removing one of four instances ran %s on the host; want %s", strings.Join(ops, ", "), strings.Join(want, ", "))
	}
	if e.holds(sid) {
		t.Errorf("the removed instance's service SID %s still holds the right", sid)
	}
}

// A create with its restart runs at most three commands on the host (the guard
// aside): the plan's read, the final plan's read (Terraform gives a create's final
// plan nothing of the first plan's), which the create reuses, and restart_instance
// with the grant.
func TestCLI_createWithRestartRunsThreeCommands(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, nil)
	w.write(e.providerConfig(true) + resourceConfig(e.addr, ""))
	w.mustApply()
	want := []string{string(contract.OpReadHost), string(contract.OpReadHost), string(contract.OpRestartInstance)}
	if ops := e.operations(); strings.Join(ops, ",") != strings.Join(want, ",") {
		t.Errorf("the create with its restart ran %s on the host; want %s", strings.Join(ops, ", "), strings.Join(want, ", "))
	}
	if in := e.instance("MSSQLSERVER"); in.InstantFileInitialization == nil || !*in.InstantFileInitialization {
		t.Errorf("the instance runs without IFI after the create: %+v", in)
	}
}
