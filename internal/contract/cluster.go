package contract

// Failover cluster instances (issue 18, design/cluster.md). An FCI is one
// instance installed on several Windows nodes and running on one of them at a
// time: its role (a cluster resource group) moves between the nodes. The operations
// below read the cluster through the root\MSCluster WMI classes (never the
// FailoverClusters module, which is missing where the management tools were not
// installed) and act on the role through the cluster service. Each node's LSA is
// read and changed with the ordinary read_instance and set_right, node by node.

// Cluster operations.
const (
	OpReadCluster    Operation = "read_cluster"
	OpClusterMove    Operation = "cluster_move"
	OpClusterRestart Operation = "cluster_restart"
)

// Error codes of the cluster operations (ScriptError.Error). A move or an
// offline/online that the cluster accepted is answered with a ClusterActionResult
// (exit ExitOK) even when it failed: its Error carries the cluster's own text and
// its fields say where the role ended, which the engine reports.
const (
	// CodeNotClustered (exit ExitRefused): root\MSCluster does not answer on this
	// host, or no "SQL Server" resource of the cluster serves the instance.
	CodeNotClustered = "not_clustered"
	// CodeClusterError (exit ExitRefused): the cluster refused the request before
	// anything was stopped (the target is not a possible owner or not up, the group
	// is not Online to begin with); Message carries the cluster's own error text.
	CodeClusterError = "cluster_error"
	// CodeMoveFailed (exit ExitFailure): the cluster's call failed and the group
	// could not be read afterwards, so where the role is is unknown; Message has
	// both errors.
	CodeMoveFailed = "move_failed"
)

// Node states (ClusterNode.State), from MSCluster_Node.State.
const (
	NodeUp      = "up"
	NodeDown    = "down"
	NodePaused  = "paused"
	NodeJoining = "joining"
	NodeUnknown = "unknown"
)

// Group and resource states, from MSCluster_ResourceGroup.State and
// MSCluster_Resource.State.
const (
	ClusterOnline         = "Online"
	ClusterOffline        = "Offline"
	ClusterFailed         = "Failed"
	ClusterPartialOnline  = "PartialOnline" // groups only
	ClusterPending        = "Pending"
	ClusterOnlinePending  = "OnlinePending"  // resources only
	ClusterOfflinePending = "OfflinePending" // resources only
	ClusterStateUnknown   = "Unknown"
)

// Resource types (MSCluster_Resource.Type) the provider looks at.
const (
	ResourceSQLServer      = "SQL Server"
	ResourceSQLServerAgent = "SQL Server Agent"
	ResourceNetworkName    = "Network Name"
)

// AutoFailbackType values (MSCluster_ResourceGroup.AutoFailbackType).
const (
	FailbackPrevent = 0
	FailbackAllow   = 1
)

// MaxClusterSeconds is the largest timeout_s cluster_move and cluster_restart accept.
const MaxClusterSeconds = 3600

// ReadClusterParams asks for the cluster and the role of one instance.
type ReadClusterParams struct {
	Instance string `json:"instance"`
}

// ClusterNode is one node of the cluster (MSCluster_Node).
type ClusterNode struct {
	Name  string `json:"name"`
	State string `json:"state"` // Node*
}

// ClusterGroup is the instance's role (MSCluster_ResourceGroup).
type ClusterGroup struct {
	Name      string `json:"name"`
	OwnerNode string `json:"owner_node"`
	State     string `json:"state"` // Cluster*
	// PreferredOwners in the cluster's order (MSCluster_ResourceGroupToPreferredNode).
	PreferredOwners  []string `json:"preferred_owners"`
	AutoFailbackType int      `json:"auto_failback_type"` // Failback*
	// FailbackWindowStart/End: hours 0-23 of the cluster's local time; -1 any time.
	FailbackWindowStart int `json:"failback_window_start"`
	FailbackWindowEnd   int `json:"failback_window_end"`
	// FailoverThreshold: -1 (0xFFFFFFFF, the default) lets the cluster decide (one
	// fewer than its nodes). The script reads every DWORD as a signed number.
	FailoverThreshold   int `json:"failover_threshold"`
	FailoverPeriodHours int `json:"failover_period_hours"`
}

