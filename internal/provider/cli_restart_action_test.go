package provider

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// The mssqlifi_restart action with the real CLI: Terraform 1.14 and later invoke
// actions (terraform apply -invoke=…); the same behaviours are tested at the
// protocol level in every run (action_restart_test.go).

// actionCLI is the CLI harness when its terraform knows actions and terraform
// query (Terraform 1.14 and later); otherwise the test skips, naming the version
// it needs.
func actionCLI(t *testing.T) *cliWork {
	t.Helper()
	w := newCLI(t)
	cmd := exec.Command(w.bin, "-version")
	cmd.Env = append(os.Environ(), "CHECKPOINT_DISABLE=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s -version: %v", w.bin, err)
	}
	m := cliVersionRe.FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("%s -version printed %q", w.bin, out)
	}
	major, _ := strconv.Atoi(m[2])
	minor, _ := strconv.Atoi(m[3])
	if m[1] != "Terraform" || major == 1 && minor < 14 {
		t.Skipf("%s is %s v%s.%s: actions and terraform query need Terraform 1.14 or later; set TF_ACC_TERRAFORM_PATH to one "+
			"(a release binary, or `go build` of github.com/hashicorp/terraform at a v1.14 or later tag, outside this repository)", w.bin, m[1], m[2], m[3])
	}
	return w
}

// invokeRestart runs terraform apply -invoke=action.mssqlifi_restart.this and
// returns the run and its progress messages (action_progress), in order.
func (w *cliWork) invokeRestart() (*tfRun, []string) {
	w.t.Helper()
	r := w.run("apply", "-auto-approve", "-json", "-no-color", "-invoke=action.mssqlifi_restart.this")
	var progress []string
	sc := bufio.NewScanner(strings.NewReader(r.Stdout))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var l struct {
			Type string `json:"type"`
			Hook struct {
				Message string `json:"message"`
			} `json:"hook"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Type == "action_progress" {
			progress = append(progress, l.Hook.Message)
		}
	}
	return r, progress
}

// restartActionConfig is the resource with restart = "never" and the action for
// its instance.
func restartActionConfig(addr string) string {
	return resourceConfig(addr, `restart = "never"`) + fmt.Sprintf(`
action "mssqlifi_restart" "this" {
  config {
    host = %q
  }
}
`, addr)
}

// A grant left pending by restart = "never" is made effective by the action in a
// maintenance window; the next plan is empty and the refresh reports
// restart_pending = false.
func TestCLI_restartActionMakesPendingGrantEffective(t *testing.T) {
	t.Parallel()
	w := actionCLI(t)
	e := startSim(t, nil)
	w.write(e.providerConfig(true) + restartActionConfig(e.addr))
	w.mustApply()
	if a := w.attrs(); a["restart_pending"] != true || a["privilege_granted"] != true {
		t.Fatalf("after the apply with restart = \"never\": restart_pending %v, privilege_granted %v; want true, true", a["restart_pending"], a["privilege_granted"])
	}
	before := e.engineStart()

	r, progress := w.invokeRestart()
	if r.Exit != 0 {
		t.Fatalf("the action failed:\n%s", r.describe())
	}
	if after := e.engineStart(); !after.After(before) {
		t.Fatalf("the action did not restart the Engine (started %v, was %v)", after, before)
	}
	wantProgress(t, progress, `restart needed: the running Engine has IFI off and its next start gives it on$`)
	wantProgress(t, progress, `: restart done$`)

	p := w.plan()
	p.wantPlanExit(t, 0)
	if r := w.run("apply", "-refresh-only", "-auto-approve", "-json", "-no-color"); r.Exit != 0 {
		t.Fatalf("refresh after the action: exit %d\n%s", r.Exit, r.Stderr)
	}
	if a := w.attrs(); a["restart_pending"] != false || a["ifi_enabled"] != true {
		t.Errorf("after the action: restart_pending %v, ifi_enabled %v; want false, true", a["restart_pending"], a["ifi_enabled"])
	}

	// Nothing pending: the action says so and restarts nothing.
	before = e.engineStart()
	r, _ = w.invokeRestart()
	if r.Exit != 0 {
		t.Fatalf("the action failed:\n%s", r.describe())
	}
	// Terraform says an action's diagnostics as "… when invoking action", the
	// provider's summary leading the detail.
	r.wantDiag(t, "warning", `^Warning when invoking action$`, `^No restart needed: .*IFI on, as its next start gives it.*Nothing was changed`)
	if after := e.engineStart(); !after.Equal(before) {
		t.Errorf("a restart not needed restarted the Engine")
	}
}

// The action refuses on an availability group's primary and during a backup,
// changing nothing.
func TestCLI_restartActionRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, detail    string
		primary, backup bool
	}{
		{name: "primary", primary: true,
			detail: `^Primary availability replica: refusing to restart it: .*primary replica of the Always On availability group AG1.*Nothing was changed`},
		{name: "backup", backup: true,
			detail: `^Backup or restore running: refusing to restart instance MSSQLSERVER on .*BACKUP DATABASE.*Nothing was changed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := actionCLI(t)
			var e *accEnv
			if tc.primary {
				e = startSim(t, agPrimaryHost())
			} else {
				e = startSim(t, nil)
			}
			w.write(e.providerConfig(true) + restartActionConfig(e.addr))
			w.mustApply()
			if tc.backup {
				if err := e.sim.Do(e.name, winsim.Action{Action: winsim.ActionStartBackup, Instance: "MSSQLSERVER"}); err != nil {
					t.Fatal(err)
				}
			}
			before, n := e.engineStart(), len(e.operations())
			r, _ := w.invokeRestart()
			if r.Exit == 0 {
				t.Fatalf("the action restarted:\n%s", r.describe())
			}
			r.wantDiag(t, "error", `^Error when invoking action$`, tc.detail)
			if after := e.engineStart(); !after.Equal(before) {
				t.Errorf("the refused action restarted the Engine")
			}
			if ops := e.opsSince(n); countOp(ops, "restart_instance") != 0 {
				t.Errorf("operations %v, want no restart_instance", ops)
			}
			if a := w.attrs(); a["restart_pending"] != true {
				t.Errorf("state restart_pending %v after the refusal, want true (unchanged)", a["restart_pending"])
			}
		})
	}
}

