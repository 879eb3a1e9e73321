package provider

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/sqlcheck"
)

// Environment variables of the Kerberos settings of the winrm block.
const (
	EnvWinRMKeytab   = "MSSQLIFI_WINRM_KEYTAB"
	EnvWinRMKrb5Conf = "MSSQLIFI_WINRM_KRB5_CONF"
	EnvWinRMRealm    = "MSSQLIFI_WINRM_REALM"
	// The sql block's Kerberos settings (sql.auth = "kerberos").
	EnvSQLKeytab = "MSSQLIFI_SQL_KEYTAB"
	EnvSQLSPN    = "MSSQLIFI_SQL_SPN"
)

// kerberosModel is the winrm block's Kerberos part.
type kerberosModel struct {
	Keytab   types.String `tfsdk:"keytab"`
	Krb5Conf types.String `tfsdk:"krb5_conf"`
	Realm    types.String `tfsdk:"realm"`
	// AllowNTLMFallback: null leaves remote's default (remote.DefaultAllowNTLMFallback).
	AllowNTLMFallback types.Bool `tfsdk:"allow_ntlm_fallback"`
}

// kerberosAttributes are the winrm block's Kerberos arguments.
func kerberosAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"keytab": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "Kerberos (`auth = \"kerberos\"` or `\"negotiate\"`): path of a keytab holding the user's keys, used when no password is set. " +
				"Without password and keytab the provider uses the credential cache of `KRB5CCNAME` (run `kinit` first). " +
				"Defaults to the environment variable `" + EnvWinRMKeytab + "`.",
		},
		"krb5_conf": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "Kerberos (`auth = \"kerberos\"` or `\"negotiate\"`): path of the krb5.conf naming the realm's KDCs. Default: the environment variable `" +
				EnvWinRMKrb5Conf + "`, then `KRB5_CONFIG`, then `/etc/krb5.conf`.",
		},
		"allow_ntlm_fallback": schema.BoolAttribute{
			Optional: true,
			MarkdownDescription: fmt.Sprintf("With `auth = \"negotiate\"`: whether a host may be reached with NTLM when no Kerberos ticket can be had "+
				"(no realm for the user, the KDC does not answer, no ticket for the SPN). Default `%t`, as Windows clients do; the plan then warns "+
				"when it first appears for a host (and in a plan that changes an instance there), naming the cause. `false` makes that an error: over HTTP only Kerberos proves the host's identity before "+
				"anything is sent, and anyone who can block port 88 can otherwise make the provider use NTLM.", remote.DefaultAllowNTLMFallback),
		},
		"realm": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "Kerberos (`auth = \"kerberos\"` or `\"negotiate\"`): the Kerberos realm (the domain's DNS name in upper case). Default: from `username` " +
				"(`user@REALM`, or `DOMAIN\\user` matched against krb5.conf), else krb5.conf's `default_realm`. Defaults to the environment variable `" + EnvWinRMRealm + "`.",
		},
	}
}

// applyKerberos copies the Kerberos settings into rc, with their environment fallbacks.
func applyKerberos(k kerberosModel, rc *remote.Config) {
	rc.Keytab = stringOrEnv(k.Keytab, EnvWinRMKeytab)
	rc.Krb5Conf = stringOrEnv(k.Krb5Conf, EnvWinRMKrb5Conf)
	rc.Realm = stringOrEnv(k.Realm, EnvWinRMRealm)
	if !k.AllowNTLMFallback.IsNull() && !k.AllowNTLMFallback.IsUnknown() {
		allow := k.AllowNTLMFallback.ValueBool()
		rc.AllowNTLMFallback = &allow
	}
}

// validateKerberos says remote's Kerberos findings on rc (after SetDefaults) at
// the winrm block's arguments: remote.Config.CheckKerberos decides what is checked
// (a readable keytab and krb5.conf, a realm and a KDC for it, settings that auth
// ignores); here each finding only becomes a diagnostic in the provider's words.
// sqlKerberos: the sql block logs on with Kerberos, which reads winrm.krb5_conf too.
func validateKerberos(rc remote.Config, sqlKerberos bool) diag.Diagnostics {
	var diags diag.Diagnostics
	for _, f := range rc.CheckKerberos(sqlKerberos) {
		diags.Append(kerberosDiagnostic(f))
	}
	return diags
}

