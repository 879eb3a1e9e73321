package provider

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// terraform query with the list resource of mssqlifi_instant_file_initialization
// (Terraform 1.14 and later); the same behaviours are tested at the protocol level
// in every run (list_instant_file_initialization_test.go).

// queryResult is one list_resource_found line of terraform query -json.
type queryResult struct {
	DisplayName    string         `json:"display_name"`
	Identity       map[string]any `json:"identity"`
	ResourceObject map[string]any `json:"resource_object"`
}

// query runs terraform query -json and returns the run and its results.
func (w *cliWork) query() (*tfRun, []queryResult) {
	w.t.Helper()
	r := w.run("query", "-json", "-no-color")
	var found []queryResult
	sc := bufio.NewScanner(strings.NewReader(r.Stdout))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var l struct {
			Type  string       `json:"type"`
			Found *queryResult `json:"list_resource_found"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Type == "list_resource_found" && l.Found != nil {
			found = append(found, *l.Found)
		}
	}
	return r, found
}

// terraform query lists every instance of two hosts (one on another WinRM port
// than the provider's, named HOST:PORT), with identity and attributes; the
// configuration it generates imports them, and the plan after the import is empty.
func TestCLI_queryListsAndGeneratedConfigImports(t *testing.T) {
	t.Parallel()
	w := actionCLI(t)
	es := twoQueryHosts(t)
	w.write(es[0].providerConfig(true))
	q := fmt.Sprintf(`
list "mssqlifi_instant_file_initialization" "fleet" {
  provider         = mssqlifi
  include_resource = true
  config {
    hosts = [%q, %q]
  }
}
`, es[0].addr, hostPort(es[1]))
	if err := os.WriteFile(filepath.Join(w.dir, "fleet.tfquery.hcl"), []byte(q), 0o600); err != nil {
		t.Fatal(err)
	}
	n0, n1 := len(es[0].operations()), len(es[1].operations())
	r, found := w.query()
	if r.Exit != 0 {
		t.Fatalf("terraform query failed:\n%s", r.describe())
	}
	var names []string
	for _, f := range found {
		names = append(names, f.DisplayName)
		if f.Identity["host"] == nil || f.Identity["instance"] == nil || f.ResourceObject["service_name"] == nil {
			t.Errorf("%s: identity %v, resource %v; want host, instance and the attributes", f.DisplayName, f.Identity, f.ResourceObject)
		}
	}
	want := []string{es[0].addr + "/MSSQLSERVER", es[0].addr + "/REPORTING", es[1].addr + "/MSSQLSERVER"}
	if !slices.Equal(names, want) {
		t.Errorf("terraform query found %v, want %v", names, want)
	}
	for i, ops := range [][]string{es[0].opsSince(n0), es[1].opsSince(n1)} {
		if got := countOp(ops, "read_host"); got != 1 {
			t.Errorf("host %d: operations %v, want one read_host", i, ops)
		}
	}

	r = w.run("query", "-no-color", "-generate-config-out=generated.tf")
	if r.Exit != 0 {
		t.Fatalf("terraform query -generate-config-out failed:\n%s\n%s", r.Stdout, r.Stderr)
	}
	gen, err := os.ReadFile(filepath.Join(w.dir, "generated.tf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("generated.tf:\n%s", gen)
	before := []int{es[0].stops("MSSQLSERVER"), es[0].stops(`MSSQL$REPORTING`), es[1].stops("MSSQLSERVER")}
	a := w.apply()
	if a.Exit != 0 {
		t.Fatalf("the apply of the generated configuration failed:\n%s", a.describe())
	}
	for _, c := range a.Changes {
		if c.Action != "import" && c.Action != "noop" {
			t.Errorf("the apply of the generated configuration planned %s %s; want imports only", c.Action, c.Addr)
		}
	}
	if st := w.state(); len(st) != 3 {
		t.Errorf("the state holds %d resources after the import, want 3", len(st))
	}
	w.plan().wantPlanExit(t, 0)
	after := []int{es[0].stops("MSSQLSERVER"), es[0].stops(`MSSQL$REPORTING`), es[1].stops("MSSQLSERVER")}
	if !slices.Equal(before, after) {
		t.Errorf("the import restarted an instance: stops %v, were %v", after, before)
	}
}
