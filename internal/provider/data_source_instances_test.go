package provider

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// discoveryHost is one host of three instances, I01..I03, each of whose service SIDs
// already holds the right (as a DBA left them), I02's Lock pages in memory too, none
// managed by Terraform.
func discoveryHost(t *testing.T) *accEnv {
	t.Helper()
	k := nextAddr.Add(1)
	hc := defaultHostConfig(fmt.Sprintf("sql%02d", k), fmt.Sprintf("127.0.0.%d", 10+k))
	fleetHost(3, 100, 100)(&hc)
	holders := []string{winsid.Administrators}
	for i := 1; i <= 3; i++ {
		holders = append(holders, winsid.ServiceSID(fmt.Sprintf("MSSQL$I%02d", i)))
	}
	hc.Rights = map[string][]string{contract.RightManageVolume: holders, contract.RightLockMemory: {winsid.ServiceSID("MSSQL$I02")}}
	// A TDE database, which the instance's resource and data source warn of.
	hc.Instances[1].TDEDatabases = []string{"Payroll"}
	return startHosts(t, []host.HostConfig{hc})[0]
}

// instancesConfig is the discovery data source of e's host.
func instancesConfig(e *accEnv) string {
	return fmt.Sprintf(`
data "mssqlifi_instances" "sql" {
  host = %q
  port = %d
}
`, e.addr, e.httpsPort)
}

// The data source lists every instance of a host with several, in the registry's
// order, each with its IFI and Lock Pages in Memory states and the import ID of its resource, from one read
// of the host (one command); it changes nothing and warns of nothing per instance
// (I02's TDE database is its resource's news, not the list's).
func TestCLI_instancesListsEveryInstanceOfAHost(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := discoveryHost(t)
	w.write(e.providerConfig(true) + instancesConfig(e) + `
output "instances" {
  value = data.mssqlifi_instances.sql.instances
}
output "computer_name" {
  value = data.mssqlifi_instances.sql.computer_name
}
`)
	mark := len(e.operations())
	ap := w.mustApply()
	if ops := e.opsSince(mark); len(ops) != 1 || ops[0] != string(contract.OpReadHost) {
		t.Errorf("the data source ran %s on the host; want one read_host", strings.Join(ops, ", "))
	}
	for _, d := range ap.Diags {
		if d.Severity == "warning" && !strings.Contains(d.Summary, "development overrides") {
			t.Errorf("the data source warned: %s", d)
		}
	}
	out := w.outputs()
	if got := out["computer_name"]; !strings.EqualFold(fmt.Sprint(got), e.name) {
		t.Errorf("computer_name %v, want %s", got, e.name)
	}
	list, _ := out["instances"].([]any)
	if len(list) != 3 {
		t.Fatalf("instances: %v; want I01, I02 and I03", out["instances"])
	}
	for i, v := range list {
		m, _ := v.(map[string]any)
		name := fmt.Sprintf("I%02d", i+1)
		if m["instance"] != name || m["service_name"] != "MSSQL$"+name || m["privilege_granted"] != true || m["ifi_enabled"] != true ||
			m["import_id"] != fmt.Sprintf("%s:%d/%s", e.addr, e.httpsPort, name) || m["clustered"] != false {
			t.Errorf("instance %d: %v", i, m)
		}
		lpim, model := name == "I02", contract.MemoryModelConventional
		if lpim {
			model = contract.MemoryModelLockPages
		}
		if m["lock_pages_in_memory_granted"] != lpim || m["memory_model"] != model {
			t.Errorf("instance %s: Lock Pages in Memory granted %v, memory_model %v; want %v, %s", name, m["lock_pages_in_memory_granted"], m["memory_model"], lpim, model)
		}
	}
	if n := countOp(e.operations(), contract.OpSetRight) + countOp(e.operations(), contract.OpRestartInstance); n != 0 {
		t.Errorf("the data source changed the host: %v", e.operations())
	}
}

