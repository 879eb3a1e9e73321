package tds

import (
	"context"
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
