package provider

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/sqlcheck"
)

// The provider block's security rules are remote's and sqlcheck's: their
// SetDefaults decide every default, their Validate/Problems and Warnings every rule
// (Basic over HTTP, allow_unencrypted, certificates not verified, the SQL login
// kind). Here each finding only becomes a diagnostic at its argument, in the
// provider's words. ValidateConfig reports them at plan (terraform validate, plan
// and apply); Configure reports the errors again with the environment's values.

var _ provider.ProviderWithValidateConfig = &mssqlifiProvider{}

func (p *mssqlifiProvider) ValidateConfig(ctx context.Context, req provider.ValidateConfigRequest, resp *provider.ValidateConfigResponse) {
	var cfg providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(planTimeDiagnostics(cfg)...)
}

func (cfg providerModel) winrm() *winrmModel {
	if cfg.WinRM == nil {
		return &winrmModel{}
	}
	return cfg.WinRM
}

func (cfg providerModel) sql() *sqlModel {
	if cfg.SQL == nil {
		return &sqlModel{}
	}
	return cfg.SQL
}

// winrmConfig is remote's Config from the winrm block, else the environment; what
// neither sets stays unset for remote's SetDefaults, except HTTPS, a plain bool,
// which takes remote.DefaultHTTPS. Port, timeout and the user agent are set by
// Configure.
func winrmConfig(w *winrmModel) remote.Config {
	rc := remote.Config{
		HTTPS:            boolOr(w.HTTPS, remote.DefaultHTTPS),
		Insecure:         boolOr(w.Insecure, false),
		CACert:           []byte(w.CACert.ValueString()),
		TLSServerName:    w.TLSServerName.ValueString(),
		Auth:             w.Auth.ValueString(),
		Username:         stringOrEnv(w.Username, EnvWinRMUsername),
		Password:         stringOrEnv(w.Password, EnvWinRMPassword),
		SPN:              stringOrEnv(w.SPN, EnvWinRMSPN),
		AllowUnencrypted: boolOr(w.AllowUnencrypted, envBool(EnvWinRMAllowUnencrypted)),
	}
	if len(rc.CACert) == 0 {
		rc.CACert = nil
	}
	applyKerberos(w.kerberosModel, &rc)
	return rc
}

// sqlConfig is sqlcheck's Config from the sql block, else the environment (unset
// values stay unset for sqlcheck's SetDefaults).
func sqlConfig(q *sqlModel, w *winrmModel) sqlcheck.Config {
	sc := sqlcheck.Config{
		Username:               stringOrEnv(q.Username, EnvSQLUsername),
		Password:               stringOrEnv(q.Password, EnvSQLPassword),
		Auth:                   stringOrEnv(q.Auth, EnvSQLAuth),
		Encrypt:                q.Encrypt.ValueString(),
		CACert:                 []byte(q.CACert.ValueString()),
		TrustServerCertificate: boolOr(q.TrustServerCertificate, false),
	}
	applySQLKerberos(q, w, &sc)
	if len(sc.CACert) == 0 {
		sc.CACert = nil
	}
	return sc
}

func envBool(name string) bool {
	b, err := strconv.ParseBool(strings.TrimSpace(os.Getenv(name)))
	return err == nil && b
}

