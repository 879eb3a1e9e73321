package converge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
)

// Failover cluster instances (design/cluster.md). For the Terraform layer:
//
//   - Use ReadCluster, ApplyCluster and DestroyCluster instead of Read, Apply and
//     Destroy when the instance is clustered (ReadInstanceResult.Clustered, which
//     Read's Outcome.Read carries).
//   - ClusterTarget says how to reach the nodes: the node the user pointed at, a
//     Resolve func for the nodes argument (node name → address) and the SQL host
//     (the sql block's address, the virtual network name).
//   - ClusterOutcome.Cluster.Nodes are the computed per-node attributes
//     (ifi.NodeState: name, owner, possible owner, granted, policy);
//     Cluster.IFISurvivesFailover is the roll-up; Enabled is the `enabled` value to
//     store; Observed feeds ifi.PredictCluster at plan time.
//   - ClusterOutcome.Nodes say what an apply did on each node, and after a
//     failure what it had done: a grant made on one node and a failure on the next
//     are both there (HalfDone), to be recorded in state. Move says where a failover
//     or cluster restart left the role.
//   - Errors are *Error; a failure on one node names it (Error.Node), a cluster
//     action that did not end as asked carries Error.Move.

// ClusterTarget names a failover cluster instance and how to reach its nodes.
type ClusterTarget struct {
	// Target is the node the user pointed at (Host, Port) and the instance. SQLPort
	// overrides the port SQL Server is asked at (else the owner's reported port).
	Target
	// SQLHost is where SQL Server answers: the virtual network name (the sql block's
	// address); "" asks at the virtual name read_cluster reports.
	SQLHost string
	// Resolve gives the WinRM address of a node by its cluster name (the nodes
	// argument); nil, or "" from it, means the node's name itself.
	Resolve func(node string) string
	// Named are the node names the nodes argument names; each must be a possible owner.
	Named []string
}

func (ct ClusterTarget) address(node string) string {
	if ct.Resolve != nil {
		if a := ct.Resolve(node); a != "" {
			return a
		}
	}
	return node
}

func (ct ClusterTarget) at(address string) Target {
	return Target{Host: address, Instance: ct.Instance, Port: ct.Port}
}

// NodeResult is what an apply did on one node.
type NodeResult struct {
	Node    string
	Address string
	Planned []ifi.Step // the steps the plan made for this node
	Done    []ifi.Step // the steps the host confirmed, in order
	Changed bool       // one of Done changed the holders
	Err     error      // the failure on this node (its later steps were not made); nil
}

// MoveResult is where a failover or a cluster restart left the role.
type MoveResult struct {
	Mode   ifi.RestartPolicy // ifi.RestartFailover or ifi.RestartClusterRestart
	Group  string
	From   string // the owner before
	Target string // the node asked for (the owner itself for a cluster restart)
	To     string // the owner at the end; "" when unknown
	State  string // the group's state at the end (contract.Cluster*); "" when unknown
	// ClusterError is the cluster's own error text, "" when it reported none.
	ClusterError string
	// Followed: the connection was lost during the action and the engine followed
	// the role with read_cluster.
	Followed bool
	// Refused: the cluster refused the action before anything was taken offline.
	Refused bool
	// Guard is what the action's guard (started on the node reached before anything
	// was taken offline) had recorded at the follow's last read of that node; nil
	// when the role was not followed or that node did not answer.
	Guard *contract.ClusterGuardRecord
}

// Ended reports whether the role ended Online where it was asked to.
func (m *MoveResult) Ended() bool {
	return m.State == contract.ClusterOnline && strings.EqualFold(m.To, m.Target)
}

// ClusterOutcome is what an operation on a failover cluster instance leaves behind.
type ClusterOutcome struct {
	// Cluster is what is true now, for the computed attributes; nil when not known
	// (keep the previous state).
	Cluster *ifi.ClusterAssessment
	// Observed is the observation Cluster comes from (ifi.PredictCluster takes it).
	Observed *ifi.ClusterObserved
	// Enabled is the value the `enabled` argument should hold in the state.
	Enabled bool
	// Nodes are the apply's results per node, in the plan's order.
	Nodes []NodeResult
	// Move is the failover or cluster restart, nil when none was attempted.
	Move *MoveResult
	// Changed: a right was changed or a cluster action was sent. Restarted: SQL
	// Server was stopped and started (moved) by the cluster.
	Changed   bool
	Restarted bool
	Action    ifi.Action
	Warnings  []ifi.Warning
}

