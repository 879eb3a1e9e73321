package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/sqlcheck"
)

// remote and sqlcheck return kinds and settings; the advice that names the
// provider's arguments and environment variables is made here.
func TestHostErrorDetailNamesTheArgument(t *testing.T) {
	tg := converge.Target{Host: "sql01.example.test", Instance: "MSSQLSERVER"}
	for _, tc := range []struct {
		name string
		err  *remote.Error
		want []string
	}{
		{"auth with ntlm", &remote.Error{Host: tg.Host, Kind: remote.KindAuth, Setting: remote.SettingPassword, Auth: "ntlm",
			Message: "authentication failed for admin at sql01.example.test:5986"},
			[]string{"authentication failed", "winrm.username", "winrm.password", EnvWinRMUsername, EnvWinRMPassword, userNameForms}},
		{"auth with basic over https", &remote.Error{Host: tg.Host, Kind: remote.KindAuth, Setting: remote.SettingPassword, Auth: "basic",
			HTTPS: true, Message: "authentication failed for admin at sql01.example.test:5986"},
			[]string{`winrm.auth = "negotiate" works for domain accounts`}},
		{"auth with basic over http", &remote.Error{Host: tg.Host, Kind: remote.KindAuth, Setting: remote.SettingPassword, Auth: "basic",
			Message: "authentication failed for admin at sql01.example.test:5985"},
			[]string{`refuses Basic over HTTP`, `winrm.auth = "negotiate"`}},
		{"access denied names the user", &remote.Error{Host: tg.Host, Kind: remote.KindAuth, Setting: remote.SettingUsername, Message: "answered HTTP 500: Access is denied."},
			[]string{"WinRM authentication failed for admin at sql01.example.test", "winrm.username"}},
		{"http listener with https", &remote.Error{Host: tg.Host, Kind: remote.KindTLS, Setting: remote.SettingHTTPS, HTTPS: true, Message: "does not speak TLS"},
			[]string{"winrm.https = false", "HTTPS listener's port"}},
		{"https listener with http", &remote.Error{Host: tg.Host, Kind: remote.KindProtocol, Setting: remote.SettingHTTPS, Message: "rejected the request (HTTP 400)"},
			[]string{"winrm.https = true"}},
		{"unknown CA", &remote.Error{Host: tg.Host, Kind: remote.KindTLS, Setting: remote.SettingCACert, Message: "could not be verified"},
			[]string{"winrm.ca_cert", "winrm.tls_server_name", "winrm.insecure = true"}},
		{"CA not PEM", &remote.Error{Host: tg.Host, Kind: remote.KindConfig, Setting: remote.SettingCACert, Message: "invalid WinRM configuration"},
			[]string{"winrm.ca_cert", `file("ca.pem")`}},
		{"operation timeout", &remote.Error{Host: tg.Host, Kind: remote.KindTimeout, Setting: remote.SettingTimeout, Message: "did not answer in time"},
			[]string{"winrm.timeout"}},
		{"deadline", &remote.Error{Host: tg.Host, Kind: remote.KindTimeout, Err: context.DeadlineExceeded, Message: "did not finish before the deadline"},
			[]string{"resource's timeouts"}},
		{"unreachable", &remote.Error{Host: tg.Host, Kind: remote.KindUnreachable, Message: "cannot connect"},
			[]string{"the Terraform state was not changed"}},
		{"host requires encryption", &remote.Error{Host: tg.Host, Kind: remote.KindAuth, Setting: remote.SettingAllowUnencrypted,
			Message: "the host requires encrypted WinRM messages"}, []string{"requires encrypted WinRM messages", `"kerberos"`, "winrm.allow_unencrypted"}},
		{"KDC unreachable", krbErr(remote.KindUnreachable, remote.SettingKrb5Conf, krb.KindKDCUnreachable), []string{"winrm.krb5_conf", EnvWinRMKrb5Conf, "port 88"}},
		{"clock skew", krbErr(remote.KindAuth, remote.SettingNone, krb.KindClockSkew), []string{"clock skew", "NTP"}},
		{"unknown SPN", krbErr(remote.KindAuth, remote.SettingSPN, krb.KindUnknownSPN), []string{"winrm.spn", EnvWinRMSPN, "setspn -L"}},
		{"expired ticket", krbErr(remote.KindAuth, remote.SettingPassword, krb.KindExpired), []string{"kinit", "winrm.password", "winrm.keytab", EnvWinRMKeytab}},
		{"CBT mismatch", krbErr(remote.KindAuth, remote.SettingHTTPS, krb.KindBindings), []string{"TLS-intercepting proxy", "winrm.https = false"}},
		{"missing keytab", &remote.Error{Host: tg.Host, Kind: remote.KindConfig, Setting: remote.SettingKeytab, Message: "invalid WinRM configuration",
			Err: fmt.Errorf("%w: %w", remote.ErrKerberosConfig, &krb.Error{Kind: krb.KindConfig, Part: krb.PartKeytab})}, []string{"winrm.keytab", EnvWinRMKeytab}},
		{"unreadable krb5.conf", &remote.Error{Host: tg.Host, Kind: remote.KindConfig, Setting: remote.SettingKrb5Conf, Message: "invalid WinRM configuration",
			Err: fmt.Errorf("%w: %w", remote.ErrKerberosConfig, &krb.Error{Kind: krb.KindConfig, Part: krb.PartKrb5Conf})}, []string{"winrm.krb5_conf", EnvWinRMKrb5Conf}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := hostErrorDetail(tg, fmt.Errorf("wrapped: %w", tc.err), "admin")
			for _, w := range append(tc.want, "instance MSSQLSERVER on sql01.example.test") {
				if !strings.Contains(got, w) {
					t.Errorf("hostErrorDetail = %q; lacks %q", got, w)
				}
			}
		})
	}
}

