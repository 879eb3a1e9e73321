package provider

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// The plan says what the apply will do (planned_action and one warning per
// resource), through the real CLI.

// plannedChange is one resource's planned change in `terraform show -json PLANFILE`.
type plannedChange struct {
	Actions []string       `json:"actions"`
	Before  map[string]any `json:"before"`
	After   map[string]any `json:"after"`
	Unknown map[string]any `json:"after_unknown"`
}

// planOut runs terraform plan -out=file (with args) and returns the run and
// resName's change.
func (w *cliWork) planOut(file string, args ...string) (*tfRun, plannedChange) {
	w.t.Helper()
	r := w.run(append([]string{"plan", "-json", "-detailed-exitcode", "-no-color", "-out=" + file}, args...)...)
	if r.Exit == 1 {
		return r, plannedChange{}
	}
	s := w.run("show", "-json", "-no-color", file)
	var p struct {
		ResourceChanges []struct {
			Address string        `json:"address"`
			Change  plannedChange `json:"change"`
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal([]byte(s.Stdout), &p); err != nil {
		w.t.Fatalf("terraform show -json %s: %v\n%s", file, err, s.Stdout)
	}
	for _, rc := range p.ResourceChanges {
		if rc.Address == resName {
			return r, rc.Change
		}
	}
	w.t.Fatalf("the plan has no change of %s: %s", resName, s.Stdout)
	return r, plannedChange{}
}

func (e *accEnv) do(a winsim.Action) {
	e.t.Helper()
	if err := e.sim.Do(e.name, a); err != nil {
		e.t.Fatalf("%s: %v", a.Action, err)
	}
}

// wantPlanned checks the planned_action the plan shows (known).
func wantPlanned(t *testing.T, c plannedChange, want string) {
	t.Helper()
	if got := c.After["planned_action"]; got != want {
		t.Errorf("planned_action = %v (unknown: %v); want %q", got, c.Unknown["planned_action"], want)
	}
}

// A create's plan reads the host and says whether the apply restarts SQL Server, only
// grants, or refuses; the apply then does exactly that.
func TestCLI_createPlanSaysWhatApplyDoes(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, nil)
	w.write(e.providerConfig(true) + resourceConfig(e.addr, ""))
	where := regexp.QuoteMeta("instance MSSQLSERVER on " + e.addr)

	// IFI off, no grant: grant and restart.
	r, c := w.planOut("restart.tfplan")
	r.wantPlanExit(t, 2)
	wantPlanned(t, c, "grant_and_restart")
	// No restart of this instance timed yet: the documented default, said as such.
	r.wantDiag(t, "warning", `^`+where+`: apply grants the right and restarts SQL Server \(MSSQLSERVER\): unavailable for typically at least `+
		strconv.Itoa(int(ifi.DefaultRestartUnavailable/time.Second))+` s$`,
		regexp.QuoteMeta(`grants "Perform volume maintenance tasks" to NT SERVICE\MSSQLSERVER`)+`(.|\n)*restarts the service MSSQLSERVER`+
			`(.|\n)*has not timed a restart of this instance yet`)

	// The running Engine has IFI (granted and restarted), the grant is gone again: grant only.
	e.do(winsim.Action{Action: winsim.ActionGrantRight, Right: contract.RightManageVolume, SID: defaultSvcSID})
	e.do(winsim.Action{Action: winsim.ActionRestartService, Service: "MSSQLSERVER"})
	e.do(winsim.Action{Action: winsim.ActionRevokeRight, Right: contract.RightManageVolume, SID: defaultSvcSID})
	// A new plan predicts from the host as it is now: nothing of the last plan is kept.
	r, c = w.planOut("grant.tfplan")
	wantPlanned(t, c, "grant")
	r.wantDiag(t, "warning", `^`+where+`: apply grants the right, no restart$`, `running Engine already has IFI on`)
	stops := e.stops("MSSQLSERVER")
	a := w.run("apply", "-json", "-no-color", "grant.tfplan")
	if a.Exit != 0 {
		t.Fatalf("applying the saved plan failed:\n%s", a.describe())
	}
	if e.stops("MSSQLSERVER") != stops || !e.holds(defaultSvcSID) {
		t.Errorf("the apply of a grant-only plan: stops %d -> %d, holds %v; want no stop and the grant", stops, e.stops("MSSQLSERVER"), e.holds(defaultSvcSID))
	}
	if got := w.attrs()["planned_action"]; got != "grant" {
		t.Errorf("state planned_action after the apply = %v; want the planned grant", got)
	}
	// The refresh resets planned_action: the next plan is empty.
	p := w.plan()
	p.wantPlanExit(t, 0)
	p.wantNoDiag(t, "warning", where+": apply")
}

// A Group Policy that does not list the grantee: the create's plan says the apply
// will refuse, and why.
func TestCLI_createPlanSaysRefuse(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, nil)
	e.do(winsim.Action{Action: winsim.ActionSetGroupPolicyRight, Right: contract.RightManageVolume, SIDs: []string{winsid.Administrators}})
	e.do(winsim.Action{Action: winsim.ActionRefreshGroupPolicy})
	w.write(e.providerConfig(true) + resourceConfig(e.addr, ""))
	r, c := w.planOut("refuse.tfplan")
	wantPlanned(t, c, "refuse")
	r.wantDiag(t, "warning", `^instance MSSQLSERVER on `+regexp.QuoteMeta(e.addr)+`: apply will refuse: Group Policy owns the right and does not grant it$`,
		`change nothing`)
	// The assessment's own warning, which the apply would give, is in the plan too.
	r.wantDiag(t, "warning", `^Group Policy owns the right$`, `16 hours`)
}