// planTimeDiagnostics are the findings that the provider block's values known at
// plan decide. A rule that looks at a value known only after apply waits for
// Configure; the user name and password may come from the environment at apply,
// so only Configure requires them.
func planTimeDiagnostics(cfg providerModel) diag.Diagnostics {
	var d diag.Diagnostics
	w := cfg.winrm()
	if !w.Auth.IsUnknown() && !w.HTTPS.IsUnknown() && !w.AllowUnencrypted.IsUnknown() && !w.Insecure.IsUnknown() {
		rc := winrmConfig(w)
		rc.SetDefaults()
		d.Append(winrmDiagnostics(rc, true, remote.SettingAuth, remote.SettingAllowUnencrypted, remote.SettingInsecure)...)
	}
	q := cfg.sql()
	if q.Auth.IsUnknown() || q.Encrypt.IsUnknown() || q.TrustServerCertificate.IsUnknown() || q.Keytab.IsUnknown() || q.SPN.IsUnknown() {
		return d
	}
	sc := sqlConfig(q, w)
	userKnown := !q.Username.IsUnknown()
	kerberos := sqlUsesKerberos(q)
	if userKnown && sc.Username == "" && !kerberos {
		// No SQL login (yet): only a login kind that can never work is an error now.
		for _, f := range sc.Problems() {
			if errors.Is(f, sqlcheck.ErrUnsupportedAuth) {
				d.Append(sqlDiagnostic(f, sc, q, false))
			}
		}
		return d
	}
	for _, f := range sc.Problems() {
		switch {
		case f.Setting == sqlcheck.SettingAuth && (userKnown || !errors.Is(f, sqlcheck.ErrAuthMismatch)),
			f.Setting == sqlcheck.SettingKeytab, f.Setting == sqlcheck.SettingSPN,
			// Kerberos: a password or keytab needs the account they belong to.
			kerberos && userKnown && !q.Password.IsUnknown() && errors.Is(f, sqlcheck.ErrNoUsername):
			d.Append(sqlDiagnostic(f, sc, q, false))
		}
	}
	for _, f := range sc.Warnings() {
		d.Append(sqlDiagnostic(f, sc, q, true))
	}
	return d
}

// winrmAttribute is the winrm block's argument behind each remote.Setting ("" for
// the host, which each resource gives).
var winrmAttribute = map[remote.Setting]string{
	remote.SettingPort: "port", remote.SettingHTTPS: "https", remote.SettingInsecure: "insecure",
	remote.SettingCACert: "ca_cert", remote.SettingTLSServerName: "tls_server_name", remote.SettingAuth: "auth",
	remote.SettingUsername: "username", remote.SettingPassword: "password", remote.SettingTimeout: "timeout",
	remote.SettingSPN: "spn", remote.SettingAllowUnencrypted: "allow_unencrypted", remote.SettingKeytab: "keytab",
	remote.SettingKrb5Conf: "krb5_conf", remote.SettingRealm: "realm", remote.SettingAllowNTLMFallback: "allow_ntlm_fallback",
}

// winrmDiagnostics maps remote's findings on rc (after SetDefaults) to the winrm
// block's arguments: Validate's errors and, with warnings, its Warnings; only those
// of the given settings, or of every setting the block has when none is given.
func winrmDiagnostics(rc remote.Config, warnings bool, only ...remote.Setting) diag.Diagnostics {
	var d diag.Diagnostics
	keep := func(s remote.Setting) bool {
		if winrmAttribute[s] == "" {
			return false
		}
		for _, o := range only {
			if o == s {
				return true
			}
		}
		return len(only) == 0
	}
	var findings []*remote.ConfigError
	if err := rc.Validate(); err != nil {
		for _, e := range joined(err) {
			var ce *remote.ConfigError
			if errors.As(e, &ce) {
				findings = append(findings, ce)
			}
		}
	}
	if warnings {
		findings = append(findings, rc.Warnings()...)
	}
	for _, f := range findings {
		if keep(f.Setting) {
			d.Append(winrmDiagnostic(f, rc))
		}
	}
	return d
}

