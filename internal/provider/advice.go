package provider

import (
	"context"
	"errors"
	"fmt"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/sqlcheck"
)

// The user-facing advice: remote and sqlcheck say what failed and which of their
// settings is at fault (a typed Setting); only here does that become the Terraform
// argument or environment variable to change.

// winrmAdvice names the provider arguments to change for a WinRM error, or "".
func winrmAdvice(re *remote.Error) string {
	if adv := kerberosAdvice(re); adv != "" {
		return adv
	}
	switch re.Setting {
	case remote.SettingHost:
		return "Check the resource's host argument"
	case remote.SettingPort:
		return fmt.Sprintf("Set the WinRM listener's port in winrm.port or the resource's port argument (%d for HTTP, %d for HTTPS)",
			remote.DefaultHTTPPort, remote.DefaultHTTPSPort)
	case remote.SettingHTTPS:
		listener := "HTTP"
		if re.HTTPS {
			listener = "HTTPS"
		}
		return fmt.Sprintf("Set winrm.https = %t in the provider configuration, or set winrm.port (or the resource's port) to the "+
			"%s listener's port", !re.HTTPS, listener)
	case remote.SettingCACert, remote.SettingTLSServerName, remote.SettingInsecure:
		if re.Kind == remote.KindConfig {
			return "Set winrm.ca_cert to the PEM text of the CA certificate (for a file, use file(\"ca.pem\"))"
		}
		return "Set winrm.ca_cert to the CA that signed the listener's certificate, set winrm.tls_server_name when the certificate " +
			"names another host, or (only for testing) winrm.insecure = true"
	case remote.SettingAuth:
		if errors.Is(re, remote.ErrClearText) {
			return fmt.Sprintf(`Use winrm.auth = "negotiate" (encrypted messages work over HTTP %d) or winrm.https = true; only if the host `+
				`really accepts clear text (AllowUnencrypted=true, Basic=true) set winrm.allow_unencrypted = true`, remote.DefaultHTTPPort)
		}
		return `Set winrm.auth to "negotiate" (the default: Kerberos or NTLM, local and domain accounts), "kerberos" (domain accounts), "ntlm", ` +
			`or "basic" (local accounts, listener with Basic enabled)`
	case remote.SettingAllowUnencrypted:
		if re.Kind == remote.KindAuth {
			return `The host requires encrypted WinRM messages: use winrm.auth = "negotiate", "kerberos" or "ntlm" without ` +
				`winrm.allow_unencrypted (messages are then encrypted over HTTP), or winrm.https = true`
		}
		return "Remove winrm.allow_unencrypted: only auth = \"basic\" over plain HTTP sends messages in clear text"
	case remote.SettingSPN:
		return "Set winrm.spn (or " + EnvWinRMSPN + ") to the host's WinRM service principal name, HTTP/<host name>"
	case remote.SettingUsername, remote.SettingPassword:
		adv := "Check winrm.username and winrm.password (or the environment variables " + EnvWinRMUsername + " and " + EnvWinRMPassword + ")"
		if re.Kind == remote.KindAuth {
			switch {
			case re.Auth == remote.AuthBasic && !re.HTTPS:
				adv += `; a default host refuses Basic over HTTP: use winrm.auth = "negotiate" (encrypted over HTTP) or winrm.https = true`
			case re.Auth == remote.AuthBasic:
				adv += `; winrm.auth = "negotiate" works for domain accounts`
			default:
				adv += ". " + userNameForms
			}
		}
		return adv
	case remote.SettingTimeout:
		return "Raise winrm.timeout (the WinRM operation timeout) if the host is just slow"
	}
	switch {
	case errors.Is(re, context.DeadlineExceeded):
		return "Raise the resource's timeouts (the timeouts block) if the host is just slow"
	case re.Kind == remote.KindScript && re.Code == "timeout":
		return "Raise the resource's timeouts (the timeouts block) if the service is just slow to start"
	}
	return ""
}

// userNameForms is the one explanation of the WinRM user names that log on, and
// what each names on a domain-joined host, given with a failed logon. It follows
// the NTLM client (internal/ntlmauth: a bare name takes the challenge's target name,
// the host's domain; DOMAIN\user sends that domain; user@domain.fqdn goes whole, as
// Windows sends it) and remote's Kerberos principal (krb.SplitPrincipal).
const userNameForms = `Three forms of user name log on; on a domain-joined host they name: ` +
	`DOMAIN\user (CONTOSO\svc_terraform) a domain account, and a bare "user" the same account, since NTLM logs it on to the host's domain; ` +
	`user@suffix (svc_terraform@contoso.com), the user principal name, the same domain account; with Kerberos a suffix that krb5.conf ` +
	`knows as a realm is the realm (CONTOSO.COM), and any other suffix (an alternative UPN suffix such as corp.example) is no realm: the UPN goes ` +
	`as an enterprise name to winrm.realm, else the realm [domain_realm] maps the suffix to, else default_realm; COMPUTER\user (SQL01\Administrator) a local account of the host, the only way to name one there, ` +
	`and with NTLM only, since Kerberos logs on domain accounts. On a workgroup host a bare name is a local account`

