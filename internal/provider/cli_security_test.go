package provider

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// winrmBlock is a provider block with the given winrm arguments (credentials added)
// and, when sql is not "", an sql block with those arguments (credentials and CA
// added).
func (e *accEnv) winrmBlock(winrm, sql string) string {
	s := fmt.Sprintf("provider \"mssqlifi\" {\n  winrm {\n    username = %q\n    password = %q\n%s\n  }\n", accUser, accPassword, winrm)
	if sql != "" {
		s += fmt.Sprintf("  sql {\n    username = %q\n    password = %q\n    ca_cert  = <<-EOT\n%s\nEOT\n%s\n  }\n",
			accSQLUser, accSQLPass, strings.TrimSpace(string(e.sim.CACertPEM())), sql)
	}
	return s + "}\n"
}

// A domain host as `winrm quickconfig` leaves it (the simulator's defaults): only
// the HTTP listener is used, Basic is off and clear-text bodies are refused. The
// provider's defaults (negotiate, messages encrypted by NTLM) apply, plan and
// destroy there, with no security warning.
func TestCLI_defaultHostOverHTTPWithEncryption(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, nil)
	if hc := defaultHostConfig("x", "127.0.0.1"); hc.WinRM.BasicEnabled() || hc.WinRM.AllowUnencrypted {
		t.Fatalf("the test host is not a default host: %+v", hc.WinRM)
	}
	// No https argument: the default is the HTTP listener.
	w.write(e.winrmBlock(fmt.Sprintf("    port  = %d", e.httpPort), `    encrypt = "true"`) + resourceConfig(e.addr, ""))
	r := w.mustApply()
	r.wantNoDiag(t, "warning", "clear text|not verified")
	if a := w.attrs(); a["ifi_enabled"] != true || a["verified_by"] != "sql_dmv" {
		t.Fatalf("state after apply over HTTP: ifi_enabled %v, verified_by %v", a["ifi_enabled"], a["verified_by"])
	}
	if !e.holds(defaultSvcSID) {
		t.Fatal("the service SID does not hold the right after apply")
	}
	w.plan().wantPlanExit(t, 0)
	if d := w.destroy(); len(d.errors()) > 0 {
		t.Fatalf("destroy: %s", d.describe())
	}
	if e.holds(defaultSvcSID) {
		t.Fatal("destroy left the grant in place")
	}
}

// Upgrading from the old default (https = true): a configuration that names the
// HTTPS listener's port but not https now speaks HTTP to it; the plan fails, the
// error says to set winrm.https = true, and with it the plan works, the
// certificate verified against ca_cert.
func TestCLI_httpsListenerWithoutHTTPSSaysSetIt(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, nil)
	ca := fmt.Sprintf("    ca_cert = <<-EOT\n%s\nEOT", strings.TrimSpace(string(e.sim.CACertPEM())))
	w.write(e.winrmBlock(fmt.Sprintf("    port = %d\n%s", e.httpsPort, ca), "") + resourceConfig(e.addr, ""))
	p := w.plan()
	if p.Exit != 1 {
		t.Fatalf("plan over HTTP to the HTTPS listener: exit %d, want 1:\n%s", p.Exit, p.describe())
	}
	p.wantDiag(t, "error", "", regexp.QuoteMeta("winrm.https = true"))
	if e.holds(defaultSvcSID) {
		t.Fatal("the failed plan changed the host")
	}
	w.write(e.winrmBlock(fmt.Sprintf("    https = true\n    port = %d\n%s", e.httpsPort, ca), "") + resourceConfig(e.addr, ""))
	w.plan().wantPlanExit(t, 2)
}

// Every setting that weakens security warns at plan, naming the setting and the
// risk; the plan still works against a host configured for it.
func TestCLI_insecureSettingsWarnAtPlan(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	yes := true
	e := startSim(t, func(hc *host.HostConfig) {
		hc.WinRM.Basic = &yes
		hc.WinRM.AllowUnencrypted = true
	})
	w.write(e.winrmBlock(fmt.Sprintf("    auth = \"basic\"\n    https = false\n    allow_unencrypted = true\n    port = %d", e.httpPort),
		"    encrypt = \"disable\"\n    trust_server_certificate = true") + resourceConfig(e.addr, ""))
	p := w.plan()
	p.wantPlanExit(t, 2)
	p.wantDiag(t, "warning", `^Basic over HTTP sends the WinRM password in clear text$`, `winrm.auth = "basic"`)
	p.wantDiag(t, "warning", `^WinRM messages travel in clear text$`, `winrm.allow_unencrypted = true`)
	p.wantDiag(t, "warning", `^SQL Server certificates are not verified$`, `sql.trust_server_certificate = true`)
	p.wantDiag(t, "warning", `^The SQL password travels in clear text$`, `sql.encrypt = "disable"`)

	w.write(e.winrmBlock(fmt.Sprintf("    https = true\n    insecure = true\n    port = %d", e.httpsPort), "") + resourceConfig(e.addr, ""))
	p = w.plan()
	p.wantPlanExit(t, 2)
	p.wantDiag(t, "warning", `^WinRM certificates are not verified$`, `winrm.insecure = true`)
	p.wantNoDiag(t, "warning", "clear text")
}

