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

// convergedFCI is newFCI with SQL03 granting too: every possible owner holds the right
// and the running Engine has IFI.
func convergedFCI() *fci {
	f := newFCI()
	holders(svcSID)(f.nodes["SQL03"])
	return f
}

func assessed(t *testing.T, d Desired, o ClusterObserved) *ClusterAssessment {
	t.Helper()
	ca, err := AssessCluster(d, o)
	if err != nil {
		t.Fatalf("AssessCluster: %v", err)
	}
	return ca
}

// With no resources reported, the possible owners are what the host computed; with
// one resource, that resource's possible owners, whatever the host claims.
func TestPossibleOwnersWithoutOrWithOneResource(t *testing.T) {
	f := newFCI()
	f.cluster.Resources = nil
	f.cluster.PossibleOwners = []string{"SQL01", "SQL02"}
	if got := strings.Join(PossibleOwnersOf(f.cluster), ","); got != "SQL01,SQL02" {
		t.Errorf("no resources: possible owners %s; want the host's SQL01,SQL02", got)
	}
	g := newFCI()
	g.cluster.Resources = g.cluster.Resources[:1]
	g.cluster.Resources[0].PossibleOwners = []string{"SQL02", "SQL01"}
	if got := strings.Join(PossibleOwnersOf(g.cluster), ","); got != "SQL01,SQL02" {
		t.Errorf("one resource: possible owners %s; want SQL01,SQL02 (the resource cannot run on SQL03)", got)
	}
}

// A possible owner the cluster's node list lacks is still assessed: SQL03 lacks the
// right, so IFI does not survive a failover there.
func TestPossibleOwnerMissingFromTheNodeList(t *testing.T) {
	f := newFCI()
	f.cluster.Nodes = f.cluster.Nodes[:2]
	ca := assessed(t, enable, f.observed())
	if n := nodeOf(t, ca, "SQL03"); !n.PossibleOwner || !n.Reachable || n.State != contract.NodeUnknown {
		t.Errorf("SQL03 %+v; want a read possible owner of unknown state", n)
	}
	if ca.IFISurvivesFailover == nil || *ca.IFISurvivesFailover || strings.Join(ca.Lacking, ",") != "SQL03" {
		t.Errorf("survives %v, lacking %v; want false, [SQL03]", ca.IFISurvivesFailover, ca.Lacking)
	}
}

// A cluster that was not read is an error, not a crash.
func TestClusterNotRead(t *testing.T) {
	if _, err := AssessCluster(enable, ClusterObserved{Host: "sql01.corp.example"}); err == nil || !strings.Contains(err.Error(), "not read") {
		t.Errorf("AssessCluster: %v; want the cluster not read", err)
	}
	if _, _, err := PlanCluster(enable, ClusterObserved{Host: "sql01.corp.example"}); err == nil {
		t.Error("PlanCluster: no error; want the cluster not read")
	}
}

// A possible owner where the instance is not installed: an error naming the node.
func TestInstanceMissingOnAPossibleOwner(t *testing.T) {
	f := newFCI()
	f.nodes["SQL02"].Found = false
	_, err := AssessCluster(enable, f.observed())
	if err == nil || !strings.Contains(err.Error(), "node SQL02") || !strings.Contains(err.Error(), "not installed") {
		t.Errorf("err = %v; want SQL02 named, the instance not installed", err)
	}
}

// A wrong node name refuses the plan too.
func TestPlanClusterNamedNodeMustBeAPossibleOwner(t *testing.T) {
	f := newFCI()
	f.named = []string{"SQL09"}
	if _, p, err := PlanCluster(enable, f.observed()); err == nil || !strings.Contains(err.Error(), "SQL09") {
		t.Errorf("err = %v (plan %+v); want SQL09 refused", err, p)
	}
}

