package sqlcheck

import (
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
)

// SQL Server's login defaults, the only place they are decided: New applies them
// through SetDefaults, and callers that show or check the effective values call
// SetDefaults on a copy of their Config.
const (
	// DefaultPort is the default instance's TCP port (a named instance's port comes
	// from the host).
	DefaultPort = 1433
	// DefaultEncrypt is TLS with the certificate verified; "strict" is TDS 8.0's
	// TLS-first handshake, "disable" none at all.
	DefaultEncrypt = EncryptTrue
	// DefaultAuth is a SQL Server login.
	DefaultAuth = AuthSQL
)

// Encryption modes Config.Encrypt accepts.
const (
	EncryptStrict  = "strict"
	EncryptTrue    = "true"
	EncryptDisable = "disable"
)

// Login kinds Config.Auth accepts. go-mssqldb logs on to Windows (NTLM) exactly
// when the user name has a backslash, so the kind and the name must agree.
const (
	AuthSQL      = "sql"      // a SQL Server login
	AuthNTLM     = "ntlm"     // a Windows account, DOMAIN\user
	AuthKerberos = "kerberos" // a Windows account by Kerberos: DOMAIN\user, user@REALM, or the credential cache's
)

// Sentinel errors of Problems and Warnings; each finding wraps one (errors.Is).
var (
	ErrNoUsername      = errors.New("no SQL username given")
	ErrNoPassword      = errors.New("no SQL password given")
	ErrEncrypt         = errors.New("encryption mode not supported")
	ErrCACert          = errors.New("the CA certificate holds no PEM certificate")
	ErrUnsupportedAuth = errors.New("the login kind is not one of sql, ntlm, kerberos")
	// ErrKerberosOnly: Keytab or SPN set for a login kind other than AuthKerberos,
	// which would ignore them.
	ErrKerberosOnly = errors.New("used only with the login kind kerberos")
	// ErrSPN: SPN is not of the form service/host[:port].
	ErrSPN = errors.New("not a service principal name")
	// ErrAuthMismatch: a backslash in the user name makes a Windows logon, which
	// needs AuthNTLM, and AuthNTLM needs one.
	ErrAuthMismatch = errors.New("the login kind does not match the user name")

	// WarnUnverifiedCertificate: TrustServerCertificate accepts any certificate.
	WarnUnverifiedCertificate = errors.New("SQL Server certificates are not verified")
	// WarnClearTextPassword: Encrypt "disable" sends the login without TLS.
	WarnClearTextPassword = errors.New("the SQL password travels in clear text")
)

// Finding is one problem or warning about a Config: which setting, and what
// (wrapping one of the sentinels above).
type Finding struct {
	Setting Setting
	Err     error
}

func (f Finding) Error() string { return f.Err.Error() }
func (f Finding) Unwrap() error { return f.Err }

// SetDefaults fills what is unset (Encrypt and Auth) and lower-cases what is set.
func (c *Config) SetDefaults() {
	c.Encrypt = strings.ToLower(strings.TrimSpace(c.Encrypt))
	if c.Encrypt == "" {
		c.Encrypt = DefaultEncrypt
	}
	c.Auth = strings.ToLower(strings.TrimSpace(c.Auth))
	if c.Auth == "" {
		c.Auth = DefaultAuth
	}
}

// WindowsLogon reports whether go-mssqldb logs on to Windows with this user name.
func WindowsLogon(username string) bool { return strings.Contains(username, `\`) }

// Problems are what makes c unusable, every one of them (judged with c's defaults
// filled in).
func (c Config) Problems() []Finding {
	c.SetDefaults()
	var out []Finding
	bad := func(s Setting, sentinel error, format string, args ...any) {
		out = append(out, Finding{Setting: s, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)})
	}
	kerberos := c.Auth == AuthKerberos
	ccache := kerberos && c.Password == "" && c.Keytab == "" // the credential cache names the user
	switch {
	case c.Username == "" && kerberos && !ccache:
		bad(SettingUsername, ErrNoUsername, "give the Windows account (DOMAIN\\user or user@REALM) whose password or keytab is set, with VIEW SERVER STATE")
	case c.Username == "" && !kerberos:
		bad(SettingUsername, ErrNoUsername, "give a login with VIEW SERVER STATE")
	}
	switch c.Encrypt {
	case EncryptStrict, EncryptTrue, EncryptDisable:
	default:
		bad(SettingEncrypt, ErrEncrypt, "%q is not one of %s, %s, %s", c.Encrypt, EncryptStrict, EncryptTrue, EncryptDisable)
	}
	if len(c.CACert) > 0 && !x509.NewCertPool().AppendCertsFromPEM(c.CACert) {
		bad(SettingCACert, ErrCACert, "give it PEM encoded (-----BEGIN CERTIFICATE-----)")
	}
	windows := WindowsLogon(c.Username)
	switch c.Auth {
	case AuthSQL:
		if windows {
			bad(SettingAuth, ErrAuthMismatch, "%q has a backslash, which makes a Windows logon (NTLM), but the kind is %q", c.Username, c.Auth)
		}
	case AuthNTLM:
		if !windows && c.Username != "" {
			bad(SettingAuth, ErrAuthMismatch, "%q is not a Windows account written DOMAIN\\user, but the kind is %q", c.Username, c.Auth)
		}
	case AuthKerberos:
		if c.SPN != "" && !validSPN(c.SPN) {
			bad(SettingSPN, ErrSPN, "%q: write it MSSQLSvc/<fqdn>:<port> (or MSSQLSvc/<fqdn>:<instance name>)", c.SPN)
		}
	default:
		bad(SettingAuth, ErrUnsupportedAuth, "%q", c.Auth)
	}
	if !kerberos {
		if c.Keytab != "" {
			bad(SettingKeytab, ErrKerberosOnly, "the login kind is %q", c.Auth)
		}
		if c.SPN != "" {
			bad(SettingSPN, ErrKerberosOnly, "the login kind is %q", c.Auth)
		}
	}
	if c.Password == "" && !kerberos {
		bad(SettingPassword, ErrNoPassword, "give the password of %q", c.Username)
	}
	return out
}

// Warnings are the settings of c that work but weaken security (judged with c's
// defaults filled in).
func (c Config) Warnings() []Finding {
	c.SetDefaults()
	var out []Finding
	if c.TrustServerCertificate {
		out = append(out, Finding{Setting: SettingTrustServerCertificate, Err: WarnUnverifiedCertificate})
	}
	if c.Encrypt == EncryptDisable {
		out = append(out, Finding{Setting: SettingEncrypt, Err: WarnClearTextPassword})
	}
	return out
}

// Validate reports a configuration the checker cannot use, as one KindConfig *Error
// whose Setting is the first problem's.
func (c Config) Validate() error {
	problems := c.Problems()
	c.SetDefaults()
	if len(problems) == 0 {
		return nil
	}
	msgs := make([]string, len(problems))
	for i, p := range problems {
		msgs[i] = p.Error()
	}
	return &Error{Kind: KindConfig, Setting: problems[0].Setting, Encrypt: c.Encrypt, Message: "invalid SQL configuration: " + strings.Join(msgs, "; "),
		Err: problems[0]}
}

// validSPN: service/host with both parts non-empty and no spaces.
func validSPN(spn string) bool {
	class, host, ok := strings.Cut(spn, "/")
	return ok && class != "" && host != "" && !strings.ContainsAny(spn, " \t")
}
