package hostsuite

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract/contracttest"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

// fciRead is a three-node cluster: SQL01 owns the role and grants the right, SQL02
// lacks it (and a Group Policy defines the right there), SQL03 is no possible owner;
// unreadable names possible owners whose read_instance failed.
func fciRead(t *testing.T, unreadable ...string) *ifi.ClusterAssessment {
	t.Helper()
	all := []string{"SQL01", "SQL02", "SQL03"}
	c := &contract.ReadClusterResult{Cluster: "CLU1", Node: "SQL01",
		Nodes:       []contract.ClusterNode{{Name: "SQL01", State: contract.NodeUp}, {Name: "SQL02", State: contract.NodeUp}, {Name: "SQL03", State: contract.NodePaused}},
		Group:       contract.ClusterGroup{Name: "SQL Server (MSSQLSERVER)", OwnerNode: "SQL01", State: contract.ClusterOnline},
		Resources:   []contract.ClusterResource{{Name: "SQL Server", Type: contract.ResourceSQLServer, State: contract.ClusterOnline, PossibleOwners: all[:2]}},
		VirtualName: "sqlfci1.contoso.example"}
	obs := ifi.ClusterObserved{Host: "sql01.contoso.example", Cluster: c, Nodes: map[string]ifi.NodeObservation{}}
	for _, n := range all[:2] {
		addr := strings.ToLower(n) + ".contoso.example"
		if slices.Contains(unreadable, n) {
			obs.Nodes[n] = ifi.NodeObservation{Address: addr, Err: errors.New("WinRM: connection refused")}
			continue
		}
		r := contracttest.RunningDefaultInstance()
		r.ComputerName, r.Clustered = n, true
		r.GroupPolicy.Known = true
		if n == "SQL01" {
			r.RightHolders = append(r.RightHolders, contract.Principal{SID: winsid.ServiceSID(r.ServiceName)})
		} else {
			r.ServiceState = contract.StateStopped
			r.GroupPolicy.Defined = true
		}
		obs.Nodes[n] = ifi.NodeObservation{Address: addr, Instance: r}
	}
	ca, err := ifi.AssessCluster(ifi.Desired{Enabled: true, Grantee: ifi.GranteeServiceSID, Restart: ifi.RestartNever}, obs)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// TestGoldenClusterReport: the cluster stage reports each node (owner, possible
// owner, grant, Group Policy) and whether IFI survives a failover; a possible owner
// that could not be read fails the stage and leaves the answer unknown.
func TestGoldenClusterReport(t *testing.T) {
	var b strings.Builder
	for _, tc := range []struct {
		name       string
		unreadable []string
	}{{"every possible owner read", nil}, {"SQL02 unreadable", []string{"SQL02"}}} {
		fmt.Fprintf(&b, "-- %s\n", tc.name)
		for _, r := range clusterReport(fciRead(t, tc.unreadable...)) {
			fmt.Fprintf(&b, "%s %s: %s\n", r.Status, r.Check, r.Detail)
		}
	}
	golden(t, "cluster-report", b.String())
}

// TestCompareClusterNodes: the data source's cluster_nodes must say what the
// suite's own reads say.
func TestCompareClusterNodes(t *testing.T) {
	ca := fciRead(t)
	node := func(name string, owner, possible bool, granted any) map[string]any {
		return map[string]any{"name": name, "current_owner": owner, "possible_owner": possible, "privilege_granted": granted}
	}
	agree := func(nodes []any) map[string]any {
		return map[string]any{"clustered": true, "ifi_survives_failover": false, "cluster_nodes": nodes}
	}
	nodes := func() []any {
		return []any{node("SQL01", true, true, true), node("SQL02", false, true, false), node("SQL03", false, false, nil)}
	}
	if msg := compareClusterNodes(agree(nodes()), ca); msg != "" {
		t.Fatalf("agreeing data source refused: %s", msg)
	}
	for name, edit := range map[string]func(d map[string]any, n []any){
		"not clustered":     func(d map[string]any, _ []any) { d["clustered"] = false },
		"survives":          func(d map[string]any, _ []any) { d["ifi_survives_failover"] = true },
		"node missing":      func(d map[string]any, n []any) { d["cluster_nodes"] = n[:2] },
		"grant differs":     func(_ map[string]any, n []any) { n[1] = node("SQL02", false, true, true) },
		"owner differs":     func(_ map[string]any, n []any) { n[1] = node("SQL02", true, true, false) },
		"other node's name": func(_ map[string]any, n []any) { n[2] = node("SQL09", false, false, nil) },
	} {
		n := nodes()
		d := agree(n)
		edit(d, n)
		if msg := compareClusterNodes(d, ca); msg == "" {
			t.Errorf("%s: a data source that disagrees with the reads passed", name)
		}
	}
}