// Drift is named: a right revoked outside Terraform gives a plan that says so and
// only grants; revoked and then restarted gives a plan that restarts. enabled keeps
// the user's intent in both.
func TestCLI_driftPlansNameWhatChanged(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, nil)
	w.write(e.providerConfig(true) + resourceConfig(e.addr, ""))
	w.mustApply()
	w.plan().wantPlanExit(t, 0)
	where := regexp.QuoteMeta("instance MSSQLSERVER on " + e.addr)

	e.do(winsim.Action{Action: winsim.ActionRevokeRight, Right: contract.RightManageVolume, SID: defaultSvcSID})
	r, c := w.planOut("revoked.tfplan")
	r.wantPlanExit(t, 2)
	wantPlanned(t, c, "grant")
	r.wantDiag(t, "warning", `^Changed outside Terraform: `+where+`: apply grants the right, no restart$`,
		`no longer holds the right \(revoked outside Terraform\)`)
	if c.Before["enabled"] != true || c.After["enabled"] != true {
		t.Errorf("enabled %v -> %v; want the user's true on both sides", c.Before["enabled"], c.After["enabled"])
	}
	if c.Before["privilege_granted"] != false || c.After["privilege_granted"] != true {
		t.Errorf("privilege_granted %v -> %v; want false (the host) -> true (the grant)", c.Before["privilege_granted"], c.After["privilege_granted"])
	}

	e.do(winsim.Action{Action: winsim.ActionRestartService, Service: "MSSQLSERVER"})
	r, c = w.planOut("restarted.tfplan")
	wantPlanned(t, c, "grant_and_restart")
	// The first apply restarted the Engine and timed it: the plan quotes that restart.
	r.wantDiag(t, "warning", `^Changed outside Terraform: `+where+`: apply grants the right and restarts SQL Server \(MSSQLSERVER\): unavailable for about \d+ s$`,
		`revoked outside Terraform(.|\n)*restarts the service MSSQLSERVER(.|\n)*its last restart by this provider \(20\d\d-[^)]*\) took \d+ s from the restart request`)
}

