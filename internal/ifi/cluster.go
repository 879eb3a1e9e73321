package ifi

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
)

// The rules of a failover cluster instance (FCI; design/cluster.md). The right
// is local to each node's LSA, so IFI survives a failover only if every possible
// owner of the instance's role grants it; an FCI is never restarted through the
// service manager, only through the cluster (restart = "failover" or
// "cluster_restart").

// Cluster warning codes.
const (
	// WarnFailoverLosesIFI: a possible owner lacks the right, so a failover there
	// starts SQL Server without IFI.
	WarnFailoverLosesIFI = "failover_loses_ifi"
	// WarnNodeUnreadable: a possible owner could not be read; whether IFI survives a
	// failover is unknown.
	WarnNodeUnreadable = "node_unreadable"
	// WarnFailback: the planned failover is followed by a failback (a second outage).
	WarnFailback = "failback"
)

// ClusterObserved is what the nodes of a failover cluster instance report.
type ClusterObserved struct {
	Host    string                      // the node the user pointed at, as written, for messages
	Cluster *contract.ReadClusterResult // read_cluster on that node
	// Nodes are the possible owners' reads, by node name (any case).
	Nodes map[string]NodeObservation
	// Named are the node names the user's nodes argument names; each must be a
	// possible owner.
	Named []string
	// Verification is what SQL Server on the virtual name says: the running Engine,
	// on the owner.
	Verification Verification
}

// NodeObservation is one node's read_instance, or why it could not be read.
type NodeObservation struct {
	Address  string
	Instance *contract.ReadInstanceResult // nil when not read
	Err      error                        // why it could not be read
}

// NodeState is one node of the cluster as the resource reports it.
type NodeState struct {
	Name          string
	Address       string
	State         string // contract.Node*
	Owner         bool   // the role runs there now
	PossibleOwner bool   // the role may run there (every resource of it may)
	// Reachable: the node's read_instance answered; the fields below are known only then.
	Reachable bool
	// Granted: the grantee directly holds the right there.
	Granted bool
	// Effective: SQL Server started there would have IFI (the right, through any
	// holder, and no trace flag 1806).
	Effective bool
	// GPODefines: a Group Policy defines the right there; GPOKnown: that is known.
	GPODefines bool
	GPOKnown   bool
	Err        error // why the node could not be read
}

// ClusterAssessment is the decision's view of a failover cluster instance.
type ClusterAssessment struct {
	Host        string // the node reached, as written
	Instance    string
	Cluster     string
	Group       string
	VirtualName string
	Owner       string
	// Nodes are the cluster's nodes, in the cluster's order.
	Nodes []NodeState
	// PossibleOwners: the intersection of the role's resources' possible owners.
	PossibleOwners []string
	// IFISurvivesFailover: every possible owner would start SQL Server with IFI; nil
	// when a possible owner could not be read and none is known to lack it.
	IFISurvivesFailover *bool
	// Lacking are the possible owners that would start SQL Server without IFI.
	Lacking []string
	// Unreadable are the possible owners that could not be read.
	Unreadable []string
	// OwnerAssessment is the owner's assessment (the running Engine, verified through
	// SQL Server on the virtual name); nil when the owner could not be read.
	OwnerAssessment *Assessment
	// PerNode are the readable possible owners' assessments, by node name.
	PerNode map[string]*Assessment
	// Converged: every possible owner is as asked, and the running Engine too.
	Converged bool
	Warnings  []Warning

	desired  Desired
	observed ClusterObserved
}

// where names the instance for cluster-wide messages: the node reached and the role.
func (c *ClusterAssessment) where() string {
	fci := "failover cluster instance"
	if c.VirtualName != "" { // the cluster may not report the network name's DNS name
		fci += " " + safetext.Escape(c.VirtualName)
	}
	return fmt.Sprintf("instance %s on %s (%s, role %q on cluster %s)", safetext.Escape(c.Instance),
		safetext.Escape(c.Host), fci, safetext.Escape(c.Group), safetext.Escape(c.Cluster))
}

// PossibleOwnersOf is the role's possible owners: the intersection over its
// resources' possible owners (a group comes online only on a node every resource
// may run on), in the cluster's node order. With no resources reported it is what
// the host computed.
func PossibleOwnersOf(c *contract.ReadClusterResult) []string {
	if len(c.Resources) == 0 {
		return slices.Clone(c.PossibleOwners)
	}
	var out []string
	for _, n := range clusterNodeNames(c) {
		all := true
		for _, r := range c.Resources {
			all = all && containsFold(r.PossibleOwners, n)
		}
		if all {
			out = append(out, n)
		}
	}
	return out
}

