package tsql_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds/tdstest"
)

const agQuery = `SELECT ars.role_desc, ag.name FROM sys.dm_hadr_availability_replica_states ars
JOIN sys.availability_groups ag ON ars.group_id = ag.group_id WHERE ars.is_local = 1`

func TestSQLQueries(t *testing.T) {
	t.Parallel()
	h := sqlHost(t)
	for _, tc := range []struct {
		name, instance, query, want string
	}{
		{"column subset", "MSSQLSERVER",
			"SELECT servicename, instant_file_initialization_enabled FROM sys.dm_server_services",
			"servicename:nvarchar,instant_file_initialization_enabled:nvarchar\nSQL Server (MSSQLSERVER)|N\nSQL Server Agent (MSSQLSERVER)|NULL\n"},
		{"reordered, any case, alias, WHERE on servicename without case and trailing blanks", "MSSQLSERVER",
			"select Instant_File_Initialization_Enabled AS ifi, ServiceName, status_desc from SYS.DM_SERVER_SERVICES where servicename = N'sql server (mssqlserver)  ';",
			"ifi:nvarchar,ServiceName:nvarchar,status_desc:nvarchar\nN|SQL Server (MSSQLSERVER)|Running\n"},
		{"AND, <>, brackets, three-part name, comments", "REPORTING",
			"SELECT [servicename] /* the name */ FROM [master].[sys].[dm_server_services] s\n-- only the Engine\nWHERE s.[is_clustered] = 'N' AND servicename <> 'SQL Server Agent (REPORTING)' AND process_id > 0",
			"servicename:nvarchar\nSQL Server (REPORTING)\n"},
		{"TOP and ORDER BY DESC", "MSSQLSERVER",
			"SELECT TOP (1) servicename, startup_type_desc FROM sys.dm_server_services ORDER BY servicename DESC",
			"servicename:nvarchar,startup_type_desc:nvarchar\nSQL Server Agent (MSSQLSERVER)|Automatic\n"},
		{"parenthesised conditions, reversed comparison, negative literal", "MSSQLSERVER",
			"SELECT name FROM sys.databases WHERE (database_id > -1 AND (4 > database_id)) AND 'TEMPDB' <> name",
			"name:nvarchar\nmaster\nmodel\n"},
		{"IS NULL", "MSSQLSERVER",
			"SELECT servicename FROM sys.dm_server_services WHERE instant_file_initialization_enabled IS NULL",
			"servicename:nvarchar\nSQL Server Agent (MSSQLSERVER)\n"},
		{"SERVERPROPERTY list as sql_variant; an unknown property is NULL", "REPORTING",
			"SELECT SERVERPROPERTY('ProductVersion') AS version, SERVERPROPERTY('IsHadrEnabled') AS hadr, SERVERPROPERTY('NoSuchProperty') AS nope, SERVERPROPERTY('ServerName') name, serverproperty('instancename')",
			"version:sql_variant,hadr:sql_variant,nope:sql_variant,name:sql_variant,:sql_variant\n15.0.4355.3|1|NULL|SQL01\\REPORTING|REPORTING\n"},
		{"CAST and CONVERT of SERVERPROPERTY", "MSSQLSERVER",
			"SELECT CONVERT(nvarchar(128), SERVERPROPERTY('Edition')) AS edition, CAST(SERVERPROPERTY('IsHadrEnabled') AS int) hadr, CAST(SERVERPROPERTY('ProductMajorVersion') AS int) AS major, @@SERVERNAME AS server",
			"edition:nvarchar,hadr:int,major:int,server:nvarchar\nDeveloper Edition (64-bit)|1|16|SQL01\n"},
		{"IsHadrEnabled is NULL before 2012", "LEGACY",
			"SELECT SERVERPROPERTY('IsHadrEnabled') AS hadr",
			"hadr:sql_variant\nNULL\n"},
		{"IsHadrEnabled off", "OLD",
			"SELECT CAST(SERVERPROPERTY('IsHadrEnabled') AS int) AS hadr",
			"hadr:int\n0\n"},
		{"the AG query on the primary", "MSSQLSERVER", agQuery,
			"role_desc:nvarchar,name:nvarchar\nPRIMARY|AG1\n"},
		{"the AG query on the secondary", "REPORTING", agQuery,
			"role_desc:nvarchar,name:nvarchar\nSECONDARY|AG1\n"},
		{"the AG query without Always On", "OLD", agQuery,
			"role_desc:nvarchar,name:nvarchar\n"},
		{"three views joined, role as tinyint, is_local as bit", "MSSQLSERVER",
			"SELECT ag.name, ar.replica_server_name, ars.role, ars.is_local FROM sys.availability_groups AS ag INNER JOIN sys.availability_replicas AS ar ON ar.group_id = ag.group_id JOIN sys.dm_hadr_availability_replica_states AS ars ON ars.replica_id = ar.replica_id AND ars.group_id = ag.group_id",
			"name:nvarchar,replica_server_name:nvarchar,role:tinyint,is_local:bit\nAG1|SQL01|1|true\n"},
		{"LEFT JOIN keeps the row with NULLs", "OLD",
			"SELECT d.name, k.encryption_state FROM sys.databases d LEFT JOIN sys.dm_database_encryption_keys k ON k.database_id = d.database_id WHERE d.database_id <= 2",
			"name:nvarchar,encryption_state:int\nmaster|NULL\ntempdb|NULL\n"},
		{"DB_NAME, ORDER BY an alias", "REPORTING",
			"SELECT DB_NAME(database_id) AS db, key_algorithm FROM sys.dm_database_encryption_keys WHERE encryption_state = '3' ORDER BY db",
			"db:nvarchar,key_algorithm:nvarchar\nHR|AES\nSales|AES\ntempdb|AES\n"},
		{"* and ORDER BY position", "REPORTING",
			"SELECT * FROM sys.dm_database_encryption_keys ORDER BY 1 DESC",
			"database_id:int,encryption_state:int,key_algorithm:nvarchar,key_length:int\n6|3|AES|256\n5|3|AES|256\n2|3|AES|256\n"},
		{"2014 has no IFI column, so * leaves it out", "OLD",
			"SELECT s.* FROM sys.dm_server_services s",
			"servicename:nvarchar,startup_type:int,startup_type_desc:nvarchar,status:int,status_desc:nvarchar,process_id:int,last_startup_time:datetimeoffset,service_account:nvarchar,filename:nvarchar,is_clustered:nvarchar,cluster_nodename:nvarchar\n"},
		{"two statements, two result sets", "MSSQLSERVER",
			"select 1; SELECT 'a' AS x, N'b' y",
			":int\n1\n--\nx:nvarchar,y:nvarchar\na|b\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst, _ := h.Instance(tc.instance)
			rs, e := inst.TDSHandler().Batch(context.Background(), tds.Login{User: "sa"}, tc.query)
			if e != nil {
				t.Fatalf("%s\nanswered Msg %d: %s", tc.query, e.Number, e.Message)
			}
			got := tdstest.Render(rs)
			if tc.name == "2014 has no IFI column, so * leaves it out" {
				got = strings.SplitAfter(got, "\n")[0]
			}
			if got != tc.want {
				t.Errorf("%s\ngot:\n%s\nwant:\n%s", tc.query, got, tc.want)
			}
		})
	}
}