// Contradictory or unsafe settings are refused at plan, naming the argument, before
// anything reaches a host.
func TestCLI_badSecurityInputRefusedAtPlan(t *testing.T) {
	t.Parallel()
	e := startSim(t, nil)
	for _, tc := range []struct {
		name, winrm, sql, summary, detail string
	}{
		{"allow_unencrypted with NTLM over HTTPS", fmt.Sprintf("    https = true\n    allow_unencrypted = true\n    port = %d", e.httpsPort), "",
			`^allow_unencrypted has no effect over HTTPS$`, `winrm.allow_unencrypted`},
		{"allow_unencrypted with NTLM over HTTP", fmt.Sprintf("    https = false\n    allow_unencrypted = true\n    port = %d", e.httpPort), "",
			`^allow_unencrypted has no effect with Negotiate, Kerberos or NTLM$`, `winrm.allow_unencrypted`},
		// https and allow_unencrypted unset: their defaults send nothing in clear text.
		{"Basic over HTTP by default", fmt.Sprintf("    auth = \"basic\"\n    port = %d", e.httpPort), "",
			`^Basic over HTTP would send the password in clear text$`, `winrm.auth = "basic"`},
		{"kerberos with allow_unencrypted", fmt.Sprintf("    auth = \"kerberos\"\n    https = false\n    allow_unencrypted = true\n    port = %d", e.httpPort), "",
			`^allow_unencrypted has no effect with Negotiate, Kerberos or NTLM$`, `auth = "kerberos"`},
		{"SQL user with a backslash as a SQL login", "", `    username = "CONTOSO\\sqlcheck"`,
			`^SQL login kind does not match the user name$`, `backslash(.|\n)*sql.auth = "ntlm"`},
		{"SQL ntlm without a domain", "", "    auth = \"ntlm\"",
			`^SQL login kind does not match the user name$`, `DOMAIN\\user`},
		{"SQL keytab without kerberos", "", "    auth = \"ntlm\"\n    username = \"CONTOSO\\\\sqlcheck\"\n    keytab = \"/tmp/sqlcheck.keytab\"",
			`^Kerberos setting without Kerberos$`, `sql.keytab is used only with sql.auth = "kerberos"`},
		{"SQL kerberos with an SPN that is none", "", "    auth = \"kerberos\"\n    spn = \"sql01.mssqlifi.test\"",
			`^Invalid SQL Server SPN$`, `MSSQLSvc/<fqdn>:<port>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newCLI(t)
			before := len(e.operations())
			cfg := e.winrmBlock(tc.winrm, "")
			if tc.sql != "" {
				// An sql block whose username, if given, replaces the fixture's.
				cfg = e.winrmBlock(tc.winrm, "")
				cfg = strings.TrimSuffix(cfg, "}\n") + sqlBlock(tc.sql) + "}\n"
			}
			w.write(cfg + resourceConfig(e.addr, ""))
			p := w.plan()
			if p.Exit != 1 {
				t.Fatalf("plan exit %d, want 1 (error):\n%s", p.Exit, p.describe())
			}
			p.wantDiag(t, "error", tc.summary, tc.detail)
			if n := len(e.operations()); n != before {
				t.Fatalf("the host ran %d operations for a refused configuration", n-before)
			}
		})
	}
}

// sqlBlock is an sql block with a password and the given arguments; a username
// argument in args replaces the fixture's login.
func sqlBlock(args string) string {
	user := fmt.Sprintf("    username = %q\n", accSQLUser)
	if strings.Contains(args, "username") {
		user = ""
	}
	return fmt.Sprintf("  sql {\n%s    password = %q\n%s\n  }\n", user, accSQLPass, args)
}

// A host whose PowerShell runs in Constrained Language Mode (AppLocker or App
// Control script enforcement): the apply fails before changing anything, with an
// error that names the mode, the host, the WinRM user and what an administrator can
// do; once the policy lets the user run in FullLanguage, the apply succeeds.
func TestCLI_constrainedLanguageModeIsNamed(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, func(hc *host.HostConfig) { hc.PowerShellLanguageMode = host.LanguageConstrained })
	w.write(e.providerConfig(true) + resourceConfig(e.addr, ""))
	r := w.apply()
	if r.Exit == 0 {
		t.Fatalf("terraform apply succeeded in ConstrainedLanguage mode:\n%s", r.describe())
	}
	r.wantDiag(t, "error", `^Cannot read SQL Server instance MSSQLSERVER on `+regexp.QuoteMeta(e.addr)+`$`,
		`ConstrainedLanguage mode(.|\n)*PowerShell on `+regexp.QuoteMeta(e.addr)+` runs in Constrained Language Mode for `+accUser+
			`(.|\n)*AppLocker(.|\n)*Script rules for `+accUser+`(.|\n)*Disabled:Script Enforcement`)
	if ops := e.operations(); len(ops) == 0 || slices.ContainsFunc(ops, func(op string) bool { return op != "" }) {
		t.Errorf("operations run on the host: %q; want only refused commands", ops)
	}
	if e.holds(defaultSvcSID) {
		t.Error("the right was granted in ConstrainedLanguage mode")
	}
	if err := e.host().SetLanguageMode(host.LanguageFull); err != nil {
		t.Fatal(err)
	}
	w.mustApply()
	if !e.holds(defaultSvcSID) {
		t.Error("the apply after the policy was lifted did not grant the right")
	}
}

// A wrong password on a host with two instances, with the recommended configuration
// (HTTP, negotiate): each instance's apply fails, but the advice on user names is
// given once, in the first error; the other refers to that instance.
func TestCLI_logonAdviceOncePerHost(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, func(hc *host.HostConfig) {
		hc.Domain = "CONTOSO"
		hc.Instances = append(hc.Instances, host.InstanceConfig{Name: "REPORTING"})
	})
	w.write(strings.Replace(e.winrmBlock(fmt.Sprintf("    https = false\n    port  = %d", e.httpPort), ""), accPassword, "Wr0ng-Pa55word", 1) +
		twoInstances(e.addr))
	r := w.apply()
	if r.Exit != 1 {
		t.Fatalf("apply with a wrong password: exit %d, want 1:\n%s", r.Exit, r.describe())
	}
	failed := r.find("error", "", "authentication failed for Administrator")
	advised := r.find("error", "", regexp.QuoteMeta(userNameForms))
	if len(failed) != 2 || len(advised) != 1 {
		t.Fatalf("%d logon errors (want 2), %d with the advice on user names (want 1):\n%s", len(failed), len(advised), r.describe())
	}
	first := "MSSQLSERVER"
	if strings.Contains(advised[0].Summary, "REPORTING") {
		first = "REPORTING"
	}
	r.wantDiag(t, "error", "", regexp.QuoteMeta(logonAdviceGiven(first)))
	if n := strings.Count(r.Stdout, "local Administrator of the host"); n != 1 {
		t.Errorf("the host's hint appears %d times, want once:\n%s", n, r.describe())
	} // A warning about a logon says what happened on the wire: negotiate fell back
	// to NTLM, and NTLM was refused, so nothing "reached" the host with NTLM.
	r.wantNoDiag(t, "warning", `^NTLM instead of Kerberos`)
}

// A krb5_conf that is no regular file fails the plan within seconds, naming the
// argument, the file and what it is: /dev/zero is not read (it took the provider to
// 18.9 GiB in 40 s), a FIFO without a writer does not hang the plan (issue 36).
func TestCLI_specialKrb5ConfFailsPlanAtOnce(t *testing.T) {
	t.Parallel()
	e := startSim(t, nil)
	fifo := filepath.Join(t.TempDir(), "krb5.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, is string }{{"/dev/zero", "a character device"}, {fifo, "a named pipe"}} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			w := newCLI(t)
			before := len(e.operations())
			w.write(e.winrmBlock(fmt.Sprintf("    port = %d\n    krb5_conf = %q", e.httpPort, tc.path), "") + resourceConfig(e.addr, ""))
			p := w.plan()
			if p.Exit != 1 {
				t.Fatalf("plan exit %d, want 1 (error):\n%s", p.Exit, p.describe())
			}
			p.wantDiag(t, "error", `^Unreadable krb5\.conf$`, regexp.QuoteMeta(tc.path+" is "+tc.is)+`[\s\S]*winrm\.krb5_conf`)
			if p.Duration > 30*time.Second {
				t.Errorf("the plan took %s, want seconds", p.Duration)
			}
			if n := len(e.operations()); n != before {
				t.Fatalf("the host ran %d operations for a refused configuration", n-before)
			}
		})
	}
}