// joined lists the errors errors.Join put together (err itself otherwise).
func joined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// winrmDiagnostic says one finding in the provider's words, at its argument.
func winrmDiagnostic(f *remote.ConfigError, rc remote.Config) diag.Diagnostic {
	at := path.Root("winrm").AtName(winrmAttribute[f.Setting])
	e := func(summary, detail string) diag.Diagnostic {
		return diag.NewAttributeErrorDiagnostic(at, summary, detail)
	}
	w := func(summary, detail string) diag.Diagnostic {
		return diag.NewAttributeWarningDiagnostic(at, summary, detail)
	}
	switch {
	case errors.Is(f, remote.ErrUnencryptedUnused) && rc.HTTPS:
		return e("allow_unencrypted has no effect over HTTPS",
			"winrm.allow_unencrypted (or "+EnvWinRMAllowUnencrypted+") is set while https is true: HTTPS already encrypts the channel, "+
				"and NTLM over HTTPS is bound to it. Remove allow_unencrypted.")
	case errors.Is(f, remote.ErrUnencryptedUnused):
		return e("allow_unencrypted has no effect with Negotiate, Kerberos or NTLM",
			"winrm.allow_unencrypted (or "+EnvWinRMAllowUnencrypted+") is set with auth = \""+rc.Auth+"\": the provider encrypts every "+
				"Kerberos and NTLM message over HTTP, as hosts with WinRM's default AllowUnencrypted=false require. Remove allow_unencrypted; it only lets "+
				"auth = \"basic\" send clear text over HTTP.")
	case errors.Is(f, remote.ErrClearText):
		return e("Basic over HTTP would send the password in clear text",
			`winrm.auth = "basic" with https = false sends the WinRM password, readable, in every request, and Windows refuses it `+
				`by default (Basic=false, AllowUnencrypted=false). The provider will not send it. Use auth = "negotiate" (encrypted over HTTP), `+
				"or https = true; only for a host that really accepts clear text, set allow_unencrypted = true.")
	case errors.Is(f, remote.WarnClearTextPassword):
		return w("Basic over HTTP sends the WinRM password in clear text",
			`winrm.auth = "basic" over plain HTTP puts the password, only base64-encoded, in every request: anyone who can see the `+
				`traffic between here and the hosts can read it and log on as that administrator. Use auth = "negotiate" or https = true.`)
	case errors.Is(f, remote.WarnClearTextMessages):
		return w("WinRM messages travel in clear text",
			"winrm.allow_unencrypted = true sends every script, parameter and result unencrypted and unsigned: anyone on the path can "+
				"read and change what runs on the hosts as administrator. Prefer auth = \"negotiate\", which encrypts over HTTP.")
	case errors.Is(f, remote.WarnUnverifiedCertificate):
		return w("WinRM certificates are not verified",
			"winrm.insecure = true accepts any certificate: an impostor on the network can pose as the hosts, and receive the Basic password "+
				"or an NTLM logon and the scripts. Set ca_cert (and tls_server_name) instead.")
	case errors.Is(f, remote.ErrNoUsername):
		return e("Missing WinRM username",
			"Set winrm.username in the provider configuration or the environment variable "+EnvWinRMUsername+
				" to a local administrator of the hosts.")
	case errors.Is(f, remote.ErrNoPassword):
		return e("Missing WinRM password",
			"Set winrm.password in the provider configuration or the environment variable "+EnvWinRMPassword+".")
	}
	return e("Invalid WinRM setting", "winrm."+winrmAttribute[f.Setting]+": "+f.Error()+".")
}

// sqlAttribute is the sql block's argument behind each sqlcheck.Setting.
var sqlAttribute = map[sqlcheck.Setting]string{
	sqlcheck.SettingUsername: "username", sqlcheck.SettingPassword: "password", sqlcheck.SettingEncrypt: "encrypt",
	sqlcheck.SettingCACert: "ca_cert", sqlcheck.SettingTrustServerCertificate: "trust_server_certificate", sqlcheck.SettingAuth: "auth",
	sqlcheck.SettingKeytab: "keytab", sqlcheck.SettingSPN: "spn",
}