func TestSQLErrors(t *testing.T) {
	t.Parallel()
	h := sqlHost(t)
	for _, tc := range []struct {
		name, instance, user, query string
		number                      int32
		class, state                uint8
		message                     string
	}{
		{"invalid column", "MSSQLSERVER", "sa", "SELECT servicename, nope FROM sys.dm_server_services", 207, 16, 1, "Invalid column name 'nope'."},
		{"IFI column missing on 2014 (the provider's query)", "OLD", "sa", contract.QueryServerServices, 207, 16, 1, "Invalid column name 'instant_file_initialization_enabled'."},
		{"memory model column missing on 2014 (before 2016 SP1)", "OLD", "sa", contract.QueryMemory, 207, 16, 1, "Invalid column name 'sql_memory_model_desc'."},
		{"sys.dm_os_sys_info without VIEW SERVER STATE", "MSSQLSERVER", "weak", contract.QueryMemory, 300, 14, 1, "VIEW SERVER STATE permission was denied on object 'server', database 'master'."},
		{"invalid object", "MSSQLSERVER", "sa", "SELECT * FROM sys.dm_nope", 208, 16, 1, "Invalid object name 'sys.dm_nope'."},
		{"a system view needs its schema", "MSSQLSERVER", "sa", "SELECT * FROM dm_server_services", 208, 16, 1, "Invalid object name 'dm_server_services'."},
		{"unknown database", "MSSQLSERVER", "sa", "SELECT * FROM nodb.sys.databases", 208, 16, 1, "Invalid object name 'nodb.sys.databases'."},
		{"syntax", "MSSQLSERVER", "sa", "SELECT servicename FROM sys.dm_server_services WHERE servicename == 'x'", 102, 15, 1, "Incorrect syntax near '='."},
		{"syntax after the last token", "MSSQLSERVER", "sa", "SELECT servicename FROM sys.dm_server_services WHERE servicename =", 102, 15, 1, "Incorrect syntax near '='."},
		{"syntax at a keyword", "MSSQLSERVER", "sa", "SELECT servicename, FROM sys.dm_server_services", 156, 15, 1, "Incorrect syntax near the keyword 'FROM'."},
		{"unclosed quote", "MSSQLSERVER", "sa", "SELECT 'abc", 105, 15, 1, "Unclosed quotation mark after the character string 'abc'."},
		{"ambiguous column", "MSSQLSERVER", "sa", "SELECT group_id FROM sys.availability_groups ag JOIN sys.availability_replicas ar ON ag.group_id = ar.group_id", 209, 16, 1, "Ambiguous column name 'group_id'."},
		{"unbound qualifier", "MSSQLSERVER", "sa", "SELECT x.name FROM sys.availability_groups ag", 4104, 16, 1, `The multi-part identifier "x.name" could not be bound.`},
		{"conversion", "MSSQLSERVER", "sa", "SELECT servicename FROM sys.dm_server_services WHERE process_id = 'abc'", 245, 16, 1, "Conversion failed when converting the varchar value 'abc' to data type int."},
		{"unknown function", "MSSQLSERVER", "sa", "SELECT foo(1)", 195, 15, 10, "'foo' is not a recognized built-in function name."},
		{"no table for *", "MSSQLSERVER", "sa", "SELECT *", 263, 16, 1, "Must specify table to select from."},
		{"one exposed name twice", "MSSQLSERVER", "sa", "SELECT 1 FROM sys.databases JOIN sys.databases ON 1 = 1", 1013, 16, 1, `The objects "databases" and "databases" in the FROM clause have the same exposed names.`},
		{"unknown type", "MSSQLSERVER", "sa", "SELECT CAST(1 AS number)", 243, 16, 2, "Type number is not a defined system type."},
		{"ORDER BY position out of range", "MSSQLSERVER", "sa", "SELECT name FROM sys.databases ORDER BY 2", 108, 16, 1, "The ORDER BY position number 2 is out of range"},
		{"a variable", "MSSQLSERVER", "sa", "SELECT name FROM sys.databases WHERE name = @db", 137, 15, 2, `Must declare the scalar variable "@db".`},
		{"argument count", "MSSQLSERVER", "sa", "SELECT SERVERPROPERTY()", 174, 15, 1, "The serverproperty function requires 1 argument(s)."},
		{"overflow", "MSSQLSERVER", "sa", "SELECT CAST(300 AS tinyint)", 8115, 16, 2, "Arithmetic overflow error converting expression to data type tinyint."},
		{"DMV without VIEW SERVER STATE", "MSSQLSERVER", "weak", agQuery, 300, 14, 1, "VIEW SERVER STATE permission was denied on object 'server', database 'master'."},
		{"HADR views do not exist before 2012", "LEGACY", "sa", agQuery, 208, 16, 1, "Invalid object name 'sys.dm_hadr_availability_replica_states'."},
		{"conversion of a column value", "MSSQLSERVER", "sa", "SELECT name FROM sys.availability_groups WHERE name = 1", 245, 16, 1, "Conversion failed when converting the nvarchar value 'AG1' to data type int."},
		{"valid T-SQL outside the model: OR", "MSSQLSERVER", "sa", "SELECT servicename FROM sys.dm_server_services WHERE process_id = 1 OR process_id = 2", 50000, 16, 1, "winsim does not model OR;"},
		{"valid T-SQL outside the model: COUNT", "MSSQLSERVER", "sa", "SELECT COUNT(*) FROM sys.dm_server_services", 50000, 16, 1, "winsim does not model aggregates such as COUNT(*)"},
		{"valid T-SQL outside the model: UPDATE", "MSSQLSERVER", "sa", "UPDATE sys.databases SET name = 'x'", 50000, 16, 1, "winsim does not model UPDATE statements"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst, _ := h.Instance(tc.instance)
			rs, e := inst.TDSHandler().Batch(context.Background(), tds.Login{User: tc.user}, tc.query)
			if e == nil {
				t.Fatalf("%s\nanswered rows:\n%s\nwant Msg %d", tc.query, tdstest.Render(rs), tc.number)
			}
			if e.Number != tc.number || e.Class != tc.class || e.State != tc.state || e.Line != 1 || !strings.HasPrefix(e.Message, tc.message) {
				t.Errorf("%s\ngot Msg %d, Level %d, State %d, Line %d: %s\nwant Msg %d, Level %d, State %d, Line 1: %s",
					tc.query, e.Number, e.Class, e.State, e.Line, e.Message, tc.number, tc.class, tc.state, tc.message)
			}
		})
	}
}

