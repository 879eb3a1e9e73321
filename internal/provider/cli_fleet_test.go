package provider

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// Availability groups, fleets and one instance claimed twice, through the real CLI.

// agPrimaryHost makes the default instance the primary replica of AG1.
func agPrimaryHost() func(*host.HostConfig) {
	return func(hc *host.HostConfig) {
		hc.Instances[0].AvailabilityGroup = &host.AvailabilityGroupConfig{Name: "AG1", Role: host.AGRolePrimary}
	}
}

// A primary replica that needs a restart: the apply refuses before changing
// anything and says how to fail over or opt in; after a failover (the simulator's
// control plane) the same apply grants and restarts, and the state reports the
// group and the new role.
func TestCLI_primaryReplicaIsNotRestarted(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, agPrimaryHost())
	before := e.engineStart()
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
	if s := e.engineStart(); !s.Equal(before) {
		t.Errorf("the refused apply restarted the Engine: started %v, was %v", s, before)
	}

	if err := e.sim.Do(e.name, winsim.Action{Action: winsim.ActionSetAGRole, Instance: "MSSQLSERVER", Role: host.AGRoleSecondary}); err != nil {
		t.Fatal(err)
	}
	// A secondary with no primary to ask (this simulation has no other replica)
	// cannot learn its group's health: it refuses (the restart itself is
	// TestCLI_faultMatrixAG_twoStatesOneGroup's).
	r = w.apply()
	if r.Exit == 0 {
		t.Fatalf("the apply restarted a secondary whose primary could not be asked:\n%s", r.describe())
	}
	r.wantDiag(t, "error", `^Availability group health unknown: refusing to restart instance MSSQLSERVER on `,
		`(?s)only the primary replica sees every replica's health.*primary_replica is NULL.*Nothing was changed`)
	if s := e.engineStart(); !s.Equal(before) {
		t.Errorf("the refused apply restarted the Engine: started %v, was %v", s, before)
	}
}

// restart = "if_needed_including_primary" restarts a primary, with a warning.
func TestCLI_primaryReplicaRestartsWhenOptedIn(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, agPrimaryHost())
	n := len(e.operations())
	w.write(e.providerConfig(true) + resourceConfig(e.addr, `restart = "if_needed_including_primary"`))
	r := w.mustApply()
	r.wantDiag(t, "warning", `^Restarting a primary availability replica$`, `primary replica of the availability group AG1`)
	if ops := e.opsSince(n); countOp(ops, contract.OpRestartInstance) != 1 {
		t.Errorf("operations %v, want one restart_instance", ops)
	}
	if a := w.attrs(); a["availability_role"] != "primary" || a["ifi_enabled"] != true || fmt.Sprint(a["availability_groups"]) != "[AG1]" {
		t.Errorf("state: availability_role %v, ifi_enabled %v, availability_groups %v; want primary, true, [AG1]",
			a["availability_role"], a["ifi_enabled"], a["availability_groups"])
	}
}

// A state an earlier build wrote holds `availability_group` (the names joined by
// ", "), which issue 26 replaced with the list `availability_groups`, at the same
// schema version: the framework's passthrough upgrade drops the attribute the
// schema no longer has, so the plan and the refresh work, and the refresh fills in
// the list.
func TestCLI_stateWithRemovedAvailabilityGroupIsRead(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, agPrimaryHost())
	w.write(e.providerConfig(true) + resourceConfig(e.addr, `restart = "if_needed_including_primary"`))
	w.mustApply()

	// Rewrite the state as the earlier build left it.
	file := filepath.Join(w.dir, "terraform.tfstate")
	var st map[string]any
	b, err := os.ReadFile(file)
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err != nil {
		t.Fatalf("state: %v", err)
	}
	res, _ := st["resources"].([]any)
	var inst, attrs map[string]any
	if len(res) == 1 {
		r, _ := res[0].(map[string]any)
		insts, _ := r["instances"].([]any)
		if len(insts) == 1 {
			inst, _ = insts[0].(map[string]any)
			attrs, _ = inst["attributes"].(map[string]any)
		}
	}
	serial, ok := st["serial"].(float64)
	if attrs == nil || !ok {
		t.Fatalf("the state does not have one resource instance with attributes and a serial:\n%s", b)
	}
	if fmt.Sprint(attrs["availability_groups"]) != "[AG1]" || inst["schema_version"] != float64(0) {
		t.Fatalf("after the apply: availability_groups %v, schema_version %v; want [AG1], 0", attrs["availability_groups"], inst["schema_version"])
	}
	delete(attrs, "availability_groups")
	attrs["availability_group"] = "AG1"
	st["serial"] = serial + 1
	if b, err = json.MarshalIndent(st, "", "  "); err == nil {
		err = os.WriteFile(file, b, 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}

	if r := w.plan(); r.Exit != 0 || len(r.errors()) > 0 {
		t.Fatalf("plan on the old state: exit %d (want 0, no changes)\n%s", r.Exit, r.describe())
	}
	if r := w.run("apply", "-refresh-only", "-auto-approve", "-json", "-no-color"); r.Exit != 0 {
		t.Fatalf("refresh of the old state failed (exit %d):\n%s", r.Exit, r.describe())
	}
	a := w.attrs()
	if _, ok := a["availability_group"]; ok || fmt.Sprint(a["availability_groups"]) != "[AG1]" || a["availability_role"] != "primary" {
		t.Errorf("refreshed state: availability_group %v (want none), availability_groups %v (want [AG1]), availability_role %v",
			a["availability_group"], a["availability_groups"], a["availability_role"])
	}
	if b, err := os.ReadFile(file); err != nil || strings.Contains(string(b), `"availability_group"`) {
		t.Errorf("the refreshed state file still holds availability_group (%v)", err)
	}
}