// HalfDone reports whether the apply changed some node but not all it planned to.
func (o *ClusterOutcome) HalfDone() bool {
	some, all := false, true
	for _, n := range o.Nodes {
		some = some || len(n.Done) > 0
		all = all && len(n.Done) == len(n.Planned) && n.Err == nil
	}
	return some && !all
}

// A ClusterOutcome is the ledger (ledger.go) of an operation on every node.
func (o *ClusterOutcome) changed()           { o.Changed = true }
func (o *ClusterOutcome) unanswered()        { o.Changed = true }
func (o *ClusterOutcome) warn(w ifi.Warning) { o.Warnings = append(o.Warnings, w) }

func (o *ClusterOutcome) fail(err *Error) *Error {
	err.Changed = err.Changed || o.Changed
	err.Restarted = err.Restarted || o.Restarted
	if err.Move == nil {
		err.Move = o.Move
	}
	return err
}

// clusterObservation is one look at an FCI: the reached node, read_cluster there,
// each other possible owner at its address, and SQL Server on the virtual name.
type clusterObservation struct {
	Observed ifi.ClusterObserved
	// sql is the SQL check at the virtual name (checkSQL): where SQL Server answers,
	// the observation's warnings, and the availability groups it is a replica of, for
	// the restart gate's lock (group_lock.go).
	sql *Observation
}

func (e *Engine) observeCluster(ctx context.Context, ct ClusterTarget) (*clusterObservation, error) {
	t := ct.Target
	h, err := e.host(t)
	if err != nil {
		return nil, err
	}
	ri, err := e.readInstance(ctx, h, t, "")
	if err != nil {
		return nil, &Error{Kind: KindObserveFailed, Target: t, Err: err}
	}
	if err := notFound(t, ri); err != nil {
		return nil, err
	}
	e.debug(ctx, "read_cluster", map[string]any{"host": t.Host, "instance": t.Instance})
	rc, err := h.ReadCluster(ctx, contract.ReadClusterParams{Instance: t.Instance})
	if err != nil {
		return nil, &Error{Kind: KindClusterReadFailed, Target: t, Err: err}
	}
	o := &clusterObservation{Observed: ifi.ClusterObserved{Host: t.Host, Cluster: rc, Nodes: map[string]ifi.NodeObservation{}, Named: ct.Named}}
	for _, name := range ifi.PossibleOwnersOf(rc) {
		if strings.EqualFold(name, rc.Node) {
			o.Observed.Nodes[name] = ifi.NodeObservation{Address: t.Host, Instance: ri}
			continue
		}
		o.Observed.Nodes[name] = e.readNode(ctx, ct, name)
	}
	var owner *contract.ReadInstanceResult
	for name, n := range o.Observed.Nodes {
		if strings.EqualFold(name, rc.Group.OwnerNode) {
			owner = n.Instance
		}
	}
	sqlHost := ct.SQLHost
	if sqlHost == "" {
		sqlHost = rc.VirtualName
	}
	port := t.SQLPort
	if port == 0 && owner != nil {
		port = owner.TCPPort
	}
	site := sqlSite{at: sqlTarget(t, sqlHost, owner), where: "at its virtual name", fallback: "the owner's error log",
		unknown: ifi.Warning{Code: WarnSQLPortUnknown, Summary: "SQL Server's virtual name or port is unknown",
			Detail: fmt.Sprintf("Neither the configuration nor the cluster gives where SQL Server of %s answers (virtual name %q, port %d), so it cannot be "+
				"asked; verification falls back to the owner's error log.", t, safetext.Escape(sqlHost), port)}}
	checker, setupErr := e.Clients.SQLChecker()
	o.sql = &Observation{Target: t}
	if o.Observed.Verification, err = e.checkSQL(ctx, o.sql, owner, checker, setupErr, site, &earlyCheck{}); err != nil {
		return nil, err
	}
	return o, nil
}

