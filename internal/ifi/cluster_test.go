package ifi

import (
	"errors"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// fci is a three-node cluster CL1: the role "SQL Server (MSSQLSERVER)" runs on SQL01,
// preferred owners SQL01, SQL02; SQL01 and SQL02 grant the right, SQL03 does not.
// SQL Server on the virtual name reports IFI on.
type fci struct {
	cluster *contract.ReadClusterResult
	nodes   map[string]*contract.ReadInstanceResult
	errs    map[string]error
	v       Verification
	named   []string
}

func newFCI() *fci {
	c := &contract.ReadClusterResult{Cluster: "CL1", Node: "SQL01",
		Nodes: []contract.ClusterNode{{Name: "SQL01", State: contract.NodeUp}, {Name: "SQL02", State: contract.NodeUp}, {Name: "SQL03", State: contract.NodeUp}},
		Group: contract.ClusterGroup{Name: "SQL Server (MSSQLSERVER)", OwnerNode: "SQL01", State: contract.ClusterOnline,
			PreferredOwners: []string{"SQL01", "SQL02"}, FailbackWindowStart: -1, FailbackWindowEnd: -1, FailoverThreshold: 2, FailoverPeriodHours: 6},
		Resources: []contract.ClusterResource{
			{Name: "SQL Server", Type: contract.ResourceSQLServer, State: contract.ClusterOnline, PossibleOwners: []string{"SQL01", "SQL02", "SQL03"}},
			{Name: "SQL Network Name (SQLVS1)", Type: contract.ResourceNetworkName, State: contract.ClusterOnline, PossibleOwners: []string{"SQL01", "SQL02", "SQL03"}},
		},
		PossibleOwners: []string{"SQL01", "SQL02", "SQL03"}, VirtualName: "sqlvs1.corp.example"}
	f := &fci{cluster: c, nodes: map[string]*contract.ReadInstanceResult{}, errs: map[string]error{}, v: dmv(true)}
	for _, n := range []string{"SQL01", "SQL02", "SQL03"} {
		ri := inst(func(r *contract.ReadInstanceResult) { r.ComputerName = n; r.Clustered = true })
		if n != "SQL01" {
			ri.ServiceState = contract.StateStopped
		}
		if n != "SQL03" {
			holders(svcSID)(ri)
		}
		f.nodes[n] = ri
	}
	return f
}

func (f *fci) observed() ClusterObserved {
	o := ClusterObserved{Host: "sql01.corp.example", Cluster: f.cluster, Nodes: map[string]NodeObservation{}, Verification: f.v, Named: f.named}
	for _, n := range PossibleOwnersOf(f.cluster) {
		if err := f.errs[n]; err != nil {
			o.Nodes[n] = NodeObservation{Address: strings.ToLower(n) + ".corp.example", Err: err}
			continue
		}
		o.Nodes[n] = NodeObservation{Address: strings.ToLower(n) + ".corp.example", Instance: f.nodes[n]}
	}
	return o
}

func nodeOf(t *testing.T, ca *ClusterAssessment, name string) NodeState {
	t.Helper()
	for _, n := range ca.Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no node %s in %+v", name, ca.Nodes)
	return NodeState{}
}

func clusterRefusal(t *testing.T, d Desired, f *fci) *Refusal {
	t.Helper()
	_, p, err := PlanCluster(d, f.observed())
	var r *Refusal
	if !errors.As(err, &r) {
		t.Fatalf("want a refusal, got %v (plan %+v)", err, p)
	}
	return r
}

func clusterPlan(t *testing.T, d Desired, f *fci) (*ClusterAssessment, *ClusterPlan) {
	t.Helper()
	ca, p, err := PlanCluster(d, f.observed())
	if err != nil {
		t.Fatalf("PlanCluster: %v", err)
	}
	return ca, p
}

// A role's possible owners are the intersection over its resources, whatever the
// host computed.
func TestPossibleOwnersAreTheIntersection(t *testing.T) {
	f := newFCI()
	f.cluster.Resources[1].PossibleOwners = []string{"sql02", "SQL01"}
	f.cluster.PossibleOwners = []string{"SQL01", "SQL02", "SQL03"} // the host's claim
	if got := PossibleOwnersOf(f.cluster); strings.Join(got, ",") != "SQL01,SQL02" {
		t.Fatalf("possible owners %v; want SQL01,SQL02 (the network name cannot run on SQL03)", got)
	}
	ca, err := AssessCluster(enable, f.observed())
	if err != nil {
		t.Fatal(err)
	}
	if n := nodeOf(t, ca, "SQL03"); n.PossibleOwner || n.Reachable {
		t.Errorf("SQL03 %+v; want no possible owner, not read", n)
	}
	if ca.IFISurvivesFailover == nil || !*ca.IFISurvivesFailover {
		t.Errorf("IFI survives %v; want true: both possible owners grant", ca.IFISurvivesFailover)
	}
}

// Each node's state, and the roll-up: SQL03 lacks the right, so IFI does not survive
// a failover, and the warning names it with the host and the instance.
func TestAssessClusterPerNode(t *testing.T) {
	f := newFCI()
	f.nodes["SQL02"].GroupPolicy.Defined = true
	f.nodes["SQL02"].GroupPolicy.Holders = []contract.Principal{{SID: svcSID}}
	ca, err := AssessCluster(enable, f.observed())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]NodeState{
		"SQL01": {Owner: true, PossibleOwner: true, Reachable: true, Granted: true, Effective: true, GPOKnown: true},
		"SQL02": {PossibleOwner: true, Reachable: true, Granted: true, Effective: true, GPODefines: true, GPOKnown: true},
		"SQL03": {PossibleOwner: true, Reachable: true, GPOKnown: true},
	}
	for name, w := range want {
		n := nodeOf(t, ca, name)
		if n.Owner != w.Owner || n.PossibleOwner != w.PossibleOwner || n.Reachable != w.Reachable || n.Granted != w.Granted ||
			n.Effective != w.Effective || n.GPODefines != w.GPODefines || n.GPOKnown != w.GPOKnown || n.State != contract.NodeUp {
			t.Errorf("%s = %+v; want %+v", name, n, w)
		}
	}
	if ca.IFISurvivesFailover == nil || *ca.IFISurvivesFailover || strings.Join(ca.Lacking, ",") != "SQL03" || ca.Converged {
		t.Errorf("survives %v, lacking %v, converged %v; want false, [SQL03], false", ca.IFISurvivesFailover, ca.Lacking, ca.Converged)
	}
	w, ok := warningOf(ca.Warnings, WarnFailoverLosesIFI)
	if !ok || !strings.Contains(w.Summary, "instance MSSQLSERVER on sql01.corp.example") || !strings.Contains(w.Summary, "to SQL03") {
		t.Errorf("warning %+v; want one naming SQL03, the host and the instance", w)
	}
	// Warnings about the running Engine come from the owner only.
	if n := strings.Count(warningTexts(ca.Warnings), "is not running"); n != 0 {
		t.Errorf("the stopped services of the other nodes warn %d times: %+v", n, ca.Warnings)
	}
}