// Without SQL credentials, Windows' failover cluster still names the node that owns
// the group: the primary is refused (issue 14: it used to restart, "restarting
// anyway"); nothing changes and the attributes stay null.
func TestCLI_primaryWithoutSQLIsNotRestarted(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, agPrimaryHost())
	before := e.engineStart()
	w.write(e.providerConfig(false) + resourceConfig(e.addr, ""))
	r := w.apply()
	if r.Exit == 0 {
		t.Fatalf("the apply restarted a primary replica without SQL credentials:\n%s", r.describe())
	}
	r.wantDiag(t, "error", `^Primary availability replica: refusing to restart it$`, `AG1 \(per the failover cluster`)
	// The plan said so before the apply, reading the host.
	r.wantDiag(t, "warning", `^instance MSSQLSERVER on [0-9.]+: apply will refuse: Primary availability replica: refusing to restart it$`, `per the failover cluster`)
	if s := e.engineStart(); !s.Equal(before) || e.holds(defaultSvcSID) {
		t.Errorf("the refused apply changed the host: started %v (was %v), granted %v", s, before, e.holds(defaultSvcSID))
	}
}

// fleetHost puts n named instances (I01..Inn) on the host, each with its SQL login,
// without Agent, their Engines taking stopMS and startMS to stop and start.
func fleetHost(n, stopMS, startMS int) func(*host.HostConfig) {
	return func(hc *host.HostConfig) {
		no := false
		hc.Instances = nil
		for i := 1; i <= n; i++ {
			hc.Instances = append(hc.Instances, host.InstanceConfig{
				Name: fmt.Sprintf("I%02d", i), Agent: &no, StopMS: stopMS, StartMS: startMS,
				Logins: []host.LoginConfig{{Name: accSQLUser, Password: accSQLPass}},
			})
		}
	}
}

// fleetConfig is one resource per instance I01..Inn; enabled(i) gives each its value.
func fleetConfig(addr string, n int, restart string, enabled func(i int) bool) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `
resource "mssqlifi_instant_file_initialization" "i%02d" {
  host     = %q
  instance = "I%02d"
  enabled  = %t
  restart  = %q
}
`, i, addr, i, enabled(i), restart)
	}
	return b.String()
}

// withMaxParallelRestarts adds max_parallel_restarts to a provider block.
func withMaxParallelRestarts(providerBlock string, n int) string {
	return strings.Replace(providerBlock, `provider "mssqlifi" {`, fmt.Sprintf("provider \"mssqlifi\" {\n  max_parallel_restarts = %d", n), 1)
}