// The action_trigger example (examples/actions/mssqlifi_restart/action-trigger.tf),
// as written but for its host: the create grants without restarting (restart =
// "never"), the trigger invokes the action after it in the same apply, which
// restarts the Engine through the gate; the refresh then reads restart_pending =
// false, and the next plan is empty (an after_update trigger has nothing to run).
func TestCLI_restartActionTriggerExample(t *testing.T) {
	t.Parallel()
	w := actionCLI(t)
	e := startSim(t, nil)
	ex, err := os.ReadFile("../../examples/actions/mssqlifi_restart/action-trigger.tf")
	if err != nil {
		t.Fatal(err)
	}
	hostLine := regexp.MustCompile(`(?m)^(\s*)host(\s*)= "sql04\.contoso\.com"$`)
	if n := len(hostLine.FindAllIndex(ex, -1)); n != 2 {
		t.Fatalf("the example names its host %d times; want 2 (the resource's and the action's)", n)
	}
	w.write(e.providerConfig(true) + hostLine.ReplaceAllString(string(ex), fmt.Sprintf("${1}host${2}= %q", e.addr)))
	before := e.engineStart()
	n := len(e.operations())
	ap := w.mustApply()
	ops := e.opsSince(n)
	if countOp(ops, contract.OpSetRight) != 1 || countOp(ops, contract.OpRestartInstance) != 1 {
		t.Errorf("the apply's operations %v; want one set_right (the create's) and one restart_instance (the triggered action's)", ops)
	}
	if after := e.engineStart(); !after.After(before) {
		t.Fatalf("the triggered action did not restart the Engine (started %v, was %v):\n%s", after, before, ap.describe())
	}
	if r := w.run("apply", "-refresh-only", "-auto-approve", "-json", "-no-color"); r.Exit != 0 {
		t.Fatalf("refresh after the action: exit %d\n%s", r.Exit, r.Stderr)
	}
	if a := w.state()["mssqlifi_instant_file_initialization.sql04"]; a["restart_pending"] != false || a["ifi_enabled"] != true || a["privilege_granted"] != true {
		t.Errorf("after the triggered restart: restart_pending %v, ifi_enabled %v, privilege_granted %v; want false, true, true",
			a["restart_pending"], a["ifi_enabled"], a["privilege_granted"])
	}
	before = e.engineStart()
	w.plan().wantPlanExit(t, 0)
	if after := e.engineStart(); !after.Equal(before) {
		t.Errorf("the plan after the triggered restart restarted the Engine")
	}
}