// sqlDiagnostic says one of sqlcheck's findings on sc in the provider's words, at
// its argument of the sql block q.
func sqlDiagnostic(f sqlcheck.Finding, sc sqlcheck.Config, q *sqlModel, warning bool) diag.Diagnostic {
	at := path.Root("sql").AtName(sqlAttribute[f.Setting])
	if warning {
		switch {
		case errors.Is(f, sqlcheck.WarnUnverifiedCertificate):
			return diag.NewAttributeWarningDiagnostic(at, "SQL Server certificates are not verified",
				"sql.trust_server_certificate = true accepts any certificate: an impostor can pose as SQL Server and receive the SQL login's "+
					"password. Set sql.ca_cert instead.")
		case errors.Is(f, sqlcheck.WarnClearTextPassword):
			return diag.NewAttributeWarningDiagnostic(at, "The SQL password travels in clear text",
				`sql.encrypt = "disable" sends the login without TLS: the TDS password obfuscation is trivially reversible, so anyone who `+
					`can see the traffic recovers the SQL password. Use encrypt = "true" or "strict".`)
		}
		return diag.NewAttributeWarningDiagnostic(at, "SQL setting weakens security", "sql."+sqlAttribute[f.Setting]+": "+f.Error()+".")
	}
	from := "sql.auth"
	if q.Auth.IsNull() && os.Getenv(EnvSQLAuth) != "" {
		from = EnvSQLAuth
	}
	e := func(summary, detail string) diag.Diagnostic {
		return diag.NewAttributeErrorDiagnostic(at, summary, detail)
	}
	switch {
	case errors.Is(f, sqlcheck.ErrUnsupportedAuth):
		return e("Unknown SQL login kind",
			from+" is "+strconv.Quote(strings.ToLower(sc.Auth))+`: use "sql" (a SQL Server login), "ntlm" (a Windows account, DOMAIN\user) or "kerberos" (a Windows account by Kerberos).`)
	case errors.Is(f, sqlcheck.ErrKerberosOnly):
		return e("Kerberos setting without Kerberos",
			"sql."+sqlAttribute[f.Setting]+" is used only with sql.auth = \"kerberos\", but "+from+" is "+strconv.Quote(sc.Auth)+
				". Set sql.auth = \"kerberos\" for a Kerberos login, or remove sql."+sqlAttribute[f.Setting]+".")
	case errors.Is(f, sqlcheck.ErrSPN):
		return e("Invalid SQL Server SPN",
			"sql.spn (or "+EnvSQLSPN+") is "+strconv.Quote(sc.SPN)+", which is not a service principal name: write the SPN SQL Server's service account "+
				"registered, MSSQLSvc/<fqdn>:<port> (setspn -L <account> lists them), or remove sql.spn for MSSQLSvc/<host>:<port> of each resource.")
	case errors.Is(f, sqlcheck.ErrNoUsername) && strings.EqualFold(sc.Auth, sqlcheck.AuthKerberos):
		return e("Missing SQL Kerberos username",
			"sql.auth = \"kerberos\" with a password or keytab needs the Windows account they belong to: set sql.username (or "+EnvSQLUsername+
				") to DOMAIN\\user or user@REALM. Without password and keytab the login uses the credential cache of KRB5CCNAME (run kinit first).")
	case errors.Is(f, sqlcheck.ErrAuthMismatch) && sqlcheck.WindowsLogon(sc.Username):
		return e("SQL login kind does not match the user name",
			"sql.username "+strconv.Quote(sc.Username)+" has a backslash, which makes the SQL client log on to Windows with NTLM, but "+
				from+" is \"sql\" (a SQL Server login, the default). Set sql.auth = \"ntlm\" or \"kerberos\" for a Windows account, or give a SQL login name.")
	case errors.Is(f, sqlcheck.ErrAuthMismatch):
		return e("SQL login kind does not match the user name",
			from+" = \"ntlm\" needs a Windows account written DOMAIN\\user (or HOST\\user for a local account), but sql.username is "+
				strconv.Quote(sc.Username)+". Write the account as DOMAIN\\user, or set sql.auth = \"sql\" for a SQL Server login.")
	case errors.Is(f, sqlcheck.ErrNoPassword):
		return e("Missing SQL password",
			"The sql block names the login "+sc.Username+" but no password: set sql.password or the environment variable "+
				EnvSQLPassword+", or remove the sql block to verify through the error log instead.")
	}
	return e("Invalid SQL setting", "sql."+sqlAttribute[f.Setting]+": "+f.Error()+".")
}
