package converge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

// fakeCluster is a small model of a failover cluster: nodes SQL01..SQL03, each a
// fakeHost with the instance installed (running only on the role's owner), and the
// role "SQL Server (MSSQLSERVER)" with its owner, preferred owners and state. A move
// stops the Engine on the owner and starts it on the target with the target's
// holders, so IFI follows that node's LSA. Faults: a node that cannot be reached,
// a move whose answer is lost (the move happens), a move that fails back.
type fakeCluster struct {
	mu        sync.Mutex
	owner     string
	state     string
	preferred []string
	nodeState map[string]string
	nodes     map[string]*clusterNode
	order     []string

	cutAnswer bool // the cluster action happens, its answer is lost
	// failbackAllow: the role fails back to its first preferred owner (AutoFailbackType 1).
	failbackAllow bool
	// noIFIOn: the Engine started on this node runs without IFI whatever the right's holders.
	noIFIOn string
	// moveErr fails the cluster action before anything moves; afterMove runs once
	// the role moved (the cluster's lock held); beforeReadCluster runs before each
	// read_cluster on a node (outside it), its error failing the read.
	moveErr           error
	afterMove         func()
	beforeReadCluster func(node string) error

	// guards: what read_cluster on a node reports of the guard of the last cluster
	// action sent to it (nil: no record).
	guards map[string]*contract.ClusterGuardRecord

	// noVirtualName: read_cluster reports no virtual name.
	noVirtualName bool
	// readDeadlines: whether each read_cluster request's context had a deadline.
	readDeadlines []bool

	// ownersOnly: read_cluster lists no resources, only the role's possible owners,
	// spelled by ownerSpelling (nil: as the node list spells them).
	ownersOnly    bool
	ownerSpelling func(string) string

	failBack bool // the next move ends Online on the old owner
	moves    []contract.ClusterMoveParams
	restarts int
	reads    int // read_cluster requests
}

type clusterNode struct {
	*fakeHost
	c    *fakeCluster
	name string
	down bool // nothing answers at its address
	// eventLog: set_right's changes leave no entry in the node's event log (its warning).
	eventLog string
	// clusterErr fails read_cluster on this node.
	clusterErr error
}

func newFakeCluster(granted ...string) *fakeCluster {
	c := &fakeCluster{owner: "SQL01", state: contract.ClusterOnline, preferred: []string{"SQL01", "SQL02"},
		nodeState: map[string]string{}, nodes: map[string]*clusterNode{}, order: []string{"SQL01", "SQL02", "SQL03"}}
	for _, n := range c.order {
		h := newFakeHost()
		h.ri.ComputerName = n
		h.ri.Clustered = true
		if slices.Contains(granted, n) {
			h.granted(svcSID)
		}
		if n != c.owner {
			h.ri.ServiceState = contract.StateStopped
			h.runningIFI = false
		}
		c.nodes[n] = &clusterNode{fakeHost: h, c: c, name: n}
		c.nodeState[n] = contract.NodeUp
	}
	// The running Engine on SQL01 has what SQL01 gives.
	c.nodes["SQL01"].runningIFI = c.nodes["SQL01"].effective()
	return c
}

func addrOf(node string) string { return strings.ToLower(node) + ".corp.example" }

func (c *fakeCluster) readLocked(node string) *contract.ReadClusterResult {
	r := &contract.ReadClusterResult{Cluster: "CL1", Node: node, VirtualName: "sqlvs1.corp.example",
		Group: contract.ClusterGroup{Name: "SQL Server (MSSQLSERVER)", OwnerNode: c.owner, State: c.state, PreferredOwners: slices.Clone(c.preferred),
			FailbackWindowStart: -1, FailbackWindowEnd: -1, FailoverThreshold: 2, FailoverPeriodHours: 6},
		PossibleOwners: slices.Clone(c.order)}
	if c.failbackAllow {
		r.Group.AutoFailbackType = contract.FailbackAllow
	}
	for _, n := range c.order {
		r.Nodes = append(r.Nodes, contract.ClusterNode{Name: n, State: c.nodeState[n]})
	}
	r.Resources = []contract.ClusterResource{{Name: "SQL Server", Type: contract.ResourceSQLServer, State: c.state, PossibleOwners: slices.Clone(c.order)}}
	r.Guard = c.guards[node]
	if c.noVirtualName {
		r.VirtualName = ""
	}
	if c.ownersOnly {
		r.Resources = nil
		if c.ownerSpelling != nil {
			for i, o := range r.PossibleOwners {
				r.PossibleOwners[i] = c.ownerSpelling(o)
			}
		}
	}
	return r
}

func (n *clusterNode) unreachable() error {
	if n.down {
		return transientErr{}
	}
	return nil
}

func (n *clusterNode) ReadInstance(ctx context.Context, p contract.ReadInstanceParams) (*contract.ReadInstanceResult, error) {
	if err := n.unreachable(); err != nil {
		return nil, err
	}
	return n.fakeHost.ReadInstance(ctx, p)
}

func (n *clusterNode) SetRight(ctx context.Context, p contract.SetRightParams) (*contract.SetRightResult, error) {
	if err := n.unreachable(); err != nil {
		return nil, err
	}
	res, err := n.fakeHost.SetRight(ctx, p)
	if res != nil {
		res.EventLogWarning = n.eventLog
	}
	return res, err
}

func (n *clusterNode) ReadCluster(ctx context.Context, p contract.ReadClusterParams) (*contract.ReadClusterResult, error) {
	if err := n.unreachable(); err != nil {
		return nil, err
	}
	if n.clusterErr != nil {
		return nil, n.clusterErr
	}
	if n.c.beforeReadCluster != nil {
		if err := n.c.beforeReadCluster(n.name); err != nil {
			return nil, err
		}
	}
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	n.c.reads++
	_, bounded := ctx.Deadline()
	n.c.readDeadlines = append(n.c.readDeadlines, bounded)
	return n.c.readLocked(n.name), nil
}

// startOn moves the running Engine from the owner to node (the same node restarts it).
func (c *fakeCluster) startOn(node string) {
	old := c.nodes[c.owner].fakeHost
	old.mu.Lock()
	old.ri.ServiceState, old.runningIFI = contract.StateStopped, false
	old.mu.Unlock()
	h := c.nodes[node].fakeHost
	h.mu.Lock()
	h.restarts++
	started := fakeBoot.Add(time.Duration(h.restarts) * time.Hour)
	h.ri.ServiceState, h.ri.ProcessStartTime, h.runningIFI = contract.StateRunning, &started, h.effective() && node != c.noIFIOn
	h.mu.Unlock()
	c.owner, c.state = node, contract.ClusterOnline
}

func (n *clusterNode) ClusterMove(ctx context.Context, p contract.ClusterMoveParams) (*contract.ClusterActionResult, error) {
	if err := n.unreachable(); err != nil {
		return nil, err
	}
	c := n.c
	c.mu.Lock()
	defer c.mu.Unlock()
	c.moves = append(c.moves, p)
	if c.moveErr != nil {
		return nil, c.moveErr
	}
	if c.nodeState[p.TargetNode] != contract.NodeUp {
		return nil, &fakeScriptError{code: contract.CodeClusterError, err: fmt.Errorf("%s is %s", p.TargetNode, c.nodeState[p.TargetNode])}
	}
	before := c.owner
	res := &contract.ClusterActionResult{Group: p.Group, OwnerBefore: before}
	if c.failBack {
		c.startOn(p.TargetNode)
		c.startOn(before)
		res.Error = "the cluster moved the role back to " + before
	} else {
		c.startOn(p.TargetNode)
	}
	res.OwnerAfter, res.State = c.owner, c.state
	if c.afterMove != nil {
		c.afterMove()
	}
	if c.cutAnswer {
		return nil, transientErr{}
	}
	return res, nil
}

func (n *clusterNode) ClusterRestart(ctx context.Context, p contract.ClusterRestartParams) (*contract.ClusterActionResult, error) {
	if err := n.unreachable(); err != nil {
		return nil, err
	}
	c := n.c
	c.mu.Lock()
	defer c.mu.Unlock()
	c.restarts++
	if c.moveErr != nil {
		return nil, c.moveErr
	}
	owner := c.owner
	c.startOn(owner)
	if c.cutAnswer {
		return nil, transientErr{}
	}
	return &contract.ClusterActionResult{Group: "SQL Server (MSSQLSERVER)", OwnerBefore: owner, OwnerAfter: c.owner, State: c.state}, nil
}

func (c *fakeCluster) setRights() int {
	n := 0
	for _, node := range c.nodes {
		node.mu.Lock()
		n += node.setRightOps
		node.mu.Unlock()
	}
	return n
}

// clusterChecker is SQL Server on the virtual name: the owner's Engine. err fails
// each check, waitErr each wait for SQL Server after a restart (waited records them).
type clusterChecker struct {
	c       *fakeCluster
	hosts   []string
	targets []contract.SQLTarget
	err     error // every check fails with it
	waitErr error
	waited  []contract.SQLTarget
	// ag: the FCI is a replica of ag.replicas' groups, whose primary (ag) answers
	// GroupHealth and LockGroup; nil: Always On off.
	ag *fakeChecker
}

func (k *clusterChecker) GroupHealth(ctx context.Context, t contract.SQLTarget, group string) ([]contract.Replica, error) {
	if k.ag == nil {
		return nil, errors.New("Always On is off")
	}
	return k.ag.GroupHealth(ctx, t, group)
}

func (k *clusterChecker) LockGroup(ctx context.Context, t contract.SQLTarget, group, replica string) (contract.GroupLock, error) {
	if k.ag == nil {
		return nil, errors.New("Always On is off")
	}
	return k.ag.LockGroup(ctx, t, group, replica)
}

