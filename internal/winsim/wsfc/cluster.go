// Package wsfc is the simulator's model of Windows Server failover clusters
// (WSFC) whose nodes are simulated hosts, and of their SQL Server failover cluster
// instances: the roles (cluster groups), their resources and owners (cluster.go),
// the cluster service's moves, restarts, failovers and node changes (actions.go),
// and what the control plane and the hosts read of them (views.go), configured as
// config.go says. A node is a host model seen through Node, which the host
// implements (node.go).
package wsfc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// Cluster is the model of one Windows Server failover cluster whose nodes are
// simulated hosts, and of its SQL Server failover cluster instances (FIDELITY.md,
// "Failover cluster instances"). Each role (cluster group) runs its instance's
// Engine on one node, its owner; the instance is installed on every node, stopped
// where the node does not own the role. A move stops the Engine on the owner and
// starts it on the target through that node's service control manager, so the
// Engine's token, and IFI, come from the target's LSA.
//
// The cluster service runs its actions (moves, restarts, failovers) in its own
// goroutines, under the cluster's lifetime: a caller that stops waiting, or whose
// WinRM connection is lost, does not stop an action the cluster accepted.
//
// Locking: the cluster's mutex is taken before a host's, never the other way;
// the hosts never call into the cluster while holding their own.
type Cluster struct {
	name string
	logf func(format string, args ...any)
	now  func() time.Time

	mu      sync.Mutex
	changed chan struct{}
	nodes   []*clusterNode
	roles   []*clusterRole
	closed  bool

	nodeHook func(host string, down bool) // the simulator's: a node's WinRM listeners close or open

	life    context.Context
	endLife context.CancelFunc
	wg      sync.WaitGroup
}

// Node states, as the contract reports them (MSCluster_Node.State).
const (
	NodeUp     = "up"
	NodeDown   = "down"
	NodePaused = "paused"
)

// Resource and group states (MSCluster_Resource.State, MSCluster_ResourceGroup.State).
const (
	ResourceOnline         = "Online"
	ResourceOffline        = "Offline"
	ResourceFailed         = "Failed"
	ResourceOnlinePending  = "OnlinePending"
	ResourceOfflinePending = "OfflinePending"
	GroupOnline            = "Online"
	GroupOffline           = "Offline"
	GroupFailed            = "Failed"
	GroupPartialOnline     = "PartialOnline"
	GroupPending           = "Pending"
)

type clusterNode struct {
	node  Node
	state string
}

func (n *clusterNode) name() string { return n.node.ComputerName() }

type clusterResource struct {
	name, typ string
	state     string
	owners    []*clusterNode // possible owners
}

type clusterRole struct {
	cfg       ClusterRoleConfig
	name      string
	instance  string
	vname     string
	vaddr     string
	owner     *clusterNode
	preferred []*clusterNode
	res       []*clusterResource // in the order they come online
	pending   time.Duration
	failNext  string
	action    *clusterAction // the action under way; nil when none
	lastError string
	events    []ClusterEvent

	hookMu    sync.Mutex
	vnnOpen   func() error
	vnnClose  func()
	listening bool
}

// clusterAction is one move, failover or restart the cluster service runs.
type clusterAction struct {
	kind     string
	from, to string
	done     chan struct{}
	err      *ClusterError
}

// ClusterError is an error the cluster service answers, with its Win32 code.
type ClusterError struct {
	Code    int
	Message string
}

func (e *ClusterError) Error() string {
	if e.Code == 0 {
		return e.Message
	}
	return fmt.Sprintf("%s (error %d)", e.Message, e.Code)
}

// ClusterEvent is one action the cluster ran, for the control plane's views.
type ClusterEvent struct {
	Time    time.Time `json:"time"`
	Kind    string    `json:"kind"` // move, failover, failback, restart, node_down_failover
	From    string    `json:"from,omitempty"`
	To      string    `json:"to,omitempty"`
	Outcome string    `json:"outcome"` // the group's state and owner afterwards
	Error   string    `json:"error,omitempty"`
}

// ErrNoSuchClusterObject: a cluster, role or node the simulation does not have.
var ErrNoSuchClusterObject = errors.New("no such cluster object")

