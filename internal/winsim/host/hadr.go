package host

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tsql"
)

// Always On beyond one instance (FIDELITY.md, "Availability groups"): the replicas
// of a group on the simulated hosts, what the registry and the failover cluster
// tell without SQL Server, and the backups a restart would end.

// AGDirectory holds the availability replicas of every host that shares it (one
// simulation's hosts do), so that a primary can see its secondaries and a secondary
// its primary. Each host publishes its replicas' state on every change with its own
// mutex held; readers take only the directory's, so no host waits on another.
type AGDirectory struct {
	mu       sync.Mutex
	replicas map[string]replicaState // by host computer + "\x00" + instance
}

// replicaState is what the other replicas of a group can see of one.
type replicaState struct {
	group    string
	role     string    // AGRolePrimary or AGRoleSecondary
	server   string    // @@SERVERNAME
	up       bool      // the Engine runs and accepts connections
	syncedAt time.Time // a secondary catches up after its start until then
	wsfc     bool      // the group is of cluster type WSFC
	node     string    // the host's computer name
}

func (d *AGDirectory) publish(key string, r *replicaState) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.replicas == nil {
		d.replicas = map[string]replicaState{}
	}
	if r == nil {
		delete(d.replicas, key)
		return
	}
	d.replicas[key] = *r
}

// group lists the replicas of group, sorted by server name.
func (d *AGDirectory) group(group string) []replicaState {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []replicaState
	for _, r := range d.replicas {
		if strings.EqualFold(r.group, group) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b replicaState) int { return strings.Compare(a.server, b.server) })
	return out
}

// Cluster types of an availability group (CREATE AVAILABILITY GROUP ... CLUSTER_TYPE).
const (
	ClusterTypeWSFC     = "wsfc"
	ClusterTypeNone     = "none"
	ClusterTypeExternal = "external"
)

func (i *Instance) replicaKey() string { return i.h.computer + "\x00" + i.name }

// publishReplicaLocked tells the directory the instance's replica state.
func (i *Instance) publishReplicaLocked() {
	if i.h.ags == nil {
		return
	}
	if !i.hadr || i.ag == nil {
		i.h.ags.publish(i.replicaKey(), nil)
		return
	}
	up := i.engine.state == contract.StateRunning && i.ready
	i.h.ags.publish(i.replicaKey(), &replicaState{
		group: i.ag.Name, role: i.ag.Role, server: i.serverName(), up: up,
		syncedAt: i.syncedAt,
		wsfc:     i.ag.clusterType() == ClusterTypeWSFC, node: i.h.computer,
	})
}

func (ag AvailabilityGroupConfig) clusterType() string {
	if ag.ClusterType == "" {
		return ClusterTypeWSFC
	}
	return strings.ToLower(ag.ClusterType)
}

// health is a replica's connected_state_desc and synchronization_health_desc as
// the primary sees it.
func (r replicaState) health(now time.Time) (connected, health string) {
	switch {
	case !r.up:
		return "DISCONNECTED", "NOT_HEALTHY"
	case now.Before(r.syncedAt):
		return "CONNECTED", "NOT_HEALTHY"
	}
	return "CONNECTED", "HEALTHY"
}

