package wsfc

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// Fault modes of FailNextMove.
const (
	FailMoveFailBack = "fail_back" // the next move's target cannot start SQL Server: the cluster fails the role back
	FailMoveOffline  = "offline"   // the next time SQL Server is brought online it fails, and stays Failed
)

// The cluster's errors (Win32 system error codes; FIDELITY.md marks their texts
// unproven on a real cluster).
var (
	errInvalidState = func(what string) *ClusterError {
		return &ClusterError{5023, "The group or resource is not in the correct state to perform the requested operation: " + what}
	}
	errNodePaused = func(n string) *ClusterError { return &ClusterError{5070, "The cluster node is paused: " + n} }
	errNodeDown   = func(n string) *ClusterError { return &ClusterError{5050, "The cluster node is down: " + n} }
	errCantHost   = func(n, res string) *ClusterError {
		return &ClusterError{5071, fmt.Sprintf("The cluster node %s cannot host the resource %s: it is not one of its possible owners", n, res)}
	}
	errNoNode = func(n string) *ClusterError {
		return &ClusterError{5042, "The cluster node was not found: " + n}
	}
)

// begin registers an action on the role, or answers that another one runs.
func (c *Cluster) beginLocked(r *clusterRole, kind, from, to string) (*clusterAction, *ClusterError) {
	if c.closed {
		return nil, errInvalidState("the cluster service is stopping")
	}
	if r.action != nil {
		return nil, errInvalidState(fmt.Sprintf("role %s is busy: a %s is in progress", r.name, r.action.kind))
	}
	a := &clusterAction{kind: kind, from: from, to: to, done: make(chan struct{})}
	r.action = a
	c.notifyLocked()
	return a, nil
}

// run runs fn as the cluster service does, in its own goroutine under the
// cluster's lifetime, and ends the role's action with its error.
func (c *Cluster) run(r *clusterRole, a *clusterAction, fn func() *ClusterError) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		err := fn()
		c.mu.Lock()
		a.err = err
		r.action = nil
		ev := ClusterEvent{Time: c.now().UTC(), Kind: a.kind, From: a.from, To: a.to}
		if r.owner != nil {
			ev.Outcome = r.groupStateLocked() + " on " + r.owner.name()
		}
		if err != nil {
			ev.Error = err.Error()
			r.lastError = err.Error()
		} else {
			r.lastError = ""
		}
		r.events = append(r.events, ev)
		if len(r.events) > 100 {
			r.events = r.events[len(r.events)-100:]
		}
		c.notifyLocked()
		c.mu.Unlock()
		c.syncVNN(r) // before the action's callers go on: the listener is as the action left the role
		close(a.done)
	}()
}

// ActionOutcome is what a caller of a cluster action learns: the owner before and
// after, and the cluster's error. Finished is false when the caller stopped waiting
// before the cluster service finished.
type ActionOutcome struct {
	OwnerBefore string
	Finished    bool
	Err         *ClusterError
}

// refused is the outcome of an action the cluster refused before it began: the
// cluster's error is the answer, not a failure of the call.
func refused(out ActionOutcome, ce *ClusterError) (ActionOutcome, error) {
	out.Finished, out.Err = true, ce
	return out, nil
}

// wait waits for an action until it ends, d passes or ctx ends.
func (c *Cluster) wait(ctx context.Context, a *clusterAction, d time.Duration) (bool, *ClusterError) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-a.done:
		return true, a.err
	case <-t.C:
	case <-ctx.Done():
	}
	return false, nil
}

// setState changes a resource's state; the virtual name's listener follows before
// waiters see the change. SQL Server leaving Online closes it first: a reader of
// the role's view (WaitRole reads it before it waits) never sees SQL Server
// OfflinePending, Offline or Failed while the virtual name still listens.
func (c *Cluster) setState(r *clusterRole, res *clusterResource, state string) {
	if res.typ == ResourceTypeSQLServer && state != ResourceOnline {
		r.closeVNN()
	}
	c.mu.Lock()
	res.state = state
	c.mu.Unlock()
	c.syncVNN(r)
	c.mu.Lock()
	c.notifyLocked()
	c.mu.Unlock()
}

