package wsfc

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Owner is the node that serves the role's virtual name now, with the role's
// instance; nil while no node runs it.
func (c *Cluster) Owner(role string) (node Node, instance string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.roleLocked(role)
	if err != nil || r.owner == nil {
		return nil, ""
	}
	return r.owner.node, r.instance
}

func (c *Cluster) nodeNames(ns []*clusterNode) []string {
	out := []string{}
	for _, n := range ns {
		if n != nil {
			out = append(out, n.name())
		}
	}
	return out
}

// possibleOwnersLocked is the intersection of the role's resources' possible owners.
func (r *clusterRole) possibleOwnersLocked(nodes []*clusterNode) []*clusterNode {
	var out []*clusterNode
	for _, n := range nodes {
		ok := true
		for _, res := range r.res {
			ok = ok && slices.Contains(res.owners, n)
		}
		if ok {
			out = append(out, n)
		}
	}
	return out
}

// ClusterView is the cluster as the control plane shows it.
type ClusterView struct {
	Name  string            `json:"name"`
	Nodes []ClusterNodeView `json:"nodes"`
	Roles []ClusterRoleView `json:"roles"`
}

// ClusterNodeView is one node: its name (the computer name), its host and state.
type ClusterNodeView struct {
	Name  string `json:"name"`
	Host  string `json:"host"`
	State string `json:"state"`
}

// ClusterRoleView is one role (group) with its resources.
type ClusterRoleView struct {
	Name                string                `json:"name"`
	Instance            string                `json:"instance"`
	VirtualName         string                `json:"virtual_name"`
	VirtualAddress      string                `json:"virtual_address"`
	OwnerNode           string                `json:"owner_node"`
	OwnerHost           string                `json:"owner_host"`
	State               string                `json:"state"`
	PreferredOwners     []string              `json:"preferred_owners"`
	PossibleOwners      []string              `json:"possible_owners"`
	AutoFailbackType    int                   `json:"auto_failback_type"`
	FailbackWindowStart int                   `json:"failback_window_start"`
	FailbackWindowEnd   int                   `json:"failback_window_end"`
	FailoverThreshold   int64                 `json:"failover_threshold"`
	FailoverPeriodHours int                   `json:"failover_period_hours"`
	Resources           []ClusterResourceView `json:"resources"`
	// Action is the action the cluster service runs now ("" none); FailNext the
	// injected fault of the next move; LastError the last action's error.
	Action    string         `json:"action,omitempty"`
	FailNext  string         `json:"fail_next,omitempty"`
	LastError string         `json:"last_error,omitempty"`
	Events    []ClusterEvent `json:"events"`
}

// ClusterResourceView is one cluster resource.
type ClusterResourceView struct {
	Name             string   `json:"name"`
	Type             string   `json:"type"`
	State            string   `json:"state"`
	PossibleOwners   []string `json:"possible_owners"`
	PendingTimeoutMS int      `json:"pending_timeout_ms"`
}

// View returns the cluster's state.
func (c *Cluster) View() ClusterView {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := ClusterView{Name: c.name, Nodes: []ClusterNodeView{}, Roles: []ClusterRoleView{}}
	for _, n := range c.nodes {
		v.Nodes = append(v.Nodes, ClusterNodeView{Name: n.name(), Host: n.node.Name(), State: n.state})
	}
	for _, r := range c.roles {
		v.Roles = append(v.Roles, c.roleViewLocked(r))
	}
	return v
}

func (c *Cluster) roleViewLocked(r *clusterRole) ClusterRoleView {
	threshold := DefaultFailoverThreshold
	if r.cfg.FailoverThreshold != nil {
		threshold = *r.cfg.FailoverThreshold
	}
	rv := ClusterRoleView{
		Name: r.name, Instance: r.instance, VirtualName: r.vname, VirtualAddress: r.vaddr,
		State:               r.groupStateLocked(),
		PreferredOwners:     c.nodeNames(r.preferred),
		PossibleOwners:      c.nodeNames(r.possibleOwnersLocked(c.nodes)),
		AutoFailbackType:    r.cfg.AutoFailbackType,
		FailbackWindowStart: intOr(r.cfg.FailbackWindowStart, -1),
		FailbackWindowEnd:   intOr(r.cfg.FailbackWindowEnd, -1),
		FailoverThreshold:   threshold,
		FailoverPeriodHours: intOr(r.cfg.FailoverPeriodHours, DefaultFailoverPeriodHours),
		Resources:           []ClusterResourceView{},
		FailNext:            r.failNext,
		LastError:           r.lastError,
		Events:              slices.Clone(r.events),
	}
	if rv.Events == nil {
		rv.Events = []ClusterEvent{}
	}
	if r.owner != nil {
		rv.OwnerNode, rv.OwnerHost = r.owner.name(), r.owner.node.Name()
	}
	if r.action != nil {
		rv.Action = r.action.kind
	}
	for _, res := range r.res {
		rv.Resources = append(rv.Resources, ClusterResourceView{Name: res.name, Type: res.typ, State: res.state,
			PossibleOwners: c.nodeNames(res.owners), PendingTimeoutMS: int(r.pending / time.Millisecond)})
	}
	return rv
}

// RoleView returns one role (by group, instance or virtual name).
func (c *Cluster) RoleView(role string) (ClusterRoleView, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.roleLocked(role)
	if err != nil {
		return ClusterRoleView{}, err
	}
	return c.roleViewLocked(r), nil
}

// NodeName is the cluster's name of a host that is its node ("" if it is not).
func (c *Cluster) NodeName(host string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.nodeLocked(host); n != nil {
		return n.name()
	}
	return ""
}

// WaitRole waits until cond holds for the role's view, or ctx ends.
func (c *Cluster) WaitRole(ctx context.Context, role string, cond func(ClusterRoleView) bool) (ClusterRoleView, error) {
	for {
		c.mu.Lock()
		r, err := c.roleLocked(role)
		var v ClusterRoleView
		if err == nil {
			v = c.roleViewLocked(r)
		}
		ch := c.changed
		c.mu.Unlock()
		if err != nil {
			return v, err
		}
		if cond(v) {
			return v, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return v, fmt.Errorf("cluster %s: role %s is %s on %s: %w", c.name, v.Name, v.State, v.OwnerNode, ctx.Err())
		}
	}
}

// HasNode reports whether the host is a node of the cluster now.
func (c *Cluster) HasNode(host string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodeLocked(host) != nil
}
