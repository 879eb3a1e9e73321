package provider

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/sqlcheck"
)

// The environment fallbacks feed the same plan-time rules as the arguments.
func TestSecurityRulesReadTheEnvironment(t *testing.T) {
	summaries := func(cfg providerModel) string {
		var s []string
		for _, d := range planTimeDiagnostics(cfg) {
			s = append(s, d.Severity().String()+": "+d.Summary())
		}
		return strings.Join(s, "; ")
	}
	basicHTTP := providerModel{WinRM: &winrmModel{Auth: types.StringValue("basic"), HTTPS: types.BoolValue(false)}}

	t.Setenv(EnvWinRMAllowUnencrypted, "")
	if got := summaries(basicHTTP); !strings.Contains(got, "Error: Basic over HTTP would send the password in clear text") {
		t.Errorf("basic over HTTP without allow_unencrypted: %s", got)
	}
	t.Setenv(EnvWinRMAllowUnencrypted, "true")
	if got := summaries(basicHTTP); strings.Contains(got, "Error") || !strings.Contains(got, "Warning: WinRM messages travel in clear text") {
		t.Errorf("basic over HTTP with %s=true: %s", EnvWinRMAllowUnencrypted, got)
	}
	// The defaults are negotiate over HTTP, which encrypts every message anyway.
	if got := summaries(providerModel{}); !strings.Contains(got, "Error: allow_unencrypted has no effect with Negotiate, Kerberos or NTLM") {
		t.Errorf("defaults with %s=true: %s", EnvWinRMAllowUnencrypted, got)
	}
	t.Setenv(EnvWinRMAllowUnencrypted, "")

	windowsUser := providerModel{SQL: &sqlModel{Username: types.StringValue(`CONTOSO\check`)}}
	t.Setenv(EnvSQLAuth, "")
	if got := summaries(windowsUser); !strings.Contains(got, "Error: SQL login kind does not match") {
		t.Errorf("a Windows user name as a SQL login: %s", got)
	}
	t.Setenv(EnvSQLAuth, "ntlm")
	if got := summaries(windowsUser); got != "" {
		t.Errorf("a Windows user name with %s=ntlm: %s", EnvSQLAuth, got)
	}
	if got := summaries(providerModel{}); got != "" {
		t.Errorf("the defaults: %s, want no diagnostics", got)
	}
}

// Every setting remote and sqlcheck can name has its argument in the provider
// block, so each finding lands on the argument to change.
func TestFindingsMapToArguments(t *testing.T) {
	var ps provider.SchemaResponse
	New("test")().Schema(context.Background(), provider.SchemaRequest{}, &ps)
	attrs := func(block string) map[string]bool {
		out := map[string]bool{}
		for name := range ps.Schema.Blocks[block].GetNestedObject().GetAttributes() {
			out[name] = true
		}
		return out
	}
	winrm, sql := attrs("winrm"), attrs("sql")
	for s := remote.SettingPort; s <= remote.SettingAllowNTLMFallback; s++ {
		if name := winrmAttribute[s]; !winrm[name] {
			t.Errorf("remote.%s maps to winrm.%q, which the schema lacks", s, name)
		}
	}
	for _, s := range []sqlcheck.Setting{sqlcheck.SettingUsername, sqlcheck.SettingPassword, sqlcheck.SettingEncrypt,
		sqlcheck.SettingCACert, sqlcheck.SettingTrustServerCertificate, sqlcheck.SettingAuth, sqlcheck.SettingKeytab, sqlcheck.SettingSPN} {
		if name := sqlAttribute[s]; !sql[name] {
			t.Errorf("sqlcheck setting %d maps to sql.%q, which the schema lacks", s, name)
		}
	}
}

// sql.auth = "kerberos" at plan: each credential kind's required arguments, and the
// Kerberos arguments refused with another login kind.
func TestSQLKerberosPlanRules(t *testing.T) {
	for _, env := range []string{EnvSQLAuth, EnvSQLUsername, EnvSQLPassword, EnvSQLKeytab, EnvSQLSPN} {
		t.Setenv(env, "")
	}
	str := types.StringValue
	for _, tc := range []struct {
		name string
		sql  sqlModel
		want string // "" none
	}{
		{"credential cache", sqlModel{Auth: str("kerberos")}, ""},
		{"password", sqlModel{Auth: str("kerberos"), Username: str("dba@CONTOSO.COM"), Password: str("p")}, ""},
		{"keytab", sqlModel{Auth: str("kerberos"), Username: str(`CONTOSO\dba`), Keytab: str("/k")}, ""},
		{"password without user", sqlModel{Auth: str("kerberos"), Password: str("p")}, "Error: Missing SQL Kerberos username"},
		{"keytab without user", sqlModel{Auth: str("kerberos"), Keytab: str("/k")}, "Error: Missing SQL Kerberos username"},
		{"spn that is none", sqlModel{Auth: str("kerberos"), SPN: str("sql01")}, "Error: Invalid SQL Server SPN"},
		{"keytab with ntlm", sqlModel{Auth: str("ntlm"), Username: str(`CONTOSO\dba`), Password: str("p"), Keytab: str("/k")}, "Error: Kerberos setting without Kerberos"},
		{"spn with a SQL login", sqlModel{Username: str("check"), Password: str("p"), SPN: str("MSSQLSvc/x:1")}, "Error: Kerberos setting without Kerberos"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.sql
			var got []string
			for _, d := range planTimeDiagnostics(providerModel{SQL: &q}) {
				if strings.Contains(d.Summary(), "WinRM") || strings.Contains(d.Summary(), "allow_unencrypted") {
					continue
				}
				got = append(got, d.Severity().String()+": "+d.Summary())
			}
			if all := strings.Join(got, "; "); (tc.want == "" && all != "") || (tc.want != "" && !strings.Contains(all, tc.want)) {
				t.Errorf("diagnostics %q, want %q", all, tc.want)
			}
		})
	}
}

// A winrm block without https reaches the HTTP listener (5985), where the default
// negotiate encrypts every message and Basic is refused; with https = true the
// listener's certificate is verified unless insecure says otherwise.
func TestWinRMTransportDefaults(t *testing.T) {
	t.Setenv(EnvWinRMAllowUnencrypted, "")
	rc := winrmConfig(&winrmModel{})
	rc.SetDefaults()
	if rc.HTTPS || rc.Port != remote.DefaultHTTPPort || rc.Auth != remote.AuthNegotiate || rc.AllowUnencrypted {
		t.Errorf("defaults: https %t, port %d, auth %q, allow_unencrypted %t; want HTTP %d, negotiate, encrypted",
			rc.HTTPS, rc.Port, rc.Auth, rc.AllowUnencrypted, remote.DefaultHTTPPort)
	}
	basic := winrmConfig(&winrmModel{Auth: types.StringValue("basic"), Username: types.StringValue("u"), Password: types.StringValue("p")})
	basic.Host = "sql01"
	basic.SetDefaults()
	if err := basic.Validate(); !errors.Is(err, remote.ErrClearText) {
		t.Errorf("basic with the default transport: %v; want %v", err, remote.ErrClearText)
	}
	tls := winrmConfig(&winrmModel{HTTPS: types.BoolValue(true)})
	tls.SetDefaults()
	if !tls.HTTPS || tls.Insecure || tls.Port != remote.DefaultHTTPSPort {
		t.Errorf("https = true: https %t, insecure %t, port %d; want HTTPS %d, certificate verified", tls.HTTPS, tls.Insecure, tls.Port, remote.DefaultHTTPSPort)
	}
}