// takeOffline takes the role's resources of the given types offline on node n,
// in that order; a service resource's stop is bounded by the pending timeout.
func (c *Cluster) takeOffline(r *clusterRole, n *clusterNode, types ...string) *ClusterError {
	engine, agent := c.services(r, n)
	for _, typ := range types {
		res := r.resource(typ)
		if res.name == "" {
			continue
		}
		c.mu.Lock()
		state := res.state
		c.mu.Unlock()
		if state == ResourceOffline {
			continue
		}
		svc := serviceOf(typ, engine, agent)
		if svc == "" {
			c.setState(r, res, ResourceOffline)
			continue
		}
		c.setState(r, res, ResourceOfflinePending)
		if err := n.node.StopService(svc, true); err != nil {
			c.setState(r, res, ResourceFailed)
			return &ClusterError{5038, fmt.Sprintf("The resource %s failed to go offline on %s: %v", res.name, n.name(), err)}
		}
		ctx, cancel := context.WithTimeout(c.life, r.pending)
		err := n.node.WaitServiceState(ctx, svc, contract.StateStopped)
		cancel()
		if err != nil {
			c.setState(r, res, ResourceFailed)
			return &ClusterError{5038, fmt.Sprintf("The resource %s did not go offline on %s within its pending timeout of %s: %v", res.name, n.name(), r.pending, err)}
		}
		c.setState(r, res, ResourceOffline)
	}
	return nil
}

// bringOnline brings the role's resources of the given types online on node n, in
// that order; a service resource's start is bounded by the pending timeout.
// In a move (move true) the fault FailMoveFailBack applies; FailMoveOffline applies
// to any start of SQL Server.
func (c *Cluster) bringOnline(r *clusterRole, n *clusterNode, move bool, types ...string) *ClusterError {
	engine, agent := c.services(r, n)
	for _, typ := range types {
		res := r.resource(typ)
		if res.name == "" {
			continue
		}
		c.mu.Lock()
		state := res.state
		mayHost := slices.Contains(res.owners, n)
		fail := ""
		if typ == ResourceTypeSQLServer && (r.failNext == FailMoveOffline || move && r.failNext == FailMoveFailBack) {
			fail, r.failNext = r.failNext, ""
		}
		c.mu.Unlock()
		if state == ResourceOnline {
			continue
		}
		if !mayHost {
			c.setState(r, res, ResourceFailed)
			return errCantHost(n.name(), res.name)
		}
		svc := serviceOf(typ, engine, agent)
		if svc == "" {
			c.setState(r, res, ResourceOnline)
			continue
		}
		if fail != "" {
			// The injected fault: this start fails in the node's SCM, as a start that
			// cannot open its databases does.
			_ = n.node.FailStarts(svc, 0, 1)
		}
		c.setState(r, res, ResourceOnlinePending)
		err := n.node.StartService(svc)
		if err == nil {
			ctx, cancel := context.WithTimeout(c.life, r.pending)
			if typ == ResourceTypeSQLServer {
				err = n.node.WaitEngineReady(ctx, r.instance)
			} else {
				err = n.node.WaitServiceState(ctx, svc, contract.StateRunning)
			}
			timedOut := ctx.Err() != nil
			cancel()
			if timedOut && err != nil {
				// The resource host ends a resource whose start outlasted its pending timeout.
				_ = n.node.TerminateProcess(svc)
				c.setState(r, res, ResourceFailed)
				return &ClusterError{5038, fmt.Sprintf("The resource %s did not come online on %s within its pending timeout of %s: %v", res.name, n.name(), r.pending, err)}
			}
		}
		if err != nil {
			c.setState(r, res, ResourceFailed)
			ce := &ClusterError{5038, fmt.Sprintf("The resource %s failed to come online on %s: %v", res.name, n.name(), err)}
			if fail == FailMoveOffline {
				ce.Message += " (the resource will not come online)"
			}
			return ce
		}
		c.setState(r, res, ResourceOnline)
	}
	return nil
}

// serviceOf is the service a resource type starts and stops ("" for the
// resources the model brings online and offline at once).
func serviceOf(typ, engine, agent string) string {
	switch typ {
	case ResourceTypeSQLServer:
		return engine
	case ResourceTypeAgent:
		return agent
	}
	return ""
}

func offlineOrder(r *clusterRole) []string {
	var out []string
	for i := len(r.res) - 1; i >= 0; i-- {
		out = append(out, r.res[i].typ)
	}
	return out
}