// enginePID is the running Engine's process id of instance on h, as text.
func enginePID(h *host.Host, instance string) string {
	for _, in := range h.Snapshot().Instances {
		if in.Name == instance && in.Process != nil {
			return fmt.Sprint(in.Process.PID)
		}
	}
	return "not running"
}

// The provider's queries (contract.Queries) keep the columns they had when the
// endpoint matched their exact text: same names, types, sizes and nullability.
func TestProviderQueriesKeepTheirShape(t *testing.T) {
	t.Parallel()
	h := sqlHost(t)
	inst, _ := h.Instance("REPORTING")
	want := map[string][]tds.Column{
		contract.QueryServerProperties: {
			{Name: "product_version", Type: tds.TypeNVarChar, Size: 128, Nullable: true},
			{Name: "product_level", Type: tds.TypeNVarChar, Size: 128, Nullable: true},
			{Name: "edition", Type: tds.TypeNVarChar, Size: 128, Nullable: true},
			{Name: "is_clustered", Type: tds.TypeInt, Nullable: true},
			{Name: "instance_name", Type: tds.TypeNVarChar, Size: 128, Nullable: true},
			{Name: "process_id", Type: tds.TypeInt, Nullable: true},
		},
		contract.QueryServerServices: {
			{Name: "servicename", Type: tds.TypeNVarChar, Size: 256},
			{Name: "process_id", Type: tds.TypeInt, Nullable: true},
			{Name: "last_startup_time", Type: tds.TypeDateTimeOffset, Scale: 7, Nullable: true},
			{Name: "service_account", Type: tds.TypeNVarChar, Size: 256},
			{Name: "is_clustered", Type: tds.TypeNVarChar, Size: 1},
			{Name: "instant_file_initialization_enabled", Type: tds.TypeNVarChar, Size: 1, Nullable: true},
		},
		contract.QueryEncryptedDatabases: {
			{Name: "database_id", Type: tds.TypeInt},
			{Name: "database_name", Type: tds.TypeNVarChar, Size: 128, Nullable: true},
			{Name: "encryption_state", Type: tds.TypeInt, Nullable: true},
		},
		contract.QueryHADREnabled: {{Name: "is_hadr_enabled", Type: tds.TypeInt, Nullable: true}},
		contract.QueryReplicaStates: {
			{Name: "availability_group", Type: tds.TypeNVarChar, Size: 256, Nullable: true},
			{Name: "replica_server_name", Type: tds.TypeNVarChar, Size: 256, Nullable: true},
			{Name: "is_local", Type: tds.TypeBit},
			{Name: "role_desc", Type: tds.TypeNVarChar, Size: 60, Nullable: true},
			{Name: "connected_state_desc", Type: tds.TypeNVarChar, Size: 60, Nullable: true},
			{Name: "synchronization_health_desc", Type: tds.TypeNVarChar, Size: 60, Nullable: true},
		},
		contract.QueryGroupPrimaries: {
			// SQL Server's primary_replica is varchar(128); winsim has no varchar type
			// and sends nvarchar (FIDELITY.md).
			{Name: "availability_group", Type: tds.TypeNVarChar, Size: 256, Nullable: true},
			{Name: "primary_replica", Type: tds.TypeNVarChar, Size: 128, Nullable: true},
		},
		contract.QueryRequests: {
			{Name: "session_id", Type: tds.TypeSmallInt},
			{Name: "command", Type: tds.TypeNVarChar, Size: 32},
		},
		// sql_memory_model_desc is nvarchar(120), not null; value_in_use a nullable
		// sql_variant, and the LEFT JOIN's outer side: CAST keeps it nullable.
		contract.QueryMemory: {
			{Name: "sql_memory_model_desc", Type: tds.TypeNVarChar, Size: 120},
			{Name: "max_server_memory_mb", Type: tds.TypeBigInt, Nullable: true},
		},
		contract.QueryMaxServerMemory: {{Name: "max_server_memory_mb", Type: tds.TypeBigInt, Nullable: true}},
	}
	rows := map[string]string{
		contract.QueryServerProperties:   "15.0.4355.3|RTM|Developer Edition (64-bit)|0|REPORTING|" + enginePID(h, "REPORTING"),
		contract.QueryEncryptedDatabases: "2|tempdb|3\n5|Sales|3\n6|HR|3",
		contract.QueryMemory:             "CONVENTIONAL|2147483647",
		contract.QueryMaxServerMemory:    "2147483647",
	}
	for _, q := range contract.Queries {
		rs, e := inst.TDSHandler().Batch(context.Background(), tds.Login{User: "sa"}, q)
		if e != nil {
			t.Fatalf("%s: Msg %d %s", q, e.Number, e.Message)
		}
		if fmt.Sprint(rs[0].Columns) != fmt.Sprint(want[q]) {
			t.Errorf("%s\ncolumns %+v\nwant    %+v", q, rs[0].Columns, want[q])
		}
		if w, ok := rows[q]; ok {
			if got := strings.TrimSpace(strings.SplitN(tdstest.Render(rs), "\n", 2)[1]); got != w {
				t.Errorf("%s\nrows %q, want %q", q, got, w)
			}
		}
	}
}

