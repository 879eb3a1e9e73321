package host

import (
	"slices"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tsql"
)

// Snapshot is the whole model of a host at one moment, for the control plane
// (GET /v1/hosts/{host}) and for tests. It marshals to JSON as it is.
type Snapshot struct {
	Name           string                          `json:"name"`
	Address        string                          `json:"address"`
	ComputerName   string                          `json:"computer_name"`
	Domain         string                          `json:"domain,omitempty"`
	Rights         map[string][]contract.Principal `json:"rights"`         // direct holders, per right
	Administrators []contract.Principal            `json:"administrators"` // direct members of S-1-5-32-544
	GroupPolicy    GroupPolicySnapshot             `json:"group_policy"`
	Services       []ServiceSnapshot               `json:"services"`
	Instances      []InstanceSnapshot              `json:"instances"`
}

// GroupPolicySnapshot is the Group Policy side.
type GroupPolicySnapshot struct {
	RSoPAvailable bool                            `json:"rsop_available"`
	Defined       map[string][]contract.Principal `json:"defined"`      // what the GPO defines now (applied at the next refresh)
	Applied       map[string][]contract.Principal `json:"applied"`      // what the last refresh applied (what RSoP reports)
	LastRefresh   time.Time                       `json:"last_refresh"` // UTC
}

// ServiceSnapshot is one service.
type ServiceSnapshot struct {
	Name             string     `json:"name"`
	DisplayName      string     `json:"display_name"`
	State            string     `json:"state"`
	StartAccount     string     `json:"start_account"`
	StartAccountSID  string     `json:"start_account_sid,omitempty"`
	ServiceSID       string     `json:"service_sid"`
	ServiceSIDType   int        `json:"service_sid_type"`
	DependsOn        []string   `json:"depends_on"`
	ProcessID        int        `json:"process_id"`
	ProcessStartTime *time.Time `json:"process_start_time,omitempty"` // UTC
	LastError        string     `json:"last_error,omitempty"`         // why the last start failed
	// Stops counts the stops begun (Stop Pending entered) since the simulator
	// started: how often the service was restarted, for tests that nothing restarts
	// twice.
	Stops int `json:"stops"`
}

// InstanceSnapshot is one SQL Server instance with what its running Engine has.
type InstanceSnapshot struct {
	Name              string   `json:"name"`
	InstanceID        string   `json:"instance_id"`
	Version           string   `json:"version"`
	ProductLevel      string   `json:"product_level"`
	Edition           string   `json:"edition"`
	ServiceName       string   `json:"service_name"`
	AgentServiceName  string   `json:"agent_service_name,omitempty"`
	TCPPort           int      `json:"tcp_port"`
	Clustered         bool     `json:"clustered"`
	StartupParameters []string `json:"startup_parameters"`
	// Ready: the Engine accepts SQL connections (Running and ready_ms passed).
	Ready bool `json:"ready"`
	// Process is the running Engine process with the token it captured at start;
	// null when the Engine is not running.
	Process *Process `json:"process"`
	// InstantFileInitialization is what the running process has ('Y'/'N' in the
	// DMV); null when the Engine is not running.
	InstantFileInitialization *bool `json:"instant_file_initialization"`
	// DMVHasIFIColumn: this build's sys.dm_server_services has the IFI column.
	DMVHasIFIColumn bool `json:"dmv_has_ifi_column"`
	// DMVHasMemoryModelColumn: this build's sys.dm_os_sys_info has
	// sql_memory_model_desc (the running process's model is Process.MemoryModel).
	DMVHasMemoryModelColumn bool `json:"dmv_has_memory_model_column"`
	// MaxServerMemoryMB is max server memory (MB) in use (sys.configurations).
	MaxServerMemoryMB int32 `json:"max_server_memory_mb"`
	// HADREnabled: Always On availability groups are enabled (SERVERPROPERTY('IsHadrEnabled')).
	HADREnabled bool `json:"hadr_enabled"`
	// AvailabilityGroup is the instance's replica (group name, role primary or
	// secondary); null when it is in no group.
	AvailabilityGroup *AvailabilityGroupConfig `json:"availability_group"`
	// ErrorLog is the current error log's IFI line and memory manager line.
	ErrorLog  contract.ErrorLogInfo `json:"errorlog"`
	Databases []DatabaseSnapshot    `json:"databases"`
	// DatabaseOperations are the last file creations and growths (CREATE DATABASE,
	// ALTER DATABASE ... MODIFY FILE) with what the zeroing model charged for each,
	// oldest first (tsql/zeroing.go): modelled, not measured.
	DatabaseOperations []tsql.DatabaseOperation `json:"database_operations"`
	// Zeroing is the zeroing model's figures for this instance, defaults filled
	// (tsql/zeroing.go): what database_operations were charged at.
	Zeroing tsql.ZeroingModel `json:"zeroing"`
}

