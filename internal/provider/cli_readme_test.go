package provider

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// readmeWalkthroughMarker precedes the README's main.tf for the example fleet.
const readmeWalkthroughMarker = "<!-- README walkthrough: main.tf"

// readmeWalkthroughConfig is the README's main.tf: the first ```hcl block after the
// marker, as a newcomer copies it.
func readmeWalkthroughConfig(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(raw), readmeWalkthroughMarker)
	if !ok {
		t.Fatalf("README.md has no %q", readmeWalkthroughMarker)
	}
	_, block, ok := strings.Cut(after, "```hcl\n")
	if !ok {
		t.Fatal("README.md: no ```hcl block after the walkthrough marker")
	}
	block, _, ok = strings.Cut(block, "```\n")
	if !ok {
		t.Fatal("README.md: the walkthrough's ```hcl block does not end")
	}
	return block
}

// readmeState is the state's resources by address (terraform show -json).
func readmeState(t *testing.T, w *cliWork) map[string]map[string]any {
	t.Helper()
	return w.state()
}

// readmePlanned runs terraform plan -out and returns the run and each resource's
// planned planned_action, by address.
func readmePlanned(t *testing.T, w *cliWork) (*tfRun, map[string]any) {
	t.Helper()
	file := filepath.Join(w.dir, "tfplan")
	r := w.run("plan", "-json", "-no-color", "-out="+file)
	if r.Exit != 0 {
		t.Fatalf("terraform plan: exit %d, want 0:\n%s", r.Exit, r.describe())
	}
	s := w.run("show", "-json", "-no-color", file)
	var p struct {
		ResourceChanges []struct {
			Address string        `json:"address"`
			Change  plannedChange `json:"change"`
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal([]byte(s.Stdout), &p); err != nil {
		t.Fatalf("terraform show -json %s: %v\n%s", file, err, s.Stdout)
	}
	out := map[string]any{}
	for _, rc := range p.ResourceChanges {
		if len(rc.Change.Actions) == 1 && rc.Change.Actions[0] == "create" {
			out[rc.Address] = rc.Change.After["planned_action"]
		}
	}
	return r, out
}

func fleetRes(key string) string {
	return `mssqlifi_instant_file_initialization.fleet["` + key + `"]`
}

// The README's simulator walkthrough, as a newcomer runs it: winsim with
// internal/winsim/examples/fleet.json, its line in winsim.json, the README's main.tf.
// Every statement of the walkthrough's three steps is checked here: the plan
// (exit 0; refuse for the AG primary, grant_and_restart, grant), the apply (the two
// others changed and in the state, exit 1 with the refusal and its ways out, the
// primary untouched), and the next step (restart = "never" for the primary: grant,
// exit 0, a pending restart, then an empty plan).
func TestCLI_readmeSimulatorWalkthrough(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	cfg, err := winsim.LoadConfig("../winsim/examples/fleet.json")
	if err != nil {
		t.Fatal(err)
	}
	sim, err := winsim.Start(cfg, winsim.Options{CertDir: t.TempDir()})
	if err != nil {
		t.Fatalf("starting the simulator with the example fleet: %v", err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	line, err := json.Marshal(sim.Info()) // what bin/winsim prints
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.dir, "winsim.json"), line, 0o600); err != nil {
		t.Fatal(err)
	}
	main := readmeWalkthroughConfig(t)
	w.write(main)

	hostOf := func(name string) hostView {
		h, err := sim.Host(name)
		if err != nil {
			t.Fatal(err)
		}
		return hostView{h}
	}
	sql01, sql02 := hostOf("sql01"), hostOf("sql02")
	primary, reporting, secondary := fleetRes("sql01/MSSQLSERVER"), fleetRes("sql01/REPORTING"), fleetRes("sql02/MSSQLSERVER")

	// 1. The plan: exit 0, three to add, each planned_action with its warning.
	p, planned := readmePlanned(t, w)
	want := map[string]string{primary: "refuse", reporting: "grant_and_restart", secondary: "grant"}
	for addr, action := range want {
		if planned[addr] != action {
			t.Errorf("plan: %s planned_action %v, want %s (all: %v)", addr, planned[addr], action, planned)
		}
	}
	if len(planned) != 3 {
		t.Errorf("plan: %d to add, want 3: %v", len(planned), planned)
	}
	ways := `(?i:fail)( the availability group)? over(.|\n)*first(.|\n)*ALTER AVAILABILITY GROUP \[AG1\] FAILOVER(.|\n)*synchronized secondary(.|\n)*` +
		`"if_needed_including_primary"(.|\n)*restart =\s+"never"`
	p.wantDiag(t, "warning", `^instance MSSQLSERVER on 127\.0\.0\.2: apply will refuse: Primary availability replica`, `primary replica(.|\n)*AG1(.|\n)*`+ways)
	p.wantDiag(t, "warning", `^instance REPORTING on 127\.0\.0\.2: apply grants the right and restarts SQL Server`, "")
	p.wantDiag(t, "warning", `^instance MSSQLSERVER on 127\.0\.0\.3: apply grants the right, no restart$`, `Engine already has IFI on`)
	w.plan().wantPlanExit(t, 2) // with -detailed-exitcode

	// 2. The apply: REPORTING granted and restarted, sql02 granted, both in the
	// state; exit 1 with the refusal; sql01's default instance untouched and not in
	// the state.
	primaryStops := sql01.stops("MSSQLSERVER")
	a := w.apply()
	if a.Exit != 1 {
		t.Fatalf("first apply: exit %d, want 1:\n%s", a.Exit, a.describe())
	}
	a.wantDiag(t, "error", `^Primary availability replica: refusing to restart it$`, `Nothing was changed(.|\n)*`+ways)
	if n := len(a.errors()); n != 1 {
		t.Errorf("first apply: %d errors, want the one refusal:\n%s", n, a.describe())
	}
	st := readmeState(t, w)
	if _, ok := st[primary]; ok || len(st) != 2 || st[reporting] == nil || st[secondary] == nil {
		t.Fatalf("state after the first apply: %v; want REPORTING and sql02 only", keysOf(st))
	}
	for _, addr := range []string{reporting, secondary} {
		if st[addr]["privilege_granted"] != true || st[addr]["ifi_enabled"] != true {
			t.Errorf("%s after the first apply: privilege_granted %v, ifi_enabled %v", addr, st[addr]["privilege_granted"], st[addr]["ifi_enabled"])
		}
	}
	// The fleet as the README describes it: sql02's default instance is AG1's
	// secondary, its Engine run by CONTOSO\sqlsvc (a member of Administrators, which
	// hold the right); REPORTING is in no group.
	if s := st[secondary]; s["availability_role"] != "secondary" || !reflect.DeepEqual(s["availability_groups"], []any{"AG1"}) || s["service_account"] != `CONTOSO\sqlsvc` {
		t.Errorf("sql02's default instance: role %v, groups %v, service account %v; want AG1's secondary run by CONTOSO\\sqlsvc",
			s["availability_role"], s["availability_groups"], s["service_account"])
	}
	if groups, _ := st[reporting]["availability_groups"].([]any); len(groups) != 0 {
		t.Errorf("REPORTING is in availability groups %v; want none", groups)
	}
	if !sql01.holds(st[reporting]["service_sid"]) || !sql02.holds(st[secondary]["service_sid"]) {
		t.Error("the host does not hold the grants the state records")
	}
	if sql01.stops("MSSQL$REPORTING") != 1 || sql02.stops("MSSQLSERVER") != 0 {
		t.Errorf("restarts: REPORTING stopped %d times (want 1), sql02's Engine %d (want 0)", sql01.stops("MSSQL$REPORTING"), sql02.stops("MSSQLSERVER"))
	}
	if sql01.holds(defaultSvcSID) || sql01.stops("MSSQLSERVER") != primaryStops {
		t.Error("the refused apply changed sql01's default instance")
	}

	// 3. Next: the README's restart line uncommented (never for the primary).
	next := strings.Replace(main, "  # restart = ", "  restart = ", 1)
	if next == main {
		t.Fatal("the README's main.tf has no commented restart line to uncomment")
	}
	w.write(next)
	_, planned = readmePlanned(t, w)
	if len(planned) != 1 || planned[primary] != "grant" {
		t.Errorf("plan after uncommenting restart: %v; want %s: grant", planned, primary)
	}
	a = w.apply()
	if a.Exit != 0 {
		t.Fatalf("apply with restart = never: exit %d, want 0:\n%s", a.Exit, a.describe())
	}
	pending := `^A restart of SQL Server is pending$`
	a.wantDiag(t, "warning", pending, `MSSQLSERVER on 127\.0\.0\.2`)
	st = readmeState(t, w)
	if s := st[primary]; s == nil || s["availability_role"] != "primary" || s["privilege_granted"] != true || s["restart_pending"] != true || s["ifi_enabled"] != false {
		t.Errorf("%s after restart = never: %v; want privilege_granted, restart_pending, ifi_enabled false", primary, s)
	}
	if !sql01.holds(defaultSvcSID) || sql01.stops("MSSQLSERVER") != primaryStops {
		t.Error("restart = never: the right is not granted, or the primary was restarted")
	}
	p = w.plan()
	p.wantPlanExit(t, 0)
	p.wantNoDiag(t, "warning", pending) // the apply said it: news, not weather
}

// hostView reads one simulated host for the walkthrough's checks.
type hostView struct{ h *host.Host }

// holds reports whether sid (a state value) directly holds the right on the host.
func (v hostView) holds(sid any) bool {
	s, _ := sid.(string)
	for _, p := range v.h.Snapshot().Rights[contract.RightManageVolume] {
		if strings.EqualFold(p.SID, s) {
			return true
		}
	}
	return false
}

// stops is how often the named service was stopped since the simulator started.
func (v hostView) stops(service string) int {
	for _, svc := range v.h.Snapshot().Services {
		if strings.EqualFold(svc.Name, service) {
			return svc.Stops
		}
	}
	return 0
}

func keysOf(m map[string]map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