// logonAdviceGiven stands for the full advice of a failed logon in the errors of
// the other instances on the same host in one run: given once per host, it names the
// instance whose error carries it.
func logonAdviceGiven(instance string) string {
	return fmt.Sprintf("The same logon failed for instance %s on this host; its error says which user names log on and what to check", instance)
}

// sqlLogonAdviceGiven stands for the full error of a login SQL Server refused in
// the errors of the other instances on the same host in one run (as
// logonAdviceGiven does for WinRM's logon): it names the instance whose error
// carries what to check and how to go on without SQL Server's answer.
func sqlLogonAdviceGiven(instance string) string {
	return fmt.Sprintf("The same sql login failed for instance %s on this host; its error says what to check on SQL Server and in the "+
		"sql block, and how to plan without SQL Server's answer (sql.optional)", instance)
}

// kerberosAdvice is the advice for a Kerberos failure, by its cause, or "".
func kerberosAdvice(re *remote.Error) string {
	keytab := "winrm.keytab (or " + EnvWinRMKeytab + ")"
	krb5Conf := "winrm.krb5_conf (or " + EnvWinRMKrb5Conf + ", or KRB5_CONFIG)"
	spn := "winrm.spn (or " + EnvWinRMSPN + ")"
	logOnItself := "set winrm.password (or " + EnvWinRMPassword + ") or " + keytab + " so the provider logs on itself"
	switch {
	case errors.Is(re, remote.ErrNTLMFallback):
		return `winrm.allow_ntlm_fallback = false refuses NTLM with auth = "negotiate": give the user's realm (user@REALM, DOMAIN\user ` +
			"or winrm.realm) and " + krb5Conf + " naming its KDCs (kdc lines, or dns_lookup_kdc = true with the realm's _kerberos SRV records in DNS), or remove allow_ntlm_fallback"
	case errors.Is(re, krb.ErrKDCUnreachable):
		return "Make " + krb5Conf + " name KDCs of the realm that this machine reaches on port 88 (TCP and UDP). With winrm.auth = " +
			`"negotiate" and a password the provider uses NTLM when no KDC answers (unless winrm.allow_ntlm_fallback = false); with "kerberos", a keytab or a credential cache it cannot`
	case errors.Is(re, krb.ErrClockSkew):
		return "No provider argument fixes a clock skew: synchronise the clocks of this machine, the KDC and the host (NTP, w32tm /resync); " +
			`meanwhile winrm.auth = "ntlm" does not depend on the clocks`
	case errors.Is(re, krb.ErrUnknownSPN):
		return "Set " + spn + " to a service principal name of the host's computer account, such as HTTP/sql01.contoso.com " +
			"(setspn -L <computer> lists them): a host reached by IP address or an alias needs it"
	case errors.Is(re, krb.ErrExpired):
		return "Run kinit again for the credential cache (KRB5CCNAME), or " + logOnItself
	case errors.Is(re, krb.ErrBindings):
		return "Reach the host without a TLS-intercepting proxy or load balancer in between, or use its HTTP listener: winrm.https = false " +
			"(every message is then encrypted by Kerberos)"
	case errors.Is(re, krb.ErrEncType):
		return "No provider argument fixes it: enable AES for the host's account in the domain (msDS-SupportedEncryptionTypes), as current Windows hosts have it; " +
			`meanwhile winrm.auth = "ntlm" does not depend on the host's Kerberos keys`
	case errors.Is(re, krb.ErrWrongPassword):
		return "Check winrm.password (or " + EnvWinRMPassword + "), or export " + keytab + " again after the password changed"
	case errors.Is(re, krb.ErrUnknownUser):
		return "Check winrm.username (or " + EnvWinRMUsername + `): user@REALM, DOMAIN\user or the account's user principal name, or set winrm.realm (or ` +
			EnvWinRMRealm + ") to the realm of the account's domain; a UPN whose suffix is not a realm is sent there, and needs no kdc line of its own"
	case errors.Is(re, krb.ErrMutualAuth), errors.Is(re, krb.ErrRefused):
		return "Check that the resource's host is the intended machine and that " + spn + " is its SPN (setspn -Q <spn> shows the account that holds it)"
	case errors.Is(re, remote.ErrKerberosConfig):
		switch re.Setting {
		case remote.SettingKeytab:
			return "Set " + keytab + " to a readable keytab with the user's keys, or set winrm.password instead"
		case remote.SettingRealm:
			return "Set winrm.realm (or " + EnvWinRMRealm + ") to a realm that " + krb5Conf + " lists with its KDCs"
		case remote.SettingUsername:
			return `Write winrm.username as user@REALM or DOMAIN\user, or set winrm.realm (or ` + EnvWinRMRealm + ")"
		case remote.SettingPassword:
			return "Run kinit user@REALM (the cache of KRB5CCNAME), or " + logOnItself
		}
		return "Set " + krb5Conf + " to a readable krb5.conf that lists the realm's KDCs"
	}
	return ""
}

