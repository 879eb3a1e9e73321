package provider

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
)

// remote.Config.CheckKerberos decides the Kerberos rules (its tests are remote's);
// here each finding becomes a diagnostic at its winrm argument, with the provider's
// argument and environment variable names.
func TestKerberosDiagnosticMapping(t *testing.T) {
	notExist := &os.PathError{Op: "stat", Path: "/k/missing.keytab", Err: os.ErrNotExist}
	unreadable := &krb.Error{Kind: krb.KindConfig, Part: krb.PartKrb5Conf, Message: "cannot read krb5.conf /k/none.conf: no such file",
		Hint: "Give a readable krb5.conf"}
	finding := func(s remote.Setting, warning bool, ke remote.KerberosError) *remote.ConfigError {
		return &remote.ConfigError{Setting: s, Warning: warning, Err: &ke}
	}
	for _, tc := range []struct {
		name    string
		f       *remote.ConfigError
		warning bool
		path    string
		summary string
		detail  string
	}{
		{"ignored", finding(remote.SettingKrb5Conf, true, remote.KerberosError{Sentinel: remote.WarnKerberosUnused, Auth: "ntlm"}),
			true, "winrm.krb5_conf", "Kerberos setting ignored",
			`winrm.krb5_conf is used only with auth = "kerberos" or "negotiate" (and krb5_conf with sql.auth = "kerberos"); auth is "ntlm".`},
		{"keytab missing", finding(remote.SettingKeytab, false, remote.KerberosError{Sentinel: remote.ErrKeytabUnusable, Path: "/k/missing.keytab", Err: notExist}),
			false, "winrm.keytab", "Keytab not found",
			"winrm.keytab /k/missing.keytab cannot be used: stat /k/missing.keytab: file does not exist. Give the path of a keytab with the user's keys " +
				"(ktutil, or ktpass on Windows), or set winrm.password instead."},
		{"keytab a directory", finding(remote.SettingKeytab, false, remote.KerberosError{Sentinel: remote.ErrKeytabUnusable, Path: "/k", IsDir: true}),
			false, "winrm.keytab", "Keytab not found",
			"winrm.keytab /k cannot be used: it is a directory. Give the path of a keytab with the user's keys (ktutil, or ktpass on Windows), or set winrm.password instead."},
		{"krb5.conf unreadable", finding(remote.SettingKrb5Conf, false, remote.KerberosError{Sentinel: remote.ErrKrb5ConfUnusable, Path: "/k/none.conf", Err: unreadable}),
			false, "winrm.krb5_conf", "Unreadable krb5.conf",
			"The Kerberos configuration /k/none.conf cannot be used: cannot read krb5.conf /k/none.conf: no such file. Give a readable krb5.conf. " +
				"Set winrm.krb5_conf (or MSSQLIFI_WINRM_KRB5_CONF, or KRB5_CONFIG) to a readable krb5.conf that names the realm's KDCs."},
		{"krb5.conf unreadable, negotiate from the cache", finding(remote.SettingKrb5Conf, false,
			remote.KerberosError{Sentinel: remote.ErrKrb5ConfUnusable, Path: "/k/none.conf", Err: unreadable, FromCCache: true}),
			false, "winrm.krb5_conf", "Unreadable krb5.conf",
			"The Kerberos configuration /k/none.conf cannot be used: cannot read krb5.conf /k/none.conf: no such file. Give a readable krb5.conf. " +
				"Set winrm.krb5_conf (or MSSQLIFI_WINRM_KRB5_CONF, or KRB5_CONFIG) to a readable krb5.conf that names the realm's KDCs. " +
				"Without a password (winrm.password or MSSQLIFI_WINRM_PASSWORD) negotiate logs on with Kerberos from the credential cache, which needs it."},
		{"no realm", finding(remote.SettingUsername, false, remote.KerberosError{Sentinel: remote.ErrNoRealm, Path: "/k/krb5.conf", Username: "dba"}),
			false, "winrm.username", "No Kerberos realm",
			`winrm.username "dba" names no realm and /k/krb5.conf has no default_realm. Write it user@REALM (the domain's DNS name in upper case) or set winrm.realm.`},
		{"realm of the user name without KDC", finding(remote.SettingUsername, false,
			remote.KerberosError{Sentinel: remote.ErrRealmWithoutKDC, Path: "/k/krb5.conf", Realm: "NOKDC.TEST"}),
			false, "winrm.username", "Realm without KDC",
			"The realm NOKDC.TEST (from winrm.username) has no KDC in /k/krb5.conf and dns_lookup_kdc is off. " +
				"Add [realms] NOKDC.TEST = { kdc = <domain controller> } to it, or set dns_lookup_kdc = true."},
		{"realm without KDC", finding(remote.SettingRealm, false, remote.KerberosError{Sentinel: remote.ErrRealmWithoutKDC, Path: "/k/krb5.conf", Realm: "NOKDC.TEST"}),
			false, "winrm.realm", "Realm without KDC",
			"The realm NOKDC.TEST (from winrm.realm) has no KDC in /k/krb5.conf and dns_lookup_kdc is off. " +
				"Add [realms] NOKDC.TEST = { kdc = <domain controller> } to it, or set dns_lookup_kdc = true."},
		{"UPN without a realm", finding(remote.SettingUsername, false, remote.KerberosError{Sentinel: remote.ErrRealmWithoutKDC, Path: "/k/krb5.conf",
			Realm: "CORP.EXAMPLE", UPN: "svc@corp.example", RealmFrom: krb.RealmFromName}),
			false, "winrm.username", "No realm for the user principal name",
			"winrm.username svc@corp.example is a user principal name (UPN) whose suffix is not a realm of /k/krb5.conf, and no realm is given to send it to. " +
				"A UPN suffix is not a realm: an account's UPN may end in any suffix of its forest, and the domain finds the account by it. " +
				"Set winrm.realm (or MSSQLIFI_WINRM_REALM, or krb5.conf's default_realm) to the realm of the account's domain: the UPN is sent there as an enterprise name. " +
				"A kdc line for the suffix does not help unless the suffix is a realm itself."},
		{"UPN sent to a realm without KDC", finding(remote.SettingUsername, false, remote.KerberosError{Sentinel: remote.ErrRealmWithoutKDC, Path: "/k/krb5.conf",
			Realm: "CONTOSO.TEST", UPN: "svc@corp.example", RealmFrom: krb.RealmFromDefault}),
			false, "winrm.username", "Realm without KDC",
			"winrm.username svc@corp.example is a user principal name (UPN) whose suffix is not a realm of /k/krb5.conf; it is sent as an enterprise name to the realm CONTOSO.TEST " +
				"(from krb5.conf's default_realm), which has no KDC there and dns_lookup_kdc is off. Add [realms] CONTOSO.TEST = { kdc = <domain controller> } to it or set dns_lookup_kdc = true, " +
				"or set winrm.realm to the realm of the account's domain. A UPN suffix is not a realm and needs no kdc line."},
		{"an unknown finding", &remote.ConfigError{Setting: remote.SettingRealm, Err: errors.New("something new")},
			false, "winrm.realm", "Invalid WinRM setting", "winrm.realm: something new."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkDiagnostic(t, kerberosDiagnostic(tc.f), tc.warning, tc.path, tc.summary, tc.detail)
		})
	}
}

