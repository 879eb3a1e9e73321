package remote

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/localfile"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
)

// Sentinels of CheckKerberos; each finding's Err is a *KerberosError wrapping one.
var (
	// WarnKerberosUnused: a Kerberos setting (Keytab, Krb5Conf, Realm) is set but
	// Auth is neither Kerberos nor Negotiate, so it is ignored.
	WarnKerberosUnused = errors.New("the setting is used only with Kerberos or Negotiate authentication")
	// ErrKeytabUnusable: Keytab is missing, unreadable or a directory.
	ErrKeytabUnusable = errors.New("the keytab cannot be used")
	// ErrKrb5ConfUnusable: krb5.conf cannot be read or parsed.
	ErrKrb5ConfUnusable = errors.New("krb5.conf cannot be used")
	// ErrNoRealm: the user name names no realm and krb5.conf has no default_realm.
	ErrNoRealm = errors.New("no Kerberos realm for the user")
	// ErrRealmWithoutKDC: krb5.conf lists no KDC for the realm and dns_lookup_kdc is off.
	ErrRealmWithoutKDC = errors.New("krb5.conf names no KDC for the realm")
)

// KerberosError is the facts of one CheckKerberos finding, so a caller can say it in
// its own words: which check (Sentinel) and what it looked at.
type KerberosError struct {
	Sentinel error
	// Auth is the authentication scheme (WarnKerberosUnused).
	Auth string
	// Path is the keytab's (ErrKeytabUnusable) or krb5.conf's path (the others).
	Path string
	// Username is the user name the realm was looked for in (ErrNoRealm).
	Username string
	// Realm is the realm without KDC, upper-cased (ErrRealmWithoutKDC).
	Realm string
	// IsDir: the keytab's path is a directory (ErrKeytabUnusable, Err nil).
	IsDir bool
	// FromCCache: without password and keytab, Negotiate would log on from the
	// credential cache, which needs krb5.conf (ErrKrb5ConfUnusable).
	FromCCache bool
	// UPN is the user principal name sent as an enterprise name to Realm, when the
	// user name is one whose suffix is not a realm (ErrRealmWithoutKDC); RealmFrom
	// says where Realm comes from (krb.RealmFrom...).
	UPN, RealmFrom string
	// Why is why "negotiate" would use NTLM (ErrNTLMFallback).
	Why string
	// Err is the cause: the file system's error for the keytab, the *krb.Error for
	// krb5.conf.
	Err error
}

func (e *KerberosError) Error() string {
	switch e.Sentinel {
	case WarnKerberosUnused:
		return fmt.Sprintf("%v; auth is %q", e.Sentinel, e.Auth)
	case ErrKeytabUnusable:
		if e.IsDir {
			return fmt.Sprintf("%v: %s is a directory", e.Sentinel, e.Path)
		}
		return fmt.Sprintf("%v: %v", e.Sentinel, e.Err)
	case ErrKrb5ConfUnusable:
		return fmt.Sprintf("%v: %s", e.Sentinel, strings.TrimPrefix(e.Err.Error(), "kerberos: "))
	case ErrNoRealm:
		return fmt.Sprintf("%v: %q names none and %s has no default_realm", e.Sentinel, e.Username, e.Path)
	case ErrRealmWithoutKDC:
		return fmt.Sprintf("%v %s in %s, and dns_lookup_kdc is off", e.Sentinel, e.Realm, e.Path)
	}
	return fmt.Sprint(e.Sentinel)
}

// Unwrap makes errors.Is reach the sentinel and errors.As the cause.
func (e *KerberosError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Sentinel}
	}
	return []error{e.Sentinel, e.Err}
}

