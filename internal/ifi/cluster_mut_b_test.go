package ifi

import (
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

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
