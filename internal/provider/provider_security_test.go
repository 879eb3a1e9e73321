package provider

import (
	"context"
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
	if got := summaries(providerModel{}); !strings.Contains(got, "Error: allow_unencrypted has no effect over HTTPS") {
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
		sqlcheck.SettingCACert, sqlcheck.SettingTrustServerCertificate, sqlcheck.SettingAuth} {
		if name := sqlAttribute[s]; !sql[name] {
			t.Errorf("sqlcheck setting %d maps to sql.%q, which the schema lacks", s, name)
		}
	}
}