// sqlErrorDetail is a SQL error with the provider arguments to change, if any.
func sqlErrorDetail(err error) string {
	var wi *converge.WrongInstanceError
	if errors.As(err, &wi) {
		return wi.Error() + fmt.Sprintf(". Set the resource's sql_port to instance %s's TCP port, or leave it unset for the port the host reports",
			wi.Target.Instance)
	}
	var se *sqlcheck.Error
	if !errors.As(err, &se) {
		return err.Error()
	}
	var adv string
	switch se.Setting {
	case sqlcheck.SettingUsername, sqlcheck.SettingPassword:
		if se.Kind == sqlcheck.KindPermission {
			adv = "Or set sql.username to a login that has VIEW SERVER STATE"
		} else {
			adv = "Check sql.username and sql.password (or the environment variables " + EnvSQLUsername + " and " + EnvSQLPassword + ")"
		}
	case sqlcheck.SettingEncrypt:
		adv = `Set sql.encrypt to "strict", "true" or "disable" ("disable" sends credentials in clear text)`
	case sqlcheck.SettingCACert, sqlcheck.SettingTrustServerCertificate:
		if se.Kind == sqlcheck.KindConfig {
			adv = "Set sql.ca_cert to the PEM text of the CA certificate (for a file, use file(\"ca.pem\"))"
		} else {
			adv = "Set sql.ca_cert to the CA that signed SQL Server's certificate, or (only for testing) sql.trust_server_certificate = true"
		}
	case sqlcheck.SettingPort:
		adv = "If the host reports the wrong port, set the resource's sql_port to the instance's TCP port"
	case sqlcheck.SettingSPN:
		adv = "Set sql.spn (or " + EnvSQLSPN + ") to the SPN registered for SQL Server's service account, or reach the instance by the name in it"
	case sqlcheck.SettingKeytab:
		adv = "Set sql.keytab (or " + EnvSQLKeytab + ") to a keytab with the account's current keys, or set sql.password"
	}
	if se.Kind == sqlcheck.KindTimeout && se.Setting == sqlcheck.SettingNone {
		adv = "Raise the resource's timeouts (the timeouts block) if recovery takes long"
	}
	if adv == "" {
		return se.Error()
	}
	return se.Error() + ". " + adv
}

// sqlLogonAdvice names the sql block's login kind and the other kinds, for a login
// SQL Server refused: what to check depends on whether the login is SQL Server's
// or a Windows account's (sqlcheck's hint says what to check on the server).
func sqlLogonAdvice(auth string) string {
	switch auth {
	case sqlcheck.AuthNTLM:
		return `The login kind is sql.auth = "ntlm", a Windows account: sql.username written DOMAIN\user (HOST\user for a local account) ` +
			`with its password; where the domain restricts NTLM, use sql.auth = "kerberos"; for a SQL Server login, sql.auth = "sql"`
	case sqlcheck.AuthKerberos:
		return `The login kind is sql.auth = "kerberos", a Windows account by Kerberos; for a SQL Server login, use sql.auth = "sql"`
	}
	return `The login kind is sql.auth = "sql", a SQL Server login; for a Windows account, set sql.auth = "ntlm" with ` +
		`sql.username = "DOMAIN\\user", or sql.auth = "kerberos"`
}

// constrainedLanguageAdvice says what an administrator of host can do when its
// PowerShell runs the WinRM user's commands in ConstrainedLanguage mode (the script
// error contract.CodeConstrainedLanguage); design/host-knowledge.md has the sources.
func constrainedLanguageAdvice(host, user string) string {
	return fmt.Sprintf("PowerShell on %s runs in Constrained Language Mode for %s (an AppLocker or App Control for Business (WDAC) "+
		"policy that enforces script rules); the provider's scripts need FullLanguage for the WinRM user, and it sends them as "+
		"commands, not as script files, so signing cannot admit them. With AppLocker, whose rules apply per user or group, exclude the "+
		"management account: add an Allow rule to the Script rules for %s (or a group of management accounts) that covers at least "+
		"its %%TEMP%% folder, where Windows PowerShell tests the policy when it starts. App Control has no per-account exception: "+
		"the provider can only run on this host under a policy with the rule option Disabled:Script Enforcement. Then run "+
		"terraform apply again", host, user, user)
}
