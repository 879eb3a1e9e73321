package remote

import (
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"
)

// WinRM's defaults, the only place they are decided: New applies them through
// SetDefaults, and callers that need the effective port or timeout call SetDefaults
// on a copy of their Config.
const (
	// DefaultHTTPPort and DefaultHTTPSPort are WinRM's listener ports ("winrm
	// quickconfig" makes the HTTP one; an HTTPS listener is made by hand).
	DefaultHTTPPort  = 5985
	DefaultHTTPSPort = 5986
	// DefaultHTTPS is the listener a caller uses when its user chose none: HTTP on
	// 5985, the one "winrm quickconfig" makes and a default domain host has, where
	// every message is encrypted by the Negotiate, Kerberos or NTLM logon and Basic is
	// refused unless AllowUnencrypted (Validate). HTTPS is the user's choice; over it
	// the certificate is verified unless Insecure. (Config.HTTPS is a plain bool, so
	// SetDefaults cannot tell unset from false: the caller that reads its user's
	// settings takes this value for unset.)
	DefaultHTTPS = false
	// DefaultAuth is Negotiate, what a default domain host's listener offers and
	// what Windows clients send: Kerberos when a ticket can be had, else NTLM
	// (kerberos.go). Basic is off in a WinRM service's defaults and works for local
	// accounts only.
	DefaultAuth = AuthNegotiate
	// DefaultTimeout is the WinRM operation timeout when Config.Timeout is 0.
	DefaultTimeout = 60 * time.Second
	// DefaultAllowNTLMFallback: "negotiate" uses NTLM when no Kerberos ticket can be
	// had, as Windows clients do; the plan says so (Host.Logon).
	DefaultAllowNTLMFallback = true
)

// Authentication schemes Config.Auth accepts.
const (
	AuthNegotiate = "negotiate"
	AuthNTLM      = "ntlm"
	AuthBasic     = "basic"
	AuthKerberos  = "kerberos"
)

// Sentinel errors of Validate; each error Validate returns wraps one of them (and is a
// *ConfigError naming the setting).
var (
	ErrNoHost     = errors.New("no host given")
	ErrNoUsername = errors.New("no WinRM username given")
	// ErrNoPassword: Basic and NTLM need a password (Kerberos can log on from a
	// keytab or the credential cache instead).
	ErrNoPassword      = errors.New("no WinRM password given")
	ErrUnsupportedAuth = errors.New("authentication scheme not supported")
	ErrPortRange       = errors.New("port out of range")
	ErrTimeout         = errors.New("timeout is negative")
	ErrCACert          = errors.New("the CA certificate holds no PEM certificate")
	// ErrClearText: Basic over plain HTTP would send the password in clear text.
	ErrClearText = errors.New("basic authentication over plain HTTP would send the password in clear text, so it was not sent")
	// ErrUnencryptedUnused: AllowUnencrypted means nothing with these settings.
	ErrUnencryptedUnused = errors.New("allowing unencrypted messages has no effect here")
	// ErrNTLMFallback: auth "negotiate" would use NTLM, and AllowNTLMFallback is false.
	ErrNTLMFallback = errors.New("negotiate would fall back to NTLM, which is not allowed")
	// ErrKerberosConfig: krb5.conf, the keytab, the credential cache or the realm
	// cannot be used (the error also wraps the *krb.Error that says why).
	ErrKerberosConfig = errors.New("the Kerberos configuration cannot be used")
)

// Sentinels of Warnings: settings that work but weaken security.
var (
	// WarnClearTextPassword: Basic over plain HTTP (allowed by AllowUnencrypted) puts
	// the password, base64-encoded, in every request.
	WarnClearTextPassword = errors.New("basic authentication over plain HTTP sends the password in clear text")
	// WarnClearTextMessages: AllowUnencrypted sends every script and result
	// unencrypted and unsigned.
	WarnClearTextMessages = errors.New("WinRM messages travel in clear text")
	// WarnUnverifiedCertificate: Insecure accepts any certificate over HTTPS.
	WarnUnverifiedCertificate = errors.New("WinRM certificates are not verified")
)

// Setting names a Config field, so a caller can tell its user which of its own
// settings to change without this package knowing how the caller spells them.
type Setting int

const (
	SettingNone Setting = iota
	SettingHost
	SettingPort
	SettingHTTPS
	SettingInsecure
	SettingCACert
	SettingTLSServerName
	SettingAuth
	SettingUsername
	SettingPassword
	SettingTimeout
	SettingSPN
	SettingAllowUnencrypted
	SettingKeytab
	SettingKrb5Conf
	SettingRealm
	SettingAllowNTLMFallback
)

// String is the Config field's name.
func (s Setting) String() string {
	switch s {
	case SettingHost:
		return "Host"
	case SettingPort:
		return "Port"
	case SettingHTTPS:
		return "HTTPS"
	case SettingInsecure:
		return "Insecure"
	case SettingCACert:
		return "CACert"
	case SettingTLSServerName:
		return "TLSServerName"
	case SettingAuth:
		return "Auth"
	case SettingUsername:
		return "Username"
	case SettingPassword:
		return "Password"
	case SettingTimeout:
		return "Timeout"
	case SettingSPN:
		return "SPN"
	case SettingAllowUnencrypted:
		return "AllowUnencrypted"
	case SettingKeytab:
		return "Keytab"
	case SettingKrb5Conf:
		return "Krb5Conf"
	case SettingRealm:
		return "Realm"
	case SettingAllowNTLMFallback:
		return "AllowNTLMFallback"
	}
	return "none"
}