// Every possible owner as asked: converged. One unreadable, although it would grant:
// not converged.
func TestClusterConverged(t *testing.T) {
	if ca := assessed(t, enable, convergedFCI().observed()); !ca.Converged {
		t.Errorf("converged %v; want true: every possible owner grants, the Engine has IFI", ca.Converged)
	}
	f := convergedFCI()
	f.errs["SQL03"] = errors.New("WinRM: connection refused")
	if ca := assessed(t, enable, f.observed()); ca.Converged {
		t.Error("converged with SQL03 unreadable; want false")
	}
}

// The owner's warnings about the running Engine (TDE) and another possible owner's
// warnings about the right (Group Policy) both reach the cluster's warnings.
func TestClusterWarningsFromOwnerAndNodes(t *testing.T) {
	f := newFCI()
	f.v.TDEDatabases = []string{"Sales"}
	gp(svcSID)(f.nodes["SQL02"])
	ca := assessed(t, enable, f.observed())
	if w, ok := warningOf(ca.Warnings, WarnTDE); !ok || !strings.Contains(w.Detail, "Sales") {
		t.Errorf("no TDE warning from the owner: %+v", ca.Warnings)
	}
	if w, ok := warningOf(ca.Warnings, WarnGroupPolicy); !ok || !strings.Contains(w.Detail, "SQL02") {
		t.Errorf("no Group Policy warning naming SQL02: %+v", ca.Warnings)
	}
}

// An unreadable possible owner: the warning and the refusal give its address when
// known, and say it was not read when nothing answered.
func TestUnreadableNodeTexts(t *testing.T) {
	f := newFCI()
	f.errs["SQL03"] = errors.New("WinRM: connection refused")
	ca := assessed(t, enable, f.observed())
	if w, _ := warningOf(ca.Warnings, WarnNodeUnreadable); !strings.Contains(w.Detail, "SQL03 (at sql03.corp.example) could not be read: WinRM: connection refused") {
		t.Errorf("warning %q; want the address and the error", w.Detail)
	}
	if r := clusterRefusal(t, enable, f); !strings.Contains(r.Detail, "SQL03 (at sql03.corp.example) could not be read") {
		t.Errorf("refusal %q; want the address", r.Detail)
	}
	o := newFCI().observed()
	delete(o.Nodes, "SQL03")
	ca = assessed(t, enable, o)
	if w, _ := warningOf(ca.Warnings, WarnNodeUnreadable); !strings.Contains(w.Detail, "SQL03 could not be read: it was not read") || w.Err == nil {
		t.Errorf("warning %+v; want SQL03 not read, no address", w)
	}
}

// failover_loses_ifi only when IFI is asked for and a possible owner lacks it.
func TestFailoverLosesIFIOnlyWhenEnabledAndLacking(t *testing.T) {
	if ca := assessed(t, disable, newFCI().observed()); HasWarning(ca.Warnings, WarnFailoverLosesIFI) {
		t.Errorf("enabled = false, yet warned: %+v", ca.Warnings)
	}
	if ca := assessed(t, enable, convergedFCI().observed()); HasWarning(ca.Warnings, WarnFailoverLosesIFI) {
		t.Errorf("every possible owner grants, yet warned: %+v", ca.Warnings)
	}
}

// A plan changes something only when a node has a step or the role restarts.
func TestClusterPlanChanges(t *testing.T) {
	if _, p := clusterPlan(t, withRestart(enable, RestartNever), convergedFCI()); p.Changes() {
		t.Errorf("converged cluster: plan %+v changes something", p)
	}
	if _, p := clusterPlan(t, withRestart(enable, RestartNever), newFCI()); !p.Changes() {
		t.Errorf("SQL03 lacks the right: plan %+v changes nothing", p)
	}
}

// The restart policy left empty means if_needed: an FCI that needs a restart refuses.
func TestPlanClusterDefaultRestartPolicy(t *testing.T) {
	f := newFCI()
	f.v = dmv(false)
	r := clusterRefusal(t, Desired{Enabled: true, Grantee: GranteeServiceSID}, f)
	if !strings.Contains(r.Detail, `restart = "if_needed"`) || !strings.Contains(r.Detail, "the running Engine has IFI off and needs a restart to have it on") {
		t.Errorf("refusal %+v; want if_needed refused with the reason", r)
	}
}