// A fleet apply restarts one instance at a time by default (max_parallel_restarts =
// 1), all of them in the end; with 0 (no limit) the restarts overlap, which shows
// the simulator's measure can see it. The fleet is one instance on each of n hosts:
// instances of one host restart one at a time whatever the limit (the host's
// restart lease, design/restart.md).
func TestCLI_fleetRestartsRollOneAtATime(t *testing.T) {
	t.Parallel()
	const n = 4
	for _, tc := range []struct {
		name    string
		limit   string // "" = the default
		maxDown func(int) bool
		want    string
	}{
		{"default", "", func(m int) bool { return m == 1 }, "1"},
		{"no limit", "0", func(m int) bool { return m > 1 }, "more than 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newCLI(t)
			envs := startFleet(t, n, 300, 300)
			cfg := envs[0].providerConfig(true)
			if tc.limit != "" {
				cfg = withMaxParallelRestarts(cfg, 0)
			}
			for i, e := range envs {
				cfg += fmt.Sprintf(`
resource "mssqlifi_instant_file_initialization" "i%02d" {
  host     = %q
  port     = %d
  instance = "I01"
  restart  = "if_needed"
}
`, i+1, e.addr, e.httpsPort)
			}
			w.write(cfg)
			if r := w.run("apply", "-auto-approve", "-json", "-no-color", "-parallelism=10"); r.Exit != 0 {
				t.Fatalf("terraform apply failed (exit %d):\n%s", r.Exit, r.describe())
			}
			down := envs[0].sim.EnginesDown()
			if !tc.maxDown(down.Max) {
				t.Errorf("at most %d Engines were down at once, want %s", down.Max, tc.want)
			}
			for _, e := range envs {
				if in := e.instance("I01"); in.InstantFileInitialization == nil || !*in.InstantFileInitialization {
					t.Errorf("instance I01 on %s runs without IFI after the apply: %+v", e.name, in)
				}
			}
			if down.Now != 0 {
				t.Errorf("%d Engines are still down after the apply", down.Now)
			}
		})
	}
}

// startFleet starts one simulator with n hosts, each with one instance I01 as
// fleetHost makes it.
func startFleet(t *testing.T, n, stopMS, startMS int) []*accEnv {
	t.Helper()
	var hcs []host.HostConfig
	for range n {
		k := nextAddr.Add(1)
		hc := defaultHostConfig(fmt.Sprintf("sql%02d", k), fmt.Sprintf("127.0.0.%d", 10+k))
		fleetHost(1, stopMS, startMS)(&hc)
		hcs = append(hcs, hc)
	}
	return startHosts(t, hcs)
}