// NewCluster builds a cluster over its nodes' host models (hostOf finds a host by
// its simulator name): the role's instance on every node becomes a failover
// cluster instance, running on its owner only. Call it after the hosts are built
// and before they serve.
func NewCluster(cfg ClusterConfig, hostOf func(string) (Node, bool), logf func(string, ...any)) (*Cluster, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	c := &Cluster{name: cfg.Name, logf: logf, now: time.Now, changed: make(chan struct{})}
	c.life, c.endLife = context.WithCancel(context.Background())
	node := func(name string) *clusterNode {
		for _, n := range c.nodes {
			if strings.EqualFold(n.node.Name(), name) {
				return n
			}
		}
		return nil
	}
	for _, n := range cfg.Nodes {
		h, ok := hostOf(n)
		if !ok {
			return nil, fmt.Errorf("cluster %s: node %q is not a host of the simulation", cfg.Name, n)
		}
		c.nodes = append(c.nodes, &clusterNode{node: h, state: NodeUp})
	}
	for _, rc := range cfg.Roles {
		r := &clusterRole{cfg: rc, name: rc.GroupName(), instance: strings.ToUpper(strings.TrimSpace(rc.Instance)),
			vname: strings.ToUpper(strings.TrimSpace(rc.VirtualName)), vaddr: rc.VirtualAddress,
			pending: time.Duration(rc.PendingTimeoutMS) * time.Millisecond}
		if r.pending <= 0 {
			r.pending = DefaultPendingTimeoutMS * time.Millisecond
		}
		for _, p := range rc.PreferredOwners {
			r.preferred = append(r.preferred, node(p))
		}
		withAgent := true
		for _, n := range c.nodes {
			_, agent, err := n.node.InstanceServices(r.instance)
			if err != nil {
				return nil, fmt.Errorf("cluster %s: node %s has no instance %s", cfg.Name, n.node.Name(), r.instance)
			}
			withAgent = withAgent && agent != ""
			n.node.JoinFCI(r.instance, r.vname)
		}
		for _, spec := range roleResourceSpecs(rc, withAgent) {
			res := &clusterResource{name: spec.name, typ: spec.typ, state: ResourceOffline, owners: slices.Clone(c.nodes)}
			for key, owners := range rc.PossibleOwners {
				if spec.matches(key) {
					res.owners = nil
					for _, o := range owners {
						res.owners = append(res.owners, node(o))
					}
				}
			}
			r.res = append(r.res, res)
		}
		r.owner = node(rc.OwnerHost(cfg.Nodes))
		c.roles = append(c.roles, r)
	}
	for _, n := range c.nodes {
		n.node.SetCluster(c)
	}
	for _, r := range c.roles {
		c.settleInitialLocked(r)
	}
	return c, nil
}

// settleInitialLocked sets the resources' states from the owner's services at
// the simulation's start: the group came online on its owner before it began.
func (c *Cluster) settleInitialLocked(r *clusterRole) {
	engine, agent := c.services(r, r.owner)
	n := r.owner.node
	for _, res := range r.res {
		switch res.typ {
		case ResourceTypeSQLServer:
			res.state = serviceResourceState(n, engine)
			if res.state == ResourceOnline && !n.EngineReady(r.instance) {
				res.state = ResourceOnlinePending
			}
		case ResourceTypeAgent:
			res.state = serviceResourceState(n, agent)
		default:
			res.state = ResourceOnline
		}
	}
}

func serviceResourceState(n Node, name string) string {
	state, failed, err := n.ServiceStatus(name)
	if err != nil {
		return ResourceFailed
	}
	switch {
	case state == contract.StateRunning:
		return ResourceOnline
	case failed:
		return ResourceFailed
	case state == contract.StateStartPending:
		return ResourceOnlinePending
	}
	return ResourceOffline
}

// services are the role's Engine and Agent service names on a node ("" without Agent).
func (c *Cluster) services(r *clusterRole, n *clusterNode) (engine, agent string) {
	engine, agent, err := n.node.InstanceServices(r.instance)
	if err != nil {
		return contract.EngineServiceName(r.instance), ""
	}
	return engine, agent
}

// Name is the cluster's name.
func (c *Cluster) Name() string { return c.name }

// Close ends the cluster service's actions.
func (c *Cluster) Close() {
	c.mu.Lock()
	c.closed = true
	c.endLife()
	c.notifyLocked()
	c.mu.Unlock()
	c.wg.Wait()
}

