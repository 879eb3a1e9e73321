package winsim_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	mssql "github.com/microsoft/go-mssqldb"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/pytest"
)

// A DBA's or a module author's own queries, not the provider's, through clients:
// go-mssqldb, and pytds and tsql, which we did not write.

// agRoleQuery is the availability-group check issue 8 needs.
const agRoleQuery = `SELECT ars.role_desc, ag.name FROM sys.dm_hadr_availability_replica_states ars
JOIN sys.availability_groups ag ON ars.group_id = ag.group_id WHERE ars.is_local = 1`

func agRole(t *testing.T, db *sql.DB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := db.QueryContext(ctx, agRoleQuery)
	if err != nil {
		t.Fatalf("AG query: %v", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var role, name string
		if err := rows.Scan(&role, &name); err != nil {
			t.Fatal(err)
		}
		out = append(out, role+" "+name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, ";")
}

func TestDBAQueriesThroughGoMssqldb(t *testing.T) {
	sim := startFleet(t)
	db := openDB(t, sqlAddr(t, sim, "sql02", "MSSQLSERVER"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A column subset in another order, filtered on the service name.
	var ifi, account string
	err := db.QueryRowContext(ctx, `SELECT instant_file_initialization_enabled, service_account
		FROM sys.dm_server_services WHERE servicename = 'SQL Server (MSSQLSERVER)'`).Scan(&ifi, &account)
	if err != nil || ifi != "Y" || account != `CONTOSO\sqlsvc` {
		t.Errorf("Engine row: ifi %q account %q err %v; want Y and CONTOSO\\sqlsvc (an Administrators member)", ifi, account, err)
	}

	// SERVERPROPERTY without CAST is sql_variant: a string or an integer.
	var version, hadr, nope any
	err = db.QueryRowContext(ctx, "SELECT SERVERPROPERTY('ProductVersion') v, SERVERPROPERTY('IsHadrEnabled') h, SERVERPROPERTY('NotAProperty') n").Scan(&version, &hadr, &nope)
	if err != nil || version != "16.0.4135.4" || hadr != int64(1) || nope != nil {
		t.Errorf("SERVERPROPERTY: %v (%T) %v (%T) %v, err %v; want 16.0.4135.4, 1, NULL", version, version, hadr, hadr, nope, err)
	}

	// Always On roles, and a failover through the control plane.
	if got := agRole(t, db); got != "SECONDARY AG1" {
		t.Errorf("sql02's role %q; want SECONDARY AG1", got)
	}
	if got := agRole(t, openDB(t, sqlAddr(t, sim, "sql01", "MSSQLSERVER"))); got != "PRIMARY AG1" {
		t.Errorf("sql01's role %q; want PRIMARY AG1", got)
	}
	ctl := control{t, sim.Info().Control}
	ctl.action("sql02", map[string]any{"action": "set_ag_role", "instance": "MSSQLSERVER", "role": "primary"})
	if got := agRole(t, db); got != "PRIMARY AG1" {
		t.Errorf("sql02's role after set_ag_role primary: %q", got)
	}
	if snap := hostSnapshot(t, ctl, "sql02"); !strings.Contains(snap, `"role": "primary"`) || !strings.Contains(snap, `"hadr_enabled": true`) {
		t.Errorf("the snapshot does not show the primary role:\n%s", snap)
	}
	ctl.action("sql02", map[string]any{"action": "set_ag_role", "instance": "MSSQLSERVER", "role": "none"})
	if got := agRole(t, db); got != "" {
		t.Errorf("after leaving the group the AG query answered %q; want no row", got)
	}
	var e map[string]string
	for _, tc := range []struct {
		body   map[string]any
		status int
		want   string
	}{
		{map[string]any{"action": "set_ag_role", "instance": "MSSQLSERVER", "role": "resolving"}, http.StatusBadRequest, `"primary", "secondary" or "none"`},
		{map[string]any{"action": "set_ag_role", "instance": "MSSQLSERVER"}, http.StatusBadRequest, `needs the field "role"`},
		{map[string]any{"action": "set_ag_role", "instance": "MSSQLSERVER", "role": "primary"}, http.StatusConflict, "in no availability group: name the group"},
		{map[string]any{"action": "set_ag_role", "instance": "NOPE", "role": "primary"}, http.StatusNotFound, "no such SQL Server instance"},
	} {
		e = nil
		if code := ctl.do("POST", "/v1/hosts/sql02/actions", tc.body, &e); code != tc.status || !strings.Contains(e["error"], tc.want) {
			t.Errorf("%v = %d %q; want %d with %q", tc.body, code, e["error"], tc.status, tc.want)
		}
	}
	e = nil
	if code := ctl.do("POST", "/v1/hosts/sql01/actions", map[string]any{"action": "set_ag_role", "instance": "REPORTING", "role": "primary", "group": "AG1"}, &e); code != http.StatusConflict || !strings.Contains(e["error"], "not enabled") {
		t.Errorf("set_ag_role on an instance without Always On = %d %q; want 409 naming it", code, e["error"])
	}

	// What SQL Server refuses arrives as its error, with number and class.
	_, err = db.ExecContext(ctx, "SELECT servicename, nope FROM sys.dm_server_services")
	var me mssql.Error
	if !errors.As(err, &me) || me.Number != 207 || me.Class != 16 || me.Message != "Invalid column name 'nope'." {
		t.Errorf("invalid column: %v; want mssql.Error 207 class 16", err)
	}
	_, err = db.ExecContext(ctx, "SELECT * FROM sys.dm_server_servics")
	if !errors.As(err, &me) || me.Number != 208 || me.Message != "Invalid object name 'sys.dm_server_servics'." {
		t.Errorf("invalid object: %v; want mssql.Error 208", err)
	}
}

// pytdsQueries runs each query (argv[5:]) and prints one JSON line per query: the
// rows as lists, or the error number and text.
const pytdsQueries = `
import sys, json, pytds
host, port, user, password = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
with pytds.connect(server=host, port=port, user=user, password=password, database="master", autocommit=True) as conn:
    for q in sys.argv[5:]:
        with conn.cursor() as cur:
            try:
                cur.execute(q)
                print(json.dumps({"cols": [d[0] for d in cur.description], "rows": [[str(v) if v is not None else None for v in r] for r in cur.fetchall()]}))
            except pytds.Error as e:
                print(json.dumps({"error": getattr(e, "msg_no", None), "text": str(e)}))
`

func TestPytdsDBAQueries(t *testing.T) {
	python := pytest.PythonWith(t, "pytds", "python3-tds")
	sim := startFleet(t)
	host, port, _ := net.SplitHostPort(sqlAddr(t, sim, "sql01", "MSSQLSERVER"))
	queries := []string{
		agRoleQuery,
		"SELECT SERVERPROPERTY('ProductVersion') AS version, SERVERPROPERTY('IsHadrEnabled') AS hadr, SERVERPROPERTY('InstanceName') AS instance",
		"select ServiceName, Status_Desc from sys.dm_server_services where servicename = N'sql server agent (mssqlserver)'",
		// The primary sees a row per replica in the DMV; its own is the local one.
		"SELECT ag.group_id, ars.group_id AS state_group_id FROM sys.availability_groups ag JOIN sys.dm_hadr_availability_replica_states ars ON ars.group_id = ag.group_id WHERE ars.is_local = 1",
		"SELECT servicename FROM sys.dm_server_services WHERE",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, python, append([]string{"-c", pytdsQueries, host, port, sqlUser, sqlPassword}, queries...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("pytds: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(queries) {
		t.Fatalf("pytds printed %d lines for %d queries:\n%s", len(lines), len(queries), out)
	}
	type answer struct {
		Cols  []string
		Rows  [][]any
		Error *int
		Text  string
	}
	var a []answer
	for _, l := range lines {
		var x answer
		if err := json.Unmarshal([]byte(l), &x); err != nil {
			t.Fatalf("pytds printed %q: %v", l, err)
		}
		a = append(a, x)
	}
	check := func(n int, want string) {
		t.Helper()
		got, _ := json.Marshal(map[string]any{"cols": a[n].Cols, "rows": a[n].Rows})
		if a[n].Error != nil || string(got) != want {
			t.Errorf("%s\npytds got %s (error %v %s)\nwant %s", queries[n], got, a[n].Error, a[n].Text, want)
		}
	}
	check(0, `{"cols":["role_desc","name"],"rows":[["PRIMARY","AG1"]]}`)
	check(1, `{"cols":["version","hadr","instance"],"rows":[["16.0.4135.4","1",null]]}`)
	check(2, `{"cols":["ServiceName","Status_Desc"],"rows":[["SQL Server Agent (MSSQLSERVER)","Running"]]}`)
	// uniqueidentifier decodes to the same GUID in both views and in go-mssqldb.
	if len(a[3].Rows) != 1 || len(a[3].Rows[0]) != 2 || a[3].Rows[0][0] != a[3].Rows[0][1] {
		t.Errorf("group ids through pytds: %+v", a[3])
	} else {
		var g mssql.UniqueIdentifier
		db := openDB(t, sqlAddr(t, sim, "sql01", "MSSQLSERVER"))
		if err := db.QueryRowContext(ctx, "SELECT group_id FROM sys.availability_groups").Scan(&g); err != nil {
			t.Fatal(err)
		}
		if !strings.EqualFold(g.String(), a[3].Rows[0][0].(string)) {
			t.Errorf("group_id: go-mssqldb %s, pytds %s", g, a[3].Rows[0][0])
		}
	}
	if a[4].Error == nil || *a[4].Error != 156 || !strings.Contains(a[4].Text, "Incorrect syntax near the keyword 'WHERE'.") {
		t.Errorf("syntax error through pytds: %+v; want 156 near the keyword 'WHERE'", a[4])
	}
}

func TestTsqlDBAQueries(t *testing.T) {
	tsql := requireTsql(t)
	sim := startFleet(t)
	// tsql exits non-zero for the failing batch; its output is what is checked.
	out, _ := runTsql(t, tsql, sqlAddr(t, sim, "sql02", "MSSQLSERVER"),
		strings.ReplaceAll(agRoleQuery, "\n", " "),
		"SELECT SERVERPROPERTY('Edition') AS edition, CAST(SERVERPROPERTY('IsHadrEnabled') AS int) AS hadr",
		"SELECT TOP 1 servicename FROM sys.dm_server_services ORDER BY servicename DESC",
		"SELECT nope FROM sys.availability_groups")
	for _, want := range []string{
		"role_desc\tname\nSECONDARY\tAG1\n",
		"edition\thadr\nDeveloper Edition (64-bit)\t1\n",
		"servicename\nSQL Server Agent (MSSQLSERVER)\n",
		"Msg 207 (severity 16, state 1) from SQL02",
		"Invalid column name 'nope'.",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("tsql output lacks %q:\n%s", want, out)
		}
	}
}