// validateKerberos says every CheckKerberos finding, in its order; sqlKerberos
// keeps krb5_conf from being called ignored.
func TestValidateKerberosSaysRemoteFindings(t *testing.T) {
	keytab := filepath.Join(t.TempDir(), "missing.keytab")
	rc := remote.Config{Auth: "basic", Keytab: keytab, Krb5Conf: "/k/krb5.conf"}
	rc.SetDefaults()
	got := validateKerberos(rc, true)
	if len(got) != 1 {
		t.Fatalf("validateKerberos = %v; want the keytab's warning only", got)
	}
	checkDiagnostic(t, got[0], true, "winrm.keytab", "Kerberos setting ignored",
		`winrm.keytab is used only with auth = "kerberos" or "negotiate" (and krb5_conf with sql.auth = "kerberos"); auth is "basic".`)

	rc = remote.Config{Auth: "kerberos", Username: "u@EXAMPLE.COM", Keytab: keytab, Krb5Conf: filepath.Join(filepath.Dir(keytab), "none.conf")}
	rc.SetDefaults()
	got = validateKerberos(rc, false)
	if len(got) != 2 || got[0].Summary() != "Keytab not found" || got[1].Summary() != "Unreadable krb5.conf" {
		t.Fatalf("validateKerberos = %v; want the keytab's and krb5.conf's errors", got)
	}
}

func checkDiagnostic(t *testing.T, d diag.Diagnostic, warning bool, path, summary, detail string) {
	t.Helper()
	sev := diag.SeverityError
	if warning {
		sev = diag.SeverityWarning
	}
	wp, ok := d.(diag.DiagnosticWithPath)
	if !ok || wp.Path().String() != path || d.Severity() != sev || d.Summary() != summary || d.Detail() != detail {
		t.Errorf("diagnostic = %v %v %q: %q; want %v at %s %q: %q", d.Severity(), wp, d.Summary(), d.Detail(), sev, path, summary, detail)
	}
}