func (k *clusterChecker) Check(ctx context.Context, t contract.SQLTarget) (*contract.SQLReport, error) {
	k.c.mu.Lock()
	h := k.c.nodes[k.c.owner].fakeHost
	k.hosts = append(k.hosts, t.Host)
	k.targets = append(k.targets, t)
	k.c.mu.Unlock()
	if k.err != nil {
		return nil, k.err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	on := h.runningIFI
	rep := &contract.SQLReport{InstanceName: h.ri.Instance, ProcessID: h.ri.ProcessID, LastStartup: h.ri.ProcessStartTime,
		ProductVersion: "16.0.4135.4", Clustered: true, IFIColumnPresent: true, IFIEnabled: &on,
		EncryptedDatabases: []string{}}
	if k.ag != nil {
		rep.HADREnabled, rep.Replicas, rep.Primaries = true, k.ag.replicas, k.ag.primaries()
	}
	return rep, nil
}

func (k *clusterChecker) WaitReady(ctx context.Context, t contract.SQLTarget) error {
	k.c.mu.Lock()
	defer k.c.mu.Unlock()
	k.waited = append(k.waited, t)
	return k.waitErr
}

type clusterClients struct {
	c       *fakeCluster
	checker *clusterChecker
	// noSQL: the provider has no sql block; setupErr: the SQL client cannot be set up.
	noSQL    bool
	setupErr error
	// hostsBeforeFailing: the WinRM client of an address is set up that many times,
	// then no more (as when its credentials expire during the run).
	hostsBeforeFailing map[string]int
}

func (cl *clusterClients) Host(addr string, _ int) (Host, error) {
	if n, ok := cl.hostsBeforeFailing[addr]; ok {
		if n == 0 {
			return nil, fmt.Errorf("the WinRM client for %s could not be set up", addr)
		}
		cl.hostsBeforeFailing[addr] = n - 1
	}
	for name, n := range cl.c.nodes {
		if addrOf(name) == addr {
			return n, nil
		}
	}
	return nil, fmt.Errorf("no such host %s", addr)
}

func (cl *clusterClients) SQLChecker() (contract.SQLChecker, error) {
	switch {
	case cl.setupErr != nil:
		return nil, cl.setupErr
	case cl.noSQL:
		return nil, nil
	}
	return cl.checker, nil
}

func clusterWorld(c *fakeCluster) (*Engine, *clusterChecker, ClusterTarget) {
	k := &clusterChecker{c: c}
	e := New(&clusterClients{c: c, checker: k})
	ct := ClusterTarget{Target: Target{Host: addrOf("SQL01"), Instance: "MSSQLSERVER"}, SQLHost: "sqlvs1.corp.example", Resolve: addrOf}
	return e, k, ct
}

func nodeResult(t *testing.T, out *ClusterOutcome, node string) NodeResult {
	t.Helper()
	for _, n := range out.Nodes {
		if n.Node == node {
			return n
		}
	}
	t.Fatalf("no result for %s in %+v", node, out.Nodes)
	return NodeResult{}
}

func nodeStateOf(t *testing.T, ca *ifi.ClusterAssessment, node string) ifi.NodeState {
	t.Helper()
	for _, n := range ca.Nodes {
		if n.Name == node {
			return n
		}
	}
	t.Fatalf("no node %s", node)
	return ifi.NodeState{}
}

// A refresh reads every possible owner at its own address and SQL Server on the
// virtual name.
func TestReadClusterPerNode(t *testing.T) {
	c := newFakeCluster("SQL01", "SQL02")
	e, k, ct := clusterWorld(c)
	out, err := e.ReadCluster(context.Background(), ct, enable)
	if err != nil {
		t.Fatal(err)
	}
	ca := out.Cluster
	if ca.IFISurvivesFailover == nil || *ca.IFISurvivesFailover || strings.Join(ca.Lacking, ",") != "SQL03" || out.Enabled {
		t.Errorf("survives %v, lacking %v, enabled %v; want false, SQL03, false (drift shows)", ca.IFISurvivesFailover, ca.Lacking, out.Enabled)
	}
	if n := nodeStateOf(t, ca, "SQL02"); !n.Granted || n.Owner || n.Address != addrOf("SQL02") {
		t.Errorf("SQL02 = %+v", n)
	}
	if ca.OwnerAssessment == nil || ca.OwnerAssessment.RunningIFI == nil || !*ca.OwnerAssessment.RunningIFI {
		t.Errorf("the owner's running IFI is not what SQL Server said: %+v", ca.OwnerAssessment)
	}
	if len(k.hosts) != 1 || k.hosts[0] != "sqlvs1.corp.example" {
		t.Errorf("SQL Server was asked at %v; want the virtual name only", k.hosts)
	}
	wantWarning(t, out.Warnings, ifi.WarnFailoverLosesIFI)
}

// Apply grants on every possible owner that lacks the right, node by node, and
// records each node's result; the next read is converged.
func TestApplyClusterGrantsEveryPossibleOwner(t *testing.T) {
	c := newFakeCluster("SQL01")
	e, _, ct := clusterWorld(c)
	out, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartNever))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"SQL02", "SQL03"} {
		if r := nodeResult(t, out, n); len(r.Done) != 1 || !r.Changed || r.Err != nil || !c.nodes[n].holds(svcSID) {
			t.Errorf("%s: %+v", n, r)
		}
	}
	if r := nodeResult(t, out, "SQL01"); len(r.Planned) != 0 || c.nodes["SQL01"].setRightOps != 0 {
		t.Errorf("SQL01 already granted, yet %+v", r)
	}
	if out.HalfDone() || out.Restarted || out.Action != ifi.ActionGrant || !out.Enabled || !*out.Cluster.IFISurvivesFailover {
		t.Errorf("outcome %+v", out)
	}
}

func withRestartPolicy(d ifi.Desired, r ifi.RestartPolicy) ifi.Desired { d.Restart = r; return d }

// A possible owner that cannot be reached: a clear error naming it, nothing
// changed on any node.
func TestApplyClusterUnreachableNodeChangesNothing(t *testing.T) {
	c := newFakeCluster()
	c.nodes["SQL03"].down = true
	e, _, ct := clusterWorld(c)
	out, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartNever))
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != KindRefused || !strings.Contains(ce.Error(), "SQL03") || !strings.Contains(ce.Error(), addrOf("SQL03")) ||
		!strings.Contains(ce.Error(), "Nothing was changed on any node") {
		t.Fatalf("err = %v", err)
	}
	if c.setRights() != 0 || out.Changed {
		t.Errorf("%d set_right requests; want none", c.setRights())
	}
}

// A grant that fails on one node after another succeeded: the error names the
// node, the outcome records both, and the nodes are read back.
func TestApplyClusterHalfDone(t *testing.T) {
	c := newFakeCluster()
	c.nodes["SQL03"].setRightErr = func(int, contract.SetRightParams) error {
		return &fakeScriptError{code: "lsa_error", err: errors.New("LsaAddAccountRights failed: 0xC0000022 (access denied)")}
	}
	e, _, ct := clusterWorld(c)
	out, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartNever))
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != KindSetRightFailed || ce.Node != "SQL03" || !ce.Changed || !strings.Contains(ce.Error(), "cluster node SQL03") {
		t.Fatalf("err = %v", err)
	}
	if !out.HalfDone() || len(nodeResult(t, out, "SQL01").Done) != 1 || len(nodeResult(t, out, "SQL02").Done) != 1 || nodeResult(t, out, "SQL03").Err == nil {
		t.Errorf("outcome nodes %+v", out.Nodes)
	}
	if out.Cluster == nil || !nodeStateOf(t, out.Cluster, "SQL02").Granted || nodeStateOf(t, out.Cluster, "SQL03").Granted {
		t.Errorf("the read-back does not show SQL02 granted and SQL03 not: %+v", out.Cluster)
	}
}

// restart = "failover": grant everywhere, move the role to the first preferred
// owner other than the owner, verify through SQL Server on the virtual name.
func TestApplyClusterFailover(t *testing.T) {
	c := newFakeCluster()
	e, k, ct := clusterWorld(c)
	e.Restarts = NewRestartLimiter(1)
	out, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartFailover))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.moves) != 1 || c.moves[0].TargetNode != "SQL02" || c.moves[0].Group != "SQL Server (MSSQLSERVER)" || c.moves[0].TimeoutS < 1 {
		t.Fatalf("moves %+v", c.moves)
	}
	if out.Move == nil || !out.Move.Ended() || out.Move.To != "SQL02" || !out.Restarted || out.Action != ifi.ActionGrantAndRestart {
		t.Errorf("move %+v, outcome %+v", out.Move, out)
	}
	if out.Cluster.Owner != "SQL02" || !*out.Cluster.OwnerAssessment.RunningIFI || !out.Enabled {
		t.Errorf("after the move: owner %s, running %v", out.Cluster.Owner, out.Cluster.OwnerAssessment.RunningIFI)
	}
	if slices.ContainsFunc(k.hosts, func(h string) bool { return h != "sqlvs1.corp.example" }) {
		t.Errorf("SQL Server asked at %v", k.hosts)
	}
}

// A paused node is skipped: the role goes to the next possible owner.
func TestApplyClusterFailoverSkipsAPausedNode(t *testing.T) {
	c := newFakeCluster()
	c.nodeState["SQL02"] = contract.NodePaused
	e, _, ct := clusterWorld(c)
	out, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartFailover))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.moves) != 1 || c.moves[0].TargetNode != "SQL03" || out.Move.To != "SQL03" {
		t.Errorf("moves %+v", c.moves)
	}
}

// The connection is lost mid-move: the cluster finishes the move, the engine follows
// it with read_cluster and succeeds, saying so.
func TestApplyClusterFailoverLostConnection(t *testing.T) {
	c := newFakeCluster()
	c.cutAnswer = true
	e, _, ct := clusterWorld(c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := e.ApplyCluster(ctx, ct, withRestartPolicy(enable, ifi.RestartFailover))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.moves) != 1 || !out.Move.Followed || out.Move.To != "SQL02" || !out.Restarted || out.Cluster.Owner != "SQL02" {
		t.Errorf("moves %d, move %+v", len(c.moves), out.Move)
	}
	wantWarning(t, out.Warnings, WarnRecovered)
}

// A move that fails back: reported with where the role ended, and the state read back.
func TestApplyClusterFailback(t *testing.T) {
	c := newFakeCluster()
	c.failBack = true
	e, _, ct := clusterWorld(c)
	out, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartFailover))
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != KindClusterActionFailed || ce.Move == nil || ce.Move.To != "SQL01" {
		t.Fatalf("err = %v", err)
	}
	for _, s := range []string{"Online on SQL01, not on SQL02", "moved the role back to SQL01", "instance MSSQLSERVER on " + addrOf("SQL01")} {
		if !strings.Contains(ce.Error(), s) {
			t.Errorf("error lacks %q: %s", s, ce.Error())
		}
	}
	if out.Cluster == nil || out.Cluster.Owner != "SQL01" || !*out.Cluster.IFISurvivesFailover || !ce.Changed {
		t.Errorf("read back %+v", out.Cluster)
	}
}

