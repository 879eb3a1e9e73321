package wsfc

import (
	"slices"
	"strings"
)

// ClusterConfig is one Windows Server failover cluster whose nodes are simulated
// hosts ("clusters" in the simulator's configuration; internal/winsim/README.md).
type ClusterConfig struct {
	// Name is the cluster's name (MSCluster_Cluster.Name), e.g. "CLU1".
	Name string `json:"name"`
	// Nodes are the hosts (their simulator names) that are nodes of the cluster.
	// The cluster reports each by its computer name.
	Nodes []string `json:"nodes"`
	// Roles are the cluster's SQL Server failover cluster instances.
	Roles []ClusterRoleConfig `json:"roles,omitempty"`
}

// ClusterRoleConfig is one FCI's role (cluster group): the instance installed on
// every node, its virtual network name, its owners and its failover settings.
type ClusterRoleConfig struct {
	// Name is the group's name. Default "SQL Server (<instance>)", as Setup names it.
	Name string `json:"name,omitempty"`
	// Instance is the SQL Server instance (installed on every node with the same name).
	Instance string `json:"instance"`
	// VirtualName is the SQL network name (NetBIOS, at most 15 characters).
	VirtualName string `json:"virtual_name"`
	// VirtualAddress is the role's IP address (loopback, not a host's address).
	VirtualAddress string `json:"virtual_address"`
	// VirtualPort is the TDS port on VirtualAddress; 0 picks a free one.
	VirtualPort int `json:"virtual_port,omitempty"`
	// Owner is the node (host name) the role runs on at start. Default: the first
	// preferred owner, else the first node.
	Owner string `json:"owner,omitempty"`
	// PreferredOwners are the group's preferred owners (host names), in order.
	PreferredOwners []string `json:"preferred_owners,omitempty"`
	// PossibleOwners restricts a resource's possible owners: resource name or type
	// ("SQL Server", "Physical Disk", ...) → host names. Default: every node.
	PossibleOwners map[string][]string `json:"possible_owners,omitempty"`
	// AutoFailbackType: 0 prevent failback (Windows' default), 1 allow.
	AutoFailbackType int `json:"auto_failback_type,omitempty"`
	// FailbackWindowStart and FailbackWindowEnd are hours 0-23, -1 any time (default).
	FailbackWindowStart *int `json:"failback_window_start,omitempty"`
	FailbackWindowEnd   *int `json:"failback_window_end,omitempty"`
	// FailoverThreshold is the most failovers in FailoverPeriodHours. Default
	// 4294967295, what Windows stores for "the cluster decides" (n-1 nodes).
	FailoverThreshold *int64 `json:"failover_threshold,omitempty"`
	// FailoverPeriodHours: default 6, Windows' default.
	FailoverPeriodHours *int `json:"failover_period_hours,omitempty"`
	// PendingTimeoutMS bounds each resource's Online Pending and Offline Pending.
	// Default 180000 (3 minutes), Windows' default.
	PendingTimeoutMS int `json:"pending_timeout_ms,omitempty"`
}

// Defaults of a role's settings, as Windows Server sets them for a new group and
// resource (FIDELITY.md, "Failover cluster instances").
const (
	DefaultPendingTimeoutMS    = 180000
	DefaultFailoverPeriodHours = 6
	DefaultFailoverThreshold   = int64(4294967295)
)

// GroupName is the role's group name, Setup's "SQL Server (<instance>)" by default.
func (rc ClusterRoleConfig) GroupName() string {
	if strings.TrimSpace(rc.Name) != "" {
		return rc.Name
	}
	return "SQL Server (" + strings.ToUpper(strings.TrimSpace(rc.Instance)) + ")"
}

// OwnerHost is the host the role runs on at start: "owner", else its first
// preferred owner, else the cluster's first node.
func (rc ClusterRoleConfig) OwnerHost(nodes []string) string {
	switch {
	case strings.TrimSpace(rc.Owner) != "":
		return strings.TrimSpace(rc.Owner)
	case len(rc.PreferredOwners) > 0:
		return rc.PreferredOwners[0]
	case len(nodes) > 0:
		return nodes[0]
	}
	return ""
}

func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

// Cluster resource types, as MSCluster_Resource.Type names them.
const (
	ResourceTypeSQLServer   = "SQL Server"
	ResourceTypeAgent       = "SQL Server Agent"
	ResourceTypeNetworkName = "Network Name"
	ResourceTypeIPAddress   = "IP Address"
	ResourceTypeDisk        = "Physical Disk"
)

// RoleHasResource reports whether key names a resource of the role, or a
// resource type of it ("possible_owners").
func (rc ClusterRoleConfig) RoleHasResource(key string) bool {
	return slices.ContainsFunc(roleResourceSpecs(rc, true), func(s resourceSpec) bool { return s.matches(key) })
}

// FailbackWindow is the role's failback window, hours 0-23, -1 any time.
func (rc ClusterRoleConfig) FailbackWindow() (start, end int) {
	return intOr(rc.FailbackWindowStart, -1), intOr(rc.FailbackWindowEnd, -1)
}

// resourceSpec is one resource of an FCI role as Setup creates it.
type resourceSpec struct{ name, typ string }

func (s resourceSpec) matches(key string) bool {
	return strings.EqualFold(key, s.name) || strings.EqualFold(key, s.typ)
}

// roleResourceSpecs lists the role's resources in the order they come online:
// the disk, the IP address, the network name, SQL Server, SQL Server Agent (when
// the instance has Agent: withAgent).
func roleResourceSpecs(rc ClusterRoleConfig, withAgent bool) []resourceSpec {
	inst := strings.ToUpper(strings.TrimSpace(rc.Instance))
	vn := strings.TrimSpace(rc.VirtualName)
	out := []resourceSpec{
		{"Cluster Disk (" + vn + ")", ResourceTypeDisk},
		{"SQL IP Address 1 (" + vn + ")", ResourceTypeIPAddress},
		{"SQL Network Name (" + vn + ")", ResourceTypeNetworkName},
		{"SQL Server (" + inst + ")", ResourceTypeSQLServer},
	}
	if withAgent {
		out = append(out, resourceSpec{"SQL Server Agent (" + inst + ")", ResourceTypeAgent})
	}
	return out
}

// ResourceNames lists the role's resources as "name [type]", for messages.
func (rc ClusterRoleConfig) ResourceNames() []string {
	var out []string
	for _, s := range roleResourceSpecs(rc, true) {
		out = append(out, s.name+" ["+s.typ+"]")
	}
	return out
}
