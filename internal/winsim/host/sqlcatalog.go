package host

import (
	"strconv"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds"
)

// sqlTable is one system view as a query sees it: its columns and, for this
// statement, its rows.
type sqlTable struct {
	name string // sys.name, lower case
	cols []tds.Column
	rows [][]any
	// serverState: reading it needs VIEW SERVER STATE (error 300 without).
	serverState bool
	// catalog: a catalog view, whose rows only VIEW ANY DEFINITION (or sysadmin)
	// shows; without it the view is empty, without an error (metadata visibility).
	catalog bool
	// otherSessions: the last rows are other sessions', which only VIEW SERVER
	// STATE shows (sys.dm_exec_requests); without it they are left out.
	otherSessions int
}

// sysViews are the views the simulator models, by name (lower case, in schema sys).
// Each builds its table with the host's mutex held.
var sysViews = map[string]func(i *Instance) (sqlTable, bool){
	"dm_server_services":                          (*Instance).viewServerServices,
	"dm_database_encryption_keys":                 (*Instance).viewEncryptionKeys,
	"databases":                                   (*Instance).viewDatabases,
	"dm_hadr_availability_replica_states":         (*Instance).viewReplicaStates,
	"dm_hadr_name_id_map":                         (*Instance).viewNameIDMap,
	"dm_hadr_availability_group_states":           (*Instance).viewGroupStates,
	"dm_hadr_availability_replica_cluster_states": (*Instance).viewReplicaClusterStates,
	"dm_exec_requests":                            (*Instance).viewExecRequests,
	"availability_replicas":                       (*Instance).viewAvailabilityReplicas,
	"availability_groups":                         (*Instance).viewAvailabilityGroups,
}

// lookupTable finds [database.]sys.name. ok is false for an object that does not
// exist on this build (error 208).
func (i *Instance) lookupTable(parts []string) (sqlTable, bool) {
	if len(parts) < 2 || !strings.EqualFold(parts[len(parts)-2], "sys") {
		return sqlTable{}, false
	}
	if len(parts) == 3 {
		known := false
		for _, db := range i.databases() {
			if strings.EqualFold(db.Name, parts[0]) {
				known = true
			}
		}
		if !known {
			return sqlTable{}, false
		}
	}
	view, ok := sysViews[strings.ToLower(parts[len(parts)-1])]
	if !ok {
		return sqlTable{}, false
	}
	i.h.mu.Lock()
	defer i.h.mu.Unlock()
	return view(i)
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
func (i *Instance) viewServerServices() (sqlTable, bool) {
	h := i.h
	t := sqlTable{name: "sys.dm_server_services", serverState: true, cols: []tds.Column{
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
		t.cols = append(t.cols, tds.Column{Name: "instant_file_initialization_enabled", Type: tds.TypeNVarChar, Size: 1, Nullable: true})
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
	t.rows = append(t.rows, row(i.engine, `sqlservr.exe" -s`+i.name, ifi))
	if i.agent != nil {
		t.rows = append(t.rows, row(i.agent, `SQLAGENT.EXE" -i `+i.name, nil))
	}
	return t, true
}

// viewEncryptionKeys is sys.dm_database_encryption_keys: tempdb and every TDE
// database, encryption_state 3 (encrypted).
func (i *Instance) viewEncryptionKeys() (sqlTable, bool) {
	t := sqlTable{name: "sys.dm_database_encryption_keys", serverState: true, cols: []tds.Column{
		{Name: "database_id", Type: tds.TypeInt},
		{Name: "encryption_state", Type: tds.TypeInt, Nullable: true},
		{Name: "key_algorithm", Type: tds.TypeNVarChar, Size: 32, Nullable: true},
		{Name: "key_length", Type: tds.TypeInt, Nullable: true},
	}}
	for _, db := range i.databases() {
		if db.TDE {
			t.rows = append(t.rows, []any{int32(db.ID), int32(3), "AES", int32(256)})
		}
	}
	return t, true
}

// viewDatabases is sys.databases, the columns a check of TDE or state reads.
func (i *Instance) viewDatabases() (sqlTable, bool) {
	t := sqlTable{name: "sys.databases", cols: []tds.Column{
		{Name: "name", Type: tds.TypeNVarChar, Size: 128},
		{Name: "database_id", Type: tds.TypeInt},
		{Name: "state_desc", Type: tds.TypeNVarChar, Size: 60, Nullable: true},
		{Name: "is_encrypted", Type: tds.TypeBit, Nullable: true},
	}}
	for _, db := range i.databases() {
		// tempdb's is_encrypted stays 0 even when TDE encrypts it (docs: sys.databases).
		t.rows = append(t.rows, []any{db.Name, int32(db.ID), "ONLINE", db.TDE && db.ID != 2})
	}
	return t, true
}

// The HADR views exist from SQL Server 2012 (11.x). With Always On off, or an
// instance in no group, they are empty. The catalog views know only the local
// replica; the DMVs see the other replicas through the AGDirectory (hadr.go).

func (i *Instance) agIDs() (groupID, replicaID string) {
	return nameGUID("ag", i.ag.Name), nameGUID("replica", i.ag.Name+"\x00"+i.TDSHandler().ServerName())
}

func (i *Instance) viewAvailabilityReplicas() (sqlTable, bool) {
	if i.ver.Major < 11 {
		return sqlTable{}, false
	}
	t := sqlTable{name: "sys.availability_replicas", catalog: true, cols: []tds.Column{
		{Name: "replica_id", Type: tds.TypeUniqueIdentifier, Nullable: true},
		{Name: "group_id", Type: tds.TypeUniqueIdentifier, Nullable: true},
		{Name: "replica_server_name", Type: tds.TypeNVarChar, Size: 256, Nullable: true},
		{Name: "endpoint_url", Type: tds.TypeNVarChar, Size: 128, Nullable: true},
		{Name: "availability_mode_desc", Type: tds.TypeNVarChar, Size: 60, Nullable: true},
		{Name: "failover_mode_desc", Type: tds.TypeNVarChar, Size: 60, Nullable: true},
	}}
	if i.hadr && i.ag != nil {
		g, r := i.agIDs()
		t.rows = append(t.rows, []any{r, g, i.TDSHandler().ServerName(), "TCP://" + strings.ToLower(i.h.computer) + ":5022",
			"SYNCHRONOUS_COMMIT", "AUTOMATIC"})
	}
	return t, true
}

func (i *Instance) viewAvailabilityGroups() (sqlTable, bool) {
	if i.ver.Major < 11 {
		return sqlTable{}, false
	}
	t := sqlTable{name: "sys.availability_groups", catalog: true, cols: []tds.Column{
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
		t.cols = append(t.cols, tds.Column{Name: "cluster_type", Type: tds.TypeTinyInt},
			tds.Column{Name: "cluster_type_desc", Type: tds.TypeNVarChar, Size: 60})
	}
	if i.hadr && i.ag != nil {
		g, _ := i.agIDs()
		row := []any{g, i.ag.Name, int32(3), int32(30000), "SECONDARY"}
		if clusterTypes {
			code := map[string]int32{ClusterTypeWSFC: 0, ClusterTypeExternal: 1, ClusterTypeNone: 2}[i.ag.clusterType()]
			row = append(row, code, strings.ToUpper(i.ag.clusterType()))
		}
		t.rows = append(t.rows, row)
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
		return sqlHandler{i}.ServerName()
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

// databaseName is DB_NAME(id): NULL for an id with no database.
func (i *Instance) databaseName(id int64) any {
	for _, db := range i.databases() {
		if int64(db.ID) == id {
			return db.Name
		}
	}
	return nil
}