// The connection is lost during a move that fails back: the role is followed and
// reported where it ended, not waited on until the deadline.
func TestApplyClusterFailbackLostConnection(t *testing.T) {
	c := newFakeCluster()
	c.failBack, c.cutAnswer = true, true
	e, _, ct := clusterWorld(c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := e.ApplyCluster(ctx, ct, withRestartPolicy(enable, ifi.RestartFailover))
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != KindClusterActionFailed || ce.Move == nil || !ce.Move.Followed || ce.Move.To != "SQL01" ||
		!strings.Contains(ce.Error(), "Online on SQL01, not on SQL02") {
		t.Fatalf("err = %v", err)
	}
	if c.reads > 4 {
		t.Errorf("read_cluster %d times; want the fail back seen at the first follow", c.reads)
	}
}

// restart = "cluster_restart": the role restarts on its owner through the cluster.
func TestApplyClusterRestart(t *testing.T) {
	c := newFakeCluster()
	e, _, ct := clusterWorld(c)
	out, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartClusterRestart))
	if err != nil {
		t.Fatal(err)
	}
	if c.restarts != 1 || len(c.moves) != 0 || out.Move.To != "SQL01" || !out.Restarted || !*out.Cluster.OwnerAssessment.RunningIFI {
		t.Errorf("restarts %d, moves %d, move %+v", c.restarts, len(c.moves), out.Move)
	}
}

// The connection is lost during a cluster restart that finished before the engine
// looked again: the Engine's new start says so at the first read, no waiting for
// the deadline.
func TestApplyClusterRestartLostConnection(t *testing.T) {
	c := newFakeCluster()
	c.cutAnswer = true
	e, _, ct := clusterWorld(c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := e.ApplyCluster(ctx, ct, withRestartPolicy(enable, ifi.RestartClusterRestart))
	if err != nil {
		t.Fatal(err)
	}
	// Two reads observe the cluster (before and after), one follows it.
	if c.restarts != 1 || !out.Move.Followed || !out.Move.Ended() || c.reads != 3 {
		t.Errorf("restarts %d, move %+v, read_cluster %d times; want the restart followed with one read", c.restarts, out.Move, c.reads)
	}
	wantWarning(t, out.Warnings, WarnRecovered)
	if w := warningWith(out.Warnings, WarnRecovered); w != nil && strings.Contains(w.Detail, "guard") {
		t.Errorf("the follow's warning %q speaks of the guard, which recorded nothing", w.Detail)
	}
}

// When the node the cluster restart was sent to reports that the action's guard
// brought the role online (its process ended before the role was Online again), the
// follow's warning says so, and the move keeps the guard's record; the same record
// on another node is not the action's guard.
func TestApplyClusterFollowReportsTheGuard(t *testing.T) {
	for _, tc := range []struct {
		node string
		want bool
	}{{"SQL01", true}, {"SQL02", false}} {
		rec := &contract.ClusterGuardRecord{Finished: true, Group: "SQL Server (MSSQLSERVER)", BroughtOnline: 2, State: contract.ClusterOnline}
		out, w := followedRestart(t, tc.node, rec)
		said := strings.Contains(w.Detail, "the guard it had started brought the role online (BringOnline called 2 time(s))")
		if said != tc.want || (out.Move.Guard == rec) != tc.want {
			t.Errorf("record on %s: warning %q, move's guard %+v; want the guard said: %v", tc.node, w.Detail, out.Move.Guard, tc.want)
		}
	}
}

// followedRestart is a cluster restart whose answer is lost, the guard's record rec
// on node: its outcome, and the follow's warning.
func followedRestart(t *testing.T, node string, rec *contract.ClusterGuardRecord) (*ClusterOutcome, *ifi.Warning) {
	t.Helper()
	c := newFakeCluster()
	c.cutAnswer = true
	c.guards = map[string]*contract.ClusterGuardRecord{node: rec}
	e, _, ct := clusterWorld(c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := e.ApplyCluster(ctx, ct, withRestartPolicy(enable, ifi.RestartClusterRestart))
	if err != nil {
		t.Fatal(err)
	}
	w := warningWith(out.Warnings, WarnRecovered)
	if w == nil {
		t.Fatalf("guard's record %+v on %s: warnings %v; want %s", rec, node, codes(out.Warnings), WarnRecovered)
	}
	return out, w
}

// restart = "if_needed" on an FCI that needs a restart refuses before any change.
func TestApplyClusterIfNeededRefuses(t *testing.T) {
	c := newFakeCluster()
	e, _, ct := clusterWorld(c)
	_, err := e.ApplyCluster(context.Background(), ct, enable)
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != KindRefused || !strings.Contains(ce.Refusal.Detail, `restart = "failover"`) || c.setRights() != 0 {
		t.Fatalf("err = %v, %d set_right", err, c.setRights())
	}
}

// The cluster restart waits for the limiter like a restart; when the deadline passes
// first nothing was moved.
func TestApplyClusterWaitsForTheLimiter(t *testing.T) {
	c := newFakeCluster("SQL01", "SQL02", "SQL03")
	c.nodes["SQL01"].runningIFI = false // a restart is pending
	e, _, ct := clusterWorld(c)
	e.Restarts = NewRestartLimiter(1)
	occupy(t, e.Restarts.slots) // another restart holds the only slot
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := e.ApplyCluster(ctx, ct, withRestartPolicy(enable, ifi.RestartFailover))
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != KindRestartSlot || len(c.moves) != 0 {
		t.Fatalf("err = %v, moves %d", err, len(c.moves))
	}
}

// Destroy revokes on every possible owner and never restarts; possible owners
// spelled in another case than the cluster's node list (Windows compares computer
// names without case) are the same nodes, reached at the address they were read at.
func TestDestroyClusterRevokesEverywhere(t *testing.T) {
	for _, spell := range []func(string) string{nil, strings.ToLower} {
		c := newFakeCluster("SQL01", "SQL02", "SQL03")
		c.ownersOnly, c.ownerSpelling = spell != nil, spell
		e, _, ct := clusterWorld(c)
		out, err := e.DestroyCluster(context.Background(), ct, enable)
		if err != nil {
			t.Fatalf("owners spelled otherwise %v: %v", spell != nil, err)
		}
		for _, n := range c.order {
			if c.nodes[n].holds(svcSID) {
				t.Errorf("owners spelled otherwise %v: %s still holds the right", spell != nil, n)
			}
		}
		if len(out.Nodes) != 3 || len(c.moves) != 0 || c.restarts != 0 {
			t.Errorf("owners spelled otherwise %v: nodes %+v, moves %d, restarts %d", spell != nil, out.Nodes, len(c.moves), c.restarts)
		}
		wantWarning(t, out.Warnings, ifi.WarnStaysOnDestroy)
	}
}

// HalfDone says the apply changed some node but did not make every step it
// planned: what the state must record as done on one node and not on another.
func TestClusterOutcomeHalfDone(t *testing.T) {
	step := ifi.Step{SID: svcSID, Grant: true}
	two := []ifi.Step{step, {SID: acctSID, Grant: true}}
	denied := errors.New("access denied")
	for _, tc := range []struct {
		name  string
		nodes []NodeResult
		want  bool
	}{
		{"nothing planned", []NodeResult{{Node: "SQL01"}}, false},
		{"every step done", []NodeResult{{Node: "SQL01", Planned: []ifi.Step{step}, Done: []ifi.Step{step}}, {Node: "SQL02"}}, false},
		{"the first node failed before any change", []NodeResult{{Node: "SQL01", Planned: []ifi.Step{step}, Err: denied}}, false},
		{"one node done, the next failed", []NodeResult{{Node: "SQL01", Planned: []ifi.Step{step}, Done: []ifi.Step{step}},
			{Node: "SQL02", Planned: []ifi.Step{step}, Err: denied}}, true},
		{"a node's first step done, its second failed", []NodeResult{{Node: "SQL01", Planned: two, Done: two[:1], Err: denied}}, true},
		{"a node's second step not made", []NodeResult{{Node: "SQL01", Planned: two, Done: two[:1]}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := (&ClusterOutcome{Nodes: tc.nodes}).HalfDone(); got != tc.want {
				t.Errorf("HalfDone() = %v, want %v", got, tc.want)
			}
		})
	}
}

// A change a node could not record in its event log: one warning for that node,
// naming it and the host's reason.
func TestApplyClusterEventLogWarningNamesTheNode(t *testing.T) {
	c := newFakeCluster("SQL01")
	c.nodes["SQL03"].eventLog = noEventLog
	e, _, ct := clusterWorld(c)
	out, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartNever))
	if err != nil {
		t.Fatal(err)
	}
	var got []ifi.Warning
	for _, w := range out.Warnings {
		if w.Code == WarnEventLog {
			got = append(got, w)
		}
	}
	if len(got) != 1 || !strings.Contains(got[0].Detail, "node SQL03") || !strings.Contains(got[0].Detail, addrOf("SQL03")) ||
		!strings.Contains(got[0].Detail, noEventLog) {
		t.Fatalf("event log warnings %+v; want one for SQL03", got)
	}
}

// A failure half way whose read back fails too: the failure is the error, and a
// warning says what the nodes hold is unknown (no stale assessment is kept).
func TestApplyClusterHalfDoneThenUnreadable(t *testing.T) {
	c := newFakeCluster()
	c.nodes["SQL03"].setRightErr = func(int, contract.SetRightParams) error {
		return &fakeScriptError{code: "lsa_error", err: errors.New("LsaAddAccountRights failed: 0xC0000022 (access denied)")}
	}
	c.nodes["SQL01"].readErr = func(n int) error {
		if n > 1 {
			return transientErr{}
		}
		return nil
	}
	e, _, ct := clusterWorld(c)
	out, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartNever))
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != KindSetRightFailed || ce.Node != "SQL03" || !ce.Changed {
		t.Fatalf("err = %v", err)
	}
	wantWarning(t, out.Warnings, WarnStateStale)
	if out.Cluster != nil || !out.HalfDone() {
		t.Errorf("cluster %+v, half done %v; want no assessment, half done", out.Cluster, out.HalfDone())
	}
}