// The role running on a node that is not a possible owner: refused, even with
// restart = "never".
func TestOwnerNotAPossibleOwner(t *testing.T) {
	f := newFCI()
	f.cluster.Group.OwnerNode = "SQL03"
	for i := range f.cluster.Resources {
		f.cluster.Resources[i].PossibleOwners = []string{"SQL01", "SQL02"}
	}
	r := clusterRefusal(t, withRestart(enable, RestartNever), f)
	if !strings.Contains(r.Summary, "not a possible owner") || !strings.Contains(r.Detail, "runs on SQL03") {
		t.Errorf("refusal %+v", r)
	}
}

// A node's own refusal (a Group Policy that does not list the grantee) refuses the
// whole plan.
func TestNodeRefusalRefusesTheClusterPlan(t *testing.T) {
	f := newFCI()
	gp()(f.nodes["SQL03"])
	r := clusterRefusal(t, withRestart(enable, RestartNever), f)
	if !strings.Contains(r.Summary, "Group Policy") || !strings.Contains(r.Detail, "SQL03") {
		t.Errorf("refusal %+v; want SQL03's Group Policy named", r)
	}
}

// restart = "never" on an FCI whose Engine needs a restart: the right is granted,
// nothing restarts, nothing is refused.
func TestNeverOnAnFCIThatNeedsARestart(t *testing.T) {
	f := newFCI()
	f.v = dmv(false)
	_, p := clusterPlan(t, withRestart(enable, RestartNever), f)
	if p.Restart || !p.Changes() {
		t.Errorf("plan %+v; want SQL03 granted, no restart", p)
	}
}

// No restart when the running Engine already has IFI, though SQL03 is granted the
// right; with if_needed there is then nothing to refuse.
func TestNoRestartWhenTheEngineHasIFI(t *testing.T) {
	for _, rp := range []RestartPolicy{RestartFailover, RestartIfNeeded} {
		_, p := clusterPlan(t, withRestart(enable, rp), newFCI())
		if p.Restart || !p.Changes() || p.Target != "" {
			t.Errorf("%s: plan %+v; want SQL03 granted, no restart", rp, p)
		}
	}
}

// The restart's reason: the running Engine's IFI, or the right changed unverified.
func TestClusterRestartReasons(t *testing.T) {
	f := newFCI()
	f.v = dmv(false)
	_, p := clusterPlan(t, withRestart(enable, RestartFailover), f)
	if p.RestartReason != "the running Engine has IFI off and needs a restart to have it on" {
		t.Errorf("reason %q", p.RestartReason)
	}
	g := newFCI()
	g.v = Verification{Source: SourceNone, AG: &AGMembership{Groups: []string{}}, RunningBackups: []string{}}
	_, p = clusterPlan(t, withRestart(enable, RestartClusterRestart), g)
	if !p.Restart || !strings.Contains(p.RestartReason, "IFI cannot be verified") {
		t.Errorf("plan %+v; want a restart because IFI cannot be verified", p)
	}
}

// ownedBy limits the role's possible owners (every resource's) to nodes.
func (f *fci) ownedBy(nodes ...string) {
	for i := range f.cluster.Resources {
		f.cluster.Resources[i].PossibleOwners = nodes
	}
	f.cluster.PossibleOwners = nodes
}

// failoverRefusal is the refusal of restart = "failover" on f, whose Engine runs
// without IFI (so a restart is needed).
func failoverRefusal(t *testing.T, f *fci) *Refusal {
	t.Helper()
	f.v = dmv(false)
	return clusterRefusal(t, withRestart(enable, RestartFailover), f)
}