// FuzzSQLBatch: whatever a client sends, the endpoint answers rows or an error and
// never panics (a panic would take the simulated SQL Server down).
func FuzzSQLBatch(f *testing.F) {
	for _, q := range append(slices.Clone(contract.Queries), agQuery,
		"SELECT TOP (1) s.* FROM master.sys.dm_server_services s LEFT JOIN sys.databases d ON d.name = s.servicename WHERE (s.process_id IS NOT NULL) ORDER BY 1 DESC",
		"select -1, N'x''y', [a]]b] from \"sys\".databases /* c */ -- d",
		"SELECT CONVERT(sql_variant, SERVERPROPERTY('ProcessID')), DB_NAME(), CAST('1' AS bit)") {
		f.Add(q)
	}
	primary := defaultInstance()
	primary.AvailabilityGroup = &host.AvailabilityGroupConfig{Name: "AG1", Role: "primary"}
	h, err := host.New(hostConfig(primary), host.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(h.Close)
	inst, _ := h.Instance("MSSQLSERVER")
	f.Fuzz(func(t *testing.T, q string) {
		rs, e := inst.TDSHandler().Batch(context.Background(), tds.Login{User: "sa"}, q)
		if e != nil && (e.Number == 0 || e.Message == "" || e.Line < 1) {
			t.Fatalf("%q: malformed error %+v", q, e)
		}
		for _, r := range rs {
			for _, row := range r.Rows {
				if len(row) != len(r.Columns) {
					t.Fatalf("%q: row of %d values for %d columns", q, len(row), len(r.Columns))
				}
			}
		}
	})
}