// ClusterResource is one resource of the role (MSCluster_Resource).
type ClusterResource struct {
	Name  string `json:"name"`
	Type  string `json:"type"`  // Resource*, "IP Address", "Physical Disk", …
	State string `json:"state"` // Cluster*
	// PossibleOwners: MSCluster_ResourceToPossibleOwner.
	PossibleOwners   []string `json:"possible_owners"`
	PendingTimeoutMS int      `json:"pending_timeout_ms"`
}

// ReadClusterResult is the cluster as the reached node sees it, and the role whose
// "SQL Server" resource serves the instance.
type ReadClusterResult struct {
	Cluster   string            `json:"cluster"`
	Node      string            `json:"node"` // the node that answered
	Nodes     []ClusterNode     `json:"nodes"`
	Group     ClusterGroup      `json:"group"`
	Resources []ClusterResource `json:"resources"`
	// PossibleOwners is the intersection of the resources' possible owners, computed
	// host-side; internal/ifi computes it again from Resources and trusts that.
	PossibleOwners []string `json:"possible_owners"`
	// VirtualName is the DNS name of the role's network name: where SQL Server answers.
	VirtualName string `json:"virtual_name"`
	// Guard is what the guard of the last cluster action started from this node
	// recorded for the instance (cluster_guard.ps1's marker
	// HKLM:\SOFTWARE\mssqlifi\Cluster\<instance>, value State); nil when no cluster
	// action ran from this node, or its record is of another role or unreadable.
	Guard *ClusterGuardRecord `json:"guard,omitempty"`
}

// The cluster guard's BringOnline calls: at most ClusterGuardAttempts, with a pause
// between two of ClusterGuardFirstPauseSeconds first, then twice as long each time,
// at most ClusterGuardMaxPauseSeconds (cluster_guard.ps1 holds the same values).
const (
	ClusterGuardAttempts          = 3
	ClusterGuardFirstPauseSeconds = 2
	ClusterGuardMaxPauseSeconds   = 300
)

// ClusterGuardRecord is what a cluster action's guard recorded. Until the guard
// ends, Finished is false: the action writes Group before it takes anything
// offline, and the guard writes its progress at each turn (BroughtOnline so far,
// the role's state it saw last, the last error). Once it has ended: BroughtOnline is
// how often it called BringOnline after the action's process had ended (0: the
// action left the role Online), State is "Online" when it saw the role and its SQL
// Server and Agent resources Online, else the role's state it saw last
// ("PartialOnline": the group Online without them), and Error why it stopped:
// ClusterGuardAttempts calls that did not bring the role online, the role taken
// offline by someone else after the guard saw it Online, or 2 hours passed.
type ClusterGuardRecord struct {
	Finished      bool   `json:"finished"`
	Group         string `json:"group"`
	BroughtOnline int    `json:"brought_online"`
	State         string `json:"state"`
	Error         string `json:"error"`
}

// ClusterMoveParams asks the cluster to move the instance's role to TargetNode
// (MSCluster_ResourceGroup.MoveToNewNode), waiting at most TimeoutS seconds.
type ClusterMoveParams struct {
	Instance   string `json:"instance"`
	Group      string `json:"group"`
	TargetNode string `json:"target_node"`
	TimeoutS   int    `json:"timeout_s"` // 1..MaxClusterSeconds
}

// ClusterRestartParams asks for the instance's SQL Server resource to be taken
// offline (Agent's goes with it) and the whole group brought online again on its
// current owner, waiting at most TimeoutS seconds.
type ClusterRestartParams struct {
	Instance string `json:"instance"`
	TimeoutS int    `json:"timeout_s"` // 1..MaxClusterSeconds
}

// ClusterActionResult is where a move or an offline/online left the role.
type ClusterActionResult struct {
	Group       string            `json:"group"`
	OwnerBefore string            `json:"owner_before"`
	OwnerAfter  string            `json:"owner_after"`
	State       string            `json:"state"` // the group's Cluster* state at the end
	Resources   []ClusterResource `json:"resources"`
	// Error is the cluster's own error text, "" when the action succeeded.
	Error string `json:"error,omitempty"`
}
