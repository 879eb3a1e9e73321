package ifi

import (
	"errors"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

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