// krbErr is a remote error caused by a Kerberos failure of kind k.
func krbErr(kind remote.ErrorKind, setting remote.Setting, k krb.Kind) *remote.Error {
	return &remote.Error{Host: "sql01.example.test", Kind: kind, Setting: setting, Auth: remote.AuthKerberos,
		Message: "Kerberos: failed", Err: &krb.Error{Kind: k, Message: "failed"}}
}

func TestSQLErrorDetailNamesTheArgument(t *testing.T) {
	tg := sqlcheck.Target{Host: "sql01", Port: 1433, Instance: "MSSQLSERVER"}
	for _, tc := range []struct {
		name string
		err  *sqlcheck.Error
		want []string
	}{
		{"login failed", &sqlcheck.Error{Target: tg, Kind: sqlcheck.KindAuth, Setting: sqlcheck.SettingPassword, Message: "login failed"},
			[]string{"login failed", "sql.username", "sql.password", EnvSQLUsername, EnvSQLPassword}},
		{"permission", &sqlcheck.Error{Target: tg, Kind: sqlcheck.KindPermission, Setting: sqlcheck.SettingUsername, Message: "may not read"},
			[]string{"VIEW SERVER STATE", "sql.username"}},
		{"certificate", &sqlcheck.Error{Target: tg, Kind: sqlcheck.KindTLS, Setting: sqlcheck.SettingCACert, Message: "not accepted"},
			[]string{"sql.ca_cert", "sql.trust_server_certificate = true"}},
		{"no encryption", &sqlcheck.Error{Target: tg, Kind: sqlcheck.KindTLS, Setting: sqlcheck.SettingEncrypt, Message: "does not support encryption"},
			[]string{"sql.encrypt"}},
		{"unreachable", &sqlcheck.Error{Target: tg, Kind: sqlcheck.KindUnreachable, Setting: sqlcheck.SettingPort, Message: "cannot connect"},
			[]string{"sql_port"}},
		{"recovery", &sqlcheck.Error{Target: tg, Kind: sqlcheck.KindTimeout, Message: "did not accept a login"},
			[]string{"resource's timeouts"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := sqlErrorDetail(tc.err)
			for _, w := range append(tc.want, "SQL Server instance MSSQLSERVER at sql01:1433") {
				if !strings.Contains(got, w) {
					t.Errorf("sqlErrorDetail = %q; lacks %q", got, w)
				}
			}
		})
	}
}

// Another Engine's answer (converge.WrongInstanceError) names sql_port as the
// argument to change.
func TestSQLErrorDetailOfAnotherInstancesAnswer(t *testing.T) {
	err := &converge.WrongInstanceError{Target: converge.Target{Host: "sql01", Instance: "INST02"}, Where: "sql01:1433", Port: 1433,
		Answered: "MSSQLSERVER", AnsweredPID: 4242, ReportedPID: 5150, Why: "instance MSSQLSERVER answered at port 1433, not INST02"}
	got := sqlErrorDetail(err)
	for _, w := range []string{"SQL Server at sql01:1433", "answers as instance MSSQLSERVER", "Set the resource's sql_port to instance INST02's TCP port"} {
		if !strings.Contains(got, w) {
			t.Errorf("sqlErrorDetail = %q; lacks %q", got, w)
		}
	}
}

func TestClientsPortUsesRemoteDefaults(t *testing.T) {
	for _, tc := range []struct {
		cfg  remote.Config
		p    int
		want int
	}{
		{remote.Config{}, 0, remote.DefaultHTTPPort},
		{remote.Config{HTTPS: true}, 0, remote.DefaultHTTPSPort},
		{remote.Config{HTTPS: true, Port: 15986}, 0, 15986},
		{remote.Config{HTTPS: true, Port: 15986}, 25986, 25986},
	} {
		c := newClients(tc.cfg, nil, nil, nil, nil)
		if got := c.port(tc.p); got != tc.want {
			t.Errorf("port(%d) with %+v = %d; want %d", tc.p, tc.cfg, got, tc.want)
		}
	}
}

