package host

import (
	"strconv"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tsql"
)

// sysViews are the system views of the instance's state that the T-SQL engine
// asks for (sqlSide.SystemViewLocked), by name (lower case, in schema sys); the
// databases' views are the engine's own. Each builds its table with the host's
// mutex held.
var sysViews = map[string]func(i *Instance) (tsql.Table, bool){
	"dm_server_services":                          (*Instance).viewServerServices,
	"dm_hadr_availability_replica_states":         (*Instance).viewReplicaStates,
	"dm_hadr_name_id_map":                         (*Instance).viewNameIDMap,
	"dm_hadr_availability_group_states":           (*Instance).viewGroupStates,
	"dm_hadr_availability_replica_cluster_states": (*Instance).viewReplicaClusterStates,
	"dm_exec_requests":                            (*Instance).viewExecRequests,
	"availability_replicas":                       (*Instance).viewAvailabilityReplicas,
	"availability_groups":                         (*Instance).viewAvailabilityGroups,
	"dm_os_sys_info":                              (*Instance).viewOSSysInfo,
	"configurations":                              (*Instance).viewConfigurations,
}

// viewOSSysInfo is sys.dm_os_sys_info, the columns of the memory model: the model
// the running Engine started with (Process.MemoryModel). sql_memory_model and
// sql_memory_model_desc exist from SQL Server 2016 SP1 (13.0.4001) on (the DMV's
// page: "Applies to: SQL Server 2016 (13.x) SP1 and later"); before, a query
// naming them gets error 207. VIEW SERVER STATE is needed (error 300 without).
func (i *Instance) viewOSSysInfo() (tsql.Table, bool) {
	t := tsql.Table{Name: "sys.dm_os_sys_info", ServerState: true, Cols: []tds.Column{
		{Name: "cpu_count", Type: tds.TypeInt},
	}}
	row := []any{int32(2)} // the error log's "2 logical processors"
	if i.ver.hasMemoryModelColumn() {
		t.Cols = append(t.Cols, tds.Column{Name: "sql_memory_model", Type: tds.TypeInt},
			tds.Column{Name: "sql_memory_model_desc", Type: tds.TypeNVarChar, Size: 120})
		model := contract.MemoryModelConventional
		if i.proc != nil {
			model = i.proc.MemoryModel
		}
		code := map[string]int32{contract.MemoryModelConventional: 1, contract.MemoryModelLockPages: 2, contract.MemoryModelLargePages: 3}[model]
		row = append(row, code, model)
	}
	t.Rows = append(t.Rows, row)
	return t, true
}

// viewConfigurations is sys.configurations, visible to every login (public), with
// the one option the simulator models: max server memory (MB), configuration_id
// 1544, its value and value_in_use sql_variant (int), the configured
// max_server_memory_mb or contract.DefaultMaxServerMemoryMB ("Server memory
// configuration options": minimum 128, default 2147483647, dynamic, advanced).
func (i *Instance) viewConfigurations() (tsql.Table, bool) {
	t := tsql.Table{Name: "sys.configurations", Cols: []tds.Column{
		{Name: "configuration_id", Type: tds.TypeInt},
		{Name: "name", Type: tds.TypeNVarChar, Size: 35},
		{Name: "value", Type: tds.TypeVariant, Nullable: true},
		{Name: "minimum", Type: tds.TypeVariant, Nullable: true},
		{Name: "maximum", Type: tds.TypeVariant, Nullable: true},
		{Name: "value_in_use", Type: tds.TypeVariant, Nullable: true},
		{Name: "description", Type: tds.TypeNVarChar, Size: 255},
		{Name: "is_dynamic", Type: tds.TypeBit},
		{Name: "is_advanced", Type: tds.TypeBit},
	}}
	v := i.maxServerMemoryMB()
	t.Rows = append(t.Rows, []any{int32(1544), "max server memory (MB)", v, int32(MinMaxServerMemoryMB),
		int32(contract.DefaultMaxServerMemoryMB), v, "Maximum size of server memory (MB)", true, true})
	return t, true
}

func yn(b bool) string {
	if b {
		return "Y"
	}
	return "N"
}