// A saved plan whose host changed before the apply: the apply fails with the
// provider's own error, changing nothing, never Terraform's "inconsistent" one.
func TestCLI_savedPlanHostChanged(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, nil)
	w.write(e.providerConfig(true) + resourceConfig(e.addr, ""))
	w.mustApply()
	e.do(winsim.Action{Action: winsim.ActionRevokeRight, Right: contract.RightManageVolume, SID: defaultSvcSID})
	wantSavedGrantRefused(t, w, e, "grant.tfplan")
}

// wantSavedGrantRefused saves a plan that only grants, restarts the Engine without
// the right, and applies the saved plan: it must fail with the provider's own
// error (what changed, on which instance, plan again), changing nothing.
func wantSavedGrantRefused(t *testing.T, w *cliWork, e *accEnv, file string) {
	t.Helper()
	_, c := w.planOut(file)
	wantPlanned(t, c, "grant")
	// The running Engine loses IFI: the apply would now have to restart it.
	e.do(winsim.Action{Action: winsim.ActionRestartService, Service: "MSSQLSERVER"})
	stops := e.stops("MSSQLSERVER")
	r := w.run("apply", "-json", "-no-color", file)
	if r.Exit == 0 {
		t.Fatalf("the saved plan applied although the host changed:\n%s", r.describe())
	}
	r.wantDiag(t, "error", `^instance MSSQLSERVER on `+regexp.QuoteMeta(e.addr)+` changed since the plan: apply would grant_and_restart, the plan said grant$`,
		`Nothing was changed(.|\n)*run terraform plan again`)
	r.wantNoDiag(t, "error", "inconsistent")
	if e.stops("MSSQLSERVER") != stops || e.holds(defaultSvcSID) {
		t.Errorf("the refused apply changed the host: stops %d -> %d, holds %v", stops, e.stops("MSSQLSERVER"), e.holds(defaultSvcSID))
	}
}

// The documented maintenance-window pattern (examples/): outside the window
// (allow_restarts = false) the plan says grant and that the restart is held, and the
// apply grants without restarting; the next plan is empty, its planned_action
// output included; in the window the plan says restart and the apply restarts; the
// plan after that is empty again, with the output unchanged.
func TestCLI_maintenanceWindowExample(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, nil)
	example, err := os.ReadFile("../../examples/resources/mssqlifi_instant_file_initialization/resource-planned-action.tf")
	if err != nil {
		t.Fatal(err)
	}
	// The example shows the variable and the provider setting as a comment (its
	// directory's provider block is the provider page's): the test declares the
	// variable as the comment does, and its provider block sets allow_restarts.
	variable := regexp.MustCompile(`(?m)^#   (variable "restarts_allowed" \{\n(?:#   .*\n)*?)#   \}\n`).FindStringSubmatch(string(example))
	if variable == nil || !strings.Contains(string(example), "#     allow_restarts = var.restarts_allowed") {
		t.Fatalf("the example does not show the restarts_allowed variable and allow_restarts set from it:\n%s", example)
	}
	declared := regexp.MustCompile(`(?m)^#   `).ReplaceAllString(variable[1], "") + "}\n"
	body := strings.NewReplacer(`"sql01.contoso.com"`, strconv.Quote(e.addr), `instance = "REPORTING"`, "",
		`"mssqlifi_instant_file_initialization" "reporting"`, `"mssqlifi_instant_file_initialization" "this"`,
		"mssqlifi_instant_file_initialization.reporting", resName).Replace(string(example))
	w.write(strings.Replace(e.providerConfig(true), `provider "mssqlifi" {`, "provider \"mssqlifi\" {\n  allow_restarts = var.restarts_allowed", 1) + declared + body)
	where := `instance MSSQLSERVER on ` + regexp.QuoteMeta(e.addr)

	r, c := w.planOut("outside.tfplan")
	wantPlanned(t, c, "grant")
	r.wantDiag(t, "warning", `^`+where+`: restart held by allow_restarts = false$`, `would have the apply do grant_and_restart`)
	stops := e.stops("MSSQLSERVER")
	w.mustApply()
	if e.stops("MSSQLSERVER") != stops || !e.holds(defaultSvcSID) {
		t.Errorf("outside the window: stops %d -> %d, holds %v; want the grant and no restart", stops, e.stops("MSSQLSERVER"), e.holds(defaultSvcSID))
	}
	if a := w.attrs(); a["planned_action"] != "grant" || a["restart_pending"] != true {
		t.Errorf("state after the grant: planned_action %v, restart_pending %v; want grant, true", a["planned_action"], a["restart_pending"])
	}
	w.plan().wantPlanExit(t, 0)

	r, c = w.planOut("window.tfplan", "-var", "restarts_allowed=true")
	r.wantPlanExit(t, 2)
	wantPlanned(t, c, "restart")
	if a := w.run("apply", "-json", "-no-color", "window.tfplan"); a.Exit != 0 {
		t.Fatalf("the window's apply failed:\n%s", a.describe())
	}
	if e.stops("MSSQLSERVER") != stops+1 {
		t.Errorf("in the window: stops %d -> %d; want one restart", stops, e.stops("MSSQLSERVER"))
	}
	for _, args := range [][]string{nil, {"-var", "restarts_allowed=true"}} {
		p := w.run(append([]string{"plan", "-json", "-detailed-exitcode", "-no-color"}, args...)...)
		p.wantPlanExit(t, 0)
		p.wantNoDiag(t, "warning", where)
	}
}

