package host

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/wsfc"
)

// ValidateClusters checks the clusters against the fleet's hosts and reports every
// problem: known distinct nodes (a host is a node of at most one cluster), roles
// whose instance is installed on every node, virtual names and addresses of their
// own, owners that are nodes, and settings in Windows' ranges.
func ValidateClusters(clusters []wsfc.ClusterConfig, hosts []HostConfig) error {
	v := &clusterCheck{byName: map[string]HostConfig{}, hostAddrs: map[string]string{},
		nodeOf: map[string]string{}, clusterNames: map[string]bool{}, vnames: map[string]string{}, vaddrs: map[string]string{}}
	for _, hc := range hosts {
		v.byName[strings.ToLower(strings.TrimSpace(hc.Name))] = hc
		if ip := net.ParseIP(strings.TrimSpace(hc.Address)); ip != nil {
			v.hostAddrs[ip.String()] = hc.Name
		}
	}
	for ci, c := range clusters {
		v.cluster(ci, c)
	}
	return errors.Join(v.errs...)
}

// clusterCheck is ValidateClusters' pass over the clusters: the problems found,
// the hosts, and what the clusters seen so far took (nodes, names, addresses).
type clusterCheck struct {
	errs         []error
	byName       map[string]HostConfig // the hosts by lower-case name
	hostAddrs    map[string]string     // host address → host
	nodeOf       map[string]string     // host → cluster
	clusterNames map[string]bool
	vnames       map[string]string // virtual name → the role that has it
	vaddrs       map[string]string // virtual address → the role that has it
}

func (v *clusterCheck) bad(format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf(format, args...))
}

// cluster checks one cluster: its name, its nodes, then each role.
func (v *clusterCheck) cluster(ci int, c wsfc.ClusterConfig) {
	bad := v.bad
	where := fmt.Sprintf("clusters[%d]", ci)
	if strings.TrimSpace(c.Name) == "" {
		bad(`%s: "name" is empty: give the cluster a name such as "CLU1"`, where)
	} else {
		where = fmt.Sprintf("cluster %q (clusters[%d])", c.Name, ci)
		if v.clusterNames[strings.ToLower(c.Name)] {
			bad(`%s: the name is used by another cluster; cluster names must be unique`, where)
		}
		v.clusterNames[strings.ToLower(c.Name)] = true
	}
	if len(c.Nodes) == 0 {
		bad(`%s: "nodes" is empty: list the hosts that are its nodes`, where)
	}
	nodes := map[string]bool{}
	for _, n := range c.Nodes {
		key := strings.ToLower(strings.TrimSpace(n))
		if _, ok := v.byName[key]; !ok {
			bad(`%s: node %q is not a host of "hosts": a node is an ordinary simulated host`, where, n)
			continue
		}
		if nodes[key] {
			bad(`%s: node %q is listed twice`, where, n)
			continue
		}
		if other, dup := v.nodeOf[key]; dup {
			bad(`%s: host %q is already a node of cluster %q: a host is a node of one cluster at most`, where, n, other)
		}
		v.nodeOf[key] = c.Name
		nodes[key] = true
	}
	isNode := func(field, n string) bool {
		if !nodes[strings.ToLower(strings.TrimSpace(n))] {
			bad(`%s: %s names %q, which is not one of the cluster's nodes (%s)`, where, field, n, strings.Join(c.Nodes, ", "))
			return false
		}
		return true
	}
	instances := map[string]bool{}
	groups := map[string]bool{}
	for ri, rc := range c.Roles {
		rwhere, ok := v.roleInstance(fmt.Sprintf("%s roles[%d]", where, ri), c, rc, instances, groups)
		if !ok {
			continue
		}
		v.roleNetworkName(rwhere, rc)
		v.roleOwners(rwhere, rc, isNode)
		v.roleSettings(rwhere, rc)
	}
}

// roleInstance checks the role's instance: a name of its own in the cluster,
// installed on every node, and a group name of its own. It answers where the role's
// problems are reported; false when the instance is no instance name.
func (v *clusterCheck) roleInstance(rwhere string, c wsfc.ClusterConfig, rc wsfc.ClusterRoleConfig, instances, groups map[string]bool) (string, bool) {
	bad := v.bad
	inst := strings.ToUpper(strings.TrimSpace(rc.Instance))
	if !contract.InstanceNameSyntaxValid(inst) {
		bad(`%s: "instance" %q is not a SQL Server instance name`, rwhere, rc.Instance)
		return rwhere, false
	}
	rwhere = fmt.Sprintf("%s (instance %s)", rwhere, inst)
	if instances[inst] {
		bad(`%s: the instance already has a role in this cluster`, rwhere)
	}
	instances[inst] = true
	if g := strings.ToLower(rc.GroupName()); groups[g] {
		bad(`%s: the group name %q is used by another role`, rwhere, rc.GroupName())
	} else {
		groups[g] = true
	}
	for _, n := range c.Nodes {
		hc, ok := v.byName[strings.ToLower(strings.TrimSpace(n))]
		if !ok {
			continue
		}
		ic, installed := findInstanceConfig(hc, inst)
		switch {
		case !installed:
			bad(`%s: node %q has no instance %s in its "instances": SQL Server Setup installs an FCI on every node (add it there)`, rwhere, n, inst)
		case ic.Stopped:
			bad(`%s: node %q: "stopped" is set on the instance, but the cluster decides where an FCI runs (the role's "owner"): remove it`, rwhere, n)
		}
	}
	return rwhere, true
}

