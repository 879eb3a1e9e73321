package provider

import (
	"context"
	"errors"
	"fmt"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/sqlcheck"
)

// The user-facing advice: remote and sqlcheck say what failed and which of their
// settings is at fault (a typed Setting); only here does that become the Terraform
// argument or environment variable to change.

// winrmAdvice names the provider arguments to change for a WinRM error, or "".
func winrmAdvice(re *remote.Error) string {
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
			return `Use winrm.auth = "negotiate" (encrypted messages work over HTTP 5985) or winrm.https = true; only if the host ` +
				`really accepts clear text (AllowUnencrypted=true, Basic=true) set winrm.allow_unencrypted = true`
		}
		return `Set winrm.auth to "negotiate" (the default: local and domain accounts), "ntlm", or "basic" (local accounts, ` +
			`listener with Basic enabled)`
	case remote.SettingAllowUnencrypted:
		if re.Kind == remote.KindAuth {
			return `Use winrm.auth = "negotiate" or "ntlm" without winrm.allow_unencrypted (messages are then encrypted over HTTP), ` +
				`or winrm.https = true`
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
				adv += `; for a local account on a domain-joined host, set winrm.auth = "basic" and winrm.https = true`
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

// sqlErrorDetail is a SQL error with the provider arguments to change, if any.
func sqlErrorDetail(err error) string {
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
	}
	if se.Kind == sqlcheck.KindTimeout && se.Setting == sqlcheck.SettingNone {
		adv = "Raise the resource's timeouts (the timeouts block) if recovery takes long"
	}
	if adv == "" {
		return se.Error()
	}
	return se.Error() + ". " + adv
}

// constrainedLanguageAdvice says what an administrator of host can do when its
// PowerShell runs the WinRM user's commands in ConstrainedLanguage mode (the script
// error contract.CodeConstrainedLanguage); docs/design/host-knowledge.md has the sources.
func constrainedLanguageAdvice(host, user string) string {
	return fmt.Sprintf("PowerShell on %s runs in Constrained Language Mode for %s (an AppLocker or App Control for Business (WDAC) "+
		"policy that enforces script rules); the provider's scripts need FullLanguage for the WinRM user, and it sends them as "+
		"commands, not as script files, so signing cannot admit them. With AppLocker, whose rules apply per user or group, exclude the "+
		"management account: add an Allow rule to the Script rules for %s (or a group of management accounts) that covers at least "+
		"its %%TEMP%% folder, where Windows PowerShell tests the policy when it starts. App Control has no per-account exception: "+
		"the provider can only run on this host under a policy with the rule option Disabled:Script Enforcement. Then run "+
		"terraform apply again", host, user, user)
}