func onlineOrder(r *clusterRole) []string {
	var out []string
	for _, res := range r.res {
		out = append(out, res.typ)
	}
	return out
}

// checkTargetLocked says whether node n may own the role now.
func (c *Cluster) checkTargetLocked(r *clusterRole, n *clusterNode) *ClusterError {
	switch n.state {
	case NodePaused:
		return errNodePaused(n.name())
	case NodeDown:
		return errNodeDown(n.name())
	}
	for _, res := range r.res {
		if !slices.Contains(res.owners, n) {
			return errCantHost(n.name(), res.name)
		}
	}
	return nil
}

// Move moves the role to the target node (MSCluster_ResourceGroup.MoveToNewNode),
// kind "move" (the provider's request) or "failover" (from outside). The cluster
// checks the target and accepts or refuses at once; an accepted move runs to its
// end in the cluster service whatever happens to the caller, who waits at most
// wait. A move whose SQL Server cannot start on the target fails back to the node it
// came from (with FailMoveOffline injected it stays Failed on the target).
func (c *Cluster) Move(ctx context.Context, role, target, kind string, wait time.Duration) (ActionOutcome, error) {
	c.mu.Lock()
	r, err := c.roleLocked(role)
	if err != nil {
		c.mu.Unlock()
		return ActionOutcome{}, err
	}
	out := ActionOutcome{}
	if r.owner != nil {
		out.OwnerBefore = r.owner.name()
	}
	t := c.nodeLocked(target)
	if t == nil {
		c.mu.Unlock()
		out.Finished, out.Err = true, errNoNode(target)
		return out, nil
	}
	if ce := c.checkTargetLocked(r, t); ce != nil {
		c.mu.Unlock()
		return refused(out, ce)
	}
	from := r.owner
	if from == t && r.groupStateLocked() == GroupOnline {
		c.mu.Unlock()
		out.Finished = true // already there: nothing to do
		return out, nil
	}
	a, ce := c.beginLocked(r, kind, out.OwnerBefore, t.name())
	c.mu.Unlock()
	if ce != nil {
		return refused(out, ce)
	}
	c.run(r, a, func() *ClusterError { return c.moveSteps(r, from, t) })
	out.Finished, out.Err = c.wait(ctx, a, wait)
	return out, nil
}

// moveSteps takes the group offline on from, brings it online on to, and fails
// back to from when SQL Server cannot come online on to.
func (c *Cluster) moveSteps(r *clusterRole, from, to *clusterNode) *ClusterError {
	if from != nil && from.state != NodeDown {
		if ce := c.takeOffline(r, from, offlineOrder(r)...); ce != nil {
			return ce
		}
	}
	c.mu.Lock()
	r.owner = to
	fault := r.failNext
	c.notifyLocked()
	c.mu.Unlock()
	ce := c.bringOnline(r, to, true, onlineOrder(r)...)
	if ce == nil {
		c.backOn(r, to)
	}
	if ce == nil || fault == FailMoveOffline || from == nil || from == to {
		return ce
	}
	c.mu.Lock()
	back := c.checkTargetLocked(r, from) == nil
	c.mu.Unlock()
	if !back {
		return ce
	}
	// The cluster fails the role back to the node it came from.
	c.logf("cluster %s: role %s failed to come online on %s; failing back to %s", c.name, r.name, to.name(), from.name())
	_ = c.takeOffline(r, to, offlineOrder(r)...)
	c.mu.Lock()
	r.owner = from
	for _, res := range r.res {
		if res.state == ResourceFailed {
			res.state = ResourceOffline
		}
	}
	c.notifyLocked()
	c.mu.Unlock()
	if ce2 := c.bringOnline(r, from, true, onlineOrder(r)...); ce2 != nil {
		return &ClusterError{ce.Code, ce.Message + "; failing back to " + from.name() + " failed too: " + ce2.Message}
	}
	ce.Message += "; the cluster failed the role back to " + from.name()
	return ce
}

// backOn: the role's Engine runs on n; the nodes it left are no longer counted
// as down (Options.Down counts instances, not nodes).
func (c *Cluster) backOn(r *clusterRole, n *clusterNode) {
	c.mu.Lock()
	nodes := slices.Clone(c.nodes)
	c.mu.Unlock()
	for _, o := range nodes {
		if o != n {
			o.node.EngineBackElsewhere(r.instance)
		}
	}
}

