// Package remote runs the contract's host operations on a Windows host over WinRM.
// The Terraform layer sees typed parameters and results, never XML, base64 or
// PowerShell.
package remote

import (
	"fmt"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// Host runs the operations of internal/contract on one host.
type Host = contract.Host

// Config says how to reach one host's WinRM listener. Connections go straight to the
// host: HTTP proxies (HTTP_PROXY, HTTPS_PROXY) are not used.
type Config struct {
	Host          string // DNS name or IP address
	Port          int    // 0: DefaultHTTPSPort with HTTPS, DefaultHTTPPort without (SetDefaults)
	HTTPS         bool
	Insecure      bool   // skip TLS verification (only when the user asked)
	CACert        []byte // PEM; empty: system roots
	TLSServerName string // overrides the name checked in the host's certificate
	Auth          string // AuthNegotiate, AuthNTLM, AuthKerberos or AuthBasic; "": DefaultAuth
	// Username: DOMAIN\user or user@REALM for domain accounts. With Kerberos from a
	// credential cache it may be empty (the cache's principal logs on).
	Username string
	Password string
	Timeout  time.Duration // per WinRM request (operation timeout); 0: DefaultTimeout
	// SPN is the service principal name of the host's WinRM service: the Kerberos
	// ticket is asked for it, and the NTLM logon is bound to it (MsvAvTargetName);
	// "": HTTP/<Host>. Set it when the host is reached by IP address or alias.
	SPN string
	// Kerberos: a keytab with the user's keys instead of a password, else the
	// credential cache (KRB5CCNAME); krb5.conf (default KRB5_CONFIG, then
	// /etc/krb5.conf); the realm (default: from Username, else krb5.conf's
	// default_realm).
	Keytab   string
	Krb5Conf string
	Realm    string
	// AllowNTLMFallback: auth "negotiate" may use NTLM when Kerberos cannot be had
	// (no realm, the KDC does not answer, no ticket for the SPN); false makes that an
	// error. nil: DefaultAllowNTLMFallback (SetDefaults).
	AllowNTLMFallback *bool
	// AllowUnencrypted lets auth "basic" over plain HTTP send the password and the
	// messages in clear text. Negotiate, NTLM and Kerberos over HTTP always encrypt;
	// HTTPS needs no more.
	AllowUnencrypted bool
	// UserAgent is the HTTP User-Agent header of every request, so the host's
	// administrators can tell this provider's requests apart
	// (contract.UserAgent(version)); "": contract.UserAgent("").
	UserAgent string
	// Log receives the operations' log lines (never a password); nil: none.
	Log contract.Logger
	// Answer, when set, receives each operation's raw answer as the host sent it
	// (exit code, stdout, stderr), before it is decoded: the real-host suite records
	// them (internal/hostsuite/transcript). It is not called when no answer came.
	Answer func(op contract.Operation, params any, exitCode int, stdout, stderr []byte)
}

// ErrorKind classifies a failure so callers can say what to do next.
type ErrorKind int

const (
	KindUnknown     ErrorKind = iota
	KindAuth                  // wrong user name or password, or the user may not use WinRM
	KindUnreachable           // connection refused, no route, DNS failure
	KindTLS                   // certificate verification failed
	KindTimeout               // the context deadline or the operation timeout passed
	KindProtocol              // the endpoint answered something that is not WS-Management
	KindScript                // the operation's script failed on the host (see Code)
	KindConfig                // the Config cannot work (see Setting); nothing was sent
)

// Error is every error a Host returns. It states facts and host-side remedies only;
// which of the caller's own settings to change is the caller's to say, from Kind,
// Setting and the facts below.
type Error struct {
	Host string
	Op   contract.Operation
	Kind ErrorKind
	// Setting is the Config field most likely at fault (SettingNone: none, or unknown).
	Setting Setting
	// The connection's settings, as used (after SetDefaults).
	Port  int
	HTTPS bool
	Auth  string
	User  string
	// Code is the script's error code for KindScript (contract.ScriptError.Error,
	// e.g. "clustered", "not_found"), or "" for an unforeseen PowerShell error.
	Code     string
	ExitCode int
	// HTTPStatus is the WinRM listener's HTTP status when it answered with an error.
	HTTPStatus int
	// Fault is the WSManFault Code of a WS-Management fault the host answered
	// (fault.go), "" when the answer carried none.
	Fault string
	// Attempts is how often the operation was sent (retry.go); 0 or 1: once.
	Attempts int
	Message  string // what failed, readable (CLIXML already decoded)
	Hint     string // what to do next on the host, in this package's terms
	Err      error  // the underlying error, if any
}

func (e *Error) Error() string {
	var msg string
	switch {
	case e.Op != "":
		msg = fmt.Sprintf("%s on %s: %s", e.Op, e.Host, e.Message)
	case e.Host != "":
		msg = fmt.Sprintf("WinRM host %s: %s", e.Host, e.Message)
	default:
		msg = e.Message
	}
	if e.Hint != "" {
		msg += ". " + e.Hint
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }
