package tds

import (
	"context"
	"net"
	"time"
)

// ColumnType is a TDS column type the endpoint can send.
type ColumnType int

const (
	TypeNVarChar         ColumnType = iota + 1 // NVARCHARTYPE (0xE7); Column.Size is the character length
	TypeInt                                    // INTNTYPE (0x26) length 4
	TypeBigInt                                 // INTNTYPE (0x26) length 8
	TypeBit                                    // BITNTYPE (0x68)
	TypeDateTimeOffset                         // DATETIMEOFFSETNTYPE (0x2B); Column.Scale 0-7
	TypeTinyInt                                // INTNTYPE (0x26) length 1: 0-255
	TypeUniqueIdentifier                       // GUIDTYPE (0x24); the value is a string "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
	TypeVariant                                // SSVARIANTTYPE (0x62), what SERVERPROPERTY returns; the value is a string (nvarchar base) or an int32 (int base)
	TypeSmallInt                               // INTNTYPE (0x26) length 2: -32768-32767
)

// Name is the type's name in T-SQL (nvarchar, int, ...), as SQL Server's
// messages spell it.
func (t ColumnType) Name() string {
	switch t {
	case TypeNVarChar:
		return "nvarchar"
	case TypeInt:
		return "int"
	case TypeBigInt:
		return "bigint"
	case TypeTinyInt:
		return "tinyint"
	case TypeSmallInt:
		return "smallint"
	case TypeBit:
		return "bit"
	case TypeDateTimeOffset:
		return "datetimeoffset"
	case TypeUniqueIdentifier:
		return "uniqueidentifier"
	case TypeVariant:
		return "sql_variant"
	}
	return "unknown"
}

// Column describes one result column.
type Column struct {
	Name     string
	Type     ColumnType
	Size     int // characters, for TypeNVarChar
	Scale    int // for TypeDateTimeOffset
	Nullable bool
}

// ResultSet is one set of rows. Row values are nil (NULL), string, int32, int64, bool
// or time.Time, matching the column's type (a string for TypeUniqueIdentifier, a
// string or an int32 for TypeVariant).
//
// A ResultSet with no columns (and no rows) is a statement that returns none, such
// as CREATE DATABASE: the stream carries only its DONE.
type ResultSet struct {
	Columns []Column
	Rows    [][]any
}

// SQLError is a server error message (ERROR token, 0xAA).
type SQLError struct {
	Number  int32
	State   uint8
	Class   uint8
	Message string
	Line    int32
}

func (e *SQLError) Error() string { return e.Message }

// Login is what the client sent in LOGIN7.
type Login struct {
	User     string
	Password string
	Database string
	AppName  string
	HostName string
	// Encrypted is set by the endpoint when the connection runs over TLS
	// (encrypt=strict, or encrypt=true negotiated in PRELOGIN).
	Encrypted bool
	// Integrated: a Windows logon (SSPI) that Options.SSPI accepted; User is then
	// the Windows account, DOMAIN\user, and Password is empty. The Handler decides
	// whether that account has a login.
	Integrated bool
	// Mechanism is how an integrated logon authenticated: "Kerberos" or "NTLM"
	// (sys.dm_exec_connections.auth_scheme); "" for a SQL login.
	Mechanism string
	// Session is the connection's session id (@@SPID), set by the endpoint: one per
	// connection, from 51 up, never reused while the endpoint runs.
	Session int
}

// SSPI is the host's security package behind integrated logons (LOGIN7 with
// fIntSecurity): SQL Server hands the client's tokens to Windows' Negotiate
// package and answers with what it returns, until the context is complete.
type SSPI interface {
	// NewContext starts the security context of one connection from client.
	NewContext(client net.Addr) SSPIContext
}

// SSPIContext is one connection's security context.
type SSPIContext interface {
	// Accept consumes one client token (LOGIN7's SSPI field, then each SSPI
	// message) and returns the token to send back (nil: none). When the context
	// is complete, done is set and account is the Windows account (DOMAIN\user)
	// and mechanism "Kerberos" or "NTLM". An error refuses the logon: the client
	// gets error 18452, the reason goes only to the server's log, as SQL Server
	// writes error 17806 ("SSPI handshake failed ...") to its error log.
	Accept(token []byte) (reply []byte, account, mechanism string, done bool, err error)
}

// SessionEnder is a Handler that holds state per session (application locks owned
// by the session): the endpoint tells it when a connection's session ends (the
// client logged out, the connection dropped, or the endpoint closed it).
type SessionEnder interface {
	SessionEnded(session int)
}

// Handler is the SQL Server behind the endpoint. It is asked about every login and
// every batch; the wire protocol is the endpoint's job.
type Handler interface {
	// ServerName is the name sent in ENVCHANGE/LOGINACK and error tokens (e.g. SQL01 or SQL01\NAMED).
	ServerName() string
	// Version is the product version sent in LOGINACK, e.g. 16.0.4135.
	Version() (major, minor uint8, build uint16)
	// Login checks credentials; a non-nil error is sent as the login failure
	// (18456, class 14) and the connection is closed.
	Login(ctx context.Context, l Login) *SQLError
	// Batch runs one SQL batch; an error is sent as an ERROR token with DONE status error.
	Batch(ctx context.Context, l Login, sql string) ([]ResultSet, *SQLError)
}

// Clock lets tests pin time; nil means time.Now.
type Clock func() time.Time