// roleNetworkName checks the role's SQL network name, IP address and port: each
// its own, in the simulator's loopback range.
func (v *clusterCheck) roleNetworkName(rwhere string, rc wsfc.ClusterRoleConfig) {
	bad := v.bad
	vn := strings.TrimSpace(rc.VirtualName)
	switch {
	case vn == "":
		bad(`%s: "virtual_name" is empty: give the SQL network name, e.g. "SQLFCI1"`, rwhere)
	case len(vn) > 15 || !validNetBIOS(vn):
		bad(`%s: "virtual_name" %q is not a NetBIOS name (at most 15 letters, digits or hyphens)`, rwhere, vn)
	default:
		if other, dup := v.vnames[strings.ToUpper(vn)]; dup {
			bad(`%s: "virtual_name" %q is also %s's`, rwhere, vn, other)
		}
		v.vnames[strings.ToUpper(vn)] = rwhere
	}
	ip := net.ParseIP(strings.TrimSpace(rc.VirtualAddress))
	switch {
	case ip == nil || ip.To4() == nil || !ip.IsLoopback():
		bad(`%s: "virtual_address" %q is not an IPv4 address in 127.0.0.0/8 (the simulator binds only loopback), e.g. "127.0.0.20"`, rwhere, rc.VirtualAddress)
	default:
		key := ip.To4().String()
		if h, taken := v.hostAddrs[key]; taken {
			bad(`%s: "virtual_address" %s is host %q's address: the role needs an address of its own`, rwhere, key, h)
		} else if other, dup := v.vaddrs[key]; dup {
			bad(`%s: "virtual_address" %s is also %s's`, rwhere, key, other)
		}
		v.vaddrs[key] = rwhere
	}
	if rc.VirtualPort < 0 || rc.VirtualPort > 65535 {
		bad(`%s: "virtual_port" %d is outside 0-65535`, rwhere, rc.VirtualPort)
	}
}

// roleOwners checks the role's preferred owners, its resources' possible owners and
// its owner: nodes of the cluster, the owner a possible owner of every resource.
func (v *clusterCheck) roleOwners(rwhere string, rc wsfc.ClusterRoleConfig, isNode func(field, n string) bool) {
	bad := v.bad
	for _, p := range rc.PreferredOwners {
		isNode("preferred_owners", p)
	}
	seenRes := map[string]bool{}
	for res, owners := range rc.PossibleOwners {
		if !rc.RoleHasResource(res) {
			bad(`%s: possible_owners names %q, which is neither a resource nor a resource type of the role (%s)`, rwhere, res, strings.Join(rc.ResourceNames(), ", "))
		}
		if seenRes[strings.ToLower(res)] {
			bad(`%s: possible_owners names %q twice`, rwhere, res)
		}
		seenRes[strings.ToLower(res)] = true
		if len(owners) == 0 {
			bad(`%s: possible_owners[%q] is empty: a resource needs at least one possible owner`, rwhere, res)
		}
		for _, o := range owners {
			isNode(fmt.Sprintf("possible_owners[%q]", res), o)
		}
	}
	if rc.Owner != "" && isNode("owner", rc.Owner) {
		for res, owners := range rc.PossibleOwners {
			if !slices.ContainsFunc(owners, func(o string) bool { return strings.EqualFold(o, rc.Owner) }) {
				bad(`%s: the owner %q is not a possible owner of %q`, rwhere, rc.Owner, res)
			}
		}
	}
}

// roleSettings checks the group's failback and failover settings and the
// resources' pending timeout against Windows' ranges.
func (v *clusterCheck) roleSettings(rwhere string, rc wsfc.ClusterRoleConfig) {
	bad := v.bad
	if rc.AutoFailbackType != 0 && rc.AutoFailbackType != 1 {
		bad(`%s: "auto_failback_type" %d is neither 0 (prevent) nor 1 (allow)`, rwhere, rc.AutoFailbackType)
	}
	for field, hour := range map[string]*int{"failback_window_start": rc.FailbackWindowStart, "failback_window_end": rc.FailbackWindowEnd} {
		if hour != nil && (*hour < -1 || *hour > 23) {
			bad(`%s: %q %d is neither an hour 0-23 nor -1 (any time)`, rwhere, field, *hour)
		}
	}
	if start, end := rc.FailbackWindow(); (start == -1) != (end == -1) {
		bad(`%s: set both "failback_window_start" and "failback_window_end", or neither`, rwhere)
	}
	if rc.FailoverThreshold != nil && (*rc.FailoverThreshold < 0 || *rc.FailoverThreshold > wsfc.DefaultFailoverThreshold) {
		bad(`%s: "failover_threshold" %d is outside 0-4294967295`, rwhere, *rc.FailoverThreshold)
	}
	if rc.FailoverPeriodHours != nil && (*rc.FailoverPeriodHours < 1 || *rc.FailoverPeriodHours > 1193) {
		bad(`%s: "failover_period_hours" %d is outside 1-1193`, rwhere, *rc.FailoverPeriodHours)
	}
	if rc.PendingTimeoutMS < 0 {
		bad(`%s: "pending_timeout_ms" %d is negative (0: Windows' default, 180000)`, rwhere, rc.PendingTimeoutMS)
	}
}

func findInstanceConfig(hc HostConfig, name string) (InstanceConfig, bool) {
	for _, ic := range hc.Instances {
		if strings.EqualFold(strings.TrimSpace(ic.Name), name) {
			return ic, true
		}
	}
	return InstanceConfig{}, false
}

func validNetBIOS(s string) bool {
	for _, r := range s {
		if !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return s != "" && s[0] != '-'
}
