package provider

import (
	"context"
	"os"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// The provider block's security rules, checked at plan (ValidateConfig runs for
// terraform validate, plan and apply): contradictory or unsafe combinations are
// errors naming the argument, and each setting that weakens security warns, naming
// the setting and the risk. Configure applies the same errors.

var _ provider.ProviderWithValidateConfig = &mssqlifiProvider{}

func (p *mssqlifiProvider) ValidateConfig(ctx context.Context, req provider.ValidateConfigRequest, resp *provider.ValidateConfigResponse) {
	var cfg providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(readSecurity(cfg).diagnostics()...)
}

// securitySettings are the effective values (configuration, else environment, else
// default) the rules look at; known is false for a value known only after apply.
type securitySettings struct {
	auth, authKnown              string
	https, httpsKnown            bool
	allowUnencrypted, allowKnown bool
	insecure                     bool
	sql                          bool // an sql block or MSSQLIFI_SQL_USERNAME
	sqlAuth, sqlUser             string
	sqlAuthKnown, sqlUserKnown   bool
	sqlEncrypt                   string
	trustServerCertificate       bool
	sqlAuthEnvSet                bool // sql.auth came from MSSQLIFI_SQL_AUTH
}

func readSecurity(cfg providerModel) securitySettings {
	w := cfg.WinRM
	if w == nil {
		w = &winrmModel{}
	}
	s := securitySettings{
		auth:       stringOr(w.Auth, "negotiate"),
		authKnown:  known(w.Auth),
		https:      boolOr(w.HTTPS, true),
		httpsKnown: !w.HTTPS.IsUnknown(),
		allowKnown: !w.AllowUnencrypted.IsUnknown(),
		insecure:   boolOr(w.Insecure, false),
	}
	s.allowUnencrypted = boolOr(w.AllowUnencrypted, envBool(EnvWinRMAllowUnencrypted))
	q := cfg.SQL
	if q == nil {
		q = &sqlModel{}
	}
	s.sqlUser = stringOrEnv(q.Username, EnvSQLUsername)
	s.sqlUserKnown = !q.Username.IsUnknown()
	s.sql = s.sqlUser != "" || !s.sqlUserKnown
	s.sqlAuth = strings.ToLower(stringOrEnv(q.Auth, EnvSQLAuth))
	s.sqlAuthEnvSet = q.Auth.IsNull() && os.Getenv(EnvSQLAuth) != ""
	if s.sqlAuth == "" {
		s.sqlAuth = "sql"
	}
	s.sqlAuthKnown = !q.Auth.IsUnknown()
	s.sqlEncrypt = stringOr(q.Encrypt, "true")
	s.trustServerCertificate = boolOr(q.TrustServerCertificate, false)
	return s
}

// known is "" for an unknown value, else "y".
func known(v types.String) string {
	if v.IsUnknown() {
		return ""
	}
	return "y"
}

func envBool(name string) bool {
	b, err := strconv.ParseBool(strings.TrimSpace(os.Getenv(name)))
	return err == nil && b
}

func (s securitySettings) diagnostics() diag.Diagnostics {
	var d diag.Diagnostics
	auth := path.Root("winrm").AtName("auth")
	allow := path.Root("winrm").AtName("allow_unencrypted")
	allKnown := s.authKnown != "" && s.httpsKnown && s.allowKnown

	if allKnown && s.allowUnencrypted {
		switch {
		case s.https:
			d.AddAttributeError(allow, "allow_unencrypted has no effect over HTTPS",
				"winrm.allow_unencrypted (or "+EnvWinRMAllowUnencrypted+") is set while https is true: HTTPS already encrypts the channel, "+
					"and NTLM over HTTPS is bound to it. Remove allow_unencrypted.")
		case s.auth != "basic":
			d.AddAttributeError(allow, "allow_unencrypted has no effect with Negotiate, Kerberos or NTLM",
				"winrm.allow_unencrypted (or "+EnvWinRMAllowUnencrypted+") is set with auth = \""+s.auth+"\": the provider encrypts every "+
					"Kerberos and NTLM message over HTTP, as hosts with WinRM's default AllowUnencrypted=false require. Remove allow_unencrypted; it only lets "+
					"auth = \"basic\" send clear text over HTTP.")
		}
	}
	if allKnown && s.auth == "basic" && !s.https {
		if !s.allowUnencrypted {
			d.AddAttributeError(auth, "Basic over HTTP would send the password in clear text",
				`winrm.auth = "basic" with https = false sends the WinRM password, readable, in every request, and Windows refuses it `+
					`by default (Basic=false, AllowUnencrypted=false). The provider will not send it. Use auth = "negotiate" (encrypted over HTTP), `+
					"or https = true; only for a host that really accepts clear text, set allow_unencrypted = true.")
		} else {
			d.AddAttributeWarning(auth, "Basic over HTTP sends the WinRM password in clear text",
				`winrm.auth = "basic" over plain HTTP puts the password, only base64-encoded, in every request: anyone who can see the `+
					`traffic between here and the hosts can read it and log on as that administrator. Use auth = "negotiate" or https = true.`)
			d.AddAttributeWarning(allow, "WinRM messages travel in clear text",
				"winrm.allow_unencrypted = true sends every script, parameter and result unencrypted and unsigned: anyone on the path can "+
					"read and change what runs on the hosts as administrator. Prefer auth = \"negotiate\", which encrypts over HTTP.")
		}
	}
	if s.insecure && s.httpsKnown && s.https {
		d.AddAttributeWarning(path.Root("winrm").AtName("insecure"), "WinRM certificates are not verified",
			"winrm.insecure = true accepts any certificate: an impostor on the network can pose as the hosts, and receive the Basic password "+
				"or an NTLM logon and the scripts. Set ca_cert (and tls_server_name) instead.")
	}
	if s.sql && s.trustServerCertificate {
		d.AddAttributeWarning(path.Root("sql").AtName("trust_server_certificate"), "SQL Server certificates are not verified",
			"sql.trust_server_certificate = true accepts any certificate: an impostor can pose as SQL Server and receive the SQL login's "+
				"password. Set sql.ca_cert instead.")
	}
	if s.sql && s.sqlEncrypt == "disable" {
		d.AddAttributeWarning(path.Root("sql").AtName("encrypt"), "The SQL password travels in clear text",
			`sql.encrypt = "disable" sends the login without TLS: the TDS password obfuscation is trivially reversible, so anyone who `+
				`can see the traffic recovers the SQL password. Use encrypt = "true" or "strict".`)
	}
	d.Append(s.sqlAuthDiagnostics()...)
	return d
}

func (s securitySettings) sqlAuthDiagnostics() diag.Diagnostics {
	var d diag.Diagnostics
	if !s.sqlAuthKnown || !s.sqlUserKnown || s.sqlUser == "" {
		if s.sqlAuthKnown && s.sqlAuth == "kerberos" {
			d.AddAttributeError(path.Root("sql").AtName("auth"), "SQL Kerberos logon is not implemented yet",
				`sql.auth = "kerberos" is reserved until it works end to end. Use "sql" (a SQL Server login) or "ntlm" (DOMAIN\user).`)
		}
		return d
	}
	p := path.Root("sql").AtName("auth")
	from := "sql.auth"
	if s.sqlAuthEnvSet {
		from = EnvSQLAuth
	}
	windows := strings.Contains(s.sqlUser, `\`)
	switch s.sqlAuth {
	case "kerberos":
		d.AddAttributeError(p, "SQL Kerberos logon is not implemented yet",
			`sql.auth = "kerberos" is reserved until it works end to end. Use "sql" (a SQL Server login) or "ntlm" (DOMAIN\user).`)
	case "sql":
		if windows {
			d.AddAttributeError(p, "SQL login kind does not match the user name",
				"sql.username "+strconvQuote(s.sqlUser)+" has a backslash, which makes the SQL client log on to Windows with NTLM, but "+
					from+" is \"sql\" (a SQL Server login, the default). Set sql.auth = \"ntlm\" for a Windows account, or give a SQL login name.")
		}
	case "ntlm":
		if !windows {
			d.AddAttributeError(p, "SQL login kind does not match the user name",
				from+" = \"ntlm\" needs a Windows account written DOMAIN\\user (or HOST\\user for a local account), but sql.username is "+
					strconvQuote(s.sqlUser)+". Write the account as DOMAIN\\user, or set sql.auth = \"sql\" for a SQL Server login.")
		}
	default:
		d.AddAttributeError(p, "Unknown SQL login kind",
			from+" is "+strconvQuote(s.sqlAuth)+`: use "sql" (a SQL Server login) or "ntlm" (a Windows account, DOMAIN\user).`)
	}
	return d
}

func strconvQuote(s string) string { return strconv.Quote(s) }
