package remote

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
)

// kerberosFiles writes the files CheckKerberos reads into a temporary directory.
type kerberosFiles struct {
	dir, conf, noDefault, dnsLookup, bad, keytab string
}

func newKerberosFiles(t *testing.T) kerberosFiles {
	t.Helper()
	dir := t.TempDir()
	f := kerberosFiles{dir: dir, conf: filepath.Join(dir, "krb5.conf"), noDefault: filepath.Join(dir, "nodefault.conf"),
		dnsLookup: filepath.Join(dir, "dns.conf"), bad: filepath.Join(dir, "bad.conf"), keytab: filepath.Join(dir, "u.keytab")}
	for name, text := range map[string]string{
		f.conf:      "[libdefaults]\n  default_realm = EXAMPLE.COM\n[realms]\n  EXAMPLE.COM = {\n    kdc = kdc.example.com\n  }\n  NOKDC.TEST = {\n  }\n",
		f.noDefault: "[realms]\n  EXAMPLE.COM = {\n    kdc = kdc.example.com\n  }\n",
		f.dnsLookup: "[libdefaults]\n  dns_lookup_kdc = true\n",
		f.bad:       "[libdefaults]\n  default_realm = EXAMPLE.COM\n[realms]\nEXAMPLE.COM = { kdc = a }\n",
		f.keytab:    "\x05\x02",
	} {
		if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// The Kerberos rules: what is checked for which scheme, at which setting, as a
// warning or an error, with which facts.
func TestCheckKerberos(t *testing.T) {
	f := newKerberosFiles(t)
	missing := filepath.Join(f.dir, "missing")
	t.Setenv("KRB5_CONFIG", missing) // the default krb5.conf, for the cases that set none
	type want struct {
		setting  Setting
		warning  bool
		sentinel error
		facts    KerberosError // compared without Sentinel and Err
	}
	for _, tc := range []struct {
		name   string
		cfg    Config
		shared bool
		want   []want
	}{
		{"ntlm ignores every Kerberos setting", Config{Auth: AuthNTLM, Keytab: f.keytab, Krb5Conf: f.conf, Realm: "x"}, false, []want{
			{SettingKeytab, true, WarnKerberosUnused, KerberosError{Auth: AuthNTLM}},
			{SettingKrb5Conf, true, WarnKerberosUnused, KerberosError{Auth: AuthNTLM}},
			{SettingRealm, true, WarnKerberosUnused, KerberosError{Auth: AuthNTLM}},
		}},
		{"basic with a shared krb5.conf", Config{Auth: AuthBasic, Krb5Conf: f.conf}, true, nil},
		{"basic without Kerberos settings reads no file", Config{Auth: AuthBasic, Username: "u", Password: "p"}, false, nil},
		{"negotiate with a password only needs nothing", Config{Auth: AuthNegotiate, Username: "u", Password: "p"}, false, nil},
		{"missing keytab", Config{Auth: AuthKerberos, Username: "u@EXAMPLE.COM", Keytab: missing, Krb5Conf: f.conf}, false, []want{
			{SettingKeytab, false, ErrKeytabUnusable, KerberosError{Path: missing}},
		}},
		{"keytab is a directory", Config{Auth: AuthKerberos, Username: "u@EXAMPLE.COM", Keytab: f.dir, Krb5Conf: f.conf}, false, []want{
			{SettingKeytab, false, ErrKeytabUnusable, KerberosError{Path: f.dir, IsDir: true}},
		}},
		{"a keytab beside a password is not read", Config{Auth: AuthKerberos, Username: "u@EXAMPLE.COM", Password: "p", Keytab: missing, Krb5Conf: f.conf}, false, nil},
		{"keytab readable", Config{Auth: AuthKerberos, Username: "u@EXAMPLE.COM", Keytab: f.keytab, Krb5Conf: f.conf}, false, nil},
		{"negotiate from the cache without krb5.conf", Config{Auth: AuthNegotiate, Username: "u@EXAMPLE.COM", Krb5Conf: missing}, false, []want{
			{SettingKrb5Conf, false, ErrKrb5ConfUnusable, KerberosError{Path: missing, FromCCache: true}},
		}},
		{"default krb5.conf unreadable", Config{Auth: AuthKerberos, Username: "u@EXAMPLE.COM", Password: "p"}, false, []want{
			{SettingKrb5Conf, false, ErrKrb5ConfUnusable, KerberosError{Path: missing}},
		}},
		{"krb5.conf unparsable", Config{Auth: AuthKerberos, Username: "u@EXAMPLE.COM", Password: "p", Krb5Conf: f.bad}, false, []want{
			{SettingKrb5Conf, false, ErrKrb5ConfUnusable, KerberosError{Path: f.bad}},
		}},
		{"negotiate with a password and krb5.conf needs no realm", Config{Auth: AuthNegotiate, Username: "dba@NOKDC.TEST", Password: "p", Krb5Conf: f.conf}, false, nil},
		{"the credential cache names the realm", Config{Auth: AuthKerberos, Krb5Conf: f.noDefault}, false, nil},
		{"no realm", Config{Auth: AuthKerberos, Username: "dba", Password: "p", Krb5Conf: f.noDefault}, false, []want{
			{SettingUsername, false, ErrNoRealm, KerberosError{Path: f.noDefault, Username: "dba"}},
		}},
		{"default_realm", Config{Auth: AuthKerberos, Username: "dba", Password: "p", Krb5Conf: f.conf}, false, nil},
		{"NetBIOS domain matched to a realm", Config{Auth: AuthKerberos, Username: `EXAMPLE\dba`, Password: "p", Krb5Conf: f.noDefault}, false, nil},
		{"realm of the user name without KDC", Config{Auth: AuthKerberos, Username: "dba@NOKDC.TEST", Password: "p", Krb5Conf: f.conf}, false, []want{
			{SettingUsername, false, ErrRealmWithoutKDC, KerberosError{Path: f.conf, Realm: "NOKDC.TEST", RealmFrom: krb.RealmFromName}},
		}},
		{"Realm without KDC, upper-cased", Config{Auth: AuthNegotiate, Username: "dba", Password: "p", Realm: "nokdc.test", Krb5Conf: f.conf}, false, []want{
			{SettingRealm, false, ErrRealmWithoutKDC, KerberosError{Path: f.conf, Realm: "NOKDC.TEST", RealmFrom: krb.RealmFromSetting}},
		}},
		{"dns_lookup_kdc finds the KDC", Config{Auth: AuthKerberos, Username: "dba@NOKDC.TEST", Password: "p", Krb5Conf: f.dnsLookup}, false, nil},
		{"a missing keytab and a realm without KDC", Config{Auth: AuthKerberos, Username: "dba@NOKDC.TEST", Keytab: missing, Krb5Conf: f.conf}, false, []want{
			{SettingKeytab, false, ErrKeytabUnusable, KerberosError{Path: missing}},
			{SettingUsername, false, ErrRealmWithoutKDC, KerberosError{Path: f.conf, Realm: "NOKDC.TEST", RealmFrom: krb.RealmFromName}},
		}},
		// A UPN suffix is not a realm: the UPN goes to the default realm, which has a
		// KDC; without one, the finding names the UPN.
		{"UPN to the default realm", Config{Auth: AuthKerberos, Username: "dba@corp.example", Password: "p", Krb5Conf: f.conf}, false, nil},
		{"UPN without a realm to go to", Config{Auth: AuthKerberos, Username: "dba@corp.example", Password: "p", Krb5Conf: f.noDefault}, false, []want{
			{SettingUsername, false, ErrRealmWithoutKDC, KerberosError{Path: f.noDefault, Realm: "CORP.EXAMPLE", UPN: "dba@corp.example", RealmFrom: krb.RealmFromName}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.SetDefaults()
			got := cfg.CheckKerberos(tc.shared)
			if len(got) != len(tc.want) {
				t.Fatalf("CheckKerberos = %v; want %d findings", got, len(tc.want))
			}
			for i, w := range tc.want {
				g := got[i]
				var ke *KerberosError
				if g.Setting != w.setting || g.Warning != w.warning || !errors.Is(g, w.sentinel) || !errors.As(g, &ke) {
					t.Fatalf("finding %d = %s %v (warning %t); want %s %v (warning %t)", i, g.Setting, g, g.Warning, w.setting, w.sentinel, w.warning)
				}
				facts := *ke
				facts.Sentinel, facts.Err = nil, nil
				if facts != w.facts {
					t.Errorf("finding %d's facts = %+v; want %+v", i, facts, w.facts)
				}
			}
		})
	}
}

// The causes stay reachable: the file system's error for a keytab, krb's for krb5.conf.
func TestCheckKerberosCauses(t *testing.T) {
	f := newKerberosFiles(t)
	cfg := Config{Auth: AuthKerberos, Username: "u@EXAMPLE.COM", Keytab: filepath.Join(f.dir, "missing"), Krb5Conf: f.bad}
	cfg.SetDefaults()
	got := cfg.CheckKerberos(false)
	if len(got) != 2 {
		t.Fatalf("CheckKerberos = %v; want the keytab and krb5.conf", got)
	}
	if !errors.Is(got[0], os.ErrNotExist) {
		t.Errorf("the keytab finding %v does not wrap os.ErrNotExist", got[0])
	}
	var ke *krb.Error
	if !errors.As(got[1], &ke) || ke.Part != krb.PartKrb5Conf {
		t.Errorf("the krb5.conf finding %v does not wrap krb's error", got[1])
	}
	// Each says its facts in remote's words, without a caller's argument names.
	for _, g := range got {
		if msg := g.Error(); msg == "" || strings.Contains(msg, "winrm.") || strings.Contains(msg, "krb5_conf") {
			t.Errorf("finding message %q", msg)
		}
	}
}

// Warnings are flagged as such, as CheckKerberos's are.
func TestWarningsAreWarnings(t *testing.T) {
	c := Config{Auth: AuthBasic, AllowUnencrypted: true, HTTPS: false}
	c.SetDefaults()
	h := Config{HTTPS: true, Insecure: true}
	h.SetDefaults()
	ws := append(c.Warnings(), h.Warnings()...)
	if len(ws) != 3 {
		t.Fatalf("Warnings = %v; want 3", ws)
	}
	for _, w := range ws {
		if !w.Warning {
			t.Errorf("warning %v is not flagged Warning", w)
		}
	}
}

// allow_ntlm_fallback = false with a negotiate that would reach every host with
// NTLM (no realm anywhere) is refused before any host is reached, saying why; with
// the fallback allowed, or auth "ntlm", there is nothing to refuse.
func TestCheckNTLMFallback(t *testing.T) {
	no, yes := false, true
	t.Setenv("KRB5_CONFIG", filepath.Join(t.TempDir(), "missing-krb5.conf")) // no krb5.conf names a KDC
	base := Config{Auth: AuthNegotiate, Username: "svc", Password: "pw"}
	refused := base
	refused.AllowNTLMFallback = &no
	f := refused.CheckNTLMFallback()
	var ke *KerberosError
	if f == nil || f.Setting != SettingAllowNTLMFallback || !errors.As(f, &ke) || ke.Sentinel != ErrNTLMFallback || ke.Why == "" {
		t.Fatalf("negotiate without a realm, fallback refused: %v; want ErrNTLMFallback at allow_ntlm_fallback, saying why", f)
	}
	allowed := base
	allowed.AllowNTLMFallback = &yes
	ntlm := refused
	ntlm.Auth = AuthNTLM
	for name, c := range map[string]Config{"allowed": allowed, "default": base, "auth ntlm": ntlm} {
		if f := c.CheckNTLMFallback(); f != nil {
			t.Errorf("%s: %v, want nothing", name, f)
		}
	}
}