// The refusal of a failover with no target says why each other possible owner was
// passed over, in the cluster's order, and only those.
func TestFailoverRefusalNamesEachSkippedNode(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*fci)
		why  string
	}{
		{"a preferred owner that is no possible owner is not named", func(f *fci) {
			f.cluster.Group.PreferredOwners = []string{"SQL09", "SQL02"}
			f.cluster.Nodes[1].State = contract.NodePaused
			f.cluster.Nodes[2].State = contract.NodeDown
		}, "take the role: SQL02 is paused; SQL03 is down. Nothing"},
		{"a node lacking the right", func(f *fci) {
			f.nodes["SQL02"].ServiceSIDType = 0
			f.cluster.Nodes[2].State = contract.NodeDown
		}, "take the role: SQL02 would start SQL Server with IFI off (it lacks the right, or its service's configuration keeps it off); SQL03 is down. Nothing"},
		{"one other possible owner, paused", func(f *fci) {
			f.ownedBy("SQL01", "SQL02")
			f.cluster.Nodes[1].State = contract.NodePaused
		}, "take the role: SQL02 is paused. Nothing"},
		{"the owner is the only possible owner", func(f *fci) { f.ownedBy("SQL01") }, "take the role: the owner SQL01 is its only possible owner. Nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFCI()
			tc.mod(f)
			if r := failoverRefusal(t, f); !strings.Contains(r.Detail, tc.why) {
				t.Errorf("refusal %s\nwant %q", r.Detail, tc.why)
			}
		})
	}
}

// failbackOf is the failback warning of a failover of f, with AutoFailbackType allow.
func failbackOf(t *testing.T, f *fci) (Warning, bool) {
	t.Helper()
	f.v = dmv(false)
	f.cluster.Group.AutoFailbackType = contract.FailbackAllow
	_, p := clusterPlan(t, withRestart(enable, RestartFailover), f)
	return warningOf(p.Warnings, WarnFailback)
}

// A single preferred owner still fails the role back; the window is named only when
// both of its ends are set, midnight included.
func TestFailbackWarningWindowAndSinglePreferredOwner(t *testing.T) {
	f := newFCI()
	f.cluster.Group.PreferredOwners = []string{"SQL01"}
	if w, ok := failbackOf(t, f); !ok || !strings.Contains(w.Summary, "to SQL02") || !strings.Contains(w.Detail, "first preferred owner SQL01") {
		t.Errorf("one preferred owner: %v %+v; want the failback to SQL01 warned", ok, w)
	}
	for _, tc := range []struct {
		start, end int
		when       string
	}{
		{0, 6, "once SQL01 is up again, between 00:00 and 06:00"},
		{22, 0, "once SQL01 is up again, between 22:00 and 00:00"},
		{22, -1, "as soon as SQL01 is up again"},
		{-1, 23, "as soon as SQL01 is up again"},
	} {
		f := newFCI()
		f.cluster.Group.FailbackWindowStart, f.cluster.Group.FailbackWindowEnd = tc.start, tc.end
		if w, ok := failbackOf(t, f); !ok || !strings.Contains(w.Detail, tc.when) {
			t.Errorf("window %d-%d: %+v; want %q", tc.start, tc.end, w, tc.when)
		}
	}
}

// A plan with no failback carries no empty warning.
func TestFailoverPlanHasNoEmptyWarning(t *testing.T) {
	f := newFCI()
	f.v = dmv(false)
	_, p := clusterPlan(t, withRestart(enable, RestartFailover), f)
	for _, w := range p.Warnings {
		if w.Code == "" || w.Summary == "" {
			t.Errorf("empty warning in %+v", p.Warnings)
		}
	}
}

// rename gives the node SQL02 another name everywhere the cluster reports it.
func (f *fci) rename(to string) {
	for i := range f.cluster.Nodes {
		if f.cluster.Nodes[i].Name == "SQL02" {
			f.cluster.Nodes[i].Name = to
		}
	}
	swap := func(ns []string) []string {
		out := make([]string, len(ns))
		for i, n := range ns {
			out[i] = n
			if n == "SQL02" {
				out[i] = to
			}
		}
		return out
	}
	for i := range f.cluster.Resources {
		f.cluster.Resources[i].PossibleOwners = swap(f.cluster.Resources[i].PossibleOwners)
	}
	f.cluster.PossibleOwners = swap(f.cluster.PossibleOwners)
	f.cluster.Group.PreferredOwners = swap(f.cluster.Group.PreferredOwners)
	f.nodes[to] = f.nodes["SQL02"]
	f.nodes[to].ComputerName = to
	delete(f.nodes, "SQL02")
}