// CheckKerberos checks c (after SetDefaults) for what can be checked without a KDC:
// a readable keytab and krb5.conf, a realm for the user, and a KDC for it. With
// Negotiate it checks only what Kerberos would use: with a password and none of
// Keytab, Krb5Conf and Realm, Negotiate uses NTLM unless the default krb5.conf
// lists the realm's KDC, so nothing is required. With another scheme, each Kerberos
// setting set is a warning (it is ignored); krb5ConfShared says the caller uses
// Krb5Conf for another Kerberos logon, so it is not. Each finding's Err is a
// *KerberosError; Warning tells the warnings from the errors.
func (c Config) CheckKerberos(krb5ConfShared bool) []*ConfigError {
	var out []*ConfigError
	add := func(s Setting, warning bool, e *KerberosError) {
		out = append(out, &ConfigError{Setting: s, Err: e, Warning: warning})
	}
	if c.Auth != AuthKerberos && c.Auth != AuthNegotiate {
		for _, s := range []struct {
			setting Setting
			value   string
		}{{SettingKeytab, c.Keytab}, {SettingKrb5Conf, c.Krb5Conf}, {SettingRealm, c.Realm}} {
			if s.value != "" && !(krb5ConfShared && s.setting == SettingKrb5Conf) {
				add(s.setting, true, &KerberosError{Sentinel: WarnKerberosUnused, Auth: c.Auth})
			}
		}
		return out
	}
	if c.Auth == AuthNegotiate && c.Keytab == "" && c.Krb5Conf == "" && c.Realm == "" && c.Password != "" {
		return out // Kerberos only if the default krb5.conf lists the realm's KDC, else NTLM
	}
	if c.Keytab != "" && c.Password == "" {
		if st, err := os.Stat(c.Keytab); err == nil && st.IsDir() {
			add(SettingKeytab, false, &KerberosError{Sentinel: ErrKeytabUnusable, Path: c.Keytab, IsDir: true})
		} else if _, err := localfile.Read(c.Keytab); err != nil {
			// Read as the logon reads it (krb.New): a regular file under its cap, in time.
			add(SettingKeytab, false, &KerberosError{Sentinel: ErrKeytabUnusable, Path: c.Keytab, Err: err})
		}
	}
	confPath := krb.Krb5ConfPath(c.Krb5Conf)
	conf, err := krb.LoadKrb5Conf(confPath)
	if err != nil {
		add(SettingKrb5Conf, false, &KerberosError{Sentinel: ErrKrb5ConfUnusable, Path: confPath, Err: err,
			FromCCache: c.Auth == AuthNegotiate && c.Password == "" && c.Keytab == ""})
		return out
	}
	if c.Auth == AuthNegotiate && c.Password != "" && c.Keytab == "" && c.Realm == "" {
		return out // negotiate: NTLM when krb5.conf lists no KDC for the user's realm
	}
	if c.Username == "" && c.Password == "" && c.Keytab == "" {
		return out // the credential cache names the realm; checked at the first logon
	}
	n := krb.ResolveName(c.Username, c.Realm, conf)
	realm, from := n.Realm, SettingUsername
	if n.RealmFrom == krb.RealmFromSetting {
		from = SettingRealm
	}
	upn := ""
	if n.Enterprise {
		upn = n.User
	}
	if realm == "" {
		add(SettingUsername, false, &KerberosError{Sentinel: ErrNoRealm, Path: confPath, Username: c.Username})
		return out
	}
	if !conf.LibDefaults.DNSLookupKDC && len(krb.RealmKDCs(conf, realm)) == 0 {
		add(from, false, &KerberosError{Sentinel: ErrRealmWithoutKDC, Path: confPath, Realm: realm, UPN: upn, RealmFrom: n.RealmFrom})
	}
	return out
}

// CheckNTLMFallback is the finding of a configuration that refuses NTLM with auth
// "negotiate" (AllowNTLMFallback false) although negotiate would reach every host
// with NTLM (no realm, no KDC for it): nil when there is none. It is decided before
// any host is reached.
func (c Config) CheckNTLMFallback() *ConfigError {
	if c.AllowNTLMFallback == nil || *c.AllowNTLMFallback {
		return nil
	}
	why := NegotiateUsesNTLM(c)
	if why == "" {
		return nil
	}
	return &ConfigError{Setting: SettingAllowNTLMFallback, Err: &KerberosError{Sentinel: ErrNTLMFallback, Why: why}}
}