func warningTexts(ws []Warning) string {
	var b strings.Builder
	for _, w := range ws {
		b.WriteString(w.Summary + " " + w.Detail + "\n")
	}
	return b.String()
}

// A possible owner that cannot be read: the roll-up is unknown, a refresh warns, and
// an apply refuses before changing anything on any node, naming it.
func TestUnreachablePossibleOwner(t *testing.T) {
	f := newFCI()
	f.nodes["SQL03"] = f.nodes["SQL02"] // it would grant, but cannot be read
	f.errs["SQL03"] = errors.New("dial tcp: lookup sql03.corp.example: no such host")
	ca, err := AssessCluster(enable, f.observed())
	if err != nil {
		t.Fatal(err)
	}
	if ca.IFISurvivesFailover != nil || strings.Join(ca.Unreadable, ",") != "SQL03" {
		t.Errorf("survives %v, unreadable %v; want unknown, [SQL03]", ca.IFISurvivesFailover, ca.Unreadable)
	}
	if w, ok := warningOf(ca.Warnings, WarnNodeUnreadable); !ok || !strings.Contains(w.Detail, "no such host") || !strings.Contains(w.Detail, "nodes = { SQL03") {
		t.Errorf("warning %+v", w)
	}
	r := clusterRefusal(t, enable, f)
	if !strings.Contains(r.Summary, "SQL03") || !strings.Contains(r.Detail, "Nothing was changed on any node") || !strings.Contains(r.Detail, "sql03.corp.example") {
		t.Errorf("refusal %+v; want SQL03 and its address named, nothing changed", r)
	}
	// A node known to lack the right makes the roll-up false even beside an unreadable one.
	f.nodes["SQL02"] = newFCI().nodes["SQL03"]
	ca, _ = AssessCluster(enable, f.observed())
	if ca.IFISurvivesFailover == nil || *ca.IFISurvivesFailover {
		t.Errorf("survives %v; want false (SQL02 lacks the right)", ca.IFISurvivesFailover)
	}
}