// readNode reads the instance on one other node, at its address.
func (e *Engine) readNode(ctx context.Context, ct ClusterTarget, name string) ifi.NodeObservation {
	nt := ct.at(ct.address(name))
	n := ifi.NodeObservation{Address: nt.Host}
	h, err := e.host(nt)
	if err != nil {
		n.Err = err
		return n
	}
	ri, err := e.readInstance(ctx, h, nt, name)
	switch {
	case err != nil:
		n.Err = err
	case !ri.Found:
		n.Err = fmt.Errorf("instance %s is not installed there (installed instances: %s)", safetext.Escape(nt.Instance),
			(&Error{Instance: ri}).Installed())
	case ri.ComputerName != "" && !strings.EqualFold(ri.ComputerName, name):
		n.Err = fmt.Errorf("the address %s reaches %s, not the node %s", safetext.Escape(nt.Host), safetext.Escape(ri.ComputerName), safetext.Escape(name))
	default:
		n.Instance = ri
	}
	return n
}

// ReadCluster observes a failover cluster instance and assesses it against d.
func (e *Engine) ReadCluster(ctx context.Context, ct ClusterTarget, d ifi.Desired) (*ClusterOutcome, error) {
	obs, err := e.observeCluster(ctx, ct)
	if err != nil {
		return &ClusterOutcome{}, err
	}
	ca, err := ifi.AssessCluster(d, obs.Observed)
	if err != nil {
		return &ClusterOutcome{}, &Error{Kind: KindAssessFailed, Target: ct.Target, Err: err}
	}
	return &ClusterOutcome{Cluster: ca, Observed: &obs.Observed, Enabled: clusterEnabled(d, ca),
		Warnings: append(slices.Clone(obs.sql.Warnings), ca.Warnings...)}, nil
}

func clusterEnabled(d ifi.Desired, ca *ifi.ClusterAssessment) bool {
	if ca.Converged {
		return d.Enabled
	}
	return !d.Enabled
}

// clusterAction names what a cluster plan does (ifi.ActionOf on its steps).
func clusterAction(p *ifi.ClusterPlan, err error) ifi.Action {
	if err != nil || p == nil {
		return ifi.ActionOf(nil, nil, err)
	}
	var steps []ifi.Step
	for _, n := range p.Nodes {
		steps = append(steps, n.Steps...)
	}
	return ifi.ActionOf(nil, &ifi.Plan{Steps: steps, Restart: p.Restart}, nil)
}

// ApplyCluster converges a failover cluster instance to d: read every possible
// owner, grant (or revoke) node by node, then fail the role over or restart it
// through the cluster when the plan says so, follow it to Online, wait for SQL
// Server on the virtual name, read everything back and check the running Engine.
// Nothing changes on any node when a possible owner cannot be read. The Outcome is
// never nil; after a failure once something changed it says what is true now.
func (e *Engine) ApplyCluster(ctx context.Context, ct ClusterTarget, d ifi.Desired) (*ClusterOutcome, error) {
	t := ct.Target
	out := &ClusterOutcome{}
	obs, err := e.observeCluster(ctx, ct)
	if err != nil {
		return out, err
	}
	ca, p, err := ifi.PlanCluster(d, obs.Observed)
	out.Action = clusterAction(p, err)
	if err := decided(t, d, out.Action, err, func() ifi.Prediction {
		now, _ := ifi.PredictCluster(d, obs.Observed, false)
		return now.Prediction
	}); err != nil {
		return out, err
	}
	out.Warnings = slices.Clone(p.Warnings)
	e.info(ctx, "applying IFI on a failover cluster instance", map[string]any{"host": t.Host, "instance": t.Instance,
		"nodes": fmt.Sprintf("%+v", p.Nodes), "restart": p.Restart, "mode": string(p.Mode), "target": p.Target, "reason": p.RestartReason})

	for _, ns := range p.Nodes {
		nr := e.setNodeRights(ctx, ct, ns, out)
		out.Nodes = append(out.Nodes, nr)
		if nr.Err != nil {
			return e.recoverCluster(ctx, ct, d, out, nr.Err)
		}
	}
	if p.Restart {
		on, _ := obs.Observed.Node(ca.Owner)
		owner := on.Address
		if owner == "" {
			owner = ct.address(ca.Owner)
		}
		// The slot's failure carries no change of the nodes (a fresh Outcome).
		refused, err := e.gatedRestart(ctx, t, ct.at(owner), obs.sql, p.RestartReason, &Outcome{}, out, false, func(*restartGate) error {
			err := e.clusterRestart(ctx, ct, obs, ca, p, out)
			if st := obs.sql.SQLTarget; err == nil && st != nil {
				err = e.waitReady(ctx, ct.at(st.Host), st, out)
			}
			return err
		})
		if refused != nil {
			return out, refused
		}
		if err != nil {
			return e.recoverCluster(ctx, ct, d, out, err)
		}
	}
	if !out.Changed {
		out.Cluster, out.Observed, out.Enabled = ca, &obs.Observed, clusterEnabled(d, ca)
		out.Warnings = append(append(slices.Clone(obs.sql.Warnings), ca.Warnings...), out.Warnings...)
		return out, nil
	}
	back, err := e.observeCluster(ctx, ct)
	if err != nil {
		ferr := out.fail(&Error{Kind: KindReadBackFailed, Target: t, Err: err})
		return out, ferr
	}
	ca, err = ifi.AssessCluster(d, back.Observed)
	if err != nil {
		ferr := out.fail(&Error{Kind: KindAssessFailed, Target: t, Err: err})
		return out, ferr
	}
	out.Cluster, out.Observed, out.Enabled = ca, &back.Observed, clusterEnabled(d, ca)
	out.Warnings = append(append(slices.Clone(back.sql.Warnings), ca.Warnings...), out.Warnings...)
	if err := checked(out.Restarted, t, ca.Owner, ca.OwnerAssessment, out); err != nil {
		return out, err
	}
	return out, nil
}