// clusterNodeNames: the cluster's nodes, then any possible owner it does not list.
func clusterNodeNames(c *contract.ReadClusterResult) []string {
	var names []string
	for _, n := range c.Nodes {
		names = append(names, n.Name)
	}
	for _, r := range c.Resources {
		for _, n := range r.PossibleOwners {
			if !containsFold(names, n) {
				names = append(names, n)
			}
		}
	}
	return names
}

func containsFold(list []string, s string) bool {
	return slices.ContainsFunc(list, func(x string) bool { return strings.EqualFold(x, s) })
}

// Node is the observation of the node named name, whatever its case (Windows
// compares computer names without case; the possible owners and the node list may
// spell them apart).
func (o ClusterObserved) Node(name string) (NodeObservation, bool) {
	for k, v := range o.Nodes {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return NodeObservation{}, false
}

func nodeState(c *contract.ReadClusterResult, name string) string {
	for _, n := range c.Nodes {
		if strings.EqualFold(n.Name, name) {
			return n.State
		}
	}
	return contract.NodeUnknown
}

// CheckNamedNodes refuses node names (the nodes argument) that are not possible
// owners of the role.
func CheckNamedNodes(host, instance string, c *contract.ReadClusterResult, named []string) error {
	possible := PossibleOwnersOf(c)
	var wrong []string
	for _, n := range named {
		if !containsFold(possible, n) {
			wrong = append(wrong, safetext.Escape(n))
		}
	}
	if len(wrong) == 0 {
		return nil
	}
	sort.Strings(wrong)
	return fmt.Errorf("nodes names %s, which is not a possible owner of the role %q of instance %s on %s (cluster %s; possible owners: %s). "+
		"Remove it from nodes, or make it a possible owner of every resource of the role in Failover Cluster Manager",
		strings.Join(wrong, ", "), safetext.Escape(c.Group.Name), safetext.Escape(instance), safetext.Escape(host),
		safetext.Escape(c.Cluster), names(possible))
}

// AssessCluster compares what the user asked for with what every node reports.
func AssessCluster(d Desired, o ClusterObserved) (*ClusterAssessment, error) {
	c := o.Cluster
	if c == nil {
		return nil, errors.New("the failover cluster was not read")
	}
	if d.Restart == "" {
		d.Restart = RestartIfNeeded
	}
	ca := &ClusterAssessment{Host: o.Host, Cluster: c.Cluster, Group: c.Group.Name, VirtualName: c.VirtualName, Owner: c.Group.OwnerNode,
		PossibleOwners: PossibleOwnersOf(c), PerNode: map[string]*Assessment{}, desired: d, observed: o}
	if err := CheckNamedNodes(o.Host, instanceOfCluster(o), c, o.Named); err != nil {
		return nil, err
	}
	ca.Instance = instanceOfCluster(o)
	converged, known := true, true
	for _, name := range clusterNodeNames(c) {
		n := NodeState{Name: name, State: nodeState(c, name), Owner: strings.EqualFold(name, c.Group.OwnerNode),
			PossibleOwner: containsFold(ca.PossibleOwners, name)}
		obs, read := o.Node(name)
		n.Address = obs.Address
		switch {
		case read && obs.Instance != nil:
			v := Verification{Source: SourceNone}
			if n.Owner {
				v = o.Verification
			}
			a, err := Assess(d, Observed{Host: name, Instance: obs.Instance, Verification: v})
			if err != nil {
				return nil, fmt.Errorf("node %s of %s: %w", safetext.Escape(name), ca.where(), err)
			}
			n.Reachable, n.Granted, n.Effective = true, a.PrivilegeGranted, a.ExpectedRunning
			n.GPODefines, n.GPOKnown = a.GroupPolicyManaged, a.GroupPolicyKnown
			ca.PerNode[name] = a
			if n.Owner {
				ca.OwnerAssessment = a
				ca.Warnings = append(ca.Warnings, a.Warnings...)
			} else if n.PossibleOwner {
				ca.Warnings = append(ca.Warnings, nodeWarnings(a.Warnings)...)
			}
			if n.PossibleOwner {
				converged = converged && a.Converged
				if !n.Effective {
					ca.Lacking = append(ca.Lacking, name)
				}
			}
		case n.PossibleOwner:
			n.Err = obs.Err
			if n.Err == nil {
				n.Err = errors.New("it was not read")
			}
			ca.Unreadable = append(ca.Unreadable, name)
			converged, known = false, false
		}
		ca.Nodes = append(ca.Nodes, n)
	}
	survives := len(ca.Lacking) == 0
	if known || !survives {
		ca.IFISurvivesFailover = &survives
	}
	ca.Converged = converged
	ca.Warnings = append(ca.Warnings, ca.clusterWarnings()...)
	return ca, nil
}

func instanceOfCluster(o ClusterObserved) string {
	for _, n := range o.Nodes {
		if n.Instance != nil && n.Instance.Instance != "" {
			return n.Instance.Instance
		}
	}
	return "(unknown)"
}

// nodeWarnings are the warnings of a node where SQL Server does not run now: those
// about the right and the service's configuration, not the running Engine.
func nodeWarnings(ws []Warning) []Warning {
	var out []Warning
	for _, w := range ws {
		switch w.Code {
		case WarnNotRunning, WarnUnverified, WarnRestartPending, WarnTDE, WarnStaysOnDestroy:
			continue
		}
		out = append(out, w)
	}
	return out
}

func (c *ClusterAssessment) clusterWarnings() []Warning {
	var w []Warning
	if c.desired.Enabled && len(c.Lacking) > 0 {
		w = append(w, Warning{WarnFailoverLosesIFI, fmt.Sprintf("IFI does not survive a failover of %s to %s", c.where(), names(c.Lacking)),
			fmt.Sprintf("The role %q can fail over to %s (possible owners: %s), where SQL Server would start without \"Perform volume maintenance tasks\" "+
				"for its grantee: after a failover there, restores and file growth zero every byte. Apply grants the right on every possible owner.",
				safetext.Escape(c.Group), names(c.Lacking), names(c.PossibleOwners)), nil})
	}
	for _, name := range c.Unreadable {
		n := c.nodeNamed(name)
		w = append(w, Warning{WarnNodeUnreadable, fmt.Sprintf("Possible owner %s of %s could not be read", safetext.Escape(name), c.where()),
			fmt.Sprintf("The possible owner %s%s could not be read: %s. Whether IFI survives a failover there is unknown (ifi_survives_failover is null). "+
				"If its name does not resolve from where Terraform runs, give its address in nodes = { %s = \"address\" }.",
				safetext.Escape(name), addressPhrase(n.Address), safetext.Escape(errText(n.Err)), safetext.Escape(name)), n.Err})
	}
	return w
}

func (c *ClusterAssessment) nodeNamed(name string) NodeState {
	for _, n := range c.Nodes {
		if strings.EqualFold(n.Name, name) {
			return n
		}
	}
	return NodeState{Name: name}
}

func addressPhrase(addr string) string {
	if addr == "" {
		return ""
	}
	return " (at " + safetext.Escape(addr) + ")"
}

func errText(err error) string {
	if err == nil {
		return "no answer"
	}
	return err.Error()
}

// NodeSteps are the changes of the right on one node.
type NodeSteps struct {
	Node    string
	Address string
	Steps   []Step
}

// ClusterPlan is what an apply does on an FCI, in order: the steps node by node,
// then, when Restart, a failover to Target or a restart of the role on its owner.
type ClusterPlan struct {
	Nodes         []NodeSteps
	Restart       bool
	Mode          RestartPolicy // RestartFailover or RestartClusterRestart when Restart
	Target        string        // the failover's target node
	RestartReason string
	Warnings      []Warning
}

// Changes reports whether the plan changes anything.
func (p *ClusterPlan) Changes() bool {
	return p.Restart || slices.ContainsFunc(p.Nodes, func(n NodeSteps) bool { return len(n.Steps) > 0 })
}

// PlanCluster decides the steps of an apply on an FCI, or refuses before anything
// changes on any node.
func PlanCluster(d Desired, o ClusterObserved) (*ClusterAssessment, *ClusterPlan, error) {
	ca, err := AssessCluster(d, o)
	if err != nil {
		return nil, nil, err
	}
	d = ca.desired
	if len(ca.Unreadable) > 0 {
		n := ca.nodeNamed(ca.Unreadable[0])
		name := safetext.Escape(n.Name)
		return ca, nil, refusal(fmt.Sprintf("Possible owner %s of %s cannot be reached", name, ca.where()),
			fmt.Sprintf("The possible owners %s of the role %q must each be read and granted the right", names(ca.PossibleOwners), safetext.Escape(ca.Group)),
			fmt.Sprintf("%s%s could not be read: %s", name, addressPhrase(n.Address), safetext.Escape(errText(n.Err))),
			nothingChangedOnAnyNode,
			"check that the node is up and its WinRM listener answers, then apply again",
			fmt.Sprintf("if its name does not resolve from where Terraform runs, give its address in nodes = { %s = \"address\" }", name))
	}
	if ca.OwnerAssessment == nil {
		return ca, nil, refusal("The owner of the role of "+ca.where()+" is not a possible owner that could be read",
			fmt.Sprintf("The right is managed on the owner of the role %q, where SQL Server runs, and on each of its possible owners", safetext.Escape(ca.Group)),
			fmt.Sprintf("the cluster says the role runs on %s, which is not among its possible owners (%s)", safetext.Escape(ca.Owner), names(ca.PossibleOwners)),
			nothingChangedOnAnyNode,
			"check the role's possible owners in Failover Cluster Manager, then apply again")
	}
	if d.LockPages != nil {
		return ca, nil, lockPagesClustered(ca.where(), *d.LockPages)
	}
	p := &ClusterPlan{}
	after := map[string]bool{} // what SQL Server started on each possible owner would have once the steps are made
	for _, n := range ca.Nodes {
		if !n.PossibleOwner {
			continue
		}
		a := ca.PerNode[n.Name]
		nd := d
		nd.Restart = RestartNever
		_, np, err := PlanApply(nd, a.observed)
		if err != nil {
			return ca, nil, err
		}
		p.Nodes = append(p.Nodes, NodeSteps{Node: n.Name, Address: n.Address, Steps: np.Steps})
		after[n.Name] = a.expectedAfter(np.Steps)
	}
	owner := ca.OwnerAssessment
	if !d.Restart.Restarts() {
		return ca, p, nil
	}
	want := after[ca.nodeNamed(ca.Owner).Name]
	steps := p.Changes()
	switch {
	case owner.RunningIFI != nil && *owner.RunningIFI != want:
		p.Restart = true
		p.RestartReason = fmt.Sprintf("the running Engine has IFI %s and needs a restart to have it %s", onOff(*owner.RunningIFI), onOff(want))
	case owner.RunningIFI == nil && steps && owner.observed.Instance.ServiceState == contract.StateRunning:
		p.Restart = true
		p.RestartReason = "the right changed and IFI cannot be verified, so SQL Server restarts to be sure it takes effect"
	}
	if !p.Restart {
		return ca, p, nil
	}
	if !d.Restart.ThroughCluster() {
		r := ca.serviceManagerRefusal(p.RestartReason)
		return ca, nil, r
	}
	p.Mode = d.Restart
	if d.Restart == RestartFailover {
		target, skipped := ca.failoverTarget(after, want)
		if target == "" {
			return ca, nil, refusal("No node to fail "+ca.where()+" over to",
				fmt.Sprintf("IFI needs a restart (%s) and restart = \"failover\" moves the role to another possible owner", p.RestartReason),
				"no other possible owner can take the role: "+strings.Join(skipped, "; "),
				nothingChangedOnAnyNode,
				"resume or start a node (or grant the right there), then apply again",
				fmt.Sprintf("set restart = \"cluster_restart\" to restart the role on %s", safetext.Escape(ca.Owner)))
		}
		p.Target = target
		if w, ok := ca.failbackWarning(target); ok {
			p.Warnings = append(p.Warnings, w)
		}
	}
	if r := ca.clusterRestartSafety(p); r != nil {
		return ca, nil, r
	}
	return ca, p, nil
}

// expectedAfter: SQL Server started on this node would have IFI once steps are made.
func (a *Assessment) expectedAfter(steps []Step) bool {
	effective, _, _ := a.effective(holdersAfter(a.observed.Instance.RightHolders, steps, contract.RightManageVolume))
	return effective && !a.TraceFlag1806
}

// serviceManagerRefusal: an FCI needs a restart and the policy would restart it
// through the service manager.
func (c *ClusterAssessment) serviceManagerRefusal(reason string) *Refusal {
	return refusal("Failover cluster instance: refusing to restart it through the service manager",
		fmt.Sprintf("%s needs a restart (%s)", c.where(), reason),
		fmt.Sprintf("restart = %q would restart it through the service manager, which the provider never does to a clustered instance "+
			"(the cluster would see the resource fail)", c.desired.Restart),
		nothingChangedOnAnyNode,
		"choose how the cluster restarts it: set restart = \"failover\" to move the role to another possible owner once each holds the right "+
			"(about a restart's downtime; the old node is then free to be patched)",
		"set restart = \"cluster_restart\" to take SQL Server offline and online on its current owner",
		"set restart = \"never\" to grant the right on every possible owner and leave the restart to you")
}

// restartRoute refuses a restart the policy does not route to this kind of
// instance: the service manager for a clustered one, the cluster for another.
func (a *Assessment) restartRoute(p *Plan) *Refusal {
	d := a.desired
	switch {
	case a.Clustered && !d.Restart.ThroughCluster():
		return refusal("Clustered SQL Server instance: refusing to restart it",
			fmt.Sprintf("%s is a failover cluster instance and IFI needs a restart (%s)", a.where(), p.RestartReason),
			fmt.Sprintf("restart = %q would restart it through the service manager, which the provider never does to a clustered instance", d.Restart),
			nothingChanged,
			"set restart = \"failover\" (move the role to another possible owner) or restart = \"cluster_restart\" (offline and online on its owner) "+
				"to restart it through the cluster",
			"set restart = \"never\" and restart the role through Failover Cluster Manager")
	case a.Clustered:
		return refusal("Failover cluster not read: refusing to restart "+a.where(),
			fmt.Sprintf("%s is a failover cluster instance and IFI needs a restart (%s) through the cluster (restart = %q)", a.where(), p.RestartReason, d.Restart),
			"the cluster's nodes and role were not read, so the provider cannot tell that every possible owner holds the right",
			nothingChanged,
			"check that root\\MSCluster answers on the node, then apply again")
	case d.Restart.ThroughCluster():
		return refusal(fmt.Sprintf("restart = %q is for failover cluster instances: refusing to restart %s", d.Restart, a.where()),
			fmt.Sprintf("%s is not a failover cluster instance and IFI needs a restart (%s)", a.where(), p.RestartReason),
			fmt.Sprintf("restart = %q restarts only through a failover cluster", d.Restart),
			nothingChanged,
			"set restart = \"if_needed\" to restart the service",
			restartNever)
	}
	return nil
}

// failoverTarget picks the node the role moves to: the preferred owners in the
// cluster's order, then the other possible owners in the cluster's node order;
// skipping the owner and any node that is not up (paused, down, joining) or whose
// SQL Server would not start as wanted (it lacks the right). skipped says why each
// other node was passed over.
func (c *ClusterAssessment) failoverTarget(after map[string]bool, want bool) (string, []string) {
	grp := c.observed.Cluster.Group
	order := []string{}
	for _, n := range grp.PreferredOwners {
		if containsFold(c.PossibleOwners, n) && !containsFold(order, n) {
			order = append(order, n)
		}
	}
	for _, n := range c.PossibleOwners {
		if !containsFold(order, n) {
			order = append(order, n)
		}
	}
	var skipped []string
	for _, name := range order {
		n := c.nodeNamed(name)
		switch {
		case n.Owner:
			continue
		case n.State != contract.NodeUp:
			skipped = append(skipped, fmt.Sprintf("%s is %s", safetext.Escape(n.Name), safetext.Escape(n.State)))
		case after[n.Name] != want:
			skipped = append(skipped, fmt.Sprintf("%s would start SQL Server with IFI %s (it lacks the right, or its service's configuration keeps it off)", safetext.Escape(n.Name), onOff(after[n.Name])))
		default:
			return n.Name, skipped
		}
	}
	if len(skipped) == 0 {
		skipped = []string{"the owner " + safetext.Escape(c.Owner) + " is its only possible owner"}
	}
	return "", skipped
}

// failbackWarning: with AutoFailbackType allow, a role moved away from its first
// preferred owner is moved back to that node when the node comes back up (within
// the failback window, when one is set): a second outage. Whether the cluster also
// fails back a role moved on purpose while that node stays up is unproven on a real
// cluster (FIDELITY.md); the warning says "can" and names the moment it is sure of.
func (c *ClusterAssessment) failbackWarning(target string) (Warning, bool) {
	g := c.observed.Cluster.Group
	if g.AutoFailbackType != contract.FailbackAllow || len(g.PreferredOwners) == 0 || strings.EqualFold(g.PreferredOwners[0], target) {
		return Warning{}, false
	}
	first := safetext.Escape(g.PreferredOwners[0])
	when := "as soon as " + first + " is up again (for example after it is patched and restarted)"
	if g.FailbackWindowStart >= 0 && g.FailbackWindowEnd >= 0 {
		when = fmt.Sprintf("once %s is up again, between %02d:00 and %02d:00 (the cluster's local time, its failback window)", first, g.FailbackWindowStart, g.FailbackWindowEnd)
	}
	target = safetext.Escape(target)
	return Warning{WarnFailback, fmt.Sprintf("A failback can follow the failover of %s to %s: a second outage", c.where(), target),
		fmt.Sprintf("The role %q allows failback (AutoFailbackType 1) to its first preferred owner %s, so after the move to %s the cluster can move it "+
			"back %s: SQL Server stops and starts once more. Set the role's failback to prevent (Failover Cluster Manager, the role's properties, "+
			"Failover tab) or make %s the first preferred owner if that second outage is not wanted.",
			safetext.Escape(c.Group), first, target, when, target), nil}, true
}

// clusterRestartSafety: an FCI that is also an availability group primary (or whose
// role is unknown) is refused as the AG guard refuses it; then the rest of the
// restart rule (group health, running backups) as for any restart.
func (c *ClusterAssessment) clusterRestartSafety(p *ClusterPlan) *Refusal {
	a := c.OwnerAssessment
	rk := knowRole(a.AG, a.observed.Instance)
	gate := c.agGate(p.Mode)
	switch {
	case !rk.known:
		return gate.roleUnknown(p.RestartReason, rk)
	case rk.primary:
		return gate.primary(p.RestartReason, rk)
	}
	sp := &Plan{Restart: true, RestartReason: p.RestartReason}
	if r := a.restartSafety(sp); r != nil {
		return r
	}
	p.Warnings = append(p.Warnings, sp.Warnings...)
	return nil
}

// agGate: an FCI restarts through the cluster (mode), its refusals speak for every
// node, and it has no opt-in to restarting a primary (its restart policy is the
// cluster's mode).
func (c *ClusterAssessment) agGate(mode RestartPolicy) agGate {
	how := "moving the role"
	if mode == RestartClusterRestart {
		how = "taking SQL Server offline"
	}
	return agGate{where: c.where(), subject: c.where(), how: how, unchanged: nothingChangedOnAnyNode}
}

// ClusterPrediction is what an apply would do on an FCI as observed.
type ClusterPrediction struct {
	Prediction
	Cluster *ClusterAssessment
	Plan    *ClusterPlan // nil when refused
}

// PredictCluster decides, as PlanCluster would, what an apply of d does; the
// warning names the host, the instance and every node that lacks the right.
func PredictCluster(d Desired, o ClusterObserved, drift bool) (ClusterPrediction, error) {
	ca, p, err := PlanCluster(d, o)
	var r *Refusal
	if err != nil && !errors.As(err, &r) {
		return ClusterPrediction{}, err
	}
	return ca.prediction(d, o, p, r, drift), nil
}

// refusedPrediction is the plan's warning of an apply that will refuse.
func (ca *ClusterAssessment) refusedPrediction(r *Refusal) ClusterPrediction {
	pr := ClusterPrediction{Cluster: ca}
	pr.Assessment = ca.OwnerAssessment
	pr.Action = ActionRefuse
	pr.Warning = Warning{Code: WarnPlannedAction, Summary: fmt.Sprintf("%s: apply will refuse: %s", ca.where(), r.Summary),
		Detail: ca.lackingPhrase() + "The apply will refuse and change nothing on any node: " + r.Detail}
	return pr
}

// prediction is what plan p does (or the refusal r), in a DBA's words.
func (ca *ClusterAssessment) prediction(d Desired, o ClusterObserved, p *ClusterPlan, r *Refusal, drift bool) ClusterPrediction {
	if r != nil {
		return ca.refusedPrediction(r)
	}
	pr := ClusterPrediction{Cluster: ca, Plan: p}
	pr.Assessment = ca.OwnerAssessment
	pr.PlanWarnings = p.Warnings
	grant, revoke := false, false
	var did []string
	for _, n := range p.Nodes {
		for _, s := range n.Steps {
			grant, revoke = grant || s.Grant, revoke || !s.Grant
			a := ca.PerNode[n.Node]
			verb := "grants"
			if !s.Grant {
				verb = "revokes"
			}
			did = append(did, fmt.Sprintf("on %s %s \"Perform volume maintenance tasks\" %s %s (%s)", safetext.Escape(n.Node), verb, toFrom(s.Grant), a.principalName(s.SID), s.Reason))
		}
	}
	pr.Action = ActionOf(nil, &Plan{Steps: flatSteps(p), Restart: p.Restart}, nil)
	if pr.Action == ActionNone {
		return pr
	}
	prefix := ""
	if drift {
		prefix = "Changed outside Terraform: "
	}
	summary := []string{}
	if grant {
		summary = append(summary, "grants the right on "+names(nodesWith(p, true)))
	}
	if revoke {
		summary = append(summary, "revokes the right on "+names(nodesWith(p, false)))
	}
	detail := ca.lackingPhrase() + "The apply " + strings.Join(did, ", then ")
	switch {
	case p.Restart && p.Mode == RestartFailover:
		target := safetext.Escape(p.Target)
		summary = append(summary, fmt.Sprintf("moves the role from %s to %s", safetext.Escape(ca.Owner), target))
		if len(did) > 0 {
			detail += ", and "
		}
		g := o.Cluster.Group
		detail += fmt.Sprintf("moves the role %q from %s to %s (%s): SQL Server stops on %s and starts on %s, about a restart's downtime. %s",
			safetext.Escape(ca.Group), safetext.Escape(ca.Owner), target, p.RestartReason, safetext.Escape(ca.Owner), target, thresholdPhrase(g))
	case p.Restart:
		summary = append(summary, "restarts the role on "+safetext.Escape(ca.Owner)+" through the cluster")
		if len(did) > 0 {
			detail += ", and "
		}
		detail += fmt.Sprintf("takes SQL Server offline and the role %q online again on %s (%s): the instance is unavailable until SQL Server is back "+
			"and has recovered its databases; SQL Server Agent is brought back with the role.", safetext.Escape(ca.Group), safetext.Escape(ca.Owner), p.RestartReason)
	default:
		detail += ", with no restart: " + ca.OwnerAssessment.noRestartReason(d) + "."
	}
	pr.Warning = Warning{Code: WarnPlannedAction, Summary: fmt.Sprintf("%s%s: apply %s", prefix, ca.where(), strings.Join(summary, ", then ")), Detail: detail}
	return pr
}

// lackingPhrase names the possible owners that lack the right, for the plan.
func (c *ClusterAssessment) lackingPhrase() string {
	if !c.desired.Enabled || len(c.Lacking) == 0 {
		return ""
	}
	return fmt.Sprintf("The possible owners %s lack the right: a failover there would start SQL Server without IFI. ", names(c.Lacking))
}

// names joins node names for a message.
func names(ns []string) string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = safetext.Escape(n)
	}
	return strings.Join(out, ", ")
}

func flatSteps(p *ClusterPlan) []Step {
	var out []Step
	for _, n := range p.Nodes {
		out = append(out, n.Steps...)
	}
	return out
}

func nodesWith(p *ClusterPlan, grant bool) []string {
	var out []string
	for _, n := range p.Nodes {
		if slices.ContainsFunc(n.Steps, func(s Step) bool { return s.Grant == grant }) {
			out = append(out, n.Node)
		}
	}
	return out
}

// thresholdPhrase says how many failovers the cluster allows before it leaves the
// role failed (FailoverThreshold in FailoverPeriod hours; -1, 0xFFFFFFFF, lets the
// cluster decide: one fewer than its nodes).
func thresholdPhrase(g contract.ClusterGroup) string {
	if g.FailoverThreshold < 0 {
		return fmt.Sprintf("The cluster allows one failover fewer than it has nodes in %d hours (its default threshold) before it leaves the role failed.", g.FailoverPeriodHours)
	}
	return fmt.Sprintf("The cluster allows %d failovers in %d hours before it leaves the role failed.", g.FailoverThreshold, g.FailoverPeriodHours)
}