// A failed logon's advice is given once per host and run: the first instance's
// error carries it whole, the others on the same host name that instance instead,
// and another host (or another port of it) gets its own.
func TestLogonAdviceOncePerHost(t *testing.T) {
	c := newClients(remote.Config{Username: `CONTOSO\svc_terraform`, Port: 5985}, nil, nil, nil, nil)
	logonErr := func(host, instance string) string {
		tg := converge.Target{Host: host, Instance: instance}
		re := &remote.Error{Host: host, Kind: remote.KindAuth, Setting: remote.SettingPassword, Auth: remote.AuthNegotiate,
			Message: "authentication failed for CONTOSO\\svc_terraform at " + host + ":5985", Hint: "The user must be a local Administrator of the host"}
		var diags diag.Diagnostics
		addEngineError(&diags, opRead, &converge.Error{Kind: converge.KindObserveFailed, Target: tg, Err: re}, c.report())
		if len(diags.Errors()) != 1 {
			t.Fatalf("%d errors for %s/%s: %v", len(diags.Errors()), host, instance, diags)
		}
		return diags.Errors()[0].Detail()
	}
	first := logonErr("sql01.contoso.com", "MSSQLSERVER")
	for _, w := range []string{"authentication failed", userNameForms, "local Administrator", EnvWinRMPassword} {
		if !strings.Contains(first, w) {
			t.Errorf("the first error lacks %q: %q", w, first)
		}
	}
	second := logonErr("SQL01.contoso.com", "REPORTING")
	if strings.Contains(second, "Three forms") || strings.Contains(second, "local Administrator") || strings.Contains(second, EnvWinRMPassword) {
		t.Errorf("the second error on the same host repeats the advice: %q", second)
	}
	for _, w := range []string{"authentication failed", "instance REPORTING on SQL01.contoso.com", logonAdviceGiven("MSSQLSERVER")} {
		if !strings.Contains(second, w) {
			t.Errorf("the second error lacks %q: %q", w, second)
		}
	}
	if other := logonErr("sql02.contoso.com", "MSSQLSERVER"); !strings.Contains(other, userNameForms) {
		t.Errorf("another host's first error lacks the advice: %q", other)
	}
}

// A login SQL Server refuses, as a failed WinRM logon: the run's first error of
// that login on a host carries the full advice, the others on the same host are
// its facts and name that instance; another host, or another login, gets its own.
func TestSQLLogonAdviceOncePerLoginAndHost(t *testing.T) {
	newRun := func(login string) *clients {
		return newClients(remote.Config{Username: `CONTOSO\svc_terraform`, Port: 5985},
			&sqlcheck.Config{Username: login, Password: "wrong", Auth: sqlcheck.AuthSQL}, nil, nil, nil)
	}
	logonErr := func(c *clients, host, instance string) string {
		tg := converge.Target{Host: host, Instance: instance}
		se := &sqlcheck.Error{Target: sqlcheck.Target{Host: host, Port: 1433, Instance: instance}, Kind: sqlcheck.KindAuth,
			Setting: sqlcheck.SettingPassword, Number: 18456, Message: "login failed for ifi (error 18456)",
			Hint: "check that the server accepts SQL Server logins (mixed mode)"}
		var diags diag.Diagnostics
		addEngineError(&diags, opRead, &converge.Error{Kind: converge.KindSQLLogonFailed, Target: tg, Err: se, SQLPort: 1433}, c.report())
		if len(diags.Errors()) != 1 {
			t.Fatalf("%d errors for %s/%s: %v", len(diags.Errors()), host, instance, diags)
		}
		return diags.Errors()[0].Summary() + ": " + diags.Errors()[0].Detail()
	}
	full := []string{"mixed mode", EnvSQLPassword, `sql.auth = "sql"`, "sql.optional = true", "Nothing was changed"}
	c := newRun("ifi")
	first := logonErr(c, "sql01.contoso.com", "MSSQLSERVER")
	for _, w := range append(full, "login failed for ifi") {
		if !strings.Contains(first, w) {
			t.Errorf("the first error lacks %q: %q", w, first)
		}
	}
	for _, inst := range []string{"REPORTING", "I03"} {
		second := logonErr(c, "SQL01.contoso.com", inst)
		for _, w := range full[:3] {
			if strings.Contains(second, w) {
				t.Errorf("the error of %s on the same host repeats %q: %q", inst, w, second)
			}
		}
		for _, w := range []string{"SQL Server " + inst + " on SQL01.contoso.com", "login failed for ifi", sqlLogonAdviceGiven("MSSQLSERVER"),
			"Nothing was changed"} {
			if !strings.Contains(second, w) {
				t.Errorf("the error of %s lacks %q: %q", inst, w, second)
			}
		}
	}
	if other := logonErr(c, "sql02.contoso.com", "MSSQLSERVER"); !strings.Contains(other, "mixed mode") {
		t.Errorf("another host's first error lacks the advice: %q", other)
	}
	// The WinRM logon's advice is its own: a refused sql login does not stand for it.
	if _, isNew := c.session.Once(c.hostOnce(logonWinRM, converge.Target{Host: "sql01.contoso.com"}), "X"); !isNew {
		t.Error("the sql login's error took the WinRM logon's place")
	}
	// Another run (another provider configuration's login) gives its own.
	if again := logonErr(newRun("other"), "sql01.contoso.com", "REPORTING"); !strings.Contains(again, "mixed mode") {
		t.Errorf("another login's first error lacks the advice: %q", again)
	}
}
