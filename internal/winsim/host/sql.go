package host

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds"
)

// TDSHandler returns the instance's SQL side for the TDS endpoint.
func (i *Instance) TDSHandler() tds.Handler { return sqlHandler{i} }

type sqlHandler struct{ i *Instance }

// ServerName is COMPUTER for the default instance, COMPUTER\NAME for a named one.
func (s sqlHandler) ServerName() string {
	if IsDefaultInstance(s.i.name) {
		return s.i.h.computer
	}
	return s.i.h.computer + `\` + s.i.name
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
// the server's log).
func (s sqlHandler) Login(_ context.Context, l tds.Login) *tds.SQLError {
	s.i.countConnection()
	if !s.i.Ready() {
		return &tds.SQLError{Number: 17187, State: 1, Class: 16, Message: "SQL Server is not ready to accept new client connections. Wait a few minutes before trying again."}
	}
	lc, ok := s.findLogin(l.User)
	if !ok || lc.Password != l.Password {
		return &tds.SQLError{Number: contract.SQLErrLoginFailed, State: 1, Class: 14, Message: fmt.Sprintf("Login failed for user '%s'.", l.User)}
	}
	return nil
}

// normalizeSQL collapses whitespace, drops a trailing semicolon and lower-cases, so
// a query matches whatever its formatting.
func normalizeSQL(q string) string {
	q = strings.Join(strings.FieldsFunc(q, unicode.IsSpace), " ")
	q = strings.TrimSpace(strings.TrimSuffix(q, ";"))
	return strings.ToLower(q)
}

// Batch answers exactly the provider's queries (contract.Queries).
func (s sqlHandler) Batch(_ context.Context, l tds.Login, query string) ([]tds.ResultSet, *tds.SQLError) {
	i := s.i
	if !i.Ready() {
		return nil, &tds.SQLError{Number: 17187, State: 1, Class: 16, Message: "SQL Server is not ready to accept new client connections. Wait a few minutes before trying again."}
	}
	lc, _ := s.findLogin(l.User)
	switch normalizeSQL(query) {
	case normalizeSQL(contract.QueryServerProperties):
		return i.serverProperties(), nil
	case normalizeSQL(contract.QueryServerServices):
		if !lc.CanViewServerState() {
			return nil, viewServerStateDenied()
		}
		return i.serverServices()
	case "select 1":
		// database/sql's Ping in go-mssqldb sends this batch; every SQL Server answers it.
		return []tds.ResultSet{{Columns: []tds.Column{{Name: "", Type: tds.TypeInt}}, Rows: [][]any{{int32(1)}}}}, nil
	case normalizeSQL(contract.QueryEncryptedDatabases):
		if !lc.CanViewServerState() {
			return nil, viewServerStateDenied()
		}
		return i.encryptionKeys(), nil
	}
	short := strings.Join(strings.Fields(query), " ")
	if len(short) > 200 {
		short = short[:200] + "..."
	}
	return nil, &tds.SQLError{Number: 50000, State: 1, Class: 16, Line: 1,
		Message: "winsim does not model this query: " + short + " (it answers only the provider's queries in internal/contract/sql.go)"}
}

func viewServerStateDenied() *tds.SQLError {
	return &tds.SQLError{Number: contract.SQLErrPermissionDenied, State: 1, Class: 14, Line: 1,
		Message: "VIEW SERVER STATE permission was denied on object 'server', database 'master'."}
}

func (i *Instance) serverProperties() []tds.ResultSet {
	i.h.mu.Lock()
	defer i.h.mu.Unlock()
	clustered := int32(0)
	if i.cfg.Clustered {
		clustered = 1
	}
	var instName any
	if !IsDefaultInstance(i.name) {
		instName = i.name
	}
	return []tds.ResultSet{{
		Columns: []tds.Column{
			{Name: "product_version", Type: tds.TypeNVarChar, Size: 128, Nullable: true},
			{Name: "product_level", Type: tds.TypeNVarChar, Size: 128, Nullable: true},
			{Name: "edition", Type: tds.TypeNVarChar, Size: 128, Nullable: true},
			{Name: "is_clustered", Type: tds.TypeInt, Nullable: true},
			{Name: "instance_name", Type: tds.TypeNVarChar, Size: 128, Nullable: true},
		},
		Rows: [][]any{{i.ver.String(), i.level, i.edition, clustered, instName}},
	}}
}

// serverServices answers sys.dm_server_services: the Engine row with the IFI its process
// has, the Agent row with NULL there
// (docs/design/windows-behaviour.md#verifying-ifi-through-sql-server: Engine rows only).
// Builds without the column answer error 207.
func (i *Instance) serverServices() ([]tds.ResultSet, *tds.SQLError) {
	if !i.ver.hasIFIColumn() {
		return nil, &tds.SQLError{Number: contract.SQLErrInvalidColumn, State: 1, Class: 16, Line: 1,
			Message: "Invalid column name 'instant_file_initialization_enabled'."}
	}
	h := i.h
	h.mu.Lock()
	defer h.mu.Unlock()
	yn := func(b bool) string {
		if b {
			return "Y"
		}
		return "N"
	}
	rs := tds.ResultSet{Columns: []tds.Column{
		{Name: "servicename", Type: tds.TypeNVarChar, Size: 256},
		{Name: "process_id", Type: tds.TypeInt, Nullable: true},
		{Name: "last_startup_time", Type: tds.TypeDateTimeOffset, Scale: 7, Nullable: true},
		{Name: "service_account", Type: tds.TypeNVarChar, Size: 256},
		{Name: "is_clustered", Type: tds.TypeNVarChar, Size: 1},
		{Name: "instant_file_initialization_enabled", Type: tds.TypeNVarChar, Size: 1, Nullable: true},
	}}
	row := func(s *service, ifi any) []any {
		var pid, started any
		if s.pid != 0 {
			pid = int32(s.pid)
			started = s.started.In(h.loc)
		}
		return []any{s.display, pid, started, s.account, yn(i.cfg.Clustered), ifi}
	}
	var ifi any = "N"
	if i.proc != nil {
		ifi = yn(i.proc.IFI)
	}
	rs.Rows = append(rs.Rows, row(i.engine, ifi))
	if i.agent != nil {
		rs.Rows = append(rs.Rows, row(i.agent, nil))
	}
	return []tds.ResultSet{rs}, nil
}

// encryptionKeys answers sys.dm_database_encryption_keys: tempdb and every TDE
// database, encryption_state 3 (encrypted).
func (i *Instance) encryptionKeys() []tds.ResultSet {
	rs := tds.ResultSet{Columns: []tds.Column{
		{Name: "database_id", Type: tds.TypeInt},
		{Name: "database_name", Type: tds.TypeNVarChar, Size: 128, Nullable: true},
		{Name: "encryption_state", Type: tds.TypeInt, Nullable: true},
	}}
	for _, db := range i.databases() {
		if db.TDE {
			rs.Rows = append(rs.Rows, []any{int32(db.ID), db.Name, int32(3)})
		}
	}
	return []tds.ResultSet{rs}
}