// A create's saved plan whose host changed before the apply: Terraform plans the
// create again during the apply with nothing of the plan (design/plan.md), so
// its own consistency check stops the apply ("Provider produced inconsistent final
// plan" for planned_action, which docs/guides/how-the-resource-works.md explains), and nothing is
// changed. The next plan says what the apply now does.
func TestCLI_savedCreatePlanHostChanged(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, nil)
	w.write(e.providerConfig(true) + resourceConfig(e.addr, ""))
	// The running Engine has IFI, the grant is gone: the create grants, no restart.
	e.do(winsim.Action{Action: winsim.ActionGrantRight, Right: contract.RightManageVolume, SID: defaultSvcSID})
	e.do(winsim.Action{Action: winsim.ActionRestartService, Service: "MSSQLSERVER"})
	e.do(winsim.Action{Action: winsim.ActionRevokeRight, Right: contract.RightManageVolume, SID: defaultSvcSID})
	_, c := w.planOut("create.tfplan")
	wantPlanned(t, c, "grant")
	// The running Engine loses IFI: the apply would now have to restart it.
	e.do(winsim.Action{Action: winsim.ActionRestartService, Service: "MSSQLSERVER"})
	stops, ops := e.stops("MSSQLSERVER"), len(e.operations())
	r := w.run("apply", "-json", "-no-color", "create.tfplan")
	if r.Exit == 0 {
		t.Fatalf("the saved plan applied although the host changed:\n%s", r.describe())
	}
	r.wantDiag(t, "error", `^Provider produced inconsistent final plan$`, `planned_action`)
	changed := slices.ContainsFunc(e.operations()[ops:], func(op string) bool {
		return op == string(contract.OpSetRight) || op == string(contract.OpRestartInstance)
	})
	if changed || e.stops("MSSQLSERVER") != stops || e.holds(defaultSvcSID) {
		t.Errorf("the stopped apply changed the host: operations %v, stops %d -> %d, holds %v", e.operations()[ops:], stops,
			e.stops("MSSQLSERVER"), e.holds(defaultSvcSID))
	}
	p, c := w.planOut("again.tfplan")
	p.wantPlanExit(t, 2)
	wantPlanned(t, c, "grant_and_restart")
}