// outputs is the root module's outputs (terraform output -json), by name.
func (w *cliWork) outputs() map[string]any {
	w.t.Helper()
	r := w.run("output", "-json", "-no-color")
	if r.Exit != 0 {
		w.t.Fatalf("terraform output failed (exit %d): %s", r.Exit, r.Stderr)
	}
	var outs map[string]struct {
		Value any `json:"value"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &outs); err != nil {
		w.t.Fatalf("terraform output -json: %v", err)
	}
	m := map[string]any{}
	for k, v := range outs {
		m[k] = v.Value
	}
	return m
}

// The fleet guide's import, its example as written: import blocks with for_each over
// the data source bring every instance of a host under management in one apply,
// without a change to the host, and the next plan is empty (Terraform 1.7 and later).
func TestCLI_instancesForEachImportLeavesAnEmptyPlan(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := discoveryHost(t)
	// The example the fleet guide and the data source's page show, at this host.
	ex, err := os.ReadFile("../../examples/data-sources/mssqlifi_instances/data-source-import.tf")
	if err != nil {
		t.Fatal(err)
	}
	hostLine := regexp.MustCompile(`(?m)^(\s*)host(\s*)= "sql02\.contoso\.com"$`)
	if n := len(hostLine.FindAllIndex(ex, -1)); n != 2 {
		t.Fatalf("the example names its host %d times; want 2 (the data source's and the resource's)", n)
	}
	cfg := hostLine.ReplaceAllString(string(ex), fmt.Sprintf("${1}host${2}= %q\n${1}port${2}= %d", e.addr, e.httpsPort))
	w.write(e.providerConfig(true) + cfg)
	ap := w.mustApply()
	if n := countOp(e.operations(), contract.OpSetRight) + countOp(e.operations(), contract.OpRestartInstance); n != 0 {
		t.Errorf("importing changed the host: %v", e.operations())
	}
	if len(ap.Changes) != 3 {
		t.Errorf("the apply's changes: %v; want the three imports", ap.Changes)
	}
	for _, c := range ap.Changes {
		if c.Action != "import" && c.Action != "noop" {
			t.Errorf("the apply planned %s for %s; want an import only", c.Action, c.Addr)
		}
	}
	managed := 0
	for addr, a := range w.state() {
		if strings.HasPrefix(addr, "mssqlifi_instant_file_initialization.sql02[") {
			managed++
			if a["enabled"] != true || a["ifi_enabled"] != true {
				t.Errorf("%s imported as enabled %v, ifi_enabled %v; want both true", addr, a["enabled"], a["ifi_enabled"])
			}
		}
	}
	if managed != 3 {
		t.Errorf("the state holds %d managed instances; want 3", managed)
	}
	w.plan().wantPlanExit(t, 0)
}

// On a node of a failover cluster, the FCI is listed as this node has it
// (clustered, cluster_nodes null) without reading the other nodes: the list says
// nothing of them, and the instance's own data source with nodes reads them.
func TestCLI_instancesOnAClusterNode(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startFCI(t, nil)
	n := e.nodes[1] // the passive node: its Engine is stopped
	w.write(n.providerConfig(true) + instancesConfig(n) + `
output "instances" {
  value = data.mssqlifi_instances.sql.instances
}
`)
	ap := w.mustApply()
	for _, d := range ap.Diags {
		if d.Severity == "warning" && !strings.Contains(d.Summary, "development overrides") {
			t.Errorf("the data source warned: %s", d)
		}
	}
	list, _ := w.outputs()["instances"].([]any)
	if len(list) != 1 {
		t.Fatalf("instances on the node: %v; want the FCI's MSSQLSERVER", list)
	}
	m, _ := list[0].(map[string]any)
	if m["instance"] != "MSSQLSERVER" || m["clustered"] != true || m["cluster_nodes"] != nil {
		t.Errorf("the FCI on its passive node: %v; want clustered, cluster_nodes null", m)
	}
	if ops := e.nodes[0].operations(); len(ops) != 0 {
		t.Errorf("listing node 1's instances ran %v on node 0", ops)
	}
}

// The list is read on every plan, so it says nothing: beside the resource of its
// host, with the recommended configuration (negotiate falling back to NTLM, which
// the resource says when it is news) and a TDE database, the plans after the apply
// are empty and print no warning.
func TestCLI_instancesKeepAConvergedPlanQuiet(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, func(hc *host.HostConfig) { hc.Instances[0].TDEDatabases = []string{"Payroll"} })
	w.write(e.winrmBlock(fmt.Sprintf("    port  = %d", e.httpPort), `    encrypt = "true"`) + resourceConfig(e.addr, "") + fmt.Sprintf(`
data "mssqlifi_instances" "sql" {
  host = %q
}
`, e.addr))
	w.mustApply()
	for i := range 2 {
		q := w.plan()
		q.wantPlanExit(t, 0)
		if ws := q.bySeverity("warning"); len(ws) > 0 {
			t.Errorf("converged plan %d prints warnings: %v", i+1, ws)
		}
	}
}

// The resource page's fleet import, its example as written (import blocks with
// for_each over HOST/INSTANCE ids): instances that already have IFI are imported
// with no change, neither on the host nor in the plan (no argument the import
// cannot know is set), and the next plan is empty.
func TestCLI_fleetImportByIDLeavesAnEmptyPlan(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := discoveryHost(t)
	ex, err := os.ReadFile("../../examples/resources/mssqlifi_instant_file_initialization/import-by-string-id.tf")
	if err != nil {
		t.Fatal(err)
	}
	_, fleet, ok := strings.Cut(string(ex), "# A fleet at once")
	ids := regexp.MustCompile(`(?s)toset\(\[.*?\]\)`)
	if !ok || len(ids.FindAllString(fleet, -1)) != 1 {
		t.Fatalf("the example has no fleet import with one toset([...]) of ids:\n%s", ex)
	}
	fleet = ids.ReplaceAllString(fleet, fmt.Sprintf(`toset(["%[1]s/I01", "%[1]s/I02", "%[1]s/I03"])`, e.addr))
	w.write(e.providerConfig(true) + "# A fleet at once" + fleet)
	r := w.plan()
	if r.Exit == 1 {
		t.Fatalf("terraform plan failed:\n%s", r.describe())
	}
	imports := 0
	for _, c := range r.Changes {
		switch c.Action {
		case "import":
			imports++
		default:
			t.Errorf("the plan has %s for %s; want an import only", c.Action, c.Addr)
		}
	}
	if imports != 3 {
		t.Errorf("the plan imports %d instances (changes %v); want 3", imports, r.Changes)
	}
	w.mustApply()
	if n := countOp(e.operations(), contract.OpSetRight) + countOp(e.operations(), contract.OpRestartInstance); n != 0 {
		t.Errorf("importing changed the host: %v", e.operations())
	}
	w.plan().wantPlanExit(t, 0)
}