// viewReplicaStates is sys.dm_hadr_availability_replica_states: the local replica
// and, on the primary, every other replica of the group (a secondary sees only
// itself; its health then says whether it is connected to a running primary).
func (i *Instance) viewReplicaStates() (tsql.Table, bool) {
	if i.ver.Major < 11 {
		return tsql.Table{}, false
	}
	t := tsql.Table{Name: "sys.dm_hadr_availability_replica_states", ServerState: true, Cols: []tds.Column{
		{Name: "replica_id", Type: tds.TypeUniqueIdentifier},
		{Name: "group_id", Type: tds.TypeUniqueIdentifier},
		{Name: "is_local", Type: tds.TypeBit},
		{Name: "role", Type: tds.TypeTinyInt, Nullable: true},
		{Name: "role_desc", Type: tds.TypeNVarChar, Size: 60, Nullable: true},
		{Name: "operational_state_desc", Type: tds.TypeNVarChar, Size: 60, Nullable: true},
		{Name: "connected_state_desc", Type: tds.TypeNVarChar, Size: 60, Nullable: true},
		{Name: "synchronization_health_desc", Type: tds.TypeNVarChar, Size: 60, Nullable: true},
	}}
	if !i.hadr || i.ag == nil {
		return t, true
	}
	g := nameGUID("ag", i.ag.Name)
	self := i.serverName()
	peers := i.peersLocked()
	connected, health := "CONNECTED", "HEALTHY"
	if i.ag.Role == AGRoleSecondary {
		for _, p := range peers {
			if p.role == AGRolePrimary && !p.up {
				connected, health = "DISCONNECTED", "NOT_HEALTHY"
			}
		}
		if i.h.now().Before(i.syncedAt) {
			health = "NOT_HEALTHY"
		}
	}
	role := int32(2)
	if i.ag.Role == AGRolePrimary {
		role = 1
	}
	t.Rows = append(t.Rows, []any{nameGUID("replica", i.ag.Name+"\x00"+self), g, true, role, strings.ToUpper(i.ag.Role), "ONLINE", connected, health})
	if i.ag.Role != AGRolePrimary {
		return t, true
	}
	for _, p := range peers {
		c, h := p.health(i.h.now())
		var prole, pdesc any
		if p.up {
			prole, pdesc = int32(2), "SECONDARY"
		}
		t.Rows = append(t.Rows, []any{nameGUID("replica", i.ag.Name+"\x00"+p.server), g, false, prole, pdesc, nil, c, h})
	}
	return t, true
}

// peersLocked are the group's other replicas in the directory.
func (i *Instance) peersLocked() []replicaState {
	if i.h.ags == nil || i.ag == nil {
		return nil
	}
	self := i.serverName()
	var out []replicaState
	for _, r := range i.h.ags.group(i.ag.Name) {
		if !strings.EqualFold(r.server, self) {
			out = append(out, r)
		}
	}
	return out
}

// viewNameIDMap is sys.dm_hadr_name_id_map: the groups the instance has joined.
func (i *Instance) viewNameIDMap() (tsql.Table, bool) {
	if i.ver.Major < 11 {
		return tsql.Table{}, false
	}
	t := tsql.Table{Name: "sys.dm_hadr_name_id_map", ServerState: true, Cols: []tds.Column{
		{Name: "ag_name", Type: tds.TypeNVarChar, Size: 256},
		{Name: "ag_id", Type: tds.TypeUniqueIdentifier},
		{Name: "ag_resource_id", Type: tds.TypeNVarChar, Size: 256},
		{Name: "ag_group_id", Type: tds.TypeNVarChar, Size: 256},
	}}
	if i.hadr && i.ag != nil {
		g := nameGUID("ag", i.ag.Name)
		t.Rows = append(t.Rows, []any{i.ag.Name, g, strings.ToLower(g), strings.ToLower(nameGUID("agres", i.ag.Name))})
	}
	return t, true
}

// viewReplicaClusterStates is sys.dm_hadr_availability_replica_cluster_states:
// every replica of the instance's group, wherever it is.
func (i *Instance) viewReplicaClusterStates() (tsql.Table, bool) {
	if i.ver.Major < 11 {
		return tsql.Table{}, false
	}
	t := tsql.Table{Name: "sys.dm_hadr_availability_replica_cluster_states", ServerState: true, Cols: []tds.Column{
		{Name: "replica_id", Type: tds.TypeUniqueIdentifier},
		{Name: "replica_server_name", Type: tds.TypeNVarChar, Size: 256, Nullable: true},
		{Name: "group_id", Type: tds.TypeUniqueIdentifier},
		{Name: "join_state_desc", Type: tds.TypeNVarChar, Size: 60, Nullable: true},
	}}
	if !i.hadr || i.ag == nil {
		return t, true
	}
	g := nameGUID("ag", i.ag.Name)
	servers := []string{i.serverName()}
	for _, p := range i.peersLocked() {
		servers = append(servers, p.server)
	}
	for _, s := range servers {
		t.Rows = append(t.Rows, []any{nameGUID("replica", i.ag.Name+"\x00"+s), s, g, "JOINED_STANDALONE"})
	}
	return t, true
}

// ownSessionID is the session a query runs in (the model has one per batch).
const ownSessionID = 51

