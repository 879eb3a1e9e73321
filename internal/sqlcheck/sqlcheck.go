// Package sqlcheck asks SQL Server itself whether Instant File Initialization is on,
// through go-mssqldb.
package sqlcheck

import (
	"errors"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// Config holds the SQL credentials and TLS settings shared by every instance.
type Config struct {
	Username string
	Password string
	Encrypt  string // EncryptStrict, EncryptTrue or EncryptDisable; "": DefaultEncrypt (SetDefaults)
	// Auth is the login kind: AuthSQL, AuthNTLM or AuthKerberos; "": DefaultAuth.
	// It must agree with Username (Problems).
	Auth string
	// Kerberos (AuthKerberos) logs on with Password, else the Keytab of Username's
	// keys, else the credential cache (KRB5CCNAME, after kinit), for the SPN (""
	// is DefaultSPN, MSSQLSvc/<host>:<port>), with the KDCs of Krb5Conf (""
	// is KRB5_CONFIG, then /etc/krb5.conf).
	Keytab                 string
	SPN                    string
	Krb5Conf               string
	CACert                 []byte // PEM
	TrustServerCertificate bool
	TLSServerName          string // optional override of the name checked in the certificate
	// AppName is the connection's application name (LOGIN7 AppName; program_name in
	// sys.dm_exec_sessions), "terraform-provider-mssqlifi/<version>"; "": without the
	// version.
	AppName string
	// Log receives the checks' log lines (never a password); nil: none.
	Log contract.Logger
}

// WithAppName returns a copy of c with AppName set, or nil when c is nil (no SQL
// credentials configured).
func (c *Config) WithAppName(name string) *Config {
	if c == nil {
		return nil
	}
	cp := *c
	cp.AppName = name
	return &cp
}

// The types a Checker works with live in internal/contract, beside contract.Host,
// so that the converge engine drives SQL Server without linking go-mssqldb.
type (
	Checker = contract.SQLChecker
	Target  = contract.SQLTarget
	Report  = contract.SQLReport
	Replica = contract.Replica
	Request = contract.Request
)

// DefaultNoTDSLimit is how long WaitReady waits for a TDS answer from a port not
// seen answering TDS before. SQL Server listens within seconds of its start, well
// before recovery ends, so a port that gives no TDS answer after this long is the
// wrong port (issue 14: a wrong sql_port that answered, but not with TDS, waited
// the whole timeout and blamed recovery). An apply with a wrong sql_port so ends
// within a minute.
const DefaultNoTDSLimit = 25 * time.Second

// AnsweredTDS reports whether err came from SQL Server itself (an error it sent:
// a failed login, a permission or a query error): the port is SQL Server's.
// (contract.SQLServerAnswered asks the same of any error, without this package.)
func AnsweredTDS(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.AnsweredTDS()
}