// setNodeRights makes one node's steps, in order, stopping at the first failure.
func (e *Engine) setNodeRights(ctx context.Context, ct ClusterTarget, ns ifi.NodeSteps, out *ClusterOutcome) NodeResult {
	if len(ns.Steps) == 0 {
		return NodeResult{Node: ns.Node, Address: ns.Address, Planned: ns.Steps}
	}
	nt := ct.at(ns.Address)
	h, err := e.host(nt)
	if err != nil {
		return NodeResult{Node: ns.Node, Address: ns.Address, Planned: ns.Steps,
			Err: out.fail(&Error{Kind: KindHostSetup, Target: nt, Err: err, Node: ns.Node})}
	}
	run := e.setRights(ctx, h, nt, ns.Node, ns.Steps, false, out)
	return NodeResult{Node: ns.Node, Address: ns.Address, Planned: ns.Steps, Done: run.done, Changed: run.changed, Err: run.err}
}

// clusterSeconds is the time the cluster action may take on the host.
func (e *Engine) clusterSeconds(ctx context.Context) int {
	return min(e.restartSeconds(ctx), contract.MaxClusterSeconds)
}

// clusterRestart sends the failover or the cluster restart to the node reached and,
// when the connection is lost, follows the role with read_cluster: the cluster
// service finishes an action it accepted whatever happens to our connection.
func (e *Engine) clusterRestart(ctx context.Context, ct ClusterTarget, obs *clusterObservation, ca *ifi.ClusterAssessment, p *ifi.ClusterPlan, out *ClusterOutcome) error {
	t := ct.Target
	h, err := e.host(t)
	if err != nil {
		return out.fail(&Error{Kind: KindHostSetup, Target: t, Err: err})
	}
	mv := &MoveResult{Mode: p.Mode, Group: ca.Group, From: ca.Owner, Target: ca.Owner}
	if p.Mode == ifi.RestartFailover {
		mv.Target = p.Target
	}
	out.Move = mv
	secs := e.clusterSeconds(ctx)
	e.info(ctx, "restarting SQL Server through the cluster", map[string]any{"host": t.Host, "instance": t.Instance, "mode": string(p.Mode),
		"group": ca.Group, "from": ca.Owner, "target": mv.Target, "timeout_s": secs})
	var res *contract.ClusterActionResult
	if p.Mode == ifi.RestartFailover {
		res, err = h.ClusterMove(ctx, contract.ClusterMoveParams{Instance: t.Instance, Group: ca.Group, TargetNode: p.Target, TimeoutS: secs})
	} else {
		res, err = h.ClusterRestart(ctx, contract.ClusterRestartParams{Instance: t.Instance, TimeoutS: secs})
	}
	switch {
	case err == nil:
		out.Changed = true
		mv.To, mv.State, mv.ClusterError = res.OwnerAfter, res.State, res.Error
	case hostAnswered(err) && scriptCode(err) == contract.CodeClusterError:
		// The cluster refused before anything was stopped.
		mv.Refused = true
		return out.fail(&Error{Kind: KindClusterActionFailed, Target: t, Err: err})
	default:
		// The connection was lost (or the host could not say where the role is): the
		// cluster finishes what it accepted, so follow the role.
		out.Changed = true
		mv.Followed = true
		rc, ferr := e.followCluster(ctx, ct, obs, mv)
		if ferr != nil {
			return out.fail(&Error{Kind: KindClusterActionFailed, Target: t,
				Err: fmt.Errorf("%w; following the role with read_cluster then failed: %v", err, ferr)})
		}
		mv.To, mv.State = rc.Group.OwnerNode, rc.Group.State
		mv.ClusterError = err.Error()
	}
	out.Restarted = mv.State == contract.ClusterOnline
	if !mv.Ended() {
		return out.fail(&Error{Kind: KindClusterActionFailed, Target: t})
	}
	if mv.Followed {
		detail := fmt.Sprintf("On %s the connection was lost while the cluster moved or restarted the role %q (%s); reading the cluster again shows it Online on %s.",
			t, safetext.Escape(mv.Group), safetext.Escape(mv.ClusterError), safetext.Escape(mv.To))
		if g := mv.Guard; g != nil && g.Finished && g.BroughtOnline > 0 {
			detail += fmt.Sprintf(" The action's process on %s ended before the role was Online again, and the guard it had started brought the role online (BringOnline called %d time(s)).",
				safetext.Escape(t.Host), g.BroughtOnline)
		}
		out.Warnings = append(out.Warnings, ifi.Warning{Code: WarnRecovered, Summary: "The connection was lost during the cluster action; the role was followed to Online", Detail: detail})
		mv.ClusterError = ""
	}
	return nil
}