// startHosts starts one simulator with the hosts hcs and returns their accEnvs, in
// the same order.
func startHosts(t *testing.T, hcs []host.HostConfig) []*accEnv {
	t.Helper()
	sim, err := winsim.Start(&winsim.Config{Hosts: hcs}, winsim.Options{CertDir: t.TempDir()})
	if err != nil {
		t.Fatalf("starting the simulator: %v", err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	var envs []*accEnv
	for _, hc := range hcs {
		e := &accEnv{t: t, sim: sim, name: hc.Name, addr: hc.Address}
		for _, hi := range sim.Info().Hosts {
			if strings.EqualFold(hi.Name, e.name) {
				e.httpsPort, e.httpPort = port(t, hi.WinRMHTTPS), port(t, hi.WinRM)
			}
		}
		envs = append(envs, e)
	}
	return envs
}

// Two resources for one instance, spelled differently (an IPv4-mapped IPv6 address,
// the instance name in lower case), one enabling and one disabling: the plan is
// refused, naming both, and nothing reaches the host.
func TestCLI_twoResourcesForOneInstanceAreRefused(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, nil)
	n := len(e.operations())
	w.write(e.providerConfig(true) + fmt.Sprintf(`
resource "mssqlifi_instant_file_initialization" "a" {
  host     = %q
  instance = "MSSQLSERVER"
  enabled  = true
}

resource "mssqlifi_instant_file_initialization" "b" {
  host     = "::ffff:%s"
  instance = "mssqlserver"
  enabled  = false
}
`, e.addr, e.addr))
	for _, r := range []*tfRun{w.plan(), w.apply()} {
		if r.Exit != 1 {
			t.Fatalf("terraform %s: exit %d, want 1 (refused):\n%s", r.Args[0], r.Exit, r.describe())
		}
		d := r.wantDiag(t, "error", `^Two resources manage one SQL Server instance$`,
			`instance MSSQLSERVER on `+regexp.QuoteMeta(e.addr)+`(.|\n)*[Kk]eep one resource per instance`)
		for _, spelling := range []string{`host = "` + e.addr + `", instance = "MSSQLSERVER", enabled = true`,
			`host = "::ffff:` + e.addr + `", instance = "mssqlserver", enabled = false`} {
			if !strings.Contains(d.Detail, spelling) {
				t.Errorf("the error does not name %s: %q", spelling, d.Detail)
			}
		}
		if len(r.errors()) != 1 {
			t.Errorf("%d errors, want one (for the second claimant):\n%s", len(r.errors()), r.describe())
		}
	}
	if ops := e.opsSince(n); countOp(ops, contract.OpSetRight) != 0 || countOp(ops, contract.OpRestartInstance) != 0 {
		t.Errorf("a refused plan changed the host: %v", ops)
	}
}

// controlHolders reads the direct holders of the right from the simulator's control
// API (GET /v1/hosts/{host}), as an operator would.
func (e *accEnv) controlHolders() map[string]bool {
	e.t.Helper()
	resp, err := http.Get("http://" + e.sim.ControlAddr() + "/v1/hosts/" + e.name)
	if err != nil {
		e.t.Fatalf("control API: %v", err)
	}
	defer resp.Body.Close()
	var snap host.Snapshot
	if err := json.NewDecoder(resp.Body).Decode(&snap); err != nil || resp.StatusCode != http.StatusOK {
		e.t.Fatalf("control API: status %d, %v", resp.StatusCode, err)
	}
	out := map[string]bool{}
	for _, p := range snap.Rights[contract.RightManageVolume] {
		out[strings.ToUpper(p.SID)] = true
	}
	return out
}

// Ten instances on one host, -parallelism=10, each apply flipping every resource
// (half enable, half disable, alternating), 20 rounds: after every round the host
// holds exactly the grants asked for, none lost or extra, read through the control
// API. restart = "never" keeps it fast; the LSA changes run concurrently.
func TestCLI_concurrentGrantsAndRevokesOnOneHost(t *testing.T) {
	t.Parallel()
	const n, rounds = 10, 20
	w := newCLI(t)
	e := startSim(t, fleetHost(n, 0, 0))
	base := e.controlHolders() // Windows' default holders (Administrators)
	for round := 0; round < rounds; round++ {
		enabled := func(i int) bool { return (i+round)%2 == 0 }
		w.write(e.providerConfig(false) + fleetConfig(e.addr, n, "never", enabled))
		r := w.run("apply", "-auto-approve", "-json", "-no-color", "-parallelism=10", "-refresh=false")
		if r.Exit != 0 {
			t.Fatalf("round %d: terraform apply failed (exit %d):\n%s", round, r.Exit, r.describe())
		}
		got := e.controlHolders()
		var lost, extra []string
		for i := 1; i <= n; i++ {
			sid := strings.ToUpper(winsid.ServiceSID(fmt.Sprintf("MSSQL$I%02d", i)))
			if enabled(i) && !got[sid] {
				lost = append(lost, fmt.Sprintf("I%02d", i))
			}
			if !enabled(i) && got[sid] {
				extra = append(extra, fmt.Sprintf("I%02d", i))
			}
			delete(got, sid)
		}
		for sid := range got {
			if !base[sid] {
				extra = append(extra, sid)
			}
		}
		if len(lost) > 0 || len(extra) > 0 {
			t.Fatalf("round %d: grants lost %v, extra %v", round, lost, extra)
		}
	}
}

// In one run, instances of one host queue for their restarts whatever
// max_parallel_restarts says: with no limit, three instances of one host all end
// with IFI, one Engine down at a time, and none is refused by the host's restart
// lease.
func TestCLI_instancesOfOneHostQueueInOneRun(t *testing.T) {
	t.Parallel()
	const n = 3
	w := newCLI(t)
	k := nextAddr.Add(1)
	hc := defaultHostConfig(fmt.Sprintf("sql%02d", k), fmt.Sprintf("127.0.0.%d", 10+k))
	fleetHost(n, 300, 300)(&hc)
	e := startHosts(t, []host.HostConfig{hc})[0]
	cfg := withMaxParallelRestarts(e.providerConfig(true), 0)
	for i := 1; i <= n; i++ {
		cfg += fmt.Sprintf(`
resource "mssqlifi_instant_file_initialization" "i%02d" {
  host     = %q
  port     = %d
  instance = "I%02d"
}
`, i, e.addr, e.httpsPort, i)
	}
	w.write(cfg)
	r := w.run("apply", "-auto-approve", "-json", "-no-color", "-parallelism=10")
	if r.Exit != 0 {
		t.Fatalf("terraform apply failed (exit %d):\n%s", r.Exit, r.describe())
	}
	r.wantNoDiag(t, "error", `another instance of the host`)
	if down := e.sim.EnginesDown(); down.Max != 1 || down.Now != 0 {
		t.Errorf("Engines down at most %d at once, %d at the end; want 1 and 0", down.Max, down.Now)
	}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("I%02d", i)
		if in := e.instance(name); in.InstantFileInitialization == nil || !*in.InstantFileInitialization {
			t.Errorf("instance %s runs without IFI after the apply: %+v", name, in)
		}
	}
}