// A node the nodes argument names must be a possible owner.
func TestNamedNodeMustBeAPossibleOwner(t *testing.T) {
	f := newFCI()
	f.named = []string{"sql02", "SQL09"}
	_, err := AssessCluster(enable, f.observed())
	if err == nil || !strings.Contains(err.Error(), "SQL09") || strings.Contains(err.Error(), "names sql02") || !strings.Contains(err.Error(), "SQL01, SQL02, SQL03") {
		t.Fatalf("err = %v; want SQL09 named, with the possible owners", err)
	}
}

// restart = "never": the right is granted on each node that lacks it, nothing restarts.
func TestPlanClusterGrantsNodeByNode(t *testing.T) {
	_, p := clusterPlan(t, withRestart(enable, RestartNever), newFCI())
	if p.Restart || len(p.Nodes) != 3 {
		t.Fatalf("plan %+v; want three nodes, no restart", p)
	}
	for _, n := range p.Nodes {
		grants := len(n.Steps) == 1 && n.Steps[0].Grant && n.Steps[0].SID == svcSID
		if (n.Node == "SQL03") != grants || n.Address != strings.ToLower(n.Node)+".corp.example" {
			t.Errorf("node %+v", n)
		}
	}
}

// restart = "if_needed" on an FCI that needs a restart refuses, and the plan says so
// with the choices.
func TestIfNeededOnAnFCIRefusesWithTheChoices(t *testing.T) {
	f := newFCI()
	f.v = dmv(false)
	r := clusterRefusal(t, enable, f)
	for _, s := range []string{`restart = "failover"`, `restart = "cluster_restart"`, `restart = "never"`, "Nothing was changed on any node"} {
		if !strings.Contains(r.Detail, s) {
			t.Errorf("refusal lacks %q: %s", s, r.Detail)
		}
	}
	pr, err := PredictCluster(enable, f.observed(), false)
	if err != nil {
		t.Fatal(err)
	}
	if pr.Action != ActionRefuse || !strings.Contains(pr.Warning.Summary, "instance MSSQLSERVER on sql01.corp.example") ||
		!strings.Contains(pr.Warning.Detail, "SQL03 lack the right") || !strings.Contains(pr.Warning.Detail, `restart = "failover"`) {
		t.Errorf("prediction %+v", pr.Warning)
	}
	// The single-node path refuses likewise, with the choices.
	_, _, err = PlanApply(enable, obs(dmv(false), holders(svcSID), func(r *contract.ReadInstanceResult) { r.Clustered = true }))
	var rr *Refusal
	if !errors.As(err, &rr) || !strings.Contains(rr.Detail, `restart = "failover"`) || !strings.Contains(rr.Detail, `restart = "cluster_restart"`) {
		t.Errorf("PlanApply on a clustered instance: %v", err)
	}
}