// RestartSQL is what cluster_restart asks of the cluster: take the SQL Server
// resource offline on its owner (SQL Server Agent, which depends on it, goes
// offline first), then bring the whole group online
// (MSCluster_ResourceGroup.BringOnline), which brings Agent back. Each call waits
// at most wait; an offline still under way when the group is asked online makes
// the cluster refuse the online (the role stays offline).
func (c *Cluster) RestartSQL(ctx context.Context, role string, wait time.Duration) (ActionOutcome, error) {
	off, err := c.TakeResourceOffline(ctx, role, ResourceTypeSQLServer, wait)
	if err != nil {
		return off, err
	}
	on, err := c.BringGroupOnline(ctx, role, wait)
	if err != nil {
		return on, err
	}
	on.OwnerBefore = off.OwnerBefore
	switch {
	case off.Err != nil && on.Err != nil:
		on.Err = &ClusterError{off.Err.Code, "TakeOffline: " + off.Err.Error() + "; BringOnline: " + on.Err.Error()}
	case off.Err != nil:
		on.Err = &ClusterError{off.Err.Code, "TakeOffline: " + off.Err.Message}
	case on.Err != nil:
		on.Err = &ClusterError{on.Err.Code, "BringOnline: " + on.Err.Message}
	}
	return on, nil
}

// TakeResourceOffline takes one resource (by type) of the role offline on its
// owner, the resources that depend on it first (MSCluster_Resource.TakeOffline:
// SQL Server takes SQL Server Agent with it). The caller waits at most wait.
func (c *Cluster) TakeResourceOffline(ctx context.Context, role, typ string, wait time.Duration) (ActionOutcome, error) {
	return c.ownerAction(ctx, role, "resource_offline", wait, func(r *clusterRole, n *clusterNode) *ClusterError {
		types := []string{typ}
		if typ == ResourceTypeSQLServer {
			types = []string{ResourceTypeAgent, ResourceTypeSQLServer}
		}
		return c.takeOffline(r, n, types...)
	})
}

// BringResourceOnline brings one resource (by type) of the role online on its
// owner with the resources it depends on, not the ones that depend on it
// (MSCluster_Resource.BringOnline): SQL Server alone leaves Agent offline.
func (c *Cluster) BringResourceOnline(ctx context.Context, role, typ string, wait time.Duration) (ActionOutcome, error) {
	return c.ownerAction(ctx, role, "resource_online", wait, func(r *clusterRole, n *clusterNode) *ClusterError {
		var types []string
		for _, res := range r.res {
			types = append(types, res.typ)
			if res.typ == typ {
				break
			}
		}
		return c.bringOnline(r, n, false, types...)
	})
}

// BringGroupOnline brings every resource of the role online on its owner
// (MSCluster_ResourceGroup.BringOnline).
func (c *Cluster) BringGroupOnline(ctx context.Context, role string, wait time.Duration) (ActionOutcome, error) {
	return c.ownerAction(ctx, role, "group_online", wait, func(r *clusterRole, n *clusterNode) *ClusterError {
		return c.bringOnline(r, n, false, onlineOrder(r)...)
	})
}

// ownerAction runs fn on the role's owner as the cluster service does; the
// caller waits at most wait.
func (c *Cluster) ownerAction(ctx context.Context, role, kind string, wait time.Duration, fn func(*clusterRole, *clusterNode) *ClusterError) (ActionOutcome, error) {
	c.mu.Lock()
	r, err := c.roleLocked(role)
	if err != nil {
		c.mu.Unlock()
		return ActionOutcome{}, err
	}
	out := ActionOutcome{}
	owner := r.owner
	if owner != nil {
		out.OwnerBefore = owner.name()
	}
	if owner == nil || owner.state == NodeDown {
		c.mu.Unlock()
		out.Finished, out.Err = true, errInvalidState("role "+r.name+" has no node running it")
		return out, nil
	}
	a, ce := c.beginLocked(r, kind, out.OwnerBefore, out.OwnerBefore)
	c.mu.Unlock()
	if ce != nil {
		return refused(out, ce)
	}
	c.run(r, a, func() *ClusterError { return fn(r, owner) })
	out.Finished, out.Err = c.wait(ctx, a, wait)
	return out, nil
}