func scriptCode(err error) string {
	var sc ScriptCoder
	if errors.As(err, &sc) {
		return sc.ScriptCode()
	}
	return ""
}

// followCluster reads the cluster, on the node reached and then on the other
// possible owners, until the role settles: Online where it was asked to be, Failed,
// or Online elsewhere after it was seen moving; or until ctx's deadline (at most the
// action's own time when ctx has none).
func (e *Engine) followCluster(ctx context.Context, ct ClusterTarget, obs *clusterObservation, mv *MoveResult) (*contract.ReadClusterResult, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(e.clusterSeconds(ctx))*time.Second+readBackMargin)
		defer cancel()
	}
	addrs := []string{ct.Host}
	for _, n := range obs.Observed.Nodes {
		if n.Address != "" && !slices.Contains(addrs, n.Address) {
			addrs = append(addrs, n.Address)
		}
	}
	slices.Sort(addrs[1:])
	var last *contract.ReadClusterResult
	var lastErr error
	moving := false
	for round := 1; ; round++ {
		for _, a := range addrs {
			h, err := e.host(ct.at(a))
			if err != nil {
				lastErr = err
				continue
			}
			rc, err := h.ReadCluster(ctx, contract.ReadClusterParams{Instance: ct.Instance})
			if err != nil {
				lastErr = err
				continue
			}
			last = rc
			if a == ct.Host {
				mv.Guard = rc.Guard // the guard runs on the node the action was sent to
			}
			g := rc.Group
			e.debug(ctx, "following the role", map[string]any{"host": a, "group": g.Name, "owner": g.OwnerNode, "state": g.State})
			switch {
			case g.State == contract.ClusterOnline && strings.EqualFold(g.OwnerNode, mv.Target) && (mv.Mode == ifi.RestartFailover || moving):
				return rc, nil
			case g.State == contract.ClusterOnline && moving:
				return rc, nil // it settled elsewhere: a fail back
			case g.State == contract.ClusterOnline && e.startedSince(ctx, ct, obs, mv.From, g.OwnerNode):
				return rc, nil // it restarted (or failed back) before we looked
			case g.State == contract.ClusterFailed:
				return rc, nil
			case g.State != contract.ClusterOnline:
				moving = true
			}
			break
		}
		if ctx.Err() != nil || e.clock().Sleep(ctx, retryPause(round)) != nil {
			if last != nil {
				return last, nil // the deadline passed: report where the role is
			}
			if lastErr == nil {
				lastErr = ctx.Err()
			}
			return nil, lastErr
		}
	}
}