// restart = "failover" or "cluster_restart" on an instance that is not clustered refuses.
func TestClusterPoliciesOnAStandaloneInstance(t *testing.T) {
	for _, rp := range []RestartPolicy{RestartFailover, RestartClusterRestart} {
		r := refusalOf(t, withRestart(enable, rp), obs(dmv(false), holders(svcSID)))
		if !strings.Contains(r.Summary, string(rp)) || !strings.Contains(r.Detail, `restart = "if_needed"`) {
			t.Errorf("%s: %+v", rp, r)
		}
	}
}

// The target of a failover: the preferred owners' order, skipping the owner and
// nodes that are paused, down or would start without IFI; then the other possible
// owners.
func TestFailoverTarget(t *testing.T) {
	failover := withRestart(enable, RestartFailover)
	for _, tc := range []struct {
		name   string
		mod    func(*fci)
		target string
	}{
		{"first preferred other than the owner", func(*fci) {}, "SQL02"},
		{"preferred order", func(f *fci) { f.cluster.Group.PreferredOwners = []string{"SQL03", "SQL01", "SQL02"} }, "SQL03"},
		{"paused skipped", func(f *fci) { f.cluster.Nodes[1].State = contract.NodePaused }, "SQL03"},
		{"down skipped", func(f *fci) { f.cluster.Nodes[1].State = contract.NodeDown }, "SQL03"},
		{"lacking the right skipped", func(f *fci) { f.nodes["SQL02"].ServiceSIDType = 0 }, "SQL03"},
		{"preferred owner that is no possible owner skipped", func(f *fci) {
			f.cluster.Group.PreferredOwners = []string{"SQL09", "SQL03"}
		}, "SQL03"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFCI()
			f.v = dmv(false)
			tc.mod(f)
			_, p := clusterPlan(t, failover, f)
			if !p.Restart || p.Mode != RestartFailover || p.Target != tc.target {
				t.Errorf("plan %+v; want a failover to %s", p, tc.target)
			}
		})
	}
	f := newFCI()
	f.v = dmv(false)
	f.cluster.Nodes[1].State = contract.NodePaused
	f.cluster.Nodes[2].State = contract.NodeDown
	r := clusterRefusal(t, failover, f)
	if !strings.Contains(r.Detail, "SQL02 is paused") || !strings.Contains(r.Detail, "SQL03 is down") || !strings.Contains(r.Detail, `restart = "cluster_restart"`) {
		t.Errorf("refusal %+v", r)
	}
}

// With AutoFailbackType allow, a failover away from the first preferred owner is
// followed by a failback: the plan warns of a second outage, with the window.
func TestFailbackWarning(t *testing.T) {
	failover := withRestart(enable, RestartFailover)
	f := newFCI()
	f.v = dmv(false)
	_, p := clusterPlan(t, failover, f)
	if HasWarning(p.Warnings, WarnFailback) {
		t.Errorf("failback prevented, yet warned: %+v", p.Warnings)
	}
	f.cluster.Group.AutoFailbackType = contract.FailbackAllow
	_, p = clusterPlan(t, failover, f)
	w, ok := warningOf(p.Warnings, WarnFailback)
	if !ok || !strings.Contains(w.Summary, "second outage") || !strings.Contains(w.Detail, "first preferred owner SQL01") || !strings.Contains(w.Detail, "as soon as SQL01 is up again") {
		t.Errorf("warning %+v", w)
	}
	f.cluster.Group.FailbackWindowStart, f.cluster.Group.FailbackWindowEnd = 22, 23
	_, p = clusterPlan(t, failover, f)
	if w, _ := warningOf(p.Warnings, WarnFailback); !strings.Contains(w.Detail, "between 22:00 and 23:00") {
		t.Errorf("window: %s", w.Detail)
	}
	// Moving to the first preferred owner is no failback.
	f.cluster.Group.PreferredOwners = []string{"SQL02", "SQL01"}
	_, p = clusterPlan(t, failover, f)
	if HasWarning(p.Warnings, WarnFailback) {
		t.Errorf("target is the first preferred owner, yet warned: %+v", p.Warnings)
	}
}

