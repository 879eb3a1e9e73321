package tsql

import (
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds"
)

// Table is one system view as a query sees it: its columns and, for this
// statement, its rows.
type Table struct {
	Name string // sys.name, lower case
	Cols []tds.Column
	Rows [][]any
	// ServerState: reading it needs VIEW SERVER STATE (error 300 without).
	ServerState bool
	// Catalog: a catalog view, whose rows only VIEW ANY DEFINITION (or sysadmin)
	// shows; without it the view is empty, without an error (metadata visibility).
	Catalog bool
	// OtherSessions: the last rows are other sessions', which only VIEW SERVER
	// STATE shows (sys.dm_exec_requests); without it they are left out.
	OtherSessions int
}

// sysViews are the views of the server's own state, the databases, by name (lower
// case, in schema sys). Each builds its table with the instance's lock held; every
// other view is the instance's (Instance.SystemViewLocked).
var sysViews = map[string]func(srv *Server) (Table, bool){
	"dm_database_encryption_keys": (*Server).viewEncryptionKeys,
	"databases":                   (*Server).viewDatabases,
}

// lookupTable finds [database.]sys.name. ok is false for an object that does not
// exist on this build (error 208).
func (srv *Server) lookupTable(parts []string) (Table, bool) {
	if len(parts) < 2 || !strings.EqualFold(parts[len(parts)-2], "sys") {
		return Table{}, false
	}
	if len(parts) == 3 {
		known := false
		for _, db := range srv.Databases() {
			if strings.EqualFold(db.Name, parts[0]) {
				known = true
			}
		}
		if !known {
			return Table{}, false
		}
	}
	name := strings.ToLower(parts[len(parts)-1])
	srv.inst.Lock()
	defer srv.inst.Unlock()
	if view, ok := sysViews[name]; ok {
		return view(srv)
	}
	return srv.inst.SystemViewLocked(name)
}

// viewEncryptionKeys is sys.dm_database_encryption_keys: tempdb and every TDE
// database, encryption_state 3 (encrypted).
func (srv *Server) viewEncryptionKeys() (Table, bool) {
	t := Table{Name: "sys.dm_database_encryption_keys", ServerState: true, Cols: []tds.Column{
		{Name: "database_id", Type: tds.TypeInt},
		{Name: "encryption_state", Type: tds.TypeInt, Nullable: true},
		{Name: "key_algorithm", Type: tds.TypeNVarChar, Size: 32, Nullable: true},
		{Name: "key_length", Type: tds.TypeInt, Nullable: true},
	}}
	for _, db := range srv.Databases() {
		if db.TDE {
			t.Rows = append(t.Rows, []any{int32(db.ID), int32(3), "AES", int32(256)})
		}
	}
	return t, true
}

// viewDatabases is sys.databases, the columns a check of TDE or state reads.
func (srv *Server) viewDatabases() (Table, bool) {
	t := Table{Name: "sys.databases", Cols: []tds.Column{
		{Name: "name", Type: tds.TypeNVarChar, Size: 128},
		{Name: "database_id", Type: tds.TypeInt},
		{Name: "state_desc", Type: tds.TypeNVarChar, Size: 60, Nullable: true},
		{Name: "is_encrypted", Type: tds.TypeBit, Nullable: true},
	}}
	for _, db := range srv.Databases() {
		// tempdb's is_encrypted stays 0 even when TDE encrypts it (docs: sys.databases).
		t.Rows = append(t.Rows, []any{db.Name, int32(db.ID), "ONLINE", db.TDE && db.ID != 2})
	}
	return t, true
}

// Database is one database of the instance, for the DMV and the snapshot.
type Database struct {
	ID   int
	Name string
	TDE  bool
}

// Databases lists the system databases and the user databases. tempdb is encrypted
// as soon as any database uses TDE (design/windows-behaviour.md#when-ifi-never-applies
// via contract.QueryEncryptedDatabases).
func (srv *Server) Databases() []Database {
	srv.dbMu.Lock()
	defer srv.dbMu.Unlock()
	anyTDE := false
	for _, db := range srv.userDBs {
		anyTDE = anyTDE || db.tde
	}
	dbs := []Database{{1, "master", false}, {2, "tempdb", anyTDE}, {3, "model", false}, {4, "msdb", false}}
	for _, db := range srv.userDBs {
		dbs = append(dbs, Database{db.id, db.name, db.tde})
	}
	return dbs
}

// databaseName is DB_NAME(id): NULL for an id with no database.
func (srv *Server) databaseName(id int64) any {
	for _, db := range srv.Databases() {
		if int64(db.ID) == id {
			return db.Name
		}
	}
	return nil
}