// The action's example (examples/actions/mssqlifi_restart/action.tf), as written but
// for its host: the apply grants REPORTING's right without restarting, and the
// invocation the example names restarts REPORTING's Engine (and not the default
// instance's); the refresh then reads restart_pending = false, and the next plan is
// empty.
func TestCLI_restartActionInvokeExample(t *testing.T) {
	t.Parallel()
	w := actionCLI(t)
	e := startSim(t, func(hc *host.HostConfig) {
		hc.Instances = append(hc.Instances, host.InstanceConfig{Name: "REPORTING", Logins: []host.LoginConfig{{Name: accSQLUser, Password: accSQLPass}}})
	})
	ex, err := os.ReadFile("../../examples/actions/mssqlifi_restart/action.tf")
	if err != nil {
		t.Fatal(err)
	}
	const invoke = "terraform apply -invoke=action.mssqlifi_restart.sql02_reporting"
	if !strings.Contains(string(ex), invoke) {
		t.Fatalf("the example no longer says %q", invoke)
	}
	hostLine := regexp.MustCompile(`(?m)^(\s*)host(\s*)= "sql02\.contoso\.com"$`)
	if n := len(hostLine.FindAllIndex(ex, -1)); n != 2 {
		t.Fatalf("the example names its host %d times; want 2 (the resource's and the action's)", n)
	}
	w.write(e.providerConfig(true) + hostLine.ReplaceAllString(string(ex), fmt.Sprintf("${1}host${2}= %q", e.addr)))
	w.mustApply()
	const addr = "mssqlifi_instant_file_initialization.sql02_reporting"
	if a := w.state()[addr]; a["restart_pending"] != true || a["privilege_granted"] != true {
		t.Fatalf("after the apply: restart_pending %v, privilege_granted %v; want true, true", a["restart_pending"], a["privilege_granted"])
	}
	stops, defaultStops := e.stops(`MSSQL$REPORTING`), e.stops("MSSQLSERVER")
	r := w.run(append([]string{"apply", "-auto-approve", "-json", "-no-color"}, strings.Fields(invoke)[2:]...)...)
	if r.Exit != 0 {
		t.Fatalf("%s failed:\n%s", invoke, r.describe())
	}
	if e.stops(`MSSQL$REPORTING`) != stops+1 || e.stops("MSSQLSERVER") != defaultStops {
		t.Errorf("the action stopped REPORTING %d times and the default instance %d times; want once and never",
			e.stops(`MSSQL$REPORTING`)-stops, e.stops("MSSQLSERVER")-defaultStops)
	}
	if r := w.run("apply", "-refresh-only", "-auto-approve", "-json", "-no-color"); r.Exit != 0 {
		t.Fatalf("refresh after the action: exit %d\n%s", r.Exit, r.Stderr)
	}
	if a := w.state()[addr]; a["restart_pending"] != false || a["ifi_enabled"] != true {
		t.Errorf("after the action: restart_pending %v, ifi_enabled %v; want false, true", a["restart_pending"], a["ifi_enabled"])
	}
	w.plan().wantPlanExit(t, 0)
}