// The failback warning escapes the target's name as the cluster reports it.
func TestFailbackWarningEscapesTheTarget(t *testing.T) {
	f := newFCI()
	f.rename("SQL\x1b[31m02")
	f.cluster.Group.PreferredOwners = []string{"SQL01"}
	w, ok := failbackOf(t, f)
	if !ok {
		t.Fatal("no failback warning")
	}
	if strings.ContainsRune(w.Summary+w.Detail, 0x1b) {
		t.Errorf("unescaped control character in %q %q", w.Summary, w.Detail)
	}
}

// The refusal of an FCI that is an AG primary says what the chosen restart does.
func TestFCIPrimaryRefusalSaysHowItRestarts(t *testing.T) {
	for rp, how := range map[RestartPolicy]string{RestartFailover: "moving the role would take", RestartClusterRestart: "taking SQL Server offline would take"} {
		f := newFCI()
		f.v = replica(RolePrimary)
		if r := clusterRefusal(t, withRestart(enable, rp), f); !strings.Contains(r.Detail, how) {
			t.Errorf("%s: %s; want %q", rp, r.Detail, how)
		}
	}
}

// The rest of the restart rule applies to a cluster restart: a running backup
// refuses, and unchecked backups warn.
func TestClusterRestartSafety(t *testing.T) {
	for _, rp := range []RestartPolicy{RestartFailover, RestartClusterRestart} {
		f := newFCI()
		f.v = dmv(false)
		f.v.RunningBackups = []string{"BACKUP DATABASE (db1)"}
		if r := clusterRefusal(t, withRestart(enable, rp), f); !strings.Contains(r.Summary, "Backup or restore running") {
			t.Errorf("%s, backup running: %+v", rp, r)
		}
		f.v.RunningBackups = nil
		_, p := clusterPlan(t, withRestart(enable, rp), f)
		if !HasWarning(p.Warnings, WarnBackupsUnchecked) {
			t.Errorf("%s, backups unchecked: %+v", rp, p.Warnings)
		}
	}
}

// An error that is no refusal (a named node that is no possible owner) is returned
// by the prediction as it is.
func TestPredictClusterReturnsAnError(t *testing.T) {
	f := newFCI()
	f.named = []string{"SQL09"}
	if _, err := PredictCluster(enable, f.observed(), false); err == nil || !strings.Contains(err.Error(), "SQL09") {
		t.Fatalf("err = %v; want the unknown node SQL09 named", err)
	}
}

// The prediction carries the owner's assessment, refused or not, and the plan's
// warnings.
func TestPredictClusterCarriesAssessmentAndPlanWarnings(t *testing.T) {
	f := newFCI()
	f.v = dmv(false)
	pr, err := PredictCluster(enable, f.observed(), false) // if_needed: refused on an FCI
	if err != nil || pr.Action != ActionRefuse {
		t.Fatalf("%v %s; want a refusal", err, pr.Action)
	}
	if pr.Assessment == nil || pr.Assessment != pr.Cluster.OwnerAssessment || pr.Assessment.RunningIFI == nil || *pr.Assessment.RunningIFI {
		t.Errorf("refused prediction's assessment %+v; want the owner's (running IFI off)", pr.Assessment)
	}
	f.cluster.Group.AutoFailbackType = contract.FailbackAllow
	pr, err = PredictCluster(withRestart(enable, RestartFailover), f.observed(), false)
	if err != nil || pr.Action != ActionGrantAndRestart {
		t.Fatalf("%v %s; want a grant and a failover", err, pr.Action)
	}
	if pr.Assessment == nil || pr.Assessment != pr.Cluster.OwnerAssessment {
		t.Errorf("prediction's assessment %+v; want the owner's", pr.Assessment)
	}
	if !HasWarning(pr.PlanWarnings, WarnFailback) {
		t.Errorf("plan warnings %+v; want the failback", pr.PlanWarnings)
	}
}

