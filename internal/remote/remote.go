// Package remote runs the contract's host operations on a Windows host over WinRM.
// The Terraform layer sees typed parameters and results, never XML, base64 or
// PowerShell.
package remote

import (
	"context"
	"fmt"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// Host runs the operations of internal/contract on one host.
type Host interface {
	ReadInstance(ctx context.Context, p contract.ReadInstanceParams) (*contract.ReadInstanceResult, error)
	SetRight(ctx context.Context, p contract.SetRightParams) (*contract.SetRightResult, error)
	RestartInstance(ctx context.Context, p contract.RestartInstanceParams) (*contract.RestartInstanceResult, error)
}

// Config says how to reach one host's WinRM listener. Connections go straight to the
// host: HTTP proxies (HTTP_PROXY, HTTPS_PROXY) are not used.
type Config struct {
	Host          string // DNS name or IP address
	Port          int    // 0: 5986 with HTTPS, 5985 without
	HTTPS         bool
	Insecure      bool   // skip TLS verification (only when the user asked)
	CACert        []byte // PEM; empty: system roots
	TLSServerName string // overrides the name checked in the host's certificate
	Auth          string // "ntlm", "basic" or "kerberos"
	Username      string // with Kerberos: user@REALM or REALM\user; may be empty with a credential cache
	Password      string
	// Kerberos (auth = "kerberos"): a keytab instead of a password, else the
	// credential cache of KRB5CCNAME; krb5.conf (default KRB5_CONFIG, then
	// /etc/krb5.conf); the service principal (default HTTP/<Host>); the realm
	// (default: from Username).
	Keytab   string
	Krb5Conf string
	SPN      string
	Realm    string
	Timeout  time.Duration // per WinRM request (operation timeout); 0: 60s
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
)

// Error is every error a Host returns.
type Error struct {
	Host string
	Op   contract.Operation
	Kind ErrorKind
	// Code is the script's error code for KindScript (contract.ScriptError.Error,
	// e.g. "clustered", "not_found"), or "" for an unforeseen PowerShell error.
	Code     string
	ExitCode int
	Message  string // what failed, readable (CLIXML already decoded)
	Hint     string // what to do next
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
