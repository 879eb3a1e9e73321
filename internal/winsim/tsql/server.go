// Package tsql is the simulator's T-SQL engine: what one SQL Server instance
// answers over TDS. It parses a batch (parse.go, ddl.go, applock.go), binds and
// runs its SELECTs over the system views (exec.go, catalog.go), and keeps the
// state that is the engine's own: the user databases and what creating or growing
// their files costs (zeroing.go), and the sessions' application locks
// (applock.go). Everything else it asks of the instance it serves, through
// Instance, which the host model implements.
package tsql

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds"
)

// Instance is what the engine needs of the SQL Server instance it serves: the
// host model's side of it.
type Instance interface {
	// Lock and Unlock hold the instance's state still (the host's mutex): the
	// system views are built, and the application locks changed, under it.
	sync.Locker
	// ServerName is @@SERVERNAME: COMPUTER for the default instance,
	// COMPUTER\NAME for a named one; on a failover cluster instance the role's
	// virtual name takes the computer's place.
	ServerName() string
	// ServiceName is @@SERVICENAME, the Engine's service name.
	ServiceName() string
	// Version is the product version (LOGINACK).
	Version() (major, minor uint8, build uint16)
	// Ready reports whether the Engine accepts SQL connections.
	Ready() bool
	// CountConnection records a login attempt on the running process
	// (@@CONNECTIONS) and the client's application name.
	CountConnection(appName string)
	// RunningIFI reports whether the running Engine's token gives IFI (it holds
	// SeManageVolumePrivilege and trace flag 1806 is off).
	RunningIFI() bool
	// ServerProperty is SERVERPROPERTY(name): a string or an int32, nil for a
	// name SQL Server does not know.
	ServerProperty(name string) any
	// SystemViewLocked builds sys.name (name lower case) from the instance's
	// state, with the lock held; false when no such view exists on this build.
	SystemViewLocked(name string) (Table, bool)
	// Now is the host's clock.
	Now() time.Time
	// Sleep waits d, or until ctx ends; false when ctx ended first.
	Sleep(ctx context.Context, d time.Duration) bool
}

// Config is what the instance's configuration tells the engine.
type Config struct {
	// Logins are the SQL logins that can connect.
	Logins []LoginConfig
	// TDEDatabases are user databases there from the start, encrypted by TDE.
	TDEDatabases []string
	// ZeroMBPerSecond and IFIAllocMS are the zeroing model's figures (zeroing.go);
	// zero and nil take the defaults.
	ZeroMBPerSecond float64
	IFIAllocMS      *int
}

// Server is one instance's T-SQL engine, the tds.Handler of its endpoint.
type Server struct {
	inst Instance
	cfg  Config
	// dbMu guards userDBs and fileOps; it is taken after the instance's lock,
	// never before.
	dbMu    sync.Mutex
	userDBs []*userDatabase     // user databases: the configured TDE ones, then those CREATE DATABASE made
	nextDB  int                 // the next database_id
	fileOps []DatabaseOperation // the last file creations and growths (zeroing.go)
	// applocks are the granted application locks (applock.go), by database and
	// resource, guarded by the instance's lock; the Engine's stop ends every
	// session, and so every lock (EndSessionsLocked).
	applocks     map[string][]*appLock
	applockWaits int // sp_getapplock calls that waited (AppLockWaits)
}

// New is the engine of inst.
func New(inst Instance, cfg Config) *Server {
	srv := &Server{inst: inst, cfg: cfg, nextDB: 5}
	for _, name := range cfg.TDEDatabases {
		srv.userDBs = append(srv.userDBs, configuredTDEDatabase(name, srv.nextDB))
		srv.nextDB++
	}
	return srv
}

// ServerName is the instance's (tds.Handler).
func (srv *Server) ServerName() string { return srv.inst.ServerName() }

// Version is the instance's (tds.Handler).
func (srv *Server) Version() (uint8, uint8, uint16) { return srv.inst.Version() }