// The fleet module (examples/modules/fleet) with planned_action in an output: after
// the apply, plan -detailed-exitcode exits 0 with no warning; a right revoked
// outside Terraform shows only what a grant changes, each known (the grant, and the
// running Engine kept IFI, so no restart is pending) and the output says the grant; its apply leaves an empty, quiet plan again.
func TestCLI_fleetModuleOutputsPlannedAction(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, nil)
	if err := os.CopyFS(filepath.Join(w.dir, "fleet"), os.DirFS("../../examples/modules/fleet")); err != nil {
		t.Fatal(err)
	}
	// The module names the provider as the registry does; here it is the dev
	// override's source (OpenTofu reads a bare source as registry.opentofu.org).
	versions := filepath.Join(w.dir, "fleet", "versions.tf")
	text, err := os.ReadFile(versions)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(versions, []byte(mssqlifiSource.ReplaceAllString(string(text), fmt.Sprintf("${1}%q", cliProviderSource))), 0o600); err != nil {
		t.Fatal(err)
	}
	w.write(e.providerConfig(true) + fmt.Sprintf(`
module "fleet" {
  source = "./fleet"
  hosts  = { %q = { port = %d, instances = { MSSQLSERVER = {} } } }
}

output "actions" {
  value = module.fleet.planned_actions
}
`, e.addr, e.httpsPort))
	// The module's own directory is installed with terraform get; the provider is
	// the dev override (no registry here, so no init).
	if r := w.run("get", "-no-color"); r.Exit != 0 {
		t.Fatalf("terraform get: exit %d\n%s%s", r.Exit, r.describe(), r.Stdout)
	}
	w.mustApply()
	p := w.plan()
	p.wantPlanExit(t, 0)
	if ws := p.bySeverity("warning"); len(ws) > 0 {
		t.Errorf("the plan after the apply prints warnings: %v", ws)
	}
	e.do(winsim.Action{Action: winsim.ActionRevokeRight, Right: contract.RightManageVolume, SID: defaultSvcSID})
	d := w.run("plan", "-json", "-detailed-exitcode", "-no-color", "-out=drift.tfplan")
	d.wantPlanExit(t, 2)
	s := w.run("show", "-json", "-no-color", "drift.tfplan")
	var plan struct {
		ResourceChanges []struct {
			Change plannedChange `json:"change"`
		} `json:"resource_changes"`
		OutputChanges map[string]struct {
			After any `json:"after"`
		} `json:"output_changes"`
	}
	if err := json.Unmarshal([]byte(s.Stdout), &plan); err != nil || len(plan.ResourceChanges) != 1 {
		t.Fatalf("terraform show -json: %v, %d changes\n%s", err, len(plan.ResourceChanges), s.Stdout)
	}
	c := plan.ResourceChanges[0].Change
	wantPlanned(t, c, "grant")
	var unknown []string
	for name, v := range c.Unknown {
		if v == true {
			unknown = append(unknown, name)
		}
	}
	slices.Sort(unknown)
	if len(unknown) != 0 || c.After["privilege_granted"] != true || c.After["restart_pending"] != false {
		t.Errorf("the grant-only plan shows %v as known after apply, privilege_granted %v, restart_pending %v; want every value "+
			"known: true, false", unknown, c.After["privilege_granted"], c.After["restart_pending"])
	}
	if got := fmt.Sprint(plan.OutputChanges["actions"].After); !strings.Contains(got, "grant") || strings.Contains(got, "restart") {
		t.Errorf("the output after the drift plan: %s; want the grant", got)
	}
	if r := w.run("apply", "-json", "-no-color", "drift.tfplan"); r.Exit != 0 {
		t.Fatalf("applying the drift plan: %s", r.describe())
	}
	q := w.plan()
	q.wantPlanExit(t, 0)
	if ws := q.bySeverity("warning"); len(ws) > 0 {
		t.Errorf("the plan after the repair prints warnings: %v", ws)
	}
}
