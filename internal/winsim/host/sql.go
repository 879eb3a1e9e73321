package host

import (
	"context"
	"fmt"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds"
)

// TDSHandler returns the instance's SQL side for the TDS endpoint.
func (i *Instance) TDSHandler() tds.Handler { return sqlHandler{i} }

type sqlHandler struct{ i *Instance }

// ServerName is COMPUTER for the default instance, COMPUTER\NAME for a named one;
// on a failover cluster instance the role's virtual name takes the computer's place
// (@@SERVERNAME, SERVERPROPERTY('ServerName')).
func (s sqlHandler) ServerName() string {
	machine := s.i.machineName()
	if contract.IsDefaultInstance(s.i.name) {
		return machine
	}
	return machine + `\` + s.i.name
}

// machineName is SERVERPROPERTY('MachineName'): the computer's name, or on a
// failover cluster instance its virtual server's name.
func (i *Instance) machineName() string {
	if v, _ := i.virtualName.Load().(string); v != "" {
		return v
	}
	return i.h.computer
}

func (s sqlHandler) Version() (uint8, uint8, uint16) {
	v := s.i.ver
	return uint8(v.Major), uint8(v.Minor), uint16(v.Build)
}

func (s sqlHandler) findLogin(user string) (LoginConfig, bool) {
	for _, l := range s.i.cfg.Logins {
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
func (s sqlHandler) Login(_ context.Context, l tds.Login) *tds.SQLError {
	s.i.countConnection(l.AppName)
	if !s.i.Ready() {
		return &tds.SQLError{Number: 17187, State: 1, Class: 16, Message: "SQL Server is not ready to accept new client connections. Wait a few minutes before trying again."}
	}
	failed := &tds.SQLError{Number: contract.SQLErrLoginFailed, State: 1, Class: 14, Message: fmt.Sprintf("Login failed for user '%s'.", l.User)}
	lc, ok := s.findLogin(l.User)
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
// (sqlparse.go) and the database statements of the zeroing model (sqlddl.go,
// zeroing.go), with SQL Server's errors for anything else. The provider's queries
// (contract.Queries) are SELECTs of that subset.
func (s sqlHandler) Batch(ctx context.Context, l tds.Login, query string) ([]tds.ResultSet, *tds.SQLError) {
	i := s.i
	if !i.Ready() {
		return nil, &tds.SQLError{Number: 17187, State: 1, Class: 16, Message: "SQL Server is not ready to accept new client connections. Wait a few minutes before trying again."}
	}
	lc, _ := s.findLogin(l.User)
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
			rs, err = i.runSelect(lc, vars, st)
		case declareStmt:
			if _, dup := vars[st.name]; dup {
				err = sqlErr(134, 15, 1, st.line, "The variable name '%s' has already been declared. Variable names must be unique within a query batch or stored procedure.", st.name)
				break
			}
			vars[st.name] = &sqlVar{val: st.init}
			continue // no result set
		case execStmt:
			if err = i.execProc(ctx, l, vars, st); err == nil {
				continue // the return status travels as RETURNSTATUS, not a result set
			}
		case createDBStmt:
			err = i.createDatabase(ctx, lc, st)
		case alterFileStmt:
			err = i.alterFile(ctx, lc, st)
		case dropDBStmt:
			err = i.dropDatabases(lc, st)
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