// What the observation warns about (here: where SQL Server answers is unknown)
// reaches the outcome on every path: a read, an apply that changes nothing, one
// that grants and reads back, and one that fails half way and is read back.
func TestClusterObservationWarningsReachTheOutcome(t *testing.T) {
	portless := func(c *fakeCluster) *fakeCluster {
		for _, n := range c.nodes {
			n.ri.TCPPort = 0
		}
		return c
	}
	lsaDenied := func(int, contract.SetRightParams) error {
		return &fakeScriptError{code: "lsa_error", err: errors.New("access denied")}
	}
	never := withRestartPolicy(enable, ifi.RestartNever)
	for _, tc := range []struct {
		name string
		c    *fakeCluster
		run  func(*Engine, ClusterTarget) (*ClusterOutcome, error)
		fail bool
	}{
		{"read", portless(newFakeCluster("SQL01")), func(e *Engine, ct ClusterTarget) (*ClusterOutcome, error) {
			return e.ReadCluster(context.Background(), ct, never)
		}, false},
		{"apply, converged", portless(newFakeCluster("SQL01", "SQL02", "SQL03")), func(e *Engine, ct ClusterTarget) (*ClusterOutcome, error) {
			return e.ApplyCluster(context.Background(), ct, never)
		}, false},
		{"apply, grants", portless(newFakeCluster("SQL01")), func(e *Engine, ct ClusterTarget) (*ClusterOutcome, error) {
			return e.ApplyCluster(context.Background(), ct, never)
		}, false},
		{"apply, fails half way", func() *fakeCluster {
			c := portless(newFakeCluster())
			c.nodes["SQL03"].setRightErr = lsaDenied
			return c
		}(), func(e *Engine, ct ClusterTarget) (*ClusterOutcome, error) {
			return e.ApplyCluster(context.Background(), ct, never)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _, ct := clusterWorld(tc.c)
			out, err := tc.run(e, ct)
			if (err != nil) != tc.fail {
				t.Fatalf("err = %v", err)
			}
			wantWarning(t, out.Warnings, WarnSQLPortUnknown)
			if out.Cluster == nil {
				t.Fatal("no assessment")
			}
			// The assessment's own warnings come too (SQL02 and SQL03 lack the right
			// unless the apply granted them).
			if lacks := len(out.Cluster.Lacking) > 0; lacks != ifi.HasWarning(out.Warnings, ifi.WarnFailoverLosesIFI) {
				t.Errorf("lacking %v, warnings %v", out.Cluster.Lacking, codes(out.Warnings))
			}
		})
	}
}

// SQL Server of the FCI is asked at the sql block's address (else the virtual
// name) and the configured port (else the owner's), only while the owner runs; when
// it cannot be asked, verification falls back to the owner's error log and a
// warning says why.
func TestReadClusterSQLVerification(t *testing.T) {
	for _, tc := range []struct {
		name     string
		setup    func(c *fakeCluster, cl *clusterClients, ct *ClusterTarget)
		wantAt   []contract.SQLTarget
		wantSrc  ifi.Source
		wantWarn string
		wantConf bool
	}{
		{"the sql block's address, the owner's port", func(*fakeCluster, *clusterClients, *ClusterTarget) {},
			[]contract.SQLTarget{{Host: "listener.corp.example", Port: 1433, Instance: "MSSQLSERVER"}}, ifi.SourceSQLDMV, "", true},
		{"no sql address: the virtual name", func(_ *fakeCluster, _ *clusterClients, ct *ClusterTarget) { ct.SQLHost = "" },
			[]contract.SQLTarget{{Host: "sqlvs1.corp.example", Port: 1433, Instance: "MSSQLSERVER"}}, ifi.SourceSQLDMV, "", true},
		{"the configured port", func(_ *fakeCluster, _ *clusterClients, ct *ClusterTarget) { ct.SQLPort = 14330 },
			[]contract.SQLTarget{{Host: "listener.corp.example", Port: 14330, Instance: "MSSQLSERVER"}}, ifi.SourceSQLDMV, "", true},
		{"the owner's port unknown", func(c *fakeCluster, _ *clusterClients, _ *ClusterTarget) { c.nodes["SQL01"].ri.TCPPort = 0 },
			nil, ifi.SourceErrorLog, WarnSQLPortUnknown, true},
		{"the owner stopped", func(c *fakeCluster, _ *clusterClients, _ *ClusterTarget) {
			c.nodes["SQL01"].ri.ServiceState = contract.StateStopped
		}, nil, ifi.SourceNone, "", true},
		{"the check fails", func(_ *fakeCluster, cl *clusterClients, _ *ClusterTarget) {
			cl.checker.err = errors.New("login failed")
		},
			[]contract.SQLTarget{{Host: "listener.corp.example", Port: 1433, Instance: "MSSQLSERVER"}}, ifi.SourceErrorLog, WarnSQLCheck, true},
		{"the SQL client cannot be set up", func(_ *fakeCluster, cl *clusterClients, _ *ClusterTarget) {
			cl.setupErr = errors.New("no Kerberos ticket")
		}, nil, ifi.SourceErrorLog, WarnSQLSetup, true},
		{"no sql block", func(_ *fakeCluster, cl *clusterClients, _ *ClusterTarget) { cl.noSQL = true }, nil, ifi.SourceErrorLog, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCluster("SQL01", "SQL02", "SQL03")
			on := true
			c.nodes["SQL01"].ri.ErrorLog = contract.ErrorLogInfo{Found: true, Enabled: &on}
			e, k, ct := clusterWorld(c)
			ct.SQLHost = "listener.corp.example"
			tc.setup(c, clientsOf(e), &ct)
			out, err := e.ReadCluster(context.Background(), ct, enable)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(k.targets) != fmt.Sprint(tc.wantAt) {
				t.Errorf("SQL Server asked at %+v; want %+v", k.targets, tc.wantAt)
			}
			v := out.Observed.Verification
			if v.Source != tc.wantSrc || v.SQLConfigured != tc.wantConf {
				t.Errorf("verified by %s (sql configured %v); want %s (%v)", v.Source, v.SQLConfigured, tc.wantSrc, tc.wantConf)
			}
			for _, code := range []string{WarnSQLPortUnknown, WarnSQLCheck, WarnSQLSetup} {
				if ifi.HasWarning(out.Warnings, code) != (code == tc.wantWarn) {
					t.Errorf("warnings %v; want %q among the SQL ones", codes(out.Warnings), tc.wantWarn)
				}
			}
		})
	}
}

// A revoke that fails on one node: the error names it, the nodes before it are
// revoked and recorded, the nodes after it untouched.
func TestDestroyClusterFailureNamesTheNode(t *testing.T) {
	c := newFakeCluster("SQL01", "SQL02", "SQL03")
	c.nodes["SQL02"].setRightErr = func(int, contract.SetRightParams) error {
		return &fakeScriptError{code: "lsa_error", err: errors.New("LsaRemoveAccountRights failed: 0xC0000022 (access denied)")}
	}
	e, _, ct := clusterWorld(c)
	out, err := e.DestroyCluster(context.Background(), ct, enable)
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != KindSetRightFailed || ce.Node != "SQL02" || !ce.Changed {
		t.Fatalf("err = %v", err)
	}
	if c.nodes["SQL01"].holds(svcSID) || !c.nodes["SQL02"].holds(svcSID) || !c.nodes["SQL03"].holds(svcSID) {
		t.Error("want SQL01 revoked, SQL02 and SQL03 untouched")
	}
	if len(out.Nodes) != 2 || !out.HalfDone() || c.nodes["SQL03"].setRightOps != 0 {
		t.Errorf("nodes %+v", out.Nodes)
	}
}

// A possible owner that cannot be read: destroy names it and revokes nothing on
// any node.
func TestDestroyClusterUnreadableNodeRevokesNothing(t *testing.T) {
	c := newFakeCluster("SQL01", "SQL02", "SQL03")
	c.nodes["SQL03"].down = true
	e, _, ct := clusterWorld(c)
	_, err := e.DestroyCluster(context.Background(), ct, enable)
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != KindObserveFailed || ce.Node != "SQL03" || ce.Target.Host != addrOf("SQL03") ||
		!strings.Contains(ce.Error(), "nothing was revoked on any node") {
		t.Fatalf("err = %v", err)
	}
	if c.setRights() != 0 {
		t.Errorf("%d set_right requests; want none", c.setRights())
	}
}

// An FCI that cannot be observed on the node pointed at: each failure is its own
// error, and nothing is read further.
func TestReadClusterObserveFailures(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(c *fakeCluster, ct *ClusterTarget)
		kind  Kind
	}{
		{"no host at the address", func(_ *fakeCluster, ct *ClusterTarget) { ct.Host = "nowhere.corp.example" }, KindHostSetup},
		{"read_instance fails", func(c *fakeCluster, _ *ClusterTarget) {
			c.nodes["SQL01"].readErr = func(int) error { return errors.New("WinRM: 500") }
		}, KindObserveFailed},
		{"the instance is not installed", func(c *fakeCluster, _ *ClusterTarget) { c.nodes["SQL01"].installed = false }, KindNotFound},
		{"read_cluster fails", func(c *fakeCluster, _ *ClusterTarget) {
			c.nodes["SQL01"].clusterErr = errors.New("the cluster service is not running")
		},
			KindClusterReadFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCluster("SQL01")
			e, k, ct := clusterWorld(c)
			tc.setup(c, &ct)
			_, err := e.ReadCluster(context.Background(), ct, enable)
			var ce *Error
			if !errors.As(err, &ce) || ce.Kind != tc.kind {
				t.Fatalf("err = %v; want kind %s", err, tc.kind)
			}
			if _, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartNever)); !errors.As(err, &ce) || ce.Kind != tc.kind {
				t.Fatalf("apply: err = %v; want kind %s", err, tc.kind)
			}
			if c.nodes["SQL02"].reads != 0 || len(k.targets) != 0 {
				t.Errorf("read on: SQL02 %d times, SQL Server %d times; want neither", c.nodes["SQL02"].reads, len(k.targets))
			}
		})
	}
}

// After a failover SQL Server is awaited on the virtual name, as one that answered
// before (so the wait lasts to the deadline); when it does not come back, the
// error says the role moved and SQL Server restarted.
func TestApplyClusterFailoverWaitsForSQLServer(t *testing.T) {
	c := newFakeCluster()
	e, k, ct := clusterWorld(c)
	if _, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartFailover)); err != nil {
		t.Fatal(err)
	}
	if len(k.waited) != 1 || k.waited[0].Host != "sqlvs1.corp.example" || k.waited[0].Port != 1433 || !k.waited[0].AnsweredTDS {
		t.Errorf("waited for %+v; want sqlvs1.corp.example:1433, seen answering", k.waited)
	}

	c = newFakeCluster()
	e, k, ct = clusterWorld(c)
	k.waitErr = errors.New("SQL Server did not accept a connection within 10m0s")
	_, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartFailover))
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != KindNotReady || !ce.Restarted || !ce.Changed || ce.Move == nil || ce.Move.To != "SQL02" {
		t.Fatalf("err = %v (%+v)", err, ce)
	}
}

