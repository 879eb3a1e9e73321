package sqlcheck

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// ErrorKind classifies a failure, so the provider can tell "cannot verify now" from
// "wrong password".
type ErrorKind int

const (
	KindUnknown     ErrorKind = iota
	KindConfig                // the SQL settings cannot work (bad encrypt value, unreadable CA)
	KindAuth                  // login failed (18456): wrong user or password, or the login is disabled
	KindUnreachable           // nothing accepts connections there (service stopped, firewall, wrong port)
	KindTLS                   // the server's certificate was not accepted, or TLS is not offered
	KindTimeout               // the context ended first
	KindPermission            // the login may not read the DMVs (error 300: VIEW SERVER STATE)
	KindQuery                 // another SQL error
)

// Setting names a Config field (or the Target's port), so the caller can tell its
// user which of its own settings to change; this package does not know how the
// caller spells them.
type Setting int

const (
	SettingNone Setting = iota
	SettingUsername
	SettingPassword
	SettingEncrypt
	SettingCACert
	SettingTrustServerCertificate
	SettingPort // Target.Port
)

// Error is every error a Checker returns. It states facts and remedies on the SQL
// Server side; which setting of the caller's to change follows from Kind and Setting.
type Error struct {
	Target Target
	Kind   ErrorKind
	// Setting is the setting most likely at fault (SettingNone: none, or unknown).
	Setting Setting
	// Encrypt is the encryption mode the connection used ("strict", "true", "disable").
	Encrypt string
	Number  int32 // SQL Server error number, when the server sent one
	Message string
	Hint    string
	Err     error
}

func (e *Error) Error() string {
	where := e.Target.Instance
	port := e.Target.Port
	if port == 0 {
		port = 1433
	}
	addr := net.JoinHostPort(e.Target.Host, strconv.Itoa(port))
	switch {
	case where == "" && e.Target.Host == "":
		where = "SQL Server"
	case where == "":
		where = "SQL Server at " + addr
	default:
		where = "SQL Server instance " + where + " at " + addr
	}
	msg := where + ": " + e.Message
	if e.Hint != "" {
		msg += ". " + e.Hint
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

type sqlNumbered interface{ SQLErrorNumber() int32 }

func sqlNumber(err error) int32 {
	var n sqlNumbered
	if errors.As(err, &n) {
		return n.SQLErrorNumber()
	}
	return 0
}

func sqlMessage(err error) string {
	var m interface{ SQLErrorMessage() string }
	if errors.As(err, &m) {
		return m.SQLErrorMessage()
	}
	return err.Error()
}

func (c *checker) classify(ctx context.Context, t Target, err error) *Error {
	e := &Error{Target: t, Err: err, Number: sqlNumber(err), Encrypt: c.cfg.encrypt()}
	switch e.Number {
	case contract.SQLErrLoginFailed:
		e.Kind = KindAuth
		e.Message = fmt.Sprintf("login failed for %s (error 18456)", c.cfg.Username)
		e.Setting = SettingPassword
		e.Hint = "The login must be a SQL Server login (Windows logins are not supported) that is enabled, " +
			"and the instance must allow SQL Server authentication (mixed mode)"
		return e
	case contract.SQLErrPermissionDenied:
		e.Kind = KindPermission
		e.Message = fmt.Sprintf("the login %s may not read sys.dm_server_services: %s", c.cfg.Username, sqlMessage(err))
		e.Setting = SettingUsername
		e.Hint = fmt.Sprintf("Grant it with: GRANT VIEW SERVER STATE TO [%s]", c.cfg.Username)
		return e
	}
	if e.Number != 0 {
		e.Kind = KindQuery
		e.Message = fmt.Sprintf("query failed with error %d: %s", e.Number, sqlMessage(err))
		return e
	}
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		e.Kind = KindTimeout
		e.Message = "no answer before the deadline"
		if ctx.Err() == nil {
			e.Message = "no answer in time"
		}
		e.Setting = SettingPort
		e.Hint = "Check that the SQL Server service runs and that the port is the instance's TCP port"
		return e
	}
	msg := err.Error()
	var certErrs = []any{new(x509.UnknownAuthorityError), new(x509.HostnameError), new(x509.CertificateInvalidError), new(*tls.CertificateVerificationError)}
	for _, target := range certErrs {
		if errors.As(err, target) {
			return tlsError(e, err)
		}
	}
	if strings.Contains(msg, "x509:") || strings.Contains(msg, "certificate") {
		return tlsError(e, err)
	}
	if strings.Contains(msg, "does not support encryption") {
		e.Kind = KindTLS
		e.Message = "the server does not support encryption"
		e.Setting = SettingEncrypt
		e.Hint = "Install a certificate for SQL Server, or connect without encryption (credentials then travel in clear text)"
		return e
	}
	var dnsErr *net.DNSError
	var opErr *net.OpError
	if errors.As(err, &dnsErr) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH) || (errors.As(err, &opErr) && opErr.Op == "dial") || strings.Contains(msg, "unable to open tcp connection") {
		e.Kind = KindUnreachable
		e.Message = "cannot connect: " + msg
		e.Setting = SettingPort
		e.Hint = "Check that the SQL Server service is running, that TCP/IP is enabled for the instance, that the port is the instance's TCP port and the firewall allows it"
		return e
	}
	if strings.Contains(msg, "EOF") || strings.Contains(msg, "connection reset") || strings.Contains(msg, "broken pipe") {
		e.Kind = KindUnreachable
		e.Message = "the connection was closed: " + msg
		e.Hint = "The service may be stopping or starting; try again"
		return e
	}
	e.Kind = KindUnknown
	e.Message = msg
	return e
}

func tlsError(e *Error, err error) *Error {
	e.Kind = KindTLS
	e.Message = "the server's TLS certificate was not accepted: " + err.Error()
	e.Setting = SettingCACert
	e.Hint = "Trust the CA that signed SQL Server's certificate, or (only for testing) trust the server's certificate without verification"
	if e.Encrypt == "strict" {
		e.Hint += "; with strict encryption (TDS 8.0) the certificate must name the host you connect to"
	}
	return e
}
