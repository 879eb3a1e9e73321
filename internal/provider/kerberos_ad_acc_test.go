package provider

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/addc"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// The Active Directory accounts of these tests: a user whose UPN is in an
// alternative suffix and whose name part is not the account's name, and the
// simulated host's computer account with its HTTP SPN.
const (
	adUser     = "addba"
	adUserUPN  = "dba.admin@" + addc.UPNSuffix
	adUserPass = "Ad-Dba-Secret-1"
	adHost     = "SQLAD"
	adSPN      = "HTTP/sqlad.contoso.test"
)

var adAccounts, adSvcAccount sync.Once

// adAccEnv is the process's AD domain controller (Samba) and a domain host reached
// over HTTP that accepts Kerberos with its computer account's keys; CONTOSO\addba
// is one of its administrators.
func adAccEnv(t *testing.T) (*accEnv, *addc.DC) {
	t.Helper()
	dc := adDC(t)
	kt := dc.HostKeytab(t, adHost, adSPN)
	e := startSim(t, func(hc *host.HostConfig) {
		hc.Domain = addc.NetBIOS
		hc.WinRM.Kerberos = &host.KerberosConfig{Realm: addc.Realm, Keytab: kt}
		hc.WinRM.Users = append(hc.WinRM.Users, host.UserConfig{Name: addc.NetBIOS + `\` + adUser, Password: adUserPass})
	})
	return e, dc
}

// adDC is the process's DC with the tests' accounts, created once.
func adDC(t *testing.T) *addc.DC {
	t.Helper()
	dc := addc.Shared(t)
	adAccounts.Do(func() {
		dc.AddUser(t, adUser, adUserPass)
		dc.SetUPN(t, adUser, adUserUPN)
		dc.AddComputer(t, adHost)
	})
	return dc
}

// adProviderConfig is the provider block for the AD host's HTTP listener; args
// holds the logon lines and auth.
func (e *accEnv) adProviderConfig(dc *addc.DC, args string) string {
	return requiredProviders + fmt.Sprintf(`
provider "mssqlifi" {
  winrm {
%s
    https     = false
    port      = %d
    spn       = %q
    krb5_conf = %q
  }
`, args, e.httpPort, adSPN, dc.Krb5Conf) + e.sqlBlock() + "}\n"
}

// Every name form Active Directory takes, with a password, through the real CLI:
// each operation runs as CONTOSO\addba, each logon is Kerberos with a ticket from
// the DC. The UPN's suffix corp.example is no realm: it goes to default_realm.
func TestAccKerberosAD_passwordNameForms(t *testing.T) {
	t.Parallel()
	for _, name := range []string{addc.NetBIOS + `\` + adUser, adUser + "@" + strings.ToLower(addc.Realm), adUserUPN} {
		t.Run(name, func(t *testing.T) {
			e, dc := adAccEnv(t)
			logon := fmt.Sprintf("    username = %q\n    password = %q\n    auth = \"kerberos\"", name, adUserPass)
			lifecycleAsUser(t, e, e.adProviderConfig(dc, logon)+resourceConfig(e.addr, ""), true, "kerberos", addc.NetBIOS+`\`+adUser)
		})
	}
}

// A keytab exported under the UPN.
func TestAccKerberosAD_keytab(t *testing.T) {
	e, dc := adAccEnv(t)
	kt := dc.Keytab(t, adUserUPN)
	logon := fmt.Sprintf("    username = %q\n    keytab = %q\n    auth = \"kerberos\"", adUserUPN, kt)
	lifecycleAsUser(t, e, e.adProviderConfig(dc, logon)+resourceConfig(e.addr, ""), true, "kerberos", addc.NetBIOS+`\`+adUser)
}

// A credential cache of kinit -E, whose client name is the UPN: the host takes the
// account from the ticket's PAC.
func TestAccKerberosAD_cache(t *testing.T) {
	e, dc := adAccEnv(t)
	t.Setenv("KRB5CCNAME", dc.Kinit(t, adUserUPN, adUserPass, true)) // the provider runs in this process
	lifecycleAsUser(t, e, e.adProviderConfig(dc, "    auth = \"kerberos\"")+resourceConfig(e.addr, ""), false, "kerberos", addc.NetBIOS+`\`+adUser)
}

// negotiate (the default) with the UPN, its realm given: Kerberos, no NTLM.
func TestAccKerberosAD_negotiatePicksKerberos(t *testing.T) {
	e, dc := adAccEnv(t)
	logon := fmt.Sprintf("    username = %q\n    password = %q\n    realm = %q", adUserUPN, adUserPass, addc.Realm)
	lifecycleAsUser(t, e, e.adProviderConfig(dc, logon)+resourceConfig(e.addr, ""), true, "kerberos", addc.NetBIOS+`\`+adUser)
}

// A host reached by address without winrm.spn: the DC knows no HTTP/<address>, and
// the error names the SPN and the argument.
func TestAccKerberosAD_missingSPN(t *testing.T) {
	e, dc := adAccEnv(t)
	logon := fmt.Sprintf("    username = %q\n    password = %q\n    auth = \"kerberos\"", adUserUPN, adUserPass)
	cfg := strings.Replace(e.adProviderConfig(dc, logon), fmt.Sprintf("    spn       = %q\n", adSPN), "", 1)
	if strings.Contains(cfg, adSPN) {
		t.Fatal("the configuration still sets spn")
	}
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Factories,
		Steps: []resource.TestStep{{
			Config:      cfg + resourceConfig(e.addr, ""),
			ExpectError: regexp.MustCompile(`HTTP/` + regexp.QuoteMeta(e.addr) + `\s+\(KDC_ERR_S_PRINCIPAL_UNKNOWN\)[\s\S]*winrm\.spn`),
		}},
	})
}

// WinRM's SPN on a user service account (setspn -S HTTP/... CONTOSO\svcwinrm, as
// for a listener behind a load-balanced name): the ticket is encrypted with that
// account's keys, which the host holds.
func TestAccKerberosAD_spnOnUserServiceAccount(t *testing.T) {
	dc := adDC(t)
	const spn = "HTTP/sqlsvc.contoso.test"
	adSvcAccount.Do(func() {
		dc.AddUser(t, "svcwinrm", "Svc-WinRM-Secret-1")
		dc.Set(t, "svcwinrm", "msDS-SupportedEncryptionTypes", addc.EncAES)
		dc.AddSPN(t, "svcwinrm", spn)
	})
	kt := dc.ServiceKeytab(t, "svcwinrm", spn)
	e := startSim(t, func(hc *host.HostConfig) {
		hc.Domain = addc.NetBIOS
		hc.WinRM.Kerberos = &host.KerberosConfig{Realm: addc.Realm, Keytab: kt}
		hc.WinRM.Users = append(hc.WinRM.Users, host.UserConfig{Name: addc.NetBIOS + `\` + adUser, Password: adUserPass})
	})
	logon := fmt.Sprintf("    username = %q\n    password = %q\n    auth = \"kerberos\"", adUserUPN, adUserPass)
	cfg := strings.Replace(e.adProviderConfig(dc, logon), fmt.Sprintf("%q", adSPN), fmt.Sprintf("%q", spn), 1)
	lifecycleAsUser(t, e, cfg+resourceConfig(e.addr, ""), true, "kerberos", addc.NetBIOS+`\`+adUser)
}

var adSQLSPNs sync.Map // SPN -> struct{}: registered once per DC

// The SQL check over Kerberos against the AD DC (sql.auth = "kerberos", a UPN and
// its password): SQL Server's SPN MSSQLSvc/sqlad.contoso.test:<port> is on the
// host's computer account, as SQL Server running as its virtual account registers
// it; the host takes CONTOSO\addba from the ticket's PAC and maps it to its Windows
// login. The TLS certificate is checked against the CA (no
// trust_server_certificate).
func TestAccKerberosAD_sqlCheck(t *testing.T) {
	dc := adDC(t)
	port := freeTCPPort(t)
	sqlSPN := fmt.Sprintf("MSSQLSvc/%s.%s:%d", strings.ToLower(adHost), dc.DNSDomain, port)
	if _, done := adSQLSPNs.LoadOrStore(sqlSPN, struct{}{}); !done {
		dc.AddSPN(t, adHost+"$", sqlSPN)
	}
	kt := dc.HostKeytab(t, adHost, adSPN, sqlSPN)
	e := startSim(t, func(hc *host.HostConfig) {
		hc.Domain = addc.NetBIOS
		hc.WinRM.Kerberos = &host.KerberosConfig{Realm: addc.Realm, Keytab: kt}
		hc.WinRM.Users = append(hc.WinRM.Users, host.UserConfig{Name: addc.NetBIOS + `\` + adUser, Password: adUserPass})
		hc.Instances[0].SQLPort = port
		hc.Instances[0].Logins = []host.LoginConfig{{Name: addc.NetBIOS + `\` + adUser}}
	})
	winrm := fmt.Sprintf("    username = %q\n    password = %q\n    auth = \"kerberos\"", adUserUPN, adUserPass)
	config := func(logon string) string {
		cfg := e.adProviderConfig(dc, winrm)
		sql := fmt.Sprintf(`
  sql {
    auth     = "kerberos"
%s
    spn      = %q
    encrypt  = "true"
    ca_cert  = <<-EOT
%s
EOT
  }
`, logon, sqlSPN, strings.TrimSpace(string(e.sim.CACertPEM())))
		if !strings.Contains(cfg, e.sqlBlock()) {
			t.Fatal("the AD provider block has no sql block to replace")
		}
		return strings.Replace(cfg, e.sqlBlock(), sql, 1) + resourceConfig(e.addr, "")
	}
	var before int64
	step := func(logon string) resource.TestStep {
		return resource.TestStep{
			Config:           config(logon),
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

// A domain host whose clock is 10 minutes ahead of the domain's (and of the
// runner's): the DC issues the ticket, the host refuses it with KRB_AP_ERR_SKEW,
// and the error names the clock skew and the fix.
func TestAccKerberosAD_clockSkew(t *testing.T) {
	dc := adDC(t)
	kt := dc.HostKeytab(t, adHost, adSPN)
	e := startSim(t, func(hc *host.HostConfig) {
		hc.Domain = addc.NetBIOS
		hc.WinRM.Kerberos = &host.KerberosConfig{Realm: addc.Realm, Keytab: kt, ClockOffsetSeconds: 600}
		hc.WinRM.Users = append(hc.WinRM.Users, host.UserConfig{Name: addc.NetBIOS + `\` + adUser, Password: adUserPass})
	})
	logon := fmt.Sprintf("    username = %q\n    password = %q\n    auth = \"kerberos\"", adUserUPN, adUserPass)
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Factories,
		Steps: []resource.TestStep{{
			Config:      e.adProviderConfig(dc, logon) + resourceConfig(e.addr, ""),
			ExpectError: regexp.MustCompile(`HTTP/sqlad\.contoso\.test\s+refused the ticket: its clock[\s\S]*skew\s+\(KRB_AP_ERR_SKEW; host\s+time[\s\S]*NTP`),
		}},
	})
}