// An FCI that is a secondary replica of an availability group fails over under the
// group's restart lock, taken on the primary and released after; while another run
// holds it, the failover is refused naming the group and that replica.
func TestApplyClusterFailoverTakesTheGroupsLock(t *testing.T) {
	secondary := func(k *clusterChecker) *fakeChecker {
		k.ag = &fakeChecker{replicas: []contract.Replica{{Group: "AG1", Server: "SQLVS1", Local: true, Role: "SECONDARY",
			Connected: "CONNECTED", Health: "HEALTHY"}}}
		return k.ag
	}
	c := newFakeCluster()
	e, k, ct := clusterWorld(c)
	e.Clock = fakeClock{now: time.Now()} // the wait for HEALTHY polls without sleeping
	e.Restarts = NewRestartLimiter(1)
	ag := secondary(k)
	out, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartFailover))
	if err != nil {
		t.Fatal(err)
	}
	if w := warningWith(out.Warnings, WarnGroupNotHealthy); w != nil {
		t.Errorf("the primary sees the replica HEALTHY, yet: %s", w.Detail)
	}
	if len(ag.lockTargets) != 1 || ag.lockTargets[0].Host != "SQL01" || ag.locksHeld != 0 || len(c.moves) != 1 {
		t.Errorf("lock taken at %+v, %d still held, %d moves; want once on the primary SQL01, released, one move", ag.lockTargets, ag.locksHeld, len(c.moves))
	}
	wantSlotFree(t, e, ct)

	c = newFakeCluster()
	e, k, ct = clusterWorld(c)
	e.Restarts = NewRestartLimiter(1)
	secondary(k).lockedBy = "SQL03"
	_, err = e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartFailover))
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != KindRefused || ce.Refusal == nil || !strings.Contains(ce.Refusal.Summary, "AG1") ||
		!strings.Contains(ce.Refusal.Detail, "SQL03") {
		t.Fatalf("err = %v", err)
	}
	if len(c.moves) != 0 || c.restarts != 0 {
		t.Errorf("moves %d, restarts %d; want none", len(c.moves), c.restarts)
	}
	wantSlotFree(t, e, ct)
}

// wantSlotFree checks that the operation gave its restart slot back: the next
// restart of the owner's host takes one at once (the context is already done, so a
// slot still held fails at once too).
func wantSlotFree(t *testing.T, e *Engine, ct ClusterTarget) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g, err := e.openGate(ctx, ct.at(addrOf("SQL01")), false, &Outcome{})
	if err != nil {
		t.Fatalf("the restart slot is still held: %v", err)
	}
	g.close()
}

// After the failover of a secondary replica, a replica its primary does not see
// HEALTHY again within the wait's budget (here three polls; it would from the 11th)
// is a warning; the apply succeeds.
func TestApplyClusterFailoverWarnsOfAnUnhealthyReplica(t *testing.T) {
	c := newFakeCluster()
	e, k, ct := clusterWorld(c)
	deadline := time.Now().Add(time.Hour)
	e.Clock = fakeClock{now: deadline.Add(-readBackMargin/2 - 3500*time.Millisecond)}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	k.ag = &fakeChecker{replicas: []contract.Replica{{Group: "AG1", Server: "SQLVS1", Local: true, Role: "SECONDARY",
		Connected: "CONNECTED", Health: "HEALTHY"}}}
	k.ag.primarySees = func() []contract.Replica { // called with k.ag.mu held
		c.mu.Lock()
		moved := len(c.moves) > 0
		c.mu.Unlock()
		health := "HEALTHY"
		if moved && k.ag.healthPolls <= 10 {
			health = "NOT_HEALTHY"
		}
		return []contract.Replica{{Group: "AG1", Server: "SQL01", Local: true, Role: "PRIMARY", Connected: "CONNECTED", Health: "HEALTHY"},
			{Group: "AG1", Server: "SQLVS1", Role: "SECONDARY", Connected: "CONNECTED", Health: health}}
	}
	out, err := e.ApplyCluster(ctx, ct, withRestartPolicy(enable, ifi.RestartFailover))
	if err != nil {
		t.Fatal(err)
	}
	wantWarning(t, out.Warnings, WarnGroupNotHealthy)
	if k.ag.locksHeld != 0 {
		t.Errorf("%d locks still held", k.ag.locksHeld)
	}
}

// The plan's own warnings (here: a failback can follow the failover) are the
// apply's too.
func TestApplyClusterFailoverWarnsOfAFailback(t *testing.T) {
	c := newFakeCluster()
	c.failbackAllow = true
	e, _, ct := clusterWorld(c)
	out, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartFailover))
	if err != nil {
		t.Fatal(err)
	}
	wantWarning(t, out.Warnings, ifi.WarnFailback)
}

// An FCI that changed since the plan refuses, saying what the apply would do now
// as a plan of the same configuration would (not as a change made outside
// Terraform), and changes nothing.
func TestApplyClusterRefusesWhatThePlanDidNotSay(t *testing.T) {
	c := newFakeCluster()
	e, _, ct := clusterWorld(c)
	d := withRestartPolicy(enable, ifi.RestartNever)
	d.Planned = ifi.ActionNone
	_, err := e.ApplyCluster(context.Background(), ct, d)
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != KindRefused || ce.Refusal == nil || !strings.Contains(ce.Refusal.Summary, "apply would grant, the plan said none") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(ce.Refusal.Detail, "outside Terraform") || c.setRights() != 0 {
		t.Errorf("detail %q, %d set_right requests; want the prediction without drift, none", ce.Refusal.Detail, c.setRights())
	}
}

// A possible owner whose address has no WinRM client: the refusal names the node
// and why, and nothing changes on any node.
func TestApplyClusterNodeWithoutAClient(t *testing.T) {
	c := newFakeCluster()
	e, _, ct := clusterWorld(c)
	ct.Resolve = func(node string) string {
		if node == "SQL03" {
			return "nowhere.corp.example"
		}
		return addrOf(node)
	}
	_, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartNever))
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != KindRefused || !strings.Contains(ce.Error(), "SQL03") || !strings.Contains(ce.Error(), "no such host nowhere.corp.example") {
		t.Fatalf("err = %v", err)
	}
	if c.setRights() != 0 {
		t.Errorf("%d set_right requests; want none", c.setRights())
	}
}

// Each way another possible owner cannot be read is named in the refusal, with its
// reason; a node that reports no computer name is taken at its word.
func TestApplyClusterNodeReadFailures(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(n *clusterNode)
		want  string // "" = the apply succeeds
	}{
		{"read_instance fails", func(n *clusterNode) { n.down = true }, "connect: connection refused"},
		{"the instance is not installed", func(n *clusterNode) { n.installed = false }, "instance MSSQLSERVER is not installed there"},
		{"the address reaches another computer", func(n *clusterNode) { n.ri.ComputerName = "SQL09" },
			"the address " + addrOf("SQL03") + " reaches SQL09, not the node SQL03"},
		{"no computer name reported", func(n *clusterNode) { n.ri.ComputerName = "" }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCluster()
			tc.setup(c.nodes["SQL03"])
			e, _, ct := clusterWorld(c)
			_, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartNever))
			if tc.want == "" {
				if err != nil || !c.nodes["SQL03"].holds(svcSID) {
					t.Fatalf("err = %v, SQL03 granted %v; want the grant made", err, c.nodes["SQL03"].holds(svcSID))
				}
				return
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.Kind != KindRefused || !strings.Contains(ce.Error(), "SQL03") || !strings.Contains(ce.Error(), tc.want) {
				t.Fatalf("err = %v; want a refusal naming SQL03 and %q", err, tc.want)
			}
			if c.setRights() != 0 {
				t.Errorf("%d set_right requests; want none", c.setRights())
			}
		})
	}
}

// An FCI that cannot be assessed (the grantee's account cannot be resolved) is
// KindAssessFailed on a read, and nothing is changed by an apply.
func TestClusterAssessFailure(t *testing.T) {
	c := newFakeCluster()
	c.nodes["SQL01"].ri.StartAccount, c.nodes["SQL01"].ri.StartAccountSID = `CORP\gone`, ""
	e, _, ct := clusterWorld(c)
	d := ifi.Desired{Enabled: true, Grantee: ifi.GranteeServiceAccount, Restart: ifi.RestartNever}
	out, err := e.ReadCluster(context.Background(), ct, d)
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != KindAssessFailed || out == nil || out.Cluster != nil {
		t.Fatalf("read: %+v, err = %v; want KindAssessFailed and no assessment", out, err)
	}
	if _, err := e.ApplyCluster(context.Background(), ct, d); err == nil || c.setRights() != 0 {
		t.Fatalf("apply: err = %v, %d set_right requests; want an error and none", err, c.setRights())
	}
}

// An apply with nothing to do reads the cluster once and changes nothing.
func TestApplyClusterConvergedReadsOnce(t *testing.T) {
	c := newFakeCluster("SQL01", "SQL02", "SQL03")
	e, _, ct := clusterWorld(c)
	out, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartFailover))
	if err != nil {
		t.Fatal(err)
	}
	if out.Changed || out.Cluster == nil || !out.Enabled || c.reads != 1 || c.setRights() != 0 || len(c.moves) != 0 {
		t.Errorf("changed %v, enabled %v, read_cluster %d times, %d set_right, %d moves; want one read and nothing else",
			out.Changed, out.Enabled, c.reads, c.setRights(), len(c.moves))
	}
}

// A failover after which the new owner's Engine runs without IFI fails the check,
// naming that node, with the state read back.
func TestApplyClusterFailoverCheckFails(t *testing.T) {
	c := newFakeCluster()
	c.noIFIOn = "SQL02"
	e, _, ct := clusterWorld(c)
	out, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartFailover))
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != KindCheckFailed || ce.Node != "SQL02" || !ce.Restarted {
		t.Fatalf("err = %v", err)
	}
	if out.Cluster == nil || out.Cluster.Owner != "SQL02" {
		t.Errorf("read back %+v; want the owner SQL02", out.Cluster)
	}
}