// startedSince reports whether SQL Server runs on node in a process that started
// after the one that ran on from before the action: the role went through a stop
// and a start even though no read saw it moving.
func (e *Engine) startedSince(ctx context.Context, ct ClusterTarget, obs *clusterObservation, from, node string) bool {
	var before *time.Time
	addr := ct.address(node)
	for name, n := range obs.Observed.Nodes {
		if strings.EqualFold(name, from) && n.Instance != nil {
			before = n.Instance.ProcessStartTime
		}
		if strings.EqualFold(name, node) && n.Address != "" {
			addr = n.Address
		}
	}
	nt := ct.at(addr)
	h, err := e.host(nt)
	if err != nil {
		return false
	}
	// A poll: its own read, never the run's shared one (which it asks again for news).
	ri, err := h.ReadInstance(ctx, contract.ReadInstanceParams{Instance: nt.Instance, Right: contract.RightManageVolume})
	if err != nil || ri.ServiceState != contract.StateRunning || ri.ProcessStartTime == nil {
		return false
	}
	return before == nil || ri.ProcessStartTime.After(*before)
}

// recoverCluster is the end of an apply whose step failed: once something changed,
// every node is read back so that the Outcome says what is true now.
func (e *Engine) recoverCluster(ctx context.Context, ct ClusterTarget, d ifi.Desired, out *ClusterOutcome, err error) (*ClusterOutcome, error) {
	obs, ok := readAfterFailure(e, ctx, out.Changed, out, func(rctx context.Context) (*clusterObservation, error) {
		return e.observeCluster(rctx, ct)
	}, func(oerr error) string {
		return fmt.Sprintf("After the failure, %s could not be read back (%v); what its nodes hold now is unknown.", ct.Target, oerr)
	})
	if !ok {
		return out, err
	}
	ca, aerr := ifi.AssessCluster(d, obs.Observed)
	if aerr != nil {
		return out, err
	}
	out.Cluster, out.Observed, out.Enabled = ca, &obs.Observed, clusterEnabled(d, ca)
	out.Warnings = append(out.Warnings, obs.sql.Warnings...)
	out.Warnings = append(out.Warnings, ca.Warnings...)
	return out, err
}

// DestroyCluster revokes the grantee's direct grant on every possible owner, node
// by node; it never restarts. Nothing changes when a possible owner cannot be read.
// Warnings say what stays in effect.
func (e *Engine) DestroyCluster(ctx context.Context, ct ClusterTarget, d ifi.Desired) (*ClusterOutcome, error) {
	out := &ClusterOutcome{}
	obs, err := e.observeCluster(ctx, ct)
	if err != nil {
		return out, err
	}
	d.Enabled, d.Restart = false, ifi.RestartNever
	ca, err := ifi.AssessCluster(d, obs.Observed)
	if err != nil {
		return out, &Error{Kind: KindAssessFailed, Target: ct.Target, Err: err}
	}
	out.Cluster, out.Observed = ca, &obs.Observed
	if len(ca.Unreadable) > 0 {
		name := ca.Unreadable[0]
		n, _ := obs.Observed.Node(name)
		return out, &Error{Kind: KindObserveFailed, Target: ct.at(n.Address), Node: name,
			Err: fmt.Errorf("possible owner %s could not be read, so nothing was revoked on any node: %w", safetext.Escape(name), n.Err)}
	}
	for _, node := range ca.Nodes {
		if !node.PossibleOwner {
			continue
		}
		n, _ := obs.Observed.Node(node.Name)
		v := ifi.Verification{Source: ifi.SourceNone}
		if node.Owner {
			v = obs.Observed.Verification
		}
		_, dp, ws, err := destroyPlan(ct.at(n.Address), node.Name, d, ifi.Observed{Host: node.Name, Instance: n.Instance, Verification: v})
		if err != nil {
			return out, err
		}
		for _, w := range ws {
			if node.Owner || w.Code == ifi.WarnGroupPolicy { // a stopped node's service keeps nothing running
				out.Warnings = append(out.Warnings, w)
			}
		}
		nr := e.setNodeRights(ctx, ct, ifi.NodeSteps{Node: node.Name, Address: n.Address, Steps: dp.Steps}, out)
		out.Nodes = append(out.Nodes, nr)
		if nr.Err != nil {
			return out, nr.Err
		}
	}
	return out, nil
}