// FailNextMove injects a fault into the role's next move (FailMoveFailBack) or the
// next time its SQL Server resource is brought online (FailMoveOffline); "" clears it.
func (c *Cluster) FailNextMove(role, mode string) error {
	switch mode {
	case FailMoveFailBack, FailMoveOffline, "":
	default:
		return fmt.Errorf("fail_move: mode %q is neither %q nor %q", mode, FailMoveFailBack, FailMoveOffline)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.roleLocked(role)
	if err != nil {
		return err
	}
	r.failNext = mode
	c.notifyLocked()
	return nil
}

// bestTargetLocked is where the cluster fails a role over to: its preferred
// owners in order, then the other nodes in order, among the up possible owners
// other than except.
func (c *Cluster) bestTargetLocked(r *clusterRole, except *clusterNode) *clusterNode {
	order := slices.Clone(r.preferred)
	for _, n := range c.nodes {
		if !slices.Contains(order, n) {
			order = append(order, n)
		}
	}
	for _, n := range order {
		if n != nil && n != except && slices.Contains(c.nodes, n) && c.checkTargetLocked(r, n) == nil {
			return n
		}
	}
	return nil
}

// SetNodeState sets a node up, paused or down. A down node's WinRM refuses
// connections and its services stop (the node failed); the roles it owned fail
// over to the best other node. A paused node keeps its roles but may not take
// new ones. A node that comes back up takes back, when the role allows failback
// (auto_failback_type 1, within the failback window), the roles that prefer it first.
func (c *Cluster) SetNodeState(host, state string) error {
	switch state {
	case NodeUp, NodePaused, NodeDown:
	default:
		return fmt.Errorf("node_state: state %q is not %q, %q or %q", state, NodeUp, NodePaused, NodeDown)
	}
	c.mu.Lock()
	n := c.nodeLocked(host)
	if n == nil {
		c.mu.Unlock()
		return fmt.Errorf("%w: %q is not a node of cluster %s", ErrNoSuchClusterObject, host, c.name)
	}
	was := n.state
	n.state = state
	hook := c.nodeHook
	c.notifyLocked()
	var owned []*clusterRole
	for _, r := range c.roles {
		if r.owner == n {
			owned = append(owned, r)
		}
	}
	c.mu.Unlock()
	if hook != nil && (state == NodeDown) != (was == NodeDown) {
		hook(n.node.Name(), state == NodeDown)
	}
	switch {
	case state == NodeDown && was != NodeDown:
		c.nodeFailed(n, owned)
	case state == NodeUp && was == NodeDown:
		c.failbackTo(n)
	}
	return nil
}

// nodeFailed: every service of the node ends, and the roles it owned fail over.
func (c *Cluster) nodeFailed(n *clusterNode, owned []*clusterRole) {
	for _, engine := range n.node.EngineServices() {
		_ = n.node.TerminateProcess(engine)
	}
	for _, r := range owned {
		c.syncVNN(r)
		c.mu.Lock()
		for _, res := range r.res {
			res.state = ResourceOffline
		}
		target := c.bestTargetLocked(r, n)
		c.notifyLocked()
		if target == nil {
			for _, res := range r.res {
				res.state = ResourceFailed
			}
			r.lastError = fmt.Sprintf("node %s failed and no other possible owner of role %s is up", n.name(), r.name)
			c.mu.Unlock()
			continue
		}
		a, ce := c.beginLocked(r, "node_down_failover", n.name(), target.name())
		c.mu.Unlock()
		if ce != nil {
			continue
		}
		c.run(r, a, func() *ClusterError { return c.moveSteps(r, nil, target) })
	}
}

// failbackTo moves back to n the roles that allow failback and prefer n first.
func (c *Cluster) failbackTo(n *clusterNode) {
	c.mu.Lock()
	defer c.mu.Unlock()
	hour := c.now().Hour()
	for _, r := range c.roles {
		if r.cfg.AutoFailbackType != 1 || len(r.preferred) == 0 || r.preferred[0] != n || r.owner == n || r.action != nil {
			continue
		}
		start, end := intOr(r.cfg.FailbackWindowStart, -1), intOr(r.cfg.FailbackWindowEnd, -1)
		if start >= 0 && !inWindow(hour, start, end) {
			continue
		}
		if c.checkTargetLocked(r, n) != nil {
			continue
		}
		from := r.owner
		a, ce := c.beginLocked(r, "failback", from.name(), n.name())
		if ce != nil {
			continue
		}
		c.run(r, a, func() *ClusterError { return c.moveSteps(r, from, n) })
	}
}

func inWindow(hour, start, end int) bool {
	if start <= end {
		return hour >= start && hour <= end
	}
	return hour >= start || hour <= end
}

// EvictNode removes a node from the cluster (Remove-ClusterNode): the roles it owns
// fail over first; it leaves every possible and preferred owner list. Its host keeps
// the instance, as Setup's Remove Node has not run.
func (c *Cluster) EvictNode(ctx context.Context, host string) error {
	c.mu.Lock()
	n := c.nodeLocked(host)
	if n == nil {
		c.mu.Unlock()
		return fmt.Errorf("%w: %q is not a node of cluster %s", ErrNoSuchClusterObject, host, c.name)
	}
	if len(c.nodes) == 1 {
		c.mu.Unlock()
		return fmt.Errorf("cluster %s: %s is its last node; a cluster cannot evict its last node (destroy the cluster instead)", c.name, n.name())
	}
	var owned []*clusterRole
	for _, r := range c.roles {
		if r.owner == n {
			owned = append(owned, r)
		}
	}
	c.mu.Unlock()
	for _, r := range owned {
		c.mu.Lock()
		target := c.bestTargetLocked(r, n)
		c.mu.Unlock()
		if target == nil {
			return fmt.Errorf("cluster %s: role %s runs on %s and no other possible owner can take it: move it first", c.name, r.name, n.name())
		}
		out, err := c.Move(ctx, r.name, target.name(), "move", 10*time.Minute)
		if err != nil {
			return err
		}
		if out.Err != nil {
			return fmt.Errorf("cluster %s: moving role %s off %s before the eviction: %w", c.name, r.name, n.name(), out.Err)
		}
	}
	c.mu.Lock()
	c.nodes = slices.DeleteFunc(c.nodes, func(x *clusterNode) bool { return x == n })
	for _, r := range c.roles {
		r.preferred = slices.DeleteFunc(r.preferred, func(x *clusterNode) bool { return x == n })
		for _, res := range r.res {
			res.owners = slices.DeleteFunc(res.owners, func(x *clusterNode) bool { return x == n })
		}
	}
	hook := c.nodeHook
	c.notifyLocked()
	c.mu.Unlock()
	n.node.SetCluster(nil)
	if n.state == NodeDown && hook != nil {
		hook(n.node.Name(), false)
	}
	return nil
}

// AddNode joins a host to the cluster as an up node (Add-ClusterNode, then SQL
// Server Setup's Add Node): every role's instance must be installed on it and
// stopped; it becomes a possible owner of every resource of every role, not a
// preferred owner, and nothing is granted on it. port is each role's virtual
// listener's port, by role name.
func (c *Cluster) AddNode(h Node, port func(role string) int) error {
	if other := h.Cluster(); other != nil {
		return fmt.Errorf("host %s is already a node of cluster %s", h.Name(), other.name)
	}
	c.mu.Lock()
	roles := slices.Clone(c.roles)
	c.mu.Unlock()
	for _, r := range roles {
		engine, _, err := h.InstanceServices(r.instance)
		if err != nil {
			return fmt.Errorf("%w: host %s has no instance %s: install it with SQL Server Setup's Add Node first (the host's \"instances\")", err, h.Name(), r.instance)
		}
		if st, _, _ := h.ServiceStatus(engine); st != contract.StateStopped {
			return fmt.Errorf("host %s: instance %s is %s; a node that joins runs no FCI instance: stop it first", h.Name(), r.instance, st)
		}
	}
	n := &clusterNode{node: h, state: NodeUp}
	c.mu.Lock()
	c.nodes = append(c.nodes, n)
	for _, r := range c.roles {
		for _, res := range r.res {
			res.owners = append(res.owners, n)
		}
		h.JoinFCI(r.instance, r.vname)
		if port != nil {
			h.SetTCPPort(r.instance, port(r.name))
		}
	}
	c.notifyLocked()
	c.mu.Unlock()
	h.SetCluster(c)
	return nil
}