// An FCI that is also an availability group primary is refused as the AG guard
// refuses, for both cluster policies; an unknown role too.
func TestFCIAlsoAGPrimaryRefused(t *testing.T) {
	for _, rp := range []RestartPolicy{RestartFailover, RestartClusterRestart} {
		f := newFCI()
		f.v = replica(RolePrimary)
		r := clusterRefusal(t, withRestart(enable, rp), f)
		if !strings.Contains(r.Summary, "Primary availability replica") || !strings.Contains(r.Detail, "ALTER AVAILABILITY GROUP [AG1]") ||
			strings.Contains(r.Detail, "if_needed_including_primary") {
			t.Errorf("%s: %+v", rp, r)
		}
		f.v = Verification{Source: SourceNone}
		f.nodes["SQL01"].HADR = nil
		r = clusterRefusal(t, withRestart(enable, rp), f)
		if !strings.Contains(r.Summary, "role unknown") {
			t.Errorf("%s, no SQL: %+v", rp, r)
		}
	}
}

// The predictions of a failover and of a cluster restart name the nodes, the host
// and the instance.
func TestPredictCluster(t *testing.T) {
	f := newFCI()
	f.v = dmv(false)
	pr, err := PredictCluster(withRestart(enable, RestartFailover), f.observed(), false)
	if err != nil {
		t.Fatal(err)
	}
	if pr.Action != ActionGrantAndRestart || !strings.Contains(pr.Warning.Summary, "instance MSSQLSERVER on sql01.corp.example") ||
		!strings.Contains(pr.Warning.Summary, "grants the right on SQL03, then moves the role from SQL01 to SQL02") ||
		!strings.Contains(pr.Warning.Detail, "2 failovers in 6 hours") {
		t.Errorf("failover prediction %s %+v", pr.Action, pr.Warning)
	}
	f.cluster.Group.FailoverThreshold = -1 // 0xFFFFFFFF: the cluster decides
	if pr, _ = PredictCluster(withRestart(enable, RestartFailover), f.observed(), false); !strings.Contains(pr.Warning.Detail, "one failover fewer than it has nodes in 6 hours") {
		t.Errorf("default threshold: %s", pr.Warning.Detail)
	}
	pr, err = PredictCluster(withRestart(enable, RestartClusterRestart), f.observed(), true)
	if err != nil {
		t.Fatal(err)
	}
	if pr.Action != ActionGrantAndRestart || !strings.HasPrefix(pr.Warning.Summary, "Changed outside Terraform: ") ||
		!strings.Contains(pr.Warning.Summary, "restarts the role on SQL01 through the cluster") || !strings.Contains(pr.Warning.Detail, "Agent") {
		t.Errorf("cluster restart prediction %s %+v", pr.Action, pr.Warning)
	}
	// Nothing to do: no warning.
	g := newFCI()
	g.nodes["SQL03"] = g.nodes["SQL02"]
	pr, err = PredictCluster(withRestart(enable, RestartFailover), g.observed(), false)
	if err != nil || pr.Action != ActionNone || pr.Warning.Summary != "" {
		t.Errorf("converged cluster: %v %s %+v", err, pr.Action, pr.Warning)
	}
}

// Every cluster text escapes what the cluster reports (node, group and cluster names).
func TestClusterTextsEscapeHostData(t *testing.T) {
	f := newFCI()
	f.v = dmv(false)
	f.cluster.Group.Name = "SQL\x1b[31m"
	f.cluster.Nodes[1].State = contract.NodePaused
	f.cluster.Nodes[2].State = contract.NodeDown
	r := clusterRefusal(t, withRestart(enable, RestartFailover), f)
	ca, _ := AssessCluster(enable, f.observed())
	for _, s := range []string{r.Summary, r.Detail, warningTexts(ca.Warnings)} {
		if strings.ContainsRune(s, 0x1b) {
			t.Errorf("unescaped control character in %q", s)
		}
	}
}