// kerberosDiagnostic says one CheckKerberos finding at its argument.
func kerberosDiagnostic(f *remote.ConfigError) diag.Diagnostic {
	name := winrmAttribute[f.Setting]
	at := path.Root("winrm").AtName(name)
	var ke remote.KerberosError
	if k := (*remote.KerberosError)(nil); errors.As(f, &k) {
		ke = *k
	}
	switch ke.Sentinel {
	case remote.WarnKerberosUnused:
		return diag.NewAttributeWarningDiagnostic(at, "Kerberos setting ignored",
			fmt.Sprintf("winrm.%s is used only with auth = \"kerberos\" or \"negotiate\" (and krb5_conf with sql.auth = \"kerberos\"); auth is %q.", name, ke.Auth))
	case remote.ErrKeytabUnusable:
		why := "it is a directory"
		if ke.Err != nil {
			why = ke.Err.Error()
		}
		return diag.NewAttributeErrorDiagnostic(at, "Keytab not found",
			fmt.Sprintf("winrm.keytab %s cannot be used: %s. Give the path of a keytab with the user's keys (ktutil, or ktpass on Windows), "+
				"or set winrm.password instead.", ke.Path, why))
	case remote.ErrKrb5ConfUnusable:
		why := ""
		if ke.FromCCache {
			why = " Without a password (winrm.password or " + EnvWinRMPassword + ") negotiate logs on with Kerberos from the credential cache, which needs it."
		}
		return diag.NewAttributeErrorDiagnostic(at, "Unreadable krb5.conf",
			fmt.Sprintf("The Kerberos configuration %s cannot be used: %v. Set winrm.krb5_conf (or %s, or KRB5_CONFIG) to a readable krb5.conf that names the realm's KDCs.%s",
				ke.Path, errText(ke.Err), EnvWinRMKrb5Conf, why))
	case remote.ErrNoRealm:
		return diag.NewAttributeErrorDiagnostic(at, "No Kerberos realm",
			fmt.Sprintf("winrm.username %q names no realm and %s has no default_realm. Write it user@REALM (the domain's DNS name in upper case) or set winrm.realm.", ke.Username, ke.Path))
	case remote.ErrNTLMFallback:
		return diag.NewAttributeErrorDiagnostic(at, "NTLM fallback refused",
			fmt.Sprintf(`winrm.auth = "negotiate" would reach every host with NTLM (%s), and winrm.allow_ntlm_fallback = false refuses that. `+
				`Give the user's realm (user@REALM, DOMAIN\user or winrm.realm) and a winrm.krb5_conf naming its KDCs (kdc lines, or dns_lookup_kdc = true with the realm's _kerberos SRV records in DNS), or remove allow_ntlm_fallback.`, ke.Why))
	case remote.ErrRealmWithoutKDC:
		if ke.UPN != "" && ke.RealmFrom == krb.RealmFromName {
			return diag.NewAttributeErrorDiagnostic(at, "No realm for the user principal name",
				fmt.Sprintf("winrm.username %s is a user principal name (UPN) whose suffix is not a realm of %s, and no realm is given to send it to. "+
					"A UPN suffix is not a realm: an account's UPN may end in any suffix of its forest, and the domain finds the account by it. "+
					"Set winrm.realm (or %s, or krb5.conf's default_realm) to the realm of the account's domain: the UPN is sent there as an enterprise name. "+
					"A kdc line for the suffix does not help unless the suffix is a realm itself.", ke.UPN, ke.Path, EnvWinRMRealm))
		}
		if ke.UPN != "" {
			return diag.NewAttributeErrorDiagnostic(at, "Realm without KDC",
				fmt.Sprintf("winrm.username %s is a user principal name (UPN) whose suffix is not a realm of %s; it is sent as an enterprise name to the realm %s (from %s), "+
					"which has no KDC there and dns_lookup_kdc is off. Add [realms] %s = { kdc = <domain controller> } to it or set dns_lookup_kdc = true, "+
					"or set winrm.realm to the realm of the account's domain. A UPN suffix is not a realm and needs no kdc line.",
					ke.UPN, ke.Path, ke.Realm, realmSource(ke.RealmFrom), ke.Realm))
		}
		return diag.NewAttributeErrorDiagnostic(at, "Realm without KDC",
			fmt.Sprintf("The realm %s (from winrm.%s) has no KDC in %s and dns_lookup_kdc is off. Add [realms] %s = { kdc = <domain controller> } to it, or set dns_lookup_kdc = true.",
				ke.Realm, name, ke.Path, ke.Realm))
	}
	if f.Warning {
		return diag.NewAttributeWarningDiagnostic(at, "WinRM Kerberos setting", "winrm."+name+": "+f.Error()+".")
	}
	return diag.NewAttributeErrorDiagnostic(at, "Invalid WinRM setting", "winrm."+name+": "+f.Error()+".")
}