func (c *Cluster) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// SetNodeHook installs the simulator's hook that closes a down node's WinRM
// listeners (down true) and opens them again.
func (c *Cluster) SetNodeHook(hook func(host string, down bool)) {
	c.mu.Lock()
	c.nodeHook = hook
	c.mu.Unlock()
}

// SetVirtualListener installs the hooks that open and close a role's virtual
// network name's TDS listener; it listens while SQL Server is Online. It also
// records the listener's port as the instance's TCP port on every node.
func (c *Cluster) SetVirtualListener(role string, port int, open func() error, close func()) error {
	c.mu.Lock()
	r, err := c.roleLocked(role)
	var nodes []*clusterNode
	if err == nil {
		nodes = slices.Clone(c.nodes)
	}
	c.mu.Unlock()
	if err != nil {
		return err
	}
	for _, n := range nodes {
		n.node.SetTCPPort(r.instance, port)
	}
	r.hookMu.Lock()
	r.vnnOpen, r.vnnClose, r.listening = open, close, false
	r.hookMu.Unlock()
	c.syncVNN(r)
	return nil
}

// syncVNN opens the role's listener while SQL Server is Online on an up owner,
// and closes it otherwise. Called without c.mu.
//
// The state is read with the hook's lock held, so that a sync acts on what it read
// before any later sync reads: every change of state syncs after it, so the last
// sync sees the last state (a sync that read the state before a change and opened
// the listener after it left the virtual name answering while SQL Server was
// Failed).
func (c *Cluster) syncVNN(r *clusterRole) {
	r.hookMu.Lock()
	defer r.hookMu.Unlock()
	c.mu.Lock()
	want := r.owner != nil && r.owner.state != NodeDown && r.resource(ResourceTypeSQLServer).state == ResourceOnline && !c.closed
	c.mu.Unlock()
	switch {
	case want && !r.listening && r.vnnOpen != nil:
		if err := r.vnnOpen(); err != nil {
			c.logf("cluster %s: role %s: opening the virtual name's listener: %v", c.name, r.name, err)
			return
		}
		r.listening = true
	case !want && r.listening:
		if r.vnnClose != nil {
			r.vnnClose()
		}
		r.listening = false
	}
}

// closeVNN closes the role's listener now, whatever its state says.
func (r *clusterRole) closeVNN() {
	r.hookMu.Lock()
	defer r.hookMu.Unlock()
	if r.listening {
		if r.vnnClose != nil {
			r.vnnClose()
		}
		r.listening = false
	}
}

func (r *clusterRole) resource(typ string) *clusterResource {
	for _, res := range r.res {
		if res.typ == typ {
			return res
		}
	}
	return &clusterResource{typ: typ, state: ResourceOffline}
}

// roleLocked finds a role by its group name, its instance or its virtual name.
func (c *Cluster) roleLocked(name string) (*clusterRole, error) {
	for _, r := range c.roles {
		if strings.EqualFold(r.name, name) || strings.EqualFold(r.instance, name) || strings.EqualFold(r.vname, name) {
			return r, nil
		}
	}
	var names []string
	for _, r := range c.roles {
		names = append(names, r.name)
	}
	return nil, fmt.Errorf("%w: cluster %s has no role %q (its roles: %s)", ErrNoSuchClusterObject, c.name, name, strings.Join(names, ", "))
}

// nodeLocked finds a node by its host's simulator name or its computer name.
func (c *Cluster) nodeLocked(name string) *clusterNode {
	for _, n := range c.nodes {
		if strings.EqualFold(n.node.Name(), name) || strings.EqualFold(n.node.ComputerName(), name) {
			return n
		}
	}
	return nil
}

func (r *clusterRole) groupStateLocked() string {
	online, offline := 0, 0
	for _, res := range r.res {
		switch res.state {
		case ResourceOnlinePending, ResourceOfflinePending:
			return GroupPending
		case ResourceFailed:
			return GroupFailed
		case ResourceOnline:
			online++
		default:
			offline++
		}
	}
	switch {
	case offline == 0:
		return GroupOnline
	case online == 0:
		return GroupOffline
	}
	return GroupPartialOnline
}