// DatabaseSnapshot is one database and whether IFI applies to its data files
// (design/windows-behaviour.md#when-ifi-never-applies: never for TDE-encrypted
// databases).
type DatabaseSnapshot struct {
	ID              int    `json:"id"`
	Name            string `json:"name"`
	TDE             bool   `json:"tde"`
	EncryptionState int    `json:"encryption_state"` // 0 none, 3 encrypted
	// IFIApplies: data file growth is instant (the process has IFI and the database
	// is not encrypted); false when the Engine is not running.
	IFIApplies bool `json:"ifi_applies"`
	// Owner and Files of a user database (none for the system databases).
	Owner string              `json:"owner,omitempty"`
	Files []tsql.DatabaseFile `json:"files,omitempty"`
}

// Snapshot returns the whole model now.
func (h *Host) Snapshot() Snapshot {
	h.mu.Lock()
	defer h.mu.Unlock()
	snap := Snapshot{
		Name: h.cfg.Name, Address: h.cfg.Address, ComputerName: h.computer, Domain: h.cfg.Domain,
		Rights:         map[string][]contract.Principal{},
		Administrators: h.principals(h.admins),
		GroupPolicy: GroupPolicySnapshot{
			RSoPAvailable: h.rsop,
			Defined:       map[string][]contract.Principal{},
			Applied:       map[string][]contract.Principal{},
			LastRefresh:   h.gpRefresh.UTC(),
		},
		Services:  []ServiceSnapshot{},
		Instances: []InstanceSnapshot{},
	}
	for _, r := range sortedKeys(h.rights) {
		snap.Rights[r] = h.principals(h.rights[r])
	}
	for _, r := range sortedKeys(h.gpPolicy) {
		snap.GroupPolicy.Defined[r] = h.principals(h.gpPolicy[r])
	}
	for _, r := range sortedKeys(h.gpApplied) {
		snap.GroupPolicy.Applied[r] = h.principals(h.gpApplied[r])
	}
	for _, s := range h.services {
		ss := ServiceSnapshot{
			Name: s.name, DisplayName: s.display, State: s.state, StartAccount: s.account,
			StartAccountSID: s.accountSID, ServiceSID: serviceSIDOf(s), ServiceSIDType: s.sidType,
			DependsOn: []string{}, ProcessID: s.pid, LastError: s.lastError, Stops: s.stops,
		}
		for _, d := range s.dependsOn {
			ss.DependsOn = append(ss.DependsOn, d.name)
		}
		if s.pid != 0 {
			t := s.started.UTC()
			ss.ProcessStartTime = &t
		}
		snap.Services = append(snap.Services, ss)
	}
	for _, i := range h.instances {
		is := InstanceSnapshot{
			Name: i.name, InstanceID: i.id, Version: i.ver.String(), ProductLevel: i.level, Edition: i.edition,
			ServiceName: i.engine.name, TCPPort: i.port, Clustered: i.clustered,
			StartupParameters: i.startupParameters(), Ready: i.ready,
			DMVHasIFIColumn: i.ver.hasIFIColumn(), ErrorLog: i.errorLogInfoLocked(),
			DMVHasMemoryModelColumn: i.ver.hasMemoryModelColumn(), MaxServerMemoryMB: i.maxServerMemoryMB(),
			Databases: []DatabaseSnapshot{}, HADREnabled: i.hadr,
		}
		if i.ag != nil {
			ag := *i.ag
			is.AvailabilityGroup = &ag
		}
		if i.agent != nil {
			is.AgentServiceName = i.agent.name
		}
		if i.proc != nil {
			p := *i.proc
			p.TokenSIDs = slices.Clone(p.TokenSIDs)
			p.TraceFlags = slices.Clone(p.TraceFlags)
			p.ProgramNames = slices.Clone(p.ProgramNames)
			p.Started = p.Started.UTC()
			is.Process = &p
			ifi := p.IFI
			is.InstantFileInitialization = &ifi
		}
		for _, db := range i.sql.Databases() {
			ds := DatabaseSnapshot{ID: db.ID, Name: db.Name, TDE: db.TDE}
			if db.TDE {
				ds.EncryptionState = 3
			}
			ds.IFIApplies = i.proc != nil && i.proc.IFI && !db.TDE
			ds.Owner, ds.Files, _ = i.sql.UserDatabaseInfo(db.ID)
			is.Databases = append(is.Databases, ds)
		}
		is.DatabaseOperations = i.DatabaseOperations()
		is.Zeroing = i.sql.Zeroing()
		snap.Instances = append(snap.Instances, is)
	}
	return snap
}
