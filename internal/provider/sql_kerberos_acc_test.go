package provider

import (
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/kdc"
)

// The SQL check over Kerberos (sql.auth = "kerberos"): go-mssqldb's Kerberos
// authenticator against the simulator's TDS endpoint, which accepts the ticket
// with the host's keys (the computer account's, as SQL Server running as its
// virtual account does) and maps MSSQLIFI\dba to its Windows login.

// sqlKrbEnv is krbAccEnv with SQL Server's SPN MSSQLSvc/sql01.mssqlifi.test:<port>
// on the host's keys and a Windows login for MSSQLIFI\dba (with VIEW SERVER
// STATE); the instance has no SQL login for the check to fall back on. It returns
// the SPN.
func sqlKrbEnv(t *testing.T) (*accEnv, *kdc.KDC, string) {
	t.Helper()
	k := kdc.Start(t, kdc.Options{})
	k.AddUser(t, accKrbUser, accKrbPass)
	kt := k.AddService(t, accKrbSPN)
	port := freeTCPPort(t)
	spn := fmt.Sprintf("MSSQLSvc/sql01.mssqlifi.test:%d", port)
	k.Kadmin(t, "addprinc -randkey "+spn)
	k.Kadmin(t, fmt.Sprintf("ktadd -k %s -norandkey %s", kt, spn))
	e := startSim(t, func(hc *host.HostConfig) {
		hc.Domain = "MSSQLIFI"
		hc.WinRM.Kerberos = &host.KerberosConfig{Realm: k.Realm, Keytab: kt}
		hc.WinRM.Users = append(hc.WinRM.Users, host.UserConfig{Name: `MSSQLIFI\` + accKrbUser, Password: accKrbPass})
		hc.Instances[0].SQLPort = port
		hc.Instances[0].Logins = []host.LoginConfig{{Name: `MSSQLIFI\` + accKrbUser}}
	})
	return e, k, spn
}

// freeTCPPort is a loopback port free a moment ago (the simulator binds it next).
func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// sqlKerberosConfig is the provider block: WinRM by Kerberos over HTTP and the sql
// block with auth = "kerberos", logon its credential lines and spn its SPN line.
func (e *accEnv) sqlKerberosConfig(k *kdc.KDC, logon, spn string) string {
	winrm := fmt.Sprintf("    username = %q\n    password = %q", accKrbUser+"@"+k.Realm, accKrbPass)
	cfg := e.kerberosProviderConfig(k, winrm)
	sql := fmt.Sprintf(`
  sql {
    auth     = "kerberos"
%s
%s
    encrypt  = "true"
    ca_cert  = <<-EOT
%s
EOT
  }
`, logon, spn, strings.TrimSpace(string(e.sim.CACertPEM())))
	if !strings.Contains(cfg, e.sqlBlock()) {
		e.t.Fatal("the Kerberos provider block has no sql block to replace")
	}
	return strings.Replace(cfg, e.sqlBlock(), sql, 1)
}

// sqlKerberosLogons is the number of Kerberos logons the host's SQL Server accepted.
func (e *accEnv) sqlKerberosLogons() int64 {
	st, err := e.sim.Stats(e.name)
	if err != nil {
		e.t.Fatal(err)
	}
	return st.SQLKerberosLogons
}

// IFI verified through SQL Server by a Kerberos login with a password, then with a
// keytab, then from the credential cache (where kinit is installed): the state says the answer came from sys.dm_server_services, and the
// host's SQL Server saw Kerberos logons (it has no SQL login to accept any other).
func TestAccKerberos_sqlCheck(t *testing.T) {
	e, k, spn := sqlKrbEnv(t)
	spnLine := fmt.Sprintf("    spn      = %q", spn)
	password := fmt.Sprintf("    username = %q\n    password = %q", accKrbUser+"@"+k.Realm, accKrbPass)
	keytab := fmt.Sprintf("    username = %q\n    keytab   = %q", `MSSQLIFI\`+accKrbUser, k.UserKeytab(t, accKrbUser))
	var before int64
	step := func(logon string) resource.TestStep {
		return resource.TestStep{
			Config:           e.sqlKerberosConfig(k, logon, spnLine) + resourceConfig(e.addr, ""),
			ConfigPlanChecks: emptyPlanAfterApply(),
			PreConfig:        func() { before = e.sqlKerberosLogons() },
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(resName, "ifi_enabled", "true"),
				resource.TestCheckResourceAttr(resName, "verified_by", "sql_dmv"),
				check(func() error {
					if n := e.sqlKerberosLogons() - before; n == 0 {
						return fmt.Errorf("SQL Server saw no Kerberos logon")
					}
					return nil
				}),
			),
		}
	}
	steps := []resource.TestStep{step(password), step(keytab)}
	if kdc.KinitAvailable() == nil {
		// The credential cache after kinit: no username, password or keytab.
		t.Setenv("KRB5CCNAME", k.Kinit(t, accKrbUser, accKrbPass)) // the provider runs in this process
		steps = append(steps, step(""))
	} else {
		t.Logf("the credential cache step is left out: %v", kdc.KinitAvailable())
	}
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: protoV6Factories, Steps: steps})
}

// A ticket SQL Server cannot accept, and an SPN the KDC does not know: IFI is not
// verified through SQL Server, and what the user reads names the SPN (through the
// real terraform CLI, which shows warnings as well as errors).
func TestAccKerberos_sqlCheckWrongSPN(t *testing.T) {
	e, k, spn := sqlKrbEnv(t)
	// Another SQL Server's SPN, registered in the KDC on an account whose keys
	// this host does not have: the KDC issues the ticket, SQL Server refuses it.
	other := strings.Replace(spn, "sql01.", "sql02.", 1)
	k.AddService(t, other)
	password := fmt.Sprintf("    username = %q\n    password = %q", accKrbUser+"@"+k.Realm, accKrbPass)
	for _, tc := range []struct {
		name, spnLine, spn, detail string
	}{
		{"ticket for another account", fmt.Sprintf("    spn      = %q", other), other, `refused the Kerberos ticket[\s\S]*18452[\s\S]*setspn -Q`},
		// The default SPN names the host as the resource does, by IP address: no
		// account has it.
		{"SPN the KDC does not know", "", "", `KDC_ERR_S_PRINCIPAL_UNKNOWN[\s\S]*sql\.spn`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newCLI(t)
			w.write(e.sqlKerberosConfig(k, password, tc.spnLine) + resourceConfig(e.addr, ""))
			r := w.apply()
			want := tc.spn
			if want == "" {
				want = "MSSQLSvc/" + e.addr + ":"
			}
			re := regexp.MustCompile(tc.detail)
			found := false
			for _, d := range r.Diags {
				text := d.Summary + " " + d.Detail
				if (d.Severity == "warning" || d.Severity == "error") && strings.Contains(text, want) && re.MatchString(text) {
					found = true
				}
			}
			if !found {
				t.Fatalf("no diagnostic names %s and matches %q; exit %d, diagnostics:\n%s", want, tc.detail, r.Exit, r.describe())
			}
			if r.Exit == 0 {
				if got := w.attrs()["verified_by"]; got == "sql_dmv" {
					t.Errorf("verified_by = %v although the SQL login failed", got)
				}
			}
		})
	}
}

// terraform validate accepts the sql block's Kerberos login in each of its forms,
// with nothing configured but the block itself: the credential cache needs no
// argument at all.
func TestAccKerberos_validateSQLKerberos(t *testing.T) {
	for _, sql := range []string{
		`auth = "kerberos"`,
		`auth = "kerberos"` + "\n    username = \"dba@MSSQLIFI.TEST\"\n    password = \"x\"",
		`auth = "kerberos"` + "\n    username = \"MSSQLIFI\\\\dba\"\n    keytab = \"/nonexistent/dba.keytab\"\n    spn = \"MSSQLSvc/sql01.mssqlifi.test:1433\"",
	} {
		w := newCLI(t)
		w.write(requiredProviders + "provider \"mssqlifi\" {\n  sql {\n    " + sql + "\n  }\n}\n" + resourceConfig("sql01.mssqlifi.test", ""))
		if r := w.run("validate", "-no-color"); r.Exit != 0 {
			t.Errorf("terraform validate refused sql { %s }: exit %d\n%s\n%s", sql, r.Exit, r.Stdout, r.Stderr)
		}
	}
}

// What the SQL Kerberos login reads is checked at plan, naming the argument: a
// keytab that is not there, a credential cache that is not there.
func TestAccKerberos_sqlPlanErrors(t *testing.T) {
	e, k, spn := sqlKrbEnv(t)
	spnLine := fmt.Sprintf("    spn      = %q", spn)
	missing := filepath.Join(t.TempDir(), "missing.keytab")
	t.Setenv("KRB5CCNAME", "FILE:"+filepath.Join(t.TempDir(), "no-cache"))
	for _, tc := range []struct{ name, logon, want string }{
		{"missing keytab", fmt.Sprintf("    username = %q\n    keytab   = %q", accKrbUser+"@"+k.Realm, missing), `SQL keytab not usable[\s\S]*missing\.keytab`},
		{"no credential cache", "", `No Kerberos credentials for the SQL login[\s\S]*no-cache`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: protoV6Factories,
				Steps: []resource.TestStep{{
					Config:      e.sqlKerberosConfig(k, tc.logon, spnLine) + resourceConfig(e.addr, ""),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(tc.want),
				}},
			})
		})
	}
}