// viewExecRequests is sys.dm_exec_requests: the caller's own request, then the
// running backups and restores (other sessions, which only VIEW SERVER STATE shows).
func (i *Instance) viewExecRequests() (tsql.Table, bool) {
	t := tsql.Table{Name: "sys.dm_exec_requests", Cols: []tds.Column{
		{Name: "session_id", Type: tds.TypeSmallInt},
		{Name: "request_id", Type: tds.TypeInt},
		{Name: "status", Type: tds.TypeNVarChar, Size: 30},
		{Name: "command", Type: tds.TypeNVarChar, Size: 32},
		{Name: "percent_complete", Type: tds.TypeInt},
	}}
	t.Rows = append(t.Rows, []any{int16(ownSessionID), int32(0), "running", "SELECT", int32(0)})
	if i.proc != nil {
		for n, c := range i.backups {
			t.Rows = append(t.Rows, []any{int16(60 + n), int32(0), "suspended", c, int32(42)})
		}
		t.OtherSessions = len(i.backups)
	}
	return t, true
}

// ErrNoEngine: the action needs a running Engine.
var ErrNoEngine = fmt.Errorf("the Engine is not running")

// StartBackup starts a BACKUP or RESTORE command ("BACKUP DATABASE" by default) on
// the instance's running Engine; it runs until EndBackups or the Engine stops.
func (h *Host) StartBackup(instance, command string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	inst, ok := h.instanceLocked(instance)
	if !ok {
		return fmt.Errorf("%w: %q on host %s", ErrNoSuchInstance, instance, h.cfg.Name)
	}
	if inst.proc == nil {
		return fmt.Errorf("%w: instance %s on host %s", ErrNoEngine, inst.name, h.cfg.Name)
	}
	if command == "" {
		command = "BACKUP DATABASE"
	}
	inst.backups = append(inst.backups, strings.ToUpper(command))
	h.notifyLocked()
	return nil
}

// EndBackups ends the instance's running backups and restores.
func (h *Host) EndBackups(instance string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	inst, ok := h.instanceLocked(instance)
	if !ok {
		return fmt.Errorf("%w: %q on host %s", ErrNoSuchInstance, instance, h.cfg.Name)
	}
	inst.backups = nil
	h.notifyLocked()
	return nil
}

// EndAGSyncNow ends a secondary replica's catching up now (ag_sync_ms after its
// Engine's start), as when its redo queue drains sooner than the configured time
// said: a test holds the group NOT_HEALTHY with a long ag_sync_ms and ends it once
// it has seen what it waits for, instead of waiting the whole time. It fails unless
// the replica is catching up.
func (h *Host) EndAGSyncNow(instance string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	inst, ok := h.instanceLocked(instance)
	if !ok {
		return fmt.Errorf("%w: %q on host %s", ErrNoSuchInstance, instance, h.cfg.Name)
	}
	if now := h.now(); now.Before(inst.syncedAt) {
		inst.syncedAt = now
	} else {
		return fmt.Errorf("end_ag_sync: instance %s on host %s is not catching up", inst.name, h.cfg.Name)
	}
	inst.publishReplicaLocked()
	h.notifyLocked()
	return nil
}

// SetHADRRegistry writes the instance's HADR_Enabled value now (nil deletes the
// value), as SQL Server Configuration Manager does; the Engine reads it at its next
// start.
func (h *Host) SetHADRRegistry(instance string, value *int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	inst, ok := h.instanceLocked(instance)
	if !ok {
		return fmt.Errorf("%w: %q on host %s", ErrNoSuchInstance, instance, h.cfg.Name)
	}
	if inst.ver.Major < 11 {
		return fmt.Errorf("%w: instance %s on host %s is version %s (Always On needs 11.x or later)", ErrHADRDisabled, inst.name, h.cfg.Name, inst.ver)
	}
	inst.hadrKey = true
	inst.hadrValue = value
	inst.hadrWritten = h.now()
	h.notifyLocked()
	return nil
}

// hadrAtStartLocked: a starting Engine reads HADR_Enabled (on from 11.x, when the
// value is not 0); leaving Always On also leaves the group.
func (i *Instance) hadrAtStartLocked() {
	if i.ver.Major < 11 || !i.hadrKey {
		return
	}
	i.hadr = i.hadrValue != nil && *i.hadrValue != 0
	if !i.hadr {
		i.ag = nil
	}
	if i.ag != nil && i.ag.Role == AGRoleSecondary && i.cfg.AGSyncMS > 0 && !i.h.booting {
		i.syncedAt = i.h.now().Add(ms(i.cfg.AGSyncMS))
	}
}