// realmSource names where krb.ResolveName took a realm from, in the provider's terms.
func realmSource(from string) string {
	switch from {
	case krb.RealmFromSetting:
		return "winrm.realm"
	case krb.RealmFromDomainRealm:
		return "krb5.conf's [domain_realm]"
	case krb.RealmFromDefault:
		return "krb5.conf's default_realm"
	}
	return "winrm.username"
}

// errText is an error's message without the package prefix.
func errText(err error) string {
	return strings.TrimPrefix(err.Error(), "kerberos: ")
}

// The sql block's Kerberos part: the KDCs are the winrm block's krb5_conf (one
// krb5.conf per run), the account, password and keytab the sql block's own.

func sqlKeytabAttribute() schema.Attribute {
	return schema.StringAttribute{
		Optional: true,
		MarkdownDescription: "Kerberos (`auth = \"kerberos\"`): path of a keytab holding the keys of `username`, used when no `password` is set. " +
			"Without password and keytab the login uses the credential cache of `KRB5CCNAME` (run `kinit` first). Defaults to the environment variable `" + EnvSQLKeytab + "`.",
	}
}

func sqlSPNAttribute() schema.Attribute {
	return schema.StringAttribute{
		Optional: true,
		MarkdownDescription: "Kerberos (`auth = \"kerberos\"`): the service principal name to ask a ticket for. Default `MSSQLSvc/<host>:<port>` of each resource " +
			"(its `host` and the instance's TCP port), the SPN SQL Server registers for its service account: set it when the resources name hosts by " +
			"IP address or an alias. Defaults to the environment variable `" + EnvSQLSPN + "`.",
	}
}

// applySQLKerberos copies the sql block's Kerberos settings, and the winrm block's
// krb5.conf, into sc.
func applySQLKerberos(q *sqlModel, w *winrmModel, sc *sqlcheck.Config) {
	sc.Keytab = stringOrEnv(q.Keytab, EnvSQLKeytab)
	sc.SPN = stringOrEnv(q.SPN, EnvSQLSPN)
	sc.Krb5Conf = stringOrEnv(w.Krb5Conf, EnvWinRMKrb5Conf)
}

// sqlUsesKerberos: sql.auth (or its environment variable) is "kerberos".
func sqlUsesKerberos(q *sqlModel) bool {
	return strings.EqualFold(strings.TrimSpace(stringOrEnv(q.Auth, EnvSQLAuth)), sqlcheck.AuthKerberos)
}

// validateSQLKerberos checks at plan what the SQL Kerberos login reads (the
// krb5.conf and a KDC for the realm, the keytab, the credential cache), at the
// argument to change.
func validateSQLKerberos(sc sqlcheck.Config) diag.Diagnostics {
	var diags diag.Diagnostics
	err := sc.CheckKerberos()
	var ke *krb.Error
	if err == nil || !errors.As(err, &ke) {
		if err != nil {
			diags.AddAttributeError(path.Root("sql").AtName("auth"), "SQL Kerberos login cannot be prepared", err.Error()+".")
		}
		return diags
	}
	msg := errText(err) + "."
	switch ke.Part {
	case krb.PartKeytab:
		diags.AddAttributeError(path.Root("sql").AtName("keytab"), "SQL keytab not usable", msg+" Set sql.keytab (or "+EnvSQLKeytab+") to a readable keytab with the keys of sql.username, or set sql.password instead.")
	case krb.PartKrb5Conf:
		diags.AddAttributeError(path.Root("winrm").AtName("krb5_conf"), "Unreadable krb5.conf", msg+" The SQL Kerberos login reads winrm.krb5_conf (or "+EnvWinRMKrb5Conf+", or KRB5_CONFIG): give a readable krb5.conf that names the realm's KDCs.")
	case krb.PartCCache:
		diags.AddAttributeError(path.Root("sql").AtName("username"), "No Kerberos credentials for the SQL login", msg+" Or set sql.password or sql.keytab (with sql.username).")
	default:
		diags.AddAttributeError(path.Root("sql").AtName("username"), "SQL Kerberos login cannot be prepared", msg)
	}
	return diags
}