// A set_right whose answer is lost may have changed the node: the error says
// something changed and the nodes are read back; one the host refused changed
// nothing, and nothing is read again.
func TestApplyClusterSetRightFailures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		changed bool
	}{
		{"the answer is lost", transientErr{}, true},
		{"the host refused", &fakeScriptError{code: "lsa_error", err: errors.New("access denied")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCluster()
			c.nodes["SQL01"].setRightErr = func(int, contract.SetRightParams) error { return tc.err }
			e, _, ct := clusterWorld(c)
			out, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartNever))
			var ce *Error
			if !errors.As(err, &ce) || ce.Kind != KindSetRightFailed || ce.Node != "SQL01" || ce.Changed != tc.changed || out.Changed != tc.changed {
				t.Fatalf("err = %v (changed %v), outcome changed %v; want changed %v", err, ce != nil && ce.Changed, out.Changed, tc.changed)
			}
			if (out.Cluster != nil) != tc.changed || c.setRights() != 1 {
				t.Errorf("read back %v, %d set_right requests; want read back %v, one request", out.Cluster != nil, c.setRights(), tc.changed)
			}
		})
	}
}

// A node's steps stop at the first that fails: when the grantee moved and the
// revoke of the old one fails, the new one is not granted.
func TestApplyClusterNodeStepsStopAtTheFirstFailure(t *testing.T) {
	c := newFakeCluster("SQL01", "SQL02", "SQL03")
	c.nodes["SQL01"].setRightErr = func(int, contract.SetRightParams) error {
		return &fakeScriptError{code: "lsa_error", err: errors.New("access denied")}
	}
	e, _, ct := clusterWorld(c)
	d := ifi.Desired{Enabled: true, Grantee: ifi.GranteeServiceAccount, PriorGranteeSID: svcSID, Restart: ifi.RestartNever}
	out, err := e.ApplyCluster(context.Background(), ct, d)
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != KindSetRightFailed || ce.Node != "SQL01" || ce.Step == nil || ce.Step.Grant {
		t.Fatalf("err = %v; want the revoke on SQL01 failed", err)
	}
	r := nodeResult(t, out, "SQL01")
	if len(r.Planned) != 2 || len(r.Done) != 0 || c.nodes["SQL01"].setRightOps != 1 || c.nodes["SQL01"].holds(acctSID) {
		t.Errorf("SQL01 %+v, %d set_right requests; want two steps planned, none done, one request", r, c.nodes["SQL01"].setRightOps)
	}
}

// A grant the node already holds when it is made (someone granted it since the
// read) changes nothing: the node's result and the outcome say so.
func TestApplyClusterGrantAlreadyMade(t *testing.T) {
	c := newFakeCluster("SQL01", "SQL02")
	h := c.nodes["SQL03"].fakeHost
	h.setRightErr = func(_ int, p contract.SetRightParams) error {
		h.holders = append(h.holders, p.SID) // granted since the read (the host's lock is held)
		return nil
	}
	e, _, ct := clusterWorld(c)
	out, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartNever))
	if err != nil {
		t.Fatal(err)
	}
	if r := nodeResult(t, out, "SQL03"); len(r.Done) != 1 || r.Changed || out.Changed {
		t.Errorf("SQL03 %+v, outcome changed %v; want the step done without a change", r, out.Changed)
	}
}

// A WinRM client that cannot be set up when it is needed for a change fails the
// apply naming the node (its grant) or the node reached (the failover), and
// nothing further is sent.
func TestApplyClusterHostSetupFailsLater(t *testing.T) {
	c := newFakeCluster()
	e, _, ct := clusterWorld(c)
	clientsOf(e).hostsBeforeFailing = map[string]int{addrOf("SQL03"): 1} // read, then not for the grant
	_, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartNever))
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != KindHostSetup || ce.Node != "SQL03" || !ce.Changed {
		t.Fatalf("grant: err = %v", err)
	}

	c = newFakeCluster("SQL01", "SQL02", "SQL03")
	c.nodes["SQL01"].runningIFI = false // a restart is pending
	e, _, ct = clusterWorld(c)
	clientsOf(e).hostsBeforeFailing = map[string]int{addrOf("SQL01"): 1} // read, then not for the failover
	_, err = e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartFailover))
	if !errors.As(err, &ce) || ce.Kind != KindHostSetup || len(c.moves) != 0 {
		t.Fatalf("failover: err = %v, %d moves", err, len(c.moves))
	}
}

// pendingCluster is an FCI where every possible owner holds the right and the
// running Engine still lacks IFI: the apply only fails the role over.
func pendingCluster() *fakeCluster {
	c := newFakeCluster("SQL01", "SQL02", "SQL03")
	c.nodes["SQL01"].runningIFI = false
	return c
}

// A failover alone (nothing to grant) is a change: the nodes are read back and the
// outcome shows the role on its new owner, whether the answer came or the role was
// followed after the connection was lost.
func TestApplyClusterFailoverAloneIsAChange(t *testing.T) {
	for _, cut := range []bool{false, true} {
		c := pendingCluster()
		c.cutAnswer = cut
		e, _, ct := clusterWorld(c)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := e.ApplyCluster(ctx, ct, withRestartPolicy(enable, ifi.RestartFailover))
		cancel()
		if err != nil {
			t.Fatalf("answer lost %v: %v", cut, err)
		}
		if !out.Changed || !out.Restarted || out.Cluster == nil || out.Cluster.Owner != "SQL02" || out.Action != ifi.ActionRestart {
			t.Errorf("answer lost %v: changed %v, restarted %v, action %s, cluster %+v; want the move read back", cut, out.Changed, out.Restarted, out.Action, out.Cluster)
		}
	}
}

// The cluster's refusal (its own error, before anything stopped) is the error,
// with nothing followed and nothing changed; another error the host answered with
// does not say the role did not move, so the role is followed.
func TestApplyClusterActionErrors(t *testing.T) {
	c := pendingCluster()
	c.moveErr = &fakeScriptError{code: contract.CodeClusterError, err: errors.New("the group is locked by another operation")}
	c.beforeReadCluster = func(string) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.moves) > 0 {
			t.Fatal("the role is followed after the cluster refused the action")
		}
		return nil
	}
	e, _, ct := clusterWorld(c)
	out, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartFailover))
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != KindClusterActionFailed || ce.Move == nil || ce.Move.Followed || ce.Changed || out.Changed {
		t.Fatalf("refused: err = %v (%+v), changed %v", err, ce, out.Changed)
	}
	if !strings.Contains(ce.Error(), "the group is locked by another operation") || c.reads != 1 {
		t.Errorf("error %q, read_cluster %d times; want the cluster's words, no follow", ce.Error(), c.reads)
	}
	if !ce.Move.Refused || !strings.Contains(ce.Error(), `before anything was taken offline: the role "SQL Server (MSSQLSERVER)" stays on SQL01`) {
		t.Errorf("error %q; want the refusal to say the role stays where it was", ce.Error())
	}

	c = pendingCluster()
	c.moveErr = &fakeScriptError{code: "timeout", err: errors.New("the script ran out of time")}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.beforeReadCluster = func(string) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.moves) > 0 {
			cancel() // the operation's time is up at the follow's first read: the role stays where it was
		}
		return nil
	}
	e, _, ct = clusterWorld(c)
	_, err = e.ApplyCluster(ctx, ct, withRestartPolicy(enable, ifi.RestartFailover))
	if !errors.As(err, &ce) || ce.Kind != KindClusterActionFailed || ce.Move == nil || !ce.Move.Followed || !ce.Changed ||
		ce.Move.To != "SQL01" || ce.Move.State != contract.ClusterOnline {
		t.Fatalf("another answer: err = %v (%+v); want the role followed and found Online on SQL01", err, ce)
	}
}

// The connection is lost during the failover and read_cluster fails everywhere
// after it: the error says both, and that the state may be stale.
func TestApplyClusterFollowFails(t *testing.T) {
	c := pendingCluster()
	c.cutAnswer = true
	moved := false
	c.afterMove = func() { moved = true }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	failed := 0
	c.beforeReadCluster = func(string) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if !moved {
			return nil
		}
		if failed++; failed == 3 { // every node once: the follow's first round
			cancel()
		}
		if failed > 20 {
			t.Fatalf("read_cluster %d times: the follow goes on after the operation's time is up", failed)
		}
		return errors.New("the RPC server is unavailable")
	}
	e, _, ct := clusterWorld(c)
	out, err := e.ApplyCluster(ctx, ct, withRestartPolicy(enable, ifi.RestartFailover))
	wantFollowFailed(t, out, err, "following the role with read_cluster then failed: the RPC server is unavailable")
}

// wantFollowFailed checks that the apply failed as a cluster action that changed
// the host and whose follow failed, saying each of want, and that the state may be
// stale.
func wantFollowFailed(t *testing.T, out *ClusterOutcome, err error, want ...string) {
	t.Helper()
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != KindClusterActionFailed || !ce.Changed {
		t.Fatalf("err = %v; want a cluster action that changed the host", err)
	}
	for _, w := range want {
		if !strings.Contains(ce.Error(), w) {
			t.Errorf("error %q; want it to say %q", ce.Error(), w)
		}
	}
	wantWarning(t, out.Warnings, WarnStateStale)
}

// A role followed to Online after a lost connection: the warning quotes the lost
// connection's error, which is then no longer the move's cluster error (the move
// ended as asked).
func TestApplyClusterFollowedWarningQuotesTheLostConnection(t *testing.T) {
	c := pendingCluster()
	c.cutAnswer = true
	e, _, ct := clusterWorld(c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := e.ApplyCluster(ctx, ct, withRestartPolicy(enable, ifi.RestartFailover))
	if err != nil {
		t.Fatal(err)
	}
	var w *ifi.Warning
	for i := range out.Warnings {
		if out.Warnings[i].Code == WarnRecovered {
			w = &out.Warnings[i]
		}
	}
	if w == nil || !strings.Contains(w.Detail, "(connect: connection refused)") || !strings.Contains(w.Detail, "Online on SQL02") || out.Move.ClusterError != "" {
		t.Errorf("warning %+v, move's cluster error %q; want the lost connection quoted, then cleared", w, out.Move.ClusterError)
	}
}

// The role is followed on each possible owner once a round: with the old owner
// down after the move, it is asked once and the new owner answers.
func TestApplyClusterFollowAsksEachNodeOnce(t *testing.T) {
	c := pendingCluster()
	c.cutAnswer = true
	moved := false
	c.afterMove = func() { moved = true }
	asked := map[string]int{}
	var order []string
	c.beforeReadCluster = func(node string) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if !moved {
			return nil
		}
		asked[node]++
		order = append(order, node)
		if node == "SQL01" && asked[node] == 1 {
			return transientErr{} // the old owner restarts
		}
		return nil
	}
	e, _, ct := clusterWorld(c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := e.ApplyCluster(ctx, ct, withRestartPolicy(enable, ifi.RestartFailover))
	if err != nil {
		t.Fatal(err)
	}
	// The follow asked SQL01 once (it failed), then SQL02 (Online there); the
	// read back asks SQL01 once more.
	if !out.Move.Followed || out.Move.To != "SQL02" || asked["SQL01"] != 2 || asked["SQL02"] != 1 {
		t.Errorf("move %+v, read_cluster asked %v; want SQL01 twice (the follow, the read back), SQL02 once", out.Move, asked)
	}
	if strings.Join(order, ",") != "SQL01,SQL02,SQL01" {
		t.Errorf("read_cluster asked %v in turn; want the node reached, then the others by address, then the read back", order)
	}
}

// A role followed to Online on the failover's target ends the follow at once, even
// when that node's clock puts its Engine's start before the old one's.
func TestApplyClusterFollowEndsOnlineOnTheTarget(t *testing.T) {
	c := pendingCluster()
	c.cutAnswer = true
	c.afterMove = func() {
		h := c.nodes["SQL02"].fakeHost
		h.mu.Lock()
		early := fakeBoot.Add(-time.Hour) // SQL02's clock is behind
		h.ri.ProcessStartTime = &early
		h.mu.Unlock()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	follows := 0
	c.beforeReadCluster = func(string) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.moves) > 0 {
			if follows++; follows == 2 {
				cancel() // a second read would mean the follow went on
			}
		}
		return nil
	}
	e, _, ct := clusterWorld(c)
	out, err := e.ApplyCluster(ctx, ct, withRestartPolicy(enable, ifi.RestartFailover))
	if err != nil || !out.Move.Followed || out.Move.To != "SQL02" {
		t.Fatalf("err = %v, move %+v", err, out.Move)
	}
	if follows != 2 { // the follow's read, then the read back
		t.Errorf("read_cluster %d times after the move; want the follow's one and the read back", follows)
	}
}

