package provider

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
)

// The environment fallbacks feed the same plan-time rules as the arguments.
func TestSecurityRulesReadTheEnvironment(t *testing.T) {
	summaries := func(cfg providerModel) string {
		var s []string
		for _, d := range readSecurity(cfg).diagnostics() {
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
