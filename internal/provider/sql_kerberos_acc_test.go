package provider

import (
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/addc"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// The SQL check over Kerberos (sql.auth = "kerberos") against the AD DC:
// go-mssqldb's Kerberos authenticator against the simulator's TDS endpoint, which
// accepts the ticket with the host's keys (the computer account's, as SQL Server
// running as its virtual account does), takes CONTOSO\addba from the ticket's PAC
// and maps it to its Windows login.

var (
	adSQLSPNs      sync.Map // SPN -> struct{}: registered once per DC
	adOtherSQLHost sync.Once
)

// sqlADEnv is adAccEnv with SQL Server's SPN MSSQLSvc/sqlad.contoso.test:<port> on
// the host's computer account (as SQL Server running as its virtual account
// registers it) and in the host's keys, and a Windows login for CONTOSO\addba; the
// instance has no SQL login for the check to fall back on. It returns the SPN.
func sqlADEnv(t *testing.T) (*accEnv, *addc.DC, string) {
	t.Helper()
	dc := adDC(t)
	port := freeTCPPort(t)
	spn := fmt.Sprintf("MSSQLSvc/%s.%s:%d", strings.ToLower(adHost), dc.DNSDomain, port)
	if _, done := adSQLSPNs.LoadOrStore(spn, struct{}{}); !done {
		dc.AddSPN(t, adHost+"$", spn)
	}
	e := adDomainHost(t, dc.HostKeytab(t, adHost, adSPN, spn), func(hc *host.HostConfig) {
		hc.Instances[0].SQLPort = port
		hc.Instances[0].Logins = []host.LoginConfig{{Name: adAccount}}
	})
	return e, dc, spn
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

// sqlKerberosConfig is the provider block: WinRM by Kerberos over HTTP with the
// UPN's password and the sql block with auth = "kerberos", logon its credential
// lines and spn its SPN line.
func (e *accEnv) sqlKerberosConfig(dc *addc.DC, logon, spn string) string {
	winrm := fmt.Sprintf("    username = %q\n    password = %q\n    auth = \"kerberos\"", adUserUPN, adUserPass)
	return e.withSQLKerberos(e.adProviderConfig(dc, winrm), logon, spn)
}

// sqlKerberosLogons is the number of Kerberos logons the host's SQL Server accepted.
func (e *accEnv) sqlKerberosLogons() int64 {
	st, err := e.sim.Stats(e.name)
	if err != nil {
		e.t.Fatal(err)
	}
	return st.SQLKerberosLogons
}

// IFI verified through SQL Server by a Kerberos login with the UPN's password, then
// its keytab, then the credential cache of kinit -E: the state says the answer came
// from sys.dm_server_services, and the host's SQL Server saw Kerberos logons (it
// has no SQL login to accept any other). The TLS certificate is checked against
// the CA (no trust_server_certificate).
func TestAccKerberosAD_sqlCheck(t *testing.T) {
	e, dc, spn := sqlADEnv(t)
	spnLine := fmt.Sprintf("    spn      = %q", spn)
	var before int64
	step := func(logon string) resource.TestStep {
		return resource.TestStep{
			Config:           e.sqlKerberosConfig(dc, logon, spnLine) + resourceConfig(e.addr, ""),
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
	steps := []resource.TestStep{
		step(fmt.Sprintf("    username = %q\n    password = %q", adUserUPN, adUserPass)),
		step(fmt.Sprintf("    username = %q\n    keytab   = %q", adUserUPN, dc.Keytab(t, adUserUPN))),
		step(""), // the credential cache of kinit -E
	}
	steps[2].PreConfig = func() {
		t.Setenv("KRB5CCNAME", dc.Kinit(t, adUserUPN, adUserPass, true)) // the provider runs in this process
		before = e.sqlKerberosLogons()
	}
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: protoV6Factories, Steps: steps})
}

// A ticket SQL Server cannot accept, and an SPN the KDC does not know: IFI is not
// verified through SQL Server, and what the user reads names the SPN (through the
// real terraform CLI, which shows warnings as well as errors).
func TestAccKerberosAD_sqlCheckWrongSPN(t *testing.T) {
	e, dc, spn := sqlADEnv(t)
	// Another SQL Server's SPN, on the computer account of another host whose keys
	// this host does not have: the DC issues the ticket, SQL Server refuses it.
	other := strings.Replace(spn, "sqlad.", "sqlad2.", 1)
	adOtherSQLHost.Do(func() { dc.AddComputer(t, "SQLAD2") })
	if _, done := adSQLSPNs.LoadOrStore(other, struct{}{}); !done {
		dc.AddSPN(t, "SQLAD2$", other)
	}
	password := fmt.Sprintf("    username = %q\n    password = %q", adUserUPN, adUserPass)
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
			w.write(e.sqlKerberosConfig(dc, password, tc.spnLine) + resourceConfig(e.addr, ""))
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
		`auth = "kerberos"` + "\n    username = \"dba@CONTOSO.TEST\"\n    password = \"x\"",
		`auth = "kerberos"` + "\n    username = \"CONTOSO\\\\dba\"\n    keytab = \"/nonexistent/dba.keytab\"\n    spn = \"MSSQLSvc/sql01.contoso.test:1433\"",
	} {
		w := newCLI(t)
		w.write(requiredProviders + "provider \"mssqlifi\" {\n  sql {\n    " + sql + "\n  }\n}\n" + resourceConfig("sql01.contoso.test", ""))
		if r := w.run("validate", "-no-color"); r.Exit != 0 {
			t.Errorf("terraform validate refused sql { %s }: exit %d\n%s\n%s", sql, r.Exit, r.Stdout, r.Stderr)
		}
	}
}

// What the SQL Kerberos login reads is checked at plan, naming the argument: a
// keytab that is not there, a credential cache that is not there.
func TestAccKerberosAD_sqlPlanErrors(t *testing.T) {
	e, dc, spn := sqlADEnv(t)
	spnLine := fmt.Sprintf("    spn      = %q", spn)
	missing := filepath.Join(t.TempDir(), "missing.keytab")
	t.Setenv("KRB5CCNAME", "FILE:"+filepath.Join(t.TempDir(), "no-cache"))
	for _, tc := range []struct{ name, logon, want string }{
		{"missing keytab", fmt.Sprintf("    username = %q\n    keytab   = %q", adUserUPN, missing), `SQL keytab not usable[\s\S]*missing\.keytab`},
		{"no credential cache", "", `No Kerberos credentials for the SQL login[\s\S]*no-cache`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: protoV6Factories,
				Steps: []resource.TestStep{{
					Config:      e.sqlKerberosConfig(dc, tc.logon, spnLine) + resourceConfig(e.addr, ""),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(tc.want),
				}},
			})
		})
	}
}
