package contract

// The queries the provider sends to SQL Server, parameterless, so they travel as
// SQLBatch. The simulator answers them as SQL Server does, among other SELECTs
// (internal/winsim/FIDELITY.md).
const (
	// QueryServerProperties: one row. IsClustered is 1/0; InstanceName is NULL for
	// the default instance; ProcessID is the Engine's process id (sqlservr.exe, the
	// service's process), which every login may read. The instance name and the
	// process id tie the answer to the instance the host reported (the check of
	// the answering instance, converge).
	QueryServerProperties = "SELECT CAST(SERVERPROPERTY('ProductVersion') AS nvarchar(128)) AS product_version, " +
		"CAST(SERVERPROPERTY('ProductLevel') AS nvarchar(128)) AS product_level, " +
		"CAST(SERVERPROPERTY('Edition') AS nvarchar(128)) AS edition, " +
		"CAST(SERVERPROPERTY('IsClustered') AS int) AS is_clustered, " +
		"CAST(SERVERPROPERTY('InstanceName') AS nvarchar(128)) AS instance_name, " +
		"CAST(SERVERPROPERTY('ProcessID') AS int) AS process_id"

	// QueryServerServices: one row per service of the instance (Engine, Agent, ...).
	// instant_file_initialization_enabled is nvarchar(1) 'Y'/'N', nullable; on builds
	// without the column the server answers error 207 (invalid column name).
	// last_startup_time is datetimeoffset(7); is_clustered nvarchar(1).
	// Needs VIEW SERVER STATE (error 300 without it).
	QueryServerServices = "SELECT servicename, process_id, last_startup_time, service_account, is_clustered, " +
		"instant_file_initialization_enabled FROM sys.dm_server_services"

	// QueryEncryptedDatabases: one row per database with an encryption key.
	// encryption_state 2 = encryption in progress, 3 = encrypted. tempdb (id 2)
	// appears as soon as any database uses TDE.
	QueryEncryptedDatabases = "SELECT database_id, DB_NAME(database_id) AS database_name, encryption_state " +
		"FROM sys.dm_database_encryption_keys"

	// QueryHADREnabled: one row. is_hadr_enabled is 1 when Always On availability
	// groups are enabled, 0 when not, NULL on builds before 2012 (which have no
	// HADR views): only with 1 does the provider send QueryReplicaStates.
	QueryHADREnabled = "SELECT CAST(SERVERPROPERTY('IsHadrEnabled') AS int) AS is_hadr_enabled"

	// QueryReplicaStates: one row per availability replica the instance can see
	// (none when it is in no group): its own replicas (is_local 1) and, on a
	// primary, every other replica of its groups (is_local 0; a secondary sees only
	// itself). role_desc is PRIMARY, SECONDARY or RESOLVING (NULL for a remote
	// replica that is not connected); connected_state_desc CONNECTED or
	// DISCONNECTED; synchronization_health_desc HEALTHY, PARTIALLY_HEALTHY or
	// NOT_HEALTHY. Only DMVs, which VIEW SERVER STATE shows: a catalog view such as
	// sys.availability_groups shows a login without VIEW ANY DEFINITION no rows,
	// and no error, so it is never joined (LEFT JOINs keep the row when a name is
	// missing).
	QueryReplicaStates = "SELECT m.ag_name AS availability_group, cs.replica_server_name, rs.is_local, rs.role_desc, " +
		"rs.connected_state_desc, rs.synchronization_health_desc " +
		"FROM sys.dm_hadr_availability_replica_states AS rs " +
		"LEFT JOIN sys.dm_hadr_name_id_map AS m ON m.ag_id = rs.group_id " +
		"LEFT JOIN sys.dm_hadr_availability_replica_cluster_states AS cs ON cs.replica_id = rs.replica_id " +
		"ORDER BY m.ag_name"

	// QueryRequests: one row per request running now. With VIEW SERVER STATE every
	// session's, without it only the caller's own. The provider looks for commands
	// that start with BACKUP or RESTORE, which a restart would end.
	QueryRequests = "SELECT session_id, command FROM sys.dm_exec_requests"

	// QueryMemory: one row: the memory model the running Engine started with
	// (sql_memory_model_desc: CONVENTIONAL, LOCK_PAGES or LARGE_PAGES; a column of
	// SQL Server 2016 SP1 and later, error 207 before) and max server memory (MB)
	// in use (configuration_id 1544; DefaultMaxServerMemoryMB when never set).
	// sys.dm_os_sys_info needs VIEW SERVER STATE (error 300 without it);
	// sys.configurations is visible to every login.
	QueryMemory = "SELECT i.sql_memory_model_desc, CAST(c.value_in_use AS bigint) AS max_server_memory_mb " +
		"FROM sys.dm_os_sys_info AS i LEFT JOIN sys.configurations AS c ON c.configuration_id = 1544"

	// QueryMaxServerMemory: QueryMemory's second column alone, for builds without
	// sql_memory_model_desc (the memory model then comes from the error log).
	QueryMaxServerMemory = "SELECT CAST(value_in_use AS bigint) AS max_server_memory_mb FROM sys.configurations " +
		"WHERE configuration_id = 1544"
)

// DefaultMaxServerMemoryMB is max server memory (MB) as SQL Server installs it:
// no limit. With Lock Pages in Memory, the buffer pool then grows until Windows
// runs short, and Windows cannot page it out (the "Server memory configuration
// options" page advises setting it whenever locked pages are used).
const DefaultMaxServerMemoryMB = 2147483647

// SQL Server error numbers the provider tells apart.
const (
	SQLErrLoginFailed       = 18456
	SQLErrInvalidColumn     = 207
	SQLErrPermissionDenied  = 300
	SQLErrInvalidObjectName = 208
)

// Queries lists every query above.
var Queries = []string{QueryServerProperties, QueryServerServices, QueryEncryptedDatabases, QueryHADREnabled, QueryReplicaStates, QueryGroupPrimaries, QueryRequests, QueryMemory, QueryMaxServerMemory}
