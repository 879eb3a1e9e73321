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
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
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
	// KindWrongInstance: SQL Server at the port is another instance than the
	// Target's (SERVERPROPERTY('InstanceName')).
	KindWrongInstance
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
	SettingPort   // Target.Port
	SettingAuth   // the login kind (Config.Auth)
	SettingKeytab // Config.Keytab (Kerberos)
	SettingSPN    // Config.SPN (Kerberos)
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

	// logon: SQL Server (or the KDC, for Kerberos) refused the login's credential
	// or the login itself (LogonFailed).
	logon bool
}

// LogonFailed reports whether the login could not log on: SQL Server refused it
// (error 18456: an unknown or disabled login, a wrong password, a SQL login on an
// instance in Windows authentication mode, a Windows account without a login;
// error 18452: a Windows logon its security package refused), or for Kerberos the
// KDC refused the account or the ticket (wrong password or keytab, unknown account
// or SPN, expired credentials, clock skew). A KDC or server that does not answer,
// and every other failure, is not a logon failure: nothing was said of the login.
func (e *Error) LogonFailed() bool { return e.logon }

// AnsweredTDS: SQL Server itself sent this error (a failed login, a permission or
// a query error, or any error with a number), so the port is SQL Server's.
func (e *Error) AnsweredTDS() bool {
	return e.Number != 0 || e.Kind == KindAuth || e.Kind == KindPermission || e.Kind == KindQuery
}

func (e *Error) Error() string {
	where := e.Target.Instance
	port := e.Target.Port
	if port == 0 {
		port = DefaultPort
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

// sqlMessage is SQL Server's message of err (the server's text, shown with its
// control characters escaped), else err's.
func sqlMessage(err error) string {
	var m interface{ SQLErrorMessage() string }
	if errors.As(err, &m) {
		return safetext.Escape(m.SQLErrorMessage())
	}
	return safetext.Escape(err.Error())
}

func (c *checker) classify(ctx context.Context, t Target, err error) *Error {
	e := &Error{Target: t, Err: err, Number: sqlNumber(err), Encrypt: c.cfg.Encrypt}
	if e.Number == 0 && c.cfg.Auth == AuthKerberos {
		if ke := c.kerberosError(t, err); ke != nil {
			return ke
		}
	}
	switch e.Number {
	case contract.SQLErrLoginFailed:
		return c.loginFailed(t, e)
	case sqlErrUntrustedDomain:
		return c.windowsLogonRefused(t, e)
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

// sqlErrUntrustedDomain is SQL Server's error 18452, "Login failed. The login is
// from an untrusted domain and cannot be used with Windows authentication.": its
// security package refused a Windows logon (SSPI), before any login was looked up.
const sqlErrUntrustedDomain = 18452

// account is the login's name as the user knows it: the user name, or for
// Kerberos from the credential cache, the cache's principal.
func (c *checker) account() string {
	if c.cfg.Username != "" || c.cfg.Auth != AuthKerberos {
		return c.cfg.Username
	}
	if l, err := c.cfg.kerberosLogon(); err == nil {
		return l.principal
	}
	return "the credential cache's principal"
}

// loginFailed is error 18456 with what to check for the login kind: SQL Server
// authenticated nobody (a SQL login), or a Windows account it has no login for.
func (c *checker) loginFailed(t Target, e *Error) *Error {
	e.Kind, e.logon = KindAuth, true
	who := c.account()
	e.Message = fmt.Sprintf("login failed for %s (error 18456)", who)
	switch c.cfg.Auth {
	case AuthNTLM:
		e.Setting = SettingUsername
		e.Hint = fmt.Sprintf("Check that the account is written DOMAIN\\user (HOST\\user for a local account) with its password, and that "+
			"a Windows login exists on the instance for it, and is enabled: CREATE LOGIN [%s] FROM WINDOWS, then GRANT VIEW SERVER STATE", who)
	case AuthKerberos:
		e.Setting = SettingUsername
		e.Message = fmt.Sprintf("Kerberos authenticated %s for %s, but the login failed (error 18456)", who, c.cfg.SPNFor(t))
		e.Hint = "SQL Server has no enabled Windows login for that account: create it with CREATE LOGIN [DOMAIN\\user] FROM WINDOWS " +
			"(the domain's NetBIOS name) and GRANT VIEW SERVER STATE, or log on as an account that has one"
	default:
		e.Setting = SettingPassword
		e.Hint = "Check that the SQL Server login exists and is enabled and that the password is right, and that the instance allows " +
			"SQL Server authentication (mixed mode: \"SQL Server and Windows Authentication mode\"); a Windows account logs on with NTLM or Kerberos instead"
	}
	return e
}

// windowsLogonRefused is error 18452: SQL Server's security package refused the
// Windows logon (SQL Server logs why, as error 17806, only in its error log).
func (c *checker) windowsLogonRefused(t Target, e *Error) *Error {
	e.Kind, e.logon = KindAuth, true
	who := c.account()
	switch c.cfg.Auth {
	case AuthKerberos:
		spn := c.cfg.SPNFor(t)
		e.Setting = SettingSPN
		e.Message = fmt.Sprintf("SQL Server refused the Kerberos ticket of %s for %s (error 18452, the login is from an untrusted domain)", who, spn)
		e.Hint = fmt.Sprintf("The ticket was issued for %s, so the KDC knows that SPN, but SQL Server could not accept it: the SPN is probably "+
			"registered for another account than the SQL Server service's (setspn -Q %s names it; the service account must hold it, setspn -S), "+
			"or the service's keys are stale, or the clocks of this machine, the KDC and the server differ by more than 5 minutes. "+
			"The SQL Server error log names the cause (error 17806, SSPI handshake failed)", spn, spn)
	case AuthNTLM:
		e.Setting = SettingUsername
		e.Message = fmt.Sprintf("SQL Server refused the NTLM logon of %s (error 18452, the login is from an untrusted domain)", who)
		e.Hint = "Check the DOMAIN\\user form and the password, that the server's domain trusts the account's domain, and that the domain does not " +
			"restrict NTLM (Network security: Restrict NTLM); where it does, use Kerberos. The SQL Server error log names the cause (error 17806)"
	default:
		e.Setting = SettingUsername
		e.Message = fmt.Sprintf("SQL Server refused the login %s as a Windows logon (error 18452)", who)
		e.Hint = "A SQL Server login logs on with its password; check the user name"
	}
	return e
}