// ConfigError is one problem Validate, Warnings or CheckKerberos found: which
// setting, and what (wrapping one of the Err* or Warn* sentinels).
type ConfigError struct {
	Setting Setting
	Err     error
	// Warning: the setting works, or is ignored, rather than failing (the Warn*
	// sentinels).
	Warning bool
}

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// SetDefaults fills what is unset: the port from HTTPS (5986, else 5985), the
// authentication scheme (DefaultAuth; a given one is lower-cased) and the operation timeout.
func (c *Config) SetDefaults() {
	if c.Port == 0 {
		c.Port = DefaultHTTPPort
		if c.HTTPS {
			c.Port = DefaultHTTPSPort
		}
	}
	c.Auth = strings.ToLower(strings.TrimSpace(c.Auth))
	if c.Auth == "" {
		c.Auth = DefaultAuth
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.AllowNTLMFallback == nil {
		allow := DefaultAllowNTLMFallback
		c.AllowNTLMFallback = &allow
	}
}

// knownAuth: Auth is one of the schemes.
func (c Config) knownAuth() bool {
	switch c.Auth {
	case AuthNegotiate, AuthNTLM, AuthKerberos, AuthBasic:
		return true
	}
	return false
}

// Warnings are the settings of c (after SetDefaults) that work but weaken security,
// each a *ConfigError wrapping one of the Warn* sentinels.
func (c Config) Warnings() []*ConfigError {
	var out []*ConfigError
	if c.Auth == AuthBasic && !c.HTTPS && c.AllowUnencrypted {
		out = append(out, &ConfigError{Setting: SettingAuth, Err: WarnClearTextPassword, Warning: true},
			&ConfigError{Setting: SettingAllowUnencrypted, Err: WarnClearTextMessages, Warning: true})
	}
	if c.Insecure && c.HTTPS {
		out = append(out, &ConfigError{Setting: SettingInsecure, Err: WarnUnverifiedCertificate, Warning: true})
	}
	return out
}

// ntlmFallbackAllowed is AllowNTLMFallback after SetDefaults.
func (c Config) ntlmFallbackAllowed() bool {
	return c.AllowNTLMFallback == nil && DefaultAllowNTLMFallback || c.AllowNTLMFallback != nil && *c.AllowNTLMFallback
}

// Validate checks a Config after SetDefaults and returns every problem, each a
// *ConfigError wrapping one of the Err* sentinels (use errors.Is and errors.As).
func (c Config) Validate() error {
	var errs []error
	bad := func(s Setting, sentinel error, format string, args ...any) {
		errs = append(errs, &ConfigError{Setting: s, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)})
	}
	if strings.TrimSpace(c.Host) == "" {
		bad(SettingHost, ErrNoHost, "give the host's DNS name or IP address")
	}
	if c.Port < 1 || c.Port > 65535 {
		bad(SettingPort, ErrPortRange, "%d; WinRM listens on %d (HTTP) or %d (HTTPS)", c.Port, DefaultHTTPPort, DefaultHTTPSPort)
	}
	switch c.Auth {
	case AuthNegotiate, AuthNTLM, AuthKerberos:
		if c.AllowUnencrypted && !c.HTTPS { // over HTTPS, the rule below says why
			bad(SettingAllowUnencrypted, ErrUnencryptedUnused, "%s encrypts every message over HTTP", c.Auth)
		}
	case AuthBasic:
		if !c.HTTPS && !c.AllowUnencrypted {
			bad(SettingAuth, ErrClearText, "use Negotiate or NTLM (encrypted messages over HTTP), or HTTPS")
		}
	default:
		bad(SettingAuth, ErrUnsupportedAuth, "%q; the schemes are %q (Kerberos or NTLM: local and domain accounts), %q (domain accounts), %q and %q (local accounts, listener with Basic enabled)",
			c.Auth, AuthNegotiate, AuthKerberos, AuthNTLM, AuthBasic)
	}
	if c.AllowUnencrypted && c.HTTPS {
		bad(SettingAllowUnencrypted, ErrUnencryptedUnused, "HTTPS encrypts the channel")
	}
	// Kerberos from a credential cache logs on as the cache's principal.
	fromCache := (c.Auth == AuthKerberos || c.Auth == AuthNegotiate) && c.Password == "" && c.Keytab == ""
	if c.Username == "" && !fromCache {
		bad(SettingUsername, ErrNoUsername, "give a local Administrator of the host")
	}
	if c.Password == "" && c.Auth != AuthKerberos && c.Auth != AuthNegotiate && c.knownAuth() {
		bad(SettingPassword, ErrNoPassword, "%s needs the password of %q", c.Auth, c.Username)
	}
	if c.Timeout < 0 {
		bad(SettingTimeout, ErrTimeout, "%s", c.Timeout)
	}
	if len(c.CACert) > 0 && !x509.NewCertPool().AppendCertsFromPEM(c.CACert) {
		bad(SettingCACert, ErrCACert, "give the CA certificate that signed the WinRM listener's certificate, PEM encoded (-----BEGIN CERTIFICATE-----)")
	}
	return errors.Join(errs...)
}