// No file is written outside the working directory during terraform plan: the
// plan of a create decides from the configuration and the host, and keeps nothing
// (HOME and the cache directory stay empty).
func TestCLI_planWritesNoFileOutsideTheWorkingDirectory(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, nil)
	home, cache := t.TempDir(), t.TempDir()
	w.env = append(w.env, "HOME="+home, "XDG_CACHE_HOME="+cache, "TF_PLUGIN_CACHE_DIR=")
	w.write(e.providerConfig(true) + resourceConfig(e.addr, ""))
	w.run("init", "-no-color") // the lock file and .terraform are the working directory's
	for i := 0; i < 2; i++ {
		r := w.plan()
		r.wantPlanExit(t, 2)
	}
	for _, dir := range []string{home, cache} {
		var found []string
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			// Files only: OpenTofu's CLI makes an empty ~/.terraform.d of its own.
			if err == nil && !d.IsDir() {
				found = append(found, p)
			}
			return nil
		})
		if len(found) != 0 {
			t.Errorf("terraform plan wrote outside the working directory: %v", found)
		}
	}
}

// A blip between plan -out and apply of a create: the final plan's read rides
// through a refusal shorter than the read timeout, and one longer ends with the
// provider's own error naming the host and what to check, never Terraform's "bug in
// the provider"; nothing is changed.
func TestCLI_blipBetweenSavedCreatePlanAndApply(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, nil)
	w.write(e.providerConfig(true) + resourceConfig(e.addr, "timeouts {\n    read = \"10s\"\n  }"))
	_, c := w.planOut("create.tfplan")
	wantPlanned(t, c, "grant_and_restart")
	e.do(winsim.Action{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{Fault: winsim.FaultRefuse, DurationMS: 60000}})
	r := w.run("apply", "-no-color", "create.tfplan")
	e.do(winsim.Action{Action: winsim.ActionClearFaults})
	if r.Exit == 0 {
		t.Fatalf("the apply succeeded while the host refused connections beyond the read timeout:\n%s", r.describe())
	}
	if !regexp.MustCompile(`Cannot read SQL Server instance MSSQLSERVER on `+regexp.QuoteMeta(e.addr)).MatchString(r.Stderr) ||
		!strings.Contains(r.Stderr, "connection refused") || !strings.Contains(r.Stderr, "firewall") {
		t.Errorf("stderr does not name the host, the refusal and what to check:\n%s", r.Stderr)
	}
	if strings.Contains(r.Stderr, "bug in the provider") || strings.Contains(r.Stderr, "inconsistent") {
		t.Errorf("Terraform blamed the provider:\n%s", r.Stderr)
	}
	if e.holds(defaultSvcSID) || e.stops("MSSQLSERVER") != 0 {
		t.Errorf("the failed apply changed the host: holds %v, stops %d", e.holds(defaultSvcSID), e.stops("MSSQLSERVER"))
	}
	// A refusal shorter than the read timeout: the same saved plan's apply waits and succeeds.
	_, c = w.planOut("again.tfplan")
	wantPlanned(t, c, "grant_and_restart")
	e.do(winsim.Action{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{Fault: winsim.FaultRefuse, DurationMS: 4000}})
	if r := w.run("apply", "-json", "-no-color", "again.tfplan"); r.Exit != 0 {
		t.Fatalf("the apply did not ride through a 4 s refusal:\n%s", r.describe())
	}
	if !e.holds(defaultSvcSID) {
		t.Error("the apply did not grant the right")
	}
}