// viewServerServices is sys.dm_server_services: the Engine row with the IFI its
// process has, the Agent row with NULL there (design/windows-behaviour.md#verifying-ifi-through-sql-server: Engine rows only). Builds
// without instant_file_initialization_enabled lack the column (error 207 when a
// query names it).
func (i *Instance) viewServerServices() (tsql.Table, bool) {
	h := i.h
	t := tsql.Table{Name: "sys.dm_server_services", ServerState: true, Cols: []tds.Column{
		{Name: "servicename", Type: tds.TypeNVarChar, Size: 256},
		{Name: "startup_type", Type: tds.TypeInt, Nullable: true},
		{Name: "startup_type_desc", Type: tds.TypeNVarChar, Size: 256},
		{Name: "status", Type: tds.TypeInt, Nullable: true},
		{Name: "status_desc", Type: tds.TypeNVarChar, Size: 256},
		{Name: "process_id", Type: tds.TypeInt, Nullable: true},
		{Name: "last_startup_time", Type: tds.TypeDateTimeOffset, Scale: 7, Nullable: true},
		{Name: "service_account", Type: tds.TypeNVarChar, Size: 256},
		{Name: "filename", Type: tds.TypeNVarChar, Size: 256},
		{Name: "is_clustered", Type: tds.TypeNVarChar, Size: 1},
		{Name: "cluster_nodename", Type: tds.TypeNVarChar, Size: 256, Nullable: true},
	}}
	ifiColumn := i.ver.hasIFIColumn()
	if ifiColumn {
		t.Cols = append(t.Cols, tds.Column{Name: "instant_file_initialization_enabled", Type: tds.TypeNVarChar, Size: 1, Nullable: true})
	}
	row := func(s *service, cmdline string, ifi any) []any {
		var pid, started any
		status, statusDesc := int32(1), "Stopped"
		if s.pid != 0 {
			pid = int32(s.pid)
			started = s.started.In(h.loc)
			status, statusDesc = 4, "Running"
		}
		var node any
		if i.clustered {
			node = h.computer
		}
		r := []any{s.display, int32(2), "Automatic", status, statusDesc, pid, started, s.account,
			`"` + i.programRoot() + `\Binn\` + cmdline, yn(i.clustered), node}
		if ifiColumn {
			r = append(r, ifi)
		}
		return r
	}
	var ifi any = "N"
	if i.proc != nil {
		ifi = yn(i.proc.IFI)
	}
	t.Rows = append(t.Rows, row(i.engine, `sqlservr.exe" -s`+i.name, ifi))
	if i.agent != nil {
		t.Rows = append(t.Rows, row(i.agent, `SQLAGENT.EXE" -i `+i.name, nil))
	}
	return t, true
}

// The HADR views exist from SQL Server 2012 (11.x). With Always On off, or an
// instance in no group, they are empty. The catalog views know only the local
// replica; the DMVs see the other replicas through the AGDirectory (hadr.go).

func (i *Instance) agIDs() (groupID, replicaID string) {
	return nameGUID("ag", i.ag.Name), nameGUID("replica", i.ag.Name+"\x00"+i.serverName())
}

func (i *Instance) viewAvailabilityReplicas() (tsql.Table, bool) {
	if i.ver.Major < 11 {
		return tsql.Table{}, false
	}
	t := tsql.Table{Name: "sys.availability_replicas", Catalog: true, Cols: []tds.Column{
		{Name: "replica_id", Type: tds.TypeUniqueIdentifier, Nullable: true},
		{Name: "group_id", Type: tds.TypeUniqueIdentifier, Nullable: true},
		{Name: "replica_server_name", Type: tds.TypeNVarChar, Size: 256, Nullable: true},
		{Name: "endpoint_url", Type: tds.TypeNVarChar, Size: 128, Nullable: true},
		{Name: "availability_mode_desc", Type: tds.TypeNVarChar, Size: 60, Nullable: true},
		{Name: "failover_mode_desc", Type: tds.TypeNVarChar, Size: 60, Nullable: true},
	}}
	if i.hadr && i.ag != nil {
		g, r := i.agIDs()
		t.Rows = append(t.Rows, []any{r, g, i.serverName(), "TCP://" + strings.ToLower(i.h.computer) + ":5022",
			"SYNCHRONOUS_COMMIT", "AUTOMATIC"})
	}
	return t, true
}

func (i *Instance) viewAvailabilityGroups() (tsql.Table, bool) {
	if i.ver.Major < 11 {
		return tsql.Table{}, false
	}
	t := tsql.Table{Name: "sys.availability_groups", Catalog: true, Cols: []tds.Column{
		{Name: "group_id", Type: tds.TypeUniqueIdentifier},
		{Name: "name", Type: tds.TypeNVarChar, Size: 128, Nullable: true},
		{Name: "failure_condition_level", Type: tds.TypeInt, Nullable: true},
		{Name: "health_check_timeout", Type: tds.TypeInt, Nullable: true},
		{Name: "automated_backup_preference_desc", Type: tds.TypeNVarChar, Size: 60, Nullable: true},
	}}
	// cluster_type (0 WSFC, 1 EXTERNAL, 2 NONE) and cluster_type_desc exist from
	// SQL Server 2017 (14.x) on.
	clusterTypes := i.ver.Major >= 14
	if clusterTypes {
		t.Cols = append(t.Cols, tds.Column{Name: "cluster_type", Type: tds.TypeTinyInt},
			tds.Column{Name: "cluster_type_desc", Type: tds.TypeNVarChar, Size: 60})
	}
	if i.hadr && i.ag != nil {
		g, _ := i.agIDs()
		row := []any{g, i.ag.Name, int32(3), int32(30000), "SECONDARY"}
		if clusterTypes {
			code := map[string]int32{ClusterTypeWSFC: 0, ClusterTypeExternal: 1, ClusterTypeNone: 2}[i.ag.clusterType()]
			row = append(row, code, strings.ToUpper(i.ag.clusterType()))
		}
		t.Rows = append(t.Rows, row)
	}
	return t, true
}

// serverProperty is SERVERPROPERTY(name): a string or an int32 (the sql_variant's
// base type, as documented per property), nil for a name SQL Server does not know.
func (i *Instance) serverProperty(name string) any {
	i.h.mu.Lock()
	defer i.h.mu.Unlock()
	b2i := func(b bool) int32 {
		if b {
			return 1
		}
		return 0
	}
	switch strings.ToLower(name) {
	case "productversion":
		return i.ver.String()
	case "productlevel":
		return i.level
	case "edition":
		return i.edition
	case "engineedition":
		switch {
		case strings.HasPrefix(i.edition, "Standard"):
			return int32(2)
		case strings.HasPrefix(i.edition, "Express"):
			return int32(4)
		}
		return int32(3) // Enterprise, Developer, Evaluation
	case "productmajorversion":
		return strconv.Itoa(i.ver.Major)
	case "productminorversion":
		return strconv.Itoa(i.ver.Minor)
	case "productbuild":
		return strconv.Itoa(i.ver.Build)
	case "isclustered":
		return b2i(i.clustered)
	case "instancename":
		if contract.IsDefaultInstance(i.name) {
			return nil
		}
		return i.name
	case "machinename":
		return i.machineName()
	case "computernamephysicalnetbios":
		return i.h.computer // on an FCI: the node it runs on now
	case "servername":
		return i.serverName()
	case "collation":
		return "SQL_Latin1_General_CP1_CI_AS"
	case "isintegratedsecurityonly":
		return int32(0) // SQL logins work: mixed mode
	case "processid":
		if i.proc == nil {
			return nil
		}
		return int32(i.proc.PID)
	case "ishadrenabled":
		if i.ver.Major < 11 {
			return nil
		}
		return b2i(i.hadr)
	case "instancedefaultdatapath", "instancedefaultlogpath":
		// SQL Server 2012 and later: the folder new databases' files go to when
		// CREATE DATABASE names none, with a trailing backslash; Setup's default is
		// the instance's DATA folder for both.
		if i.ver.Major < 11 {
			return nil
		}
		return i.programRoot() + `\DATA\`
	}
	return nil
}