// followClock records the follow's pauses; the pause after the first limit ones
// fails, as when the operation's deadline passes.
type followClock struct {
	fakeClock
	pauses []time.Duration
	limit  int
}

func (c *followClock) Sleep(ctx context.Context, d time.Duration) error {
	c.pauses = append(c.pauses, d)
	if len(c.pauses) > c.limit {
		return context.DeadlineExceeded
	}
	return ctx.Err()
}

// How the follow reads the role as it settles, step by step: the cluster action's
// answer is lost before anything happened, then each read_cluster shows the next
// state of the script (the last one stays). A role that comes Online on the node
// it did not start on reports no process start (an older host), so only the
// states decide. Each round of reads pauses 1 s, then 2 s.
func TestApplyClusterFollowSettles(t *testing.T) {
	type step struct{ state, owner string }
	for _, tc := range []struct {
		name   string
		mode   ifi.RestartPolicy
		script []step
		ended  bool // the role ended Online where asked
		pauses int  // the follow's pauses (one between rounds)
	}{
		{"failover: pending, then Online on the target", ifi.RestartFailover,
			[]step{{contract.ClusterPending, "SQL01"}, {contract.ClusterOnline, "SQL02"}}, true, 1},
		{"failover: pending, then Online back on the owner", ifi.RestartFailover,
			[]step{{contract.ClusterPending, "SQL01"}, {contract.ClusterOnline, "SQL01"}}, false, 1},
		{"failover: Failed", ifi.RestartFailover, []step{{contract.ClusterFailed, "SQL01"}}, false, 0},
		{"failover: pending already on the target, then Online there", ifi.RestartFailover,
			[]step{{contract.ClusterPending, "SQL02"}, {contract.ClusterOnline, "SQL02"}}, true, 1},
		{"cluster restart: pending, then Online on the owner", ifi.RestartClusterRestart,
			[]step{{contract.ClusterPending, "SQL01"}, {contract.ClusterOnline, "SQL01"}}, true, 1},
		{"cluster restart: still Online, then pending, then Online", ifi.RestartClusterRestart,
			[]step{{contract.ClusterOnline, "SQL01"}, {contract.ClusterPending, "SQL01"}, {contract.ClusterOnline, "SQL01"}}, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := pendingCluster()
			c.moveErr = transientErr{}
			lastWeek := fakeBoot.Add(-7 * 24 * time.Hour) // when the stopped nodes' Engines last ran
			for _, n := range []string{"SQL02", "SQL03"} {
				c.nodes[n].ri.ProcessStartTime = &lastWeek
			}
			follows := 0
			c.beforeReadCluster = func(string) error {
				c.mu.Lock()
				defer c.mu.Unlock()
				if len(c.moves) == 0 && c.restarts == 0 {
					return nil // the observation before the action
				}
				st := tc.script[min(follows, len(tc.script)-1)]
				if follows < len(tc.script) && st.state == contract.ClusterOnline && (st.owner != c.owner || follows > 0) {
					c.startOn(st.owner)
					h := c.nodes[st.owner].fakeHost
					h.mu.Lock()
					h.ri.ProcessStartTime = nil
					h.mu.Unlock()
				}
				c.owner, c.state = st.owner, st.state
				follows++
				return nil
			}
			e, _, ct := clusterWorld(c)
			clock := &followClock{fakeClock: fakeClock{now: time.Now()}, limit: tc.pauses}
			e.Clock = clock
			out, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, tc.mode))
			if out.Move == nil || !out.Move.Followed || out.Move.Ended() != tc.ended {
				t.Fatalf("move %+v (err %v); want followed, ended %v", out.Move, err, tc.ended)
			}
			var ce *Error
			if !tc.ended && (!errors.As(err, &ce) || ce.Kind != KindClusterActionFailed) {
				t.Errorf("err = %v; want KindClusterActionFailed", err)
			}
			want := []time.Duration{time.Second, 2 * time.Second}[:tc.pauses]
			if fmt.Sprint(clock.pauses) != fmt.Sprint(want) || follows < len(tc.script) {
				t.Errorf("pauses %v, %d reads after the action; want pauses %v and the script's %d reads read", clock.pauses, follows, want, len(tc.script))
			}
		})
	}
}

// What a destroy leaves in effect: the owner's running Engine keeps IFI until its
// next restart (SQL Server said it has it); the stopped nodes add nothing. The
// outcome carries the cluster as observed.
func TestDestroyClusterWarnings(t *testing.T) {
	c := newFakeCluster("SQL01", "SQL02", "SQL03")
	e, _, ct := clusterWorld(c)
	out, err := e.DestroyCluster(context.Background(), ct, enable)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Warnings) != 1 || out.Warnings[0].Code != ifi.WarnStaysOnDestroy ||
		!strings.Contains(out.Warnings[0].Detail, "the running service MSSQLSERVER keeps IFI until its next restart") {
		t.Errorf("warnings %+v; want the owner's verified stays-on-until-restart one only", out.Warnings)
	}
	if out.Cluster == nil || out.Observed == nil || out.Cluster.Owner != "SQL01" {
		t.Errorf("outcome cluster %+v, observed %v; want the cluster as observed", out.Cluster, out.Observed != nil)
	}
}

// A destroy that cannot observe the FCI, or assess it, fails and revokes nothing.
func TestDestroyClusterObserveAndAssessFailures(t *testing.T) {
	c := newFakeCluster("SQL01", "SQL02", "SQL03")
	c.nodes["SQL01"].clusterErr = errors.New("the cluster service is not running")
	e, _, ct := clusterWorld(c)
	_, err := e.DestroyCluster(context.Background(), ct, enable)
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != KindClusterReadFailed || c.setRights() != 0 {
		t.Fatalf("observe: err = %v, %d set_right", err, c.setRights())
	}

	c = newFakeCluster("SQL01", "SQL02", "SQL03")
	c.nodes["SQL01"].ri.StartAccount, c.nodes["SQL01"].ri.StartAccountSID = `CORP\gone`, ""
	e, _, ct = clusterWorld(c)
	_, err = e.DestroyCluster(context.Background(), ct, ifi.Desired{Enabled: true, Grantee: ifi.GranteeServiceAccount})
	if !errors.As(err, &ce) || ce.Kind != KindAssessFailed || c.setRights() != 0 {
		t.Fatalf("assess: err = %v, %d set_right", err, c.setRights())
	}
}

// A node with nothing to change needs no WinRM client after it was read.
func TestApplyClusterNodeWithNothingToDoNeedsNoClient(t *testing.T) {
	c := newFakeCluster("SQL01")
	e, _, ct := clusterWorld(c)
	clientsOf(e).hostsBeforeFailing = map[string]int{addrOf("SQL01"): 2} // the read and the read back only
	if _, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartNever)); err != nil {
		t.Fatalf("err = %v; want the grants on SQL02 and SQL03 only", err)
	}
}

// clientsOf is the fake cluster clients of an engine made by clusterWorld.
func clientsOf(e *Engine) *clusterClients {
	c, ok := e.Clients.(*clusterClients)
	if !ok {
		panic(fmt.Sprintf("the engine's clients are %T, not the cluster's fakes", e.Clients))
	}
	return c
}

// When SQL Server's virtual name is unknown (neither the sql block nor the cluster
// gives it), the warning says the port it would have been asked at: the configured
// one, else the owner's.
func TestClusterVirtualNameUnknownWarningSaysThePort(t *testing.T) {
	for _, tc := range []struct {
		name string
		port int
		want string
	}{
		{"the owner's port", 0, "port 1433)"},
		{"the configured port", 14330, "port 14330)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCluster("SQL01", "SQL02", "SQL03")
			c.noVirtualName = true
			e, k, ct := clusterWorld(c)
			ct.SQLHost, ct.SQLPort = "", tc.port
			out, err := e.ReadCluster(context.Background(), ct, enable)
			if err != nil {
				t.Fatal(err)
			}
			w := warningWith(out.Warnings, WarnSQLPortUnknown)
			if w == nil || !strings.Contains(w.Detail, `(virtual name "", `+tc.want) || len(k.targets) != 0 {
				t.Errorf("warning %+v, SQL Server asked at %v; want the port %s said, nothing asked", w, k.targets, tc.want)
			}
		})
	}
}

// The nodes' grants ask set_right for no read-back of the instance: the apply
// reads every node back itself, once, after the last change.
func TestApplyClusterGrantsAskNoReadBack(t *testing.T) {
	c := newFakeCluster()
	var readBacks []string
	for _, n := range c.order {
		c.nodes[n].setRightErr = func(_ int, p contract.SetRightParams) error {
			if p.ReadBack != "" {
				readBacks = append(readBacks, n)
			}
			return nil
		}
	}
	e, _, ct := clusterWorld(c)
	if _, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartNever)); err != nil {
		t.Fatal(err)
	}
	if c.setRights() != 3 || len(readBacks) != 0 {
		t.Errorf("%d set_right changes, read-back asked on %v; want 3, none", c.setRights(), readBacks)
	}
}