// Warnings are news, not weather: with the recommended configuration (HTTP with
// encrypted messages, auth = "negotiate", which falls back to NTLM where no KDC
// answers, and a sql block) and a standing condition (a TDE database), the plan and
// the apply say each condition, the apply does not repeat what its plan said, and
// the plans after the apply are empty and print no warning. A drift plan that only
// grants keeps every attribute a grant cannot change known (sql_version,
// availability_groups, ifi_enabled) and says the NTLM fallback again, since its
// apply sends a change over it.
func TestCLI_convergedPlanIsQuiet(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, func(hc *host.HostConfig) { hc.Instances[0].TDEDatabases = []string{"Payroll"} })
	w.write(e.winrmBlock(fmt.Sprintf("    port  = %d", e.httpPort), `    encrypt = "true"`) + resourceConfig(e.addr, "") +
		"output \"action\" {\n  value = " + resName + ".planned_action\n}\n")
	ntlm, tde := `^NTLM instead of Kerberos on `+regexp.QuoteMeta(e.addr)+`$`, `TDE`
	p := w.plan()
	p.wantPlanExit(t, 2)
	p.wantDiag(t, "warning", ntlm, `reached `)
	p.wantDiag(t, "warning", tde, `Payroll`)
	a := w.mustApply()
	// terraform apply plans, and plans again before it applies ("final plan"): each
	// says what the plan says; the apply itself says none of it again.
	for _, re := range []string{ntlm, tde, `: apply `} {
		if n := len(a.find("warning", re, "")); n > 2 {
			t.Errorf("the apply says %q %d times; want it from its plan and final plan only, never again by the apply", re, n)
		}
	}
	for i := range 2 {
		q := w.plan()
		q.wantPlanExit(t, 0)
		if ws := q.bySeverity("warning"); len(ws) > 0 {
			t.Errorf("converged plan %d prints warnings: %v", i+1, ws)
		}
	}
	// Someone revokes the right: a grant-only drift plan.
	e.do(winsim.Action{Action: winsim.ActionRevokeRight, Right: contract.RightManageVolume, SID: defaultSvcSID})
	d, c := w.planOut("drift.tfplan")
	wantPlanned(t, c, "grant")
	d.wantDiag(t, "warning", ntlm, `reached `)
	for _, name := range []string{"sql_version", "availability_groups", "ifi_enabled", "service_name", "clustered"} {
		if c.Unknown[name] == true {
			t.Errorf("the grant-only plan shows %s as known after apply; want the state's value", name)
		}
	}
	// What the grant leaves is known: the right held, no restart pending (the
	// running Engine kept IFI).
	for name, want := range map[string]any{"privilege_granted": true, "restart_pending": false} {
		if c.Unknown[name] == true || c.After[name] != want {
			t.Errorf("the grant-only plan shows %s as %v (unknown %v); want %v", name, c.After[name], c.Unknown[name], want)
		}
	}
	if r := w.run("apply", "-json", "-no-color", "drift.tfplan"); r.Exit != 0 {
		t.Fatalf("the drift plan's apply failed:\n%s", r.describe())
	}
	w.plan().wantPlanExit(t, 0)
	// A new standing condition (a Group Policy that now defines the right, granting
	// it as asked): every plan says it until an apply records it; a refresh-only
	// apply does, and the plans after it are quiet again.
	e.do(winsim.Action{Action: winsim.ActionSetGroupPolicyRight, Right: contract.RightManageVolume, SIDs: []string{defaultSvcSID}})
	e.do(winsim.Action{Action: winsim.ActionRefreshGroupPolicy})
	for range 2 {
		q := w.plan()
		q.wantPlanExit(t, 0)
		q.wantDiag(t, "warning", `Group Policy`, ``)
	}
	if r := w.run("apply", "-refresh-only", "-auto-approve", "-json", "-no-color"); r.Exit != 0 {
		t.Fatalf("terraform apply -refresh-only failed:\n%s", r.describe())
	}
	q := w.plan()
	q.wantPlanExit(t, 0)
	if ws := q.bySeverity("warning"); len(ws) > 0 {
		t.Errorf("the plan after the refresh-only apply prints warnings: %v", ws)
	}
}