// enabled = false on every node: the prediction revokes, names each node, and says
// why nothing restarts; it names no node as lacking the right.
func TestPredictClusterRevokes(t *testing.T) {
	f := newFCI()
	f.nodes["SQL03"] = f.nodes["SQL02"]
	pr, err := PredictCluster(withRestart(disable, RestartNever), f.observed(), false)
	if err != nil {
		t.Fatal(err)
	}
	s, d := pr.Warning.Summary, pr.Warning.Detail
	if !strings.HasSuffix(s, ": apply revokes the right on SQL01, SQL02, SQL03") || strings.Contains(s, "grants") {
		t.Errorf("summary %q; want only the revokes, on the three nodes", s)
	}
	if !strings.HasPrefix(d, `The apply on SQL01 revokes "Perform volume maintenance tasks" from `) || !strings.Contains(d, ", with no restart: ") ||
		strings.Contains(d, "lack the right") {
		t.Errorf("detail %q", d)
	}
}

// The detail joins the steps and the restart with ", and " only when there are
// steps, and names no node as lacking when none does.
func TestPredictClusterRestartDetail(t *testing.T) {
	for _, tc := range []struct {
		rp       RestartPolicy
		withStep string
		noStep   string
	}{
		{RestartFailover, "lacks the right), and moves the role", "The apply moves the role"},
		{RestartClusterRestart, "lacks the right), and takes SQL Server offline", "The apply takes SQL Server offline"},
	} {
		f := newFCI()
		f.v = dmv(false)
		pr, err := PredictCluster(withRestart(enable, tc.rp), f.observed(), false) // one step: the grant on SQL03
		if err != nil || !strings.Contains(pr.Warning.Detail, tc.withStep) {
			t.Errorf("%s, one step: %v %q; want %q", tc.rp, err, pr.Warning.Detail, tc.withStep)
		}
		f.nodes["SQL03"] = f.nodes["SQL02"]
		pr, err = PredictCluster(withRestart(enable, tc.rp), f.observed(), false) // only the restart
		if err != nil || !strings.HasPrefix(pr.Warning.Detail, tc.noStep) {
			t.Errorf("%s, no step: %v %q; want it to start %q", tc.rp, err, pr.Warning.Detail, tc.noStep)
		}
	}
}

// A threshold of 0 is the cluster's number, not its default.
func TestThresholdZero(t *testing.T) {
	f := newFCI()
	f.v = dmv(false)
	f.cluster.Group.FailoverThreshold = 0
	pr, err := PredictCluster(withRestart(enable, RestartFailover), f.observed(), false)
	if err != nil || !strings.Contains(pr.Warning.Detail, "The cluster allows 0 failovers in 6 hours") {
		t.Errorf("%v %q", err, pr.Warning.Detail)
	}
}

// The right's old holder, as the host spells it (in lower case here, the start
// account's SID in either case), is revoked on every node: SQL Server would then
// start without IFI, so the role restarts.
func TestClusterRevokeOfPriorGranteeRestarts(t *testing.T) {
	lower := strings.ToLower(acctSID)
	for _, account := range []string{acctSID, lower} {
		f := newFCI()
		for _, ri := range f.nodes {
			ri.RightHolders = []contract.Principal{{SID: lower}}
			ri.StartAccountSID = account
		}
		d := withRestart(disable, RestartClusterRestart)
		d.PriorGranteeSID = lower
		_, p := clusterPlan(t, d, f)
		if !p.Restart || p.Mode != RestartClusterRestart || len(p.Nodes) != 3 || len(p.Nodes[0].Steps) != 1 || p.Nodes[0].Steps[0].Grant {
			t.Errorf("start account %s: plan %+v; want the old holder revoked on each node, then a restart of the role", account, p)
		}
	}
}