// cancelOnLog ends the operation when the engine logs msg (as when its deadline
// passes while it waits).
type cancelOnLog struct {
	msg    string
	cancel context.CancelFunc
	at     []string // the hosts the message named
}

func (l *cancelOnLog) Debug(context.Context, string, map[string]any) {}
func (l *cancelOnLog) Info(_ context.Context, msg string, fields map[string]any) {
	if msg == l.msg {
		l.at = append(l.at, fmt.Sprint(fields["host"]))
		l.cancel()
	}
}

// The failover waits for the owner's host at the address the owner was read at,
// even when the nodes argument does not give that node's address: while another
// instance of that host restarts, nothing is moved.
func TestApplyClusterFailoverWaitsForTheOwnersHost(t *testing.T) {
	c := pendingCluster()
	e, _, ct := clusterWorld(c)
	ct.Resolve = func(node string) string {
		if node == "SQL01" {
			return "" // the node pointed at: reached at ct.Host
		}
		return addrOf(node)
	}
	e.Restarts = NewRestartLimiter(2)
	occupy(t, e.Restarts.hostSlot(addrOf("SQL01"))) // another instance of SQL01 restarts
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := &cancelOnLog{msg: "waiting for the host: another instance of it is restarting in this run", cancel: cancel}
	e.Log = log
	_, err := e.ApplyCluster(ctx, ct, withRestartPolicy(enable, ifi.RestartFailover))
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != KindRestartSlot || !ce.HostBusy || len(c.moves) != 0 {
		t.Fatalf("err = %v, %d moves; want the wait for %s, no move", err, len(c.moves), addrOf("SQL01"))
	}
	if strings.Join(log.at, ",") != addrOf("SQL01") {
		t.Errorf("waited for %v; want %s", log.at, addrOf("SQL01"))
	}
}

// The guard's part is told only when it brought the role online at least once.
func TestApplyClusterFollowTellsTheGuardOnlyWhenItActed(t *testing.T) {
	for _, tc := range []struct {
		brought  int
		finished bool
		want     string
	}{
		{0, true, ""},
		{1, true, "(BringOnline called 1 time(s))"},
		{3, false, ""},
	} {
		rec := &contract.ClusterGuardRecord{Finished: tc.finished, Group: "SQL Server (MSSQLSERVER)", BroughtOnline: tc.brought, State: contract.ClusterOnline}
		out, w := followedRestart(t, "SQL01", rec)
		said := strings.Contains(w.Detail, "the guard it had started brought the role online")
		if said != (tc.want != "") || !strings.Contains(w.Detail, tc.want) || out.Move.Guard != rec {
			t.Errorf("brought online %d, finished %v: warning %q, move's guard %+v; want %q", tc.brought, tc.finished, w.Detail, out.Move.Guard, tc.want)
		}
	}
}

// The follow is bounded by the action's time even when the operation has no
// deadline: each read_cluster it sends has one.
func TestApplyClusterFollowHasADeadlineOfItsOwn(t *testing.T) {
	c := pendingCluster()
	c.cutAnswer = true
	e, _, ct := clusterWorld(c)
	out, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartFailover))
	if err != nil || !out.Move.Followed {
		t.Fatalf("err = %v, move %+v", err, out.Move)
	}
	// The observation, the follow's one read, the read back.
	if len(c.readDeadlines) != 3 || !c.readDeadlines[1] {
		t.Errorf("read_cluster with a deadline: %v; want the follow's (the second) bounded", c.readDeadlines)
	}
}

// The follow asks the node reached first, then the other possible owners in the
// order of their addresses, the same every time.
func TestApplyClusterFollowOrder(t *testing.T) {
	for i := 0; i < 50; i++ {
		c := pendingCluster()
		c.cutAnswer = true
		var order []string
		c.beforeReadCluster = func(node string) error {
			c.mu.Lock()
			defer c.mu.Unlock()
			if len(c.moves) == 0 {
				return nil
			}
			order = append(order, node)
			if len(order) <= 3 {
				return transientErr{} // the first round fails on every node
			}
			return nil
		}
		e, _, ct := clusterWorld(c)
		ct.Host = addrOf("SQL03")
		e.Clock = fakeClock{now: time.Now()}
		out, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartFailover))
		if err != nil || !out.Move.Followed || out.Move.To != "SQL02" {
			t.Fatalf("err = %v, move %+v", err, out.Move)
		}
		if len(order) < 3 || strings.Join(order[:3], ",") != "SQL03,SQL01,SQL02" {
			t.Fatalf("the follow asked %v in turn; want SQL03 (reached), then SQL01, SQL02", order)
		}
	}
}

// When no node can be reached during the follow (their WinRM clients cannot be
// set up), the error says why.
func TestApplyClusterFollowCannotSetUpAnyClient(t *testing.T) {
	c := pendingCluster()
	c.cutAnswer = true
	e, _, ct := clusterWorld(c)
	// Each node's client: the observation, and SQL01's for the failover; none after.
	clientsOf(e).hostsBeforeFailing = map[string]int{addrOf("SQL01"): 2, addrOf("SQL02"): 1, addrOf("SQL03"): 1}
	e.Clock = &followClock{fakeClock: fakeClock{now: time.Now()}, limit: 1}
	out, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartFailover))
	wantFollowFailed(t, out, err, "following the role with read_cluster then failed", "could not be set up")
}

// A cluster restart whose answer was lost is recognised at the follow's first read
// by the owner's new process, read at the address the owner was read at (the
// nodes argument need not give the node pointed at).
func TestApplyClusterRestartFollowReadsTheOwnerWhereItWasRead(t *testing.T) {
	c := newFakeCluster()
	c.cutAnswer = true
	e, _, ct := clusterWorld(c)
	ct.Resolve = func(node string) string {
		if node == "SQL01" {
			return ""
		}
		return addrOf(node)
	}
	clock := &followClock{fakeClock: fakeClock{now: time.Now()}, limit: 3}
	e.Clock = clock
	out, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartClusterRestart))
	if err != nil || !out.Move.Followed || !out.Move.Ended() {
		t.Fatalf("err = %v, move %+v", err, out.Move)
	}
	if len(clock.pauses) != 0 || c.reads != 3 {
		t.Errorf("pauses %v, read_cluster %d times; want the restart seen at the first read", clock.pauses, c.reads)
	}
}

// A failover whose answer was lost, with the role still Online on the old owner at
// the follow's first read: when the old owner's process start cannot be read (its
// client cannot be set up, or it reports none), the follow does not take the role
// for restarted there and goes on until it is Online on the target.
func TestApplyClusterFollowOldOwnerUnconfirmed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(c *fakeCluster, cl *clusterClients)
	}{
		{"no client", func(_ *fakeCluster, cl *clusterClients) {
			cl.hostsBeforeFailing = map[string]int{addrOf("SQL01"): 1} // the observation only
		}},
		{"no process start", func(c *fakeCluster, _ *clusterClients) { c.nodes["SQL01"].ri.ProcessStartTime = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := pendingCluster()
			c.moveErr = transientErr{}
			follows := 0
			c.beforeReadCluster = func(string) error {
				c.mu.Lock()
				defer c.mu.Unlock()
				if len(c.moves) == 0 {
					return nil
				}
				if follows++; follows == 2 {
					c.startOn("SQL02")
				}
				return nil
			}
			e, _, ct := clusterWorld(c)
			ct.Host = addrOf("SQL02")
			tc.setup(c, clientsOf(e))
			e.Clock = &followClock{fakeClock: fakeClock{now: time.Now()}, limit: 3}
			out, err := e.ApplyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartFailover))
			if out.Move == nil || !out.Move.Followed || !out.Move.Ended() || out.Move.To != "SQL02" {
				t.Fatalf("move %+v (err %v); want followed to Online on SQL02", out.Move, err)
			}
			var ce *Error
			if errors.As(err, &ce) && ce.Kind == KindClusterActionFailed {
				t.Errorf("err = %v", err)
			}
		})
	}
}

// A failure half way whose read back cannot be assessed: the failure is the error,
// and no assessment is kept.
func TestApplyClusterHalfDoneThenUnassessable(t *testing.T) {
	c := newFakeCluster()
	c.nodes["SQL03"].setRightErr = func(int, contract.SetRightParams) error {
		h := c.nodes["SQL01"].fakeHost
		h.mu.Lock()
		h.ri.StartAccount, h.ri.StartAccountSID = `CORP\gone`, "" // the account is gone meanwhile
		h.mu.Unlock()
		return &fakeScriptError{code: "lsa_error", err: errors.New("access denied")}
	}
	e, _, ct := clusterWorld(c)
	out, err := e.ApplyCluster(context.Background(), ct, ifi.Desired{Enabled: true, Grantee: ifi.GranteeServiceAccount, Restart: ifi.RestartNever})
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != KindSetRightFailed || ce.Node != "SQL03" || !ce.Changed {
		t.Fatalf("err = %v", err)
	}
	if out.Cluster != nil || !out.HalfDone() {
		t.Errorf("cluster %+v, half done %v; want no assessment, half done", out.Cluster, out.HalfDone())
	}
}

// Destroy assesses the cluster as the destroy asks (enabled = false): a cluster
// whose nodes hold the right is not as asked.
func TestDestroyClusterAssessesTheDestroy(t *testing.T) {
	c := newFakeCluster("SQL01", "SQL02", "SQL03")
	e, _, ct := clusterWorld(c)
	out, err := e.DestroyCluster(context.Background(), ct, withRestartPolicy(enable, ifi.RestartFailover))
	if err != nil {
		t.Fatal(err)
	}
	if out.Cluster == nil || out.Cluster.Converged || out.Enabled {
		t.Errorf("cluster %+v, enabled %v; want not converged", out.Cluster, out.Enabled)
	}
}

// Destroy's warnings about the owner come from what SQL Server said of its running
// Engine: when it runs without IFI (a restart was pending), nothing stays on until
// a restart, so there is nothing to warn of.
func TestDestroyClusterOwnerVerified(t *testing.T) {
	c := pendingCluster()
	e, _, ct := clusterWorld(c)
	out, err := e.DestroyCluster(context.Background(), ct, enable)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Warnings) != 0 || len(out.Nodes) != 3 || c.nodes["SQL01"].holds(svcSID) {
		t.Errorf("warnings %+v, nodes %+v; want every node revoked, no warning", out.Warnings, out.Nodes)
	}
}