// unknownIn are the attributes a planned change shows as (known after apply),
// sorted.
func unknownIn(c plannedChange) []string {
	var out []string
	for k, v := range c.Unknown {
		if v == true {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// A right revoked outside Terraform with restart = "never", the running Engine
// still having IFI: the plan grants it again and knows what the apply leaves
// (privilege_granted true, restart_pending false, verified_by as now: nothing is
// unknown), and none of its warnings says a restart is pending, since after the
// grant none is. The saved plan applies without an inconsistent result, and the
// state is what the plan showed.
func TestCLI_driftRepairPlanIsExact(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, func(hc *host.HostConfig) {
		hc.Rights = map[string][]string{contract.RightManageVolume: {defaultSvcSID}}
	})
	w.write(e.providerConfig(true) + resourceConfig(e.addr, `restart = "never"`))
	w.mustApply()
	if a := w.attrs(); a["ifi_enabled"] != true || a["restart_pending"] != false {
		t.Fatalf("state after the first apply: ifi_enabled %v, restart_pending %v; want the running Engine with IFI", a["ifi_enabled"], a["restart_pending"])
	}
	e.do(winsim.Action{Action: winsim.ActionRevokeRight, Right: contract.RightManageVolume, SID: defaultSvcSID})

	r, c := w.planOut("repair.tfplan")
	r.wantPlanExit(t, 2)
	wantPlanned(t, c, "grant")
	r.wantDiag(t, "warning", `apply grants the right, no restart$`, `no longer holds the right \(revoked outside Terraform\)`)
	r.wantNoDiag(t, "warning", `^A restart of SQL Server is pending$`)
	if u := unknownIn(c); len(u) != 0 {
		t.Errorf("the plan shows %v as known after apply; want every value known", u)
	}
	for k, want := range map[string]any{"privilege_granted": true, "restart_pending": false, "verified_by": "sql_dmv", "ifi_enabled": true} {
		if c.After[k] != want {
			t.Errorf("planned %s = %v, want %v", k, c.After[k], want)
		}
	}

	a := w.run("apply", "-json", "-no-color", "repair.tfplan")
	if a.Exit != 0 {
		t.Fatalf("applying the saved plan failed:\n%s", a.describe())
	}
	a.wantNoDiag(t, "error", "inconsistent")
	st := w.attrs()
	for k, want := range c.After {
		if k == "timeouts" {
			continue
		}
		if fmt.Sprint(st[k]) != fmt.Sprint(want) {
			t.Errorf("state %s = %v, the plan said %v", k, st[k], want)
		}
	}
	w.plan().wantPlanExit(t, 0)
}

// Turning lock_pages_in_memory on for an instance in no availability group plans
// unknown only what the restart's SQL Server reports (ifi_enabled, memory_model,
// restart_pending, verified_by): the IFI right's attributes, the grantee, Lock
// Pages in Memory's grant and availability_role (null: in no group) are known.
// The saved plan applies without an inconsistent result.
func TestCLI_lockPagesPlanIsExact(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, func(hc *host.HostConfig) {
		hc.Rights = map[string][]string{contract.RightManageVolume: {defaultSvcSID}}
	})
	w.write(e.providerConfig(true) + resourceConfig(e.addr, ""))
	w.mustApply()
	w.write(e.providerConfig(true) + resourceConfig(e.addr, "  lock_pages_in_memory = true"))

	r, c := w.planOut("lpim.tfplan")
	r.wantPlanExit(t, 2)
	wantPlanned(t, c, "grant_and_restart")
	if u, want := unknownIn(c), []string{"ifi_enabled", "memory_model", "restart_pending", "verified_by"}; !slices.Equal(u, want) {
		t.Errorf("the plan shows %v as known after apply; want only %v", u, want)
	}
	for k, want := range map[string]any{"privilege_granted": true, "lock_pages_in_memory_granted": true, "availability_role": nil,
		"grantee_sid": defaultSvcSID} {
		if c.After[k] != want {
			t.Errorf("planned %s = %v, want %v", k, c.After[k], want)
		}
	}

	a := w.run("apply", "-json", "-no-color", "lpim.tfplan")
	if a.Exit != 0 {
		t.Fatalf("applying the saved plan failed:\n%s", a.describe())
	}
	a.wantNoDiag(t, "error", "inconsistent")
	if st := w.attrs(); st["lock_pages_in_memory_granted"] != true || st["memory_model"] != contract.MemoryModelLockPages || st["ifi_enabled"] != true {
		t.Errorf("state: lock_pages_in_memory_granted %v, memory_model %v, ifi_enabled %v", st["lock_pages_in_memory_granted"],
			st["memory_model"], st["ifi_enabled"])
	}
	w.plan().wantPlanExit(t, 0)
}