func (srv *Server) findLogin(user string) (LoginConfig, bool) {
	for _, l := range srv.cfg.Logins {
		// SQL logins compare case-insensitively under the default collation.
		if strings.EqualFold(l.Name, user) {
			return l, true
		}
	}
	return LoginConfig{}, false
}

// Login checks a SQL login: an unknown login or a wrong password is error 18456,
// class 14, with the message SQL Server sends the client (the reason goes only to
// the server's log). An integrated logon (the host's security package accepted a
// Windows account) needs a Windows login of that name: a login whose name has a
// backslash, DOMAIN\user, without a password.
func (srv *Server) Login(_ context.Context, l tds.Login) *tds.SQLError {
	srv.inst.CountConnection(l.AppName)
	if !srv.inst.Ready() {
		return &tds.SQLError{Number: 17187, State: 1, Class: 16, Message: "SQL Server is not ready to accept new client connections. Wait a few minutes before trying again."}
	}
	failed := &tds.SQLError{Number: contract.SQLErrLoginFailed, State: 1, Class: 14, Message: fmt.Sprintf("Login failed for user '%s'.", l.User)}
	lc, ok := srv.findLogin(l.User)
	windows := strings.Contains(lc.Name, `\`)
	if l.Integrated {
		// A Windows account Windows authenticated: it needs a Windows login
		// (CREATE LOGIN [DOMAIN\user] FROM WINDOWS); none is 18456.
		if !ok || !windows {
			return failed
		}
		return nil
	}
	// SQL Server authentication: a SQL login and its password; a Windows login
	// cannot log on with a password over TDS.
	if !ok || windows || lc.Password != l.Password {
		return failed
	}
	return nil
}

// Batch answers a batch of SELECTs over the modelled views and SERVERPROPERTY
// (parse.go) and the database statements of the zeroing model (ddl.go,
// zeroing.go), with SQL Server's errors for anything else. The provider's queries
// (contract.Queries) are SELECTs of that subset.
func (srv *Server) Batch(ctx context.Context, l tds.Login, query string) ([]tds.ResultSet, *tds.SQLError) {
	if !srv.inst.Ready() {
		return nil, &tds.SQLError{Number: 17187, State: 1, Class: 16, Message: "SQL Server is not ready to accept new client connections. Wait a few minutes before trying again."}
	}
	lc, _ := srv.findLogin(l.User)
	stmts, err := parseBatch(query)
	if err != nil {
		return nil, err
	}
	var sets []tds.ResultSet
	vars := batchVars{}
	for _, st := range stmts {
		var rs tds.ResultSet // no columns: a statement without a result set
		var err *tds.SQLError
		switch st := st.(type) {
		case selectStmt:
			rs, err = srv.runSelect(lc, vars, st)
		case declareStmt:
			if _, dup := vars[st.name]; dup {
				err = sqlErr(134, 15, 1, st.line, "The variable name '%s' has already been declared. Variable names must be unique within a query batch or stored procedure.", st.name)
				break
			}
			vars[st.name] = &sqlVar{val: st.init}
			continue // no result set
		case execStmt:
			if err = srv.execProc(ctx, l, vars, st); err == nil {
				continue // the return status travels as RETURNSTATUS, not a result set
			}
		case createDBStmt:
			err = srv.createDatabase(ctx, lc, st)
		case alterFileStmt:
			err = srv.alterFile(ctx, lc, st)
		case dropDBStmt:
			err = srv.dropDatabases(lc, st)
		}
		if err != nil {
			return nil, err
		}
		sets = append(sets, rs)
	}
	return sets, nil
}

func viewServerStateDenied() *tds.SQLError {
	return &tds.SQLError{Number: contract.SQLErrPermissionDenied, State: 1, Class: 14, Line: 1,
		Message: "VIEW SERVER STATE permission was denied on object 'server', database 'master'."}
}