// hadrInfoLocked is what read_instance reports of the registry and the cluster.
func (i *Instance) hadrInfoLocked() *contract.HADRInfo {
	info := &contract.HADRInfo{OwnedGroups: []string{}}
	if i.ver.Major >= 11 && i.hadrKey {
		info.KeyFound = true
		if i.hadrValue != nil {
			v := *i.hadrValue
			info.Enabled = &v
		}
		w := i.hadrWritten.UTC()
		info.KeyWritten = &w
	}
	// The node is in a failover cluster when one of its instances is a replica of a
	// WSFC group; it owns the group resources whose primary replica it holds. An
	// availability group's resource sits in the group's own cluster group, with no
	// SQL Server resource to depend on (dependencies stay within one cluster group:
	// CanResourceBeDependent), so Windows ties it to an instance only when the node
	// has one instance; otherwise it is untied, whichever instance holds it.
	single := len(i.h.installedNamesLocked()) == 1
	for _, o := range i.h.instances {
		if o.hadr && o.ag != nil && o.ag.clusterType() == ClusterTypeWSFC {
			info.ClusterKnown = true
			if o.ag.Role != AGRolePrimary {
				continue
			}
			switch {
			case single && !slices.Contains(info.OwnedGroups, o.ag.Name):
				info.OwnedGroups = append(info.OwnedGroups, o.ag.Name)
			case !single && !slices.Contains(info.UntiedGroups, o.ag.Name):
				info.UntiedGroups = append(info.UntiedGroups, o.ag.Name)
			}
		}
	}
	if i.h.cluster != nil {
		info.ClusterKnown = true // a node of a failover cluster (wsfc/cluster.go)
	}
	if !info.ClusterKnown {
		info.Detail = "root\\MSCluster is not available (the host is not a failover cluster node)"
	}
	return info
}

// hadrBuildTime is when the simulated Setup wrote the HADR key: before any start.
func hadrBuildTime(now time.Time) time.Time { return now.Add(-24 * time.Hour) }

// viewGroupStates is sys.dm_hadr_availability_group_states: one row per group the
// instance has a replica of, with primary_replica, the name of the server instance
// hosting the primary replica, on the primary and on a secondary alike (as the
// cluster reports it; NULL when no replica of the group is primary). The
// recovery-health columns are NULL on the side they do not describe.
func (i *Instance) viewGroupStates() (tsql.Table, bool) {
	if i.ver.Major < 11 {
		return tsql.Table{}, false
	}
	t := tsql.Table{Name: "sys.dm_hadr_availability_group_states", ServerState: true, Cols: []tds.Column{
		{Name: "group_id", Type: tds.TypeUniqueIdentifier},
		{Name: "primary_replica", Type: tds.TypeNVarChar, Size: 128, Nullable: true},
		{Name: "primary_recovery_health_desc", Type: tds.TypeNVarChar, Size: 60, Nullable: true},
		{Name: "secondary_recovery_health_desc", Type: tds.TypeNVarChar, Size: 60, Nullable: true},
		{Name: "synchronization_health_desc", Type: tds.TypeNVarChar, Size: 60, Nullable: true},
	}}
	if !i.hadr || i.ag == nil {
		return t, true
	}
	var primary, precov, srecov any
	if i.ag.Role == AGRolePrimary {
		primary, precov = i.serverName(), "ONLINE"
	} else {
		srecov = "ONLINE"
		for _, p := range i.peersLocked() {
			if p.role == AGRolePrimary {
				primary = p.server
			}
		}
	}
	health := "HEALTHY"
	if i.ag.Role == AGRolePrimary {
		for _, p := range i.peersLocked() {
			if _, h := p.health(i.h.now()); h != "HEALTHY" {
				health = "PARTIALLY_HEALTHY"
			}
		}
	} else if i.h.now().Before(i.syncedAt) {
		health = "NOT_HEALTHY"
	}
	t.Rows = append(t.Rows, []any{nameGUID("ag", i.ag.Name), primary, precov, srecov, health})
	return t, true
}
