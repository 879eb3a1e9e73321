package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/addc"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// The Kerberos set-up every Kerberos test shares: a domain host reached over HTTP
// at its loopback IP address, a provider block naming its SPN and a krb5.conf, the
// sql block's Kerberos login, and the checks of a logon. Every Kerberos test of the
// provider runs against the Samba AD DC (kerberos_ad_acc_test.go,
// sql_kerberos_acc_test.go, and the KDC failures below); none needs the hand-made
// MIT KDC (internal/winsim/kdc). The one thing the shared DC cannot do, stop, a
// test of a KDC that does not answer gets from a krb5.conf naming a port nothing
// listens on (addc's Krb5ConfKDCDown), which is the same to the client.

// domainHost is a domain member of the NetBIOS domain reached over HTTP that
// accepts Kerberos for realm with the keys of keytab; DOMAIN\user (password) is one
// of its administrators. Its WinRM listeners keep Windows' defaults: Basic off,
// AllowUnencrypted false (clear-text bodies over HTTP refused), Negotiate (Kerberos
// and NTLM) on, CBT hardening relaxed. mod (if not nil) changes the host further.
func domainHost(t *testing.T, domain, realm, keytab, user, password string, mod func(*host.HostConfig)) *accEnv {
	t.Helper()
	return startSim(t, func(hc *host.HostConfig) {
		hc.Domain = domain
		hc.WinRM.Kerberos = &host.KerberosConfig{Realm: realm, Keytab: keytab}
		hc.WinRM.Users = append(hc.WinRM.Users, host.UserConfig{Name: domain + `\` + user, Password: password})
		if w := hc.WinRM; w.BasicEnabled() || w.AllowUnencrypted || w.CBTHardeningLevel != "" || !w.NTLMEnabled() {
			t.Fatalf("the domain host's WinRM settings are not Windows' defaults: %+v", w)
		}
		if mod != nil {
			mod(hc)
		}
	})
}

// winrmHTTPConfig is the provider block for the host's HTTP listener with krb5Conf
// and, unless spn is "", the SPN; args holds the logon and auth lines (no auth
// line: the default, negotiate). The sql block is the SQL login's
// (withSQLKerberos replaces it).
func (e *accEnv) winrmHTTPConfig(krb5Conf, spn, args string) string {
	spnLine := ""
	if spn != "" {
		spnLine = fmt.Sprintf("    spn       = %q\n", spn)
	}
	return requiredProviders + fmt.Sprintf(`
provider "mssqlifi" {
  winrm {
%s
    https     = false
    port      = %d
%s    krb5_conf = %q
  }
`, args, e.httpPort, spnLine, krb5Conf) + e.sqlBlock() + "}\n"
}

// withSQLKerberos is cfg (a winrmHTTPConfig) with the sql block's login by Kerberos:
// logon its credential lines, spn its spn line (or "").
func (e *accEnv) withSQLKerberos(cfg, logon, spn string) string {
	e.t.Helper()
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
		e.t.Fatal("the provider block has no sql block to replace")
	}
	return strings.Replace(cfg, e.sqlBlock(), sql, 1)
}

// logons counts the host's Kerberos logons and NTLM handshakes so far.
func (e *accEnv) logons() (kerberos, ntlm int64) {
	st, err := e.sim.Stats(e.name)
	if err != nil {
		e.t.Fatal(err)
	}
	return st.KerberosLogons, st.NTLMHandshakes
}

// ranAs checks that the host ran some operation, each as user, and that its logons
// were all of the kind logon: "kerberos" (no NTLM handshake) or "ntlm" (no Kerberos
// logon).
func (e *accEnv) ranAs(user, logon string) error {
	ops := 0
	for _, a := range e.host().Audit() {
		if a.Operation == "" {
			continue
		}
		ops++
		if !strings.EqualFold(a.User, user) {
			return fmt.Errorf("operation %s ran as %q, want %s (%s)", a.Operation, a.User, user, logon)
		}
	}
	if ops == 0 {
		return fmt.Errorf("the host ran no operation")
	}
	krbLogons, ntlm := e.logons()
	if logon == "kerberos" && (krbLogons == 0 || ntlm != 0) || logon == "ntlm" && (ntlm == 0 || krbLogons != 0) {
		return fmt.Errorf("the host saw %d Kerberos logons and %d NTLM handshakes; want only %s", krbLogons, ntlm, logon)
	}
	return nil
}

// lifecycleAs is apply, an empty plan, and destroy with cfg; the host ran every
// operation as the Windows account user, and every logon was logon ("kerberos" or
// "ntlm").
func lifecycleAs(t *testing.T, e *accEnv, cfg string, parallel bool, logon, user string) {
	tc := resource.TestCase{
		ProtoV6ProviderFactories: protoV6Factories,
		Steps: []resource.TestStep{{
			Config:           cfg,
			ConfigPlanChecks: emptyPlanAfterApply(),
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(resName, "ifi_enabled", "true"),
				resource.TestCheckResourceAttr(resName, "verified_by", "sql_dmv"),
				check(func() error {
					if !e.holds(defaultSvcSID) {
						return fmt.Errorf("the service SID does not hold the right after apply")
					}
					return e.ranAs(user, logon)
				}),
			),
		}},
		CheckDestroy: check(func() error {
			if e.holds(defaultSvcSID) {
				return fmt.Errorf("destroy left the grant in place")
			}
			return nil
		}),
	}
	if parallel {
		resource.ParallelTest(t, tc)
	} else {
		resource.Test(t, tc)
	}
}

// cliKerberosRead reads e's host through the real CLI and the provider binary (an
// apply of the data source) with cfg's provider block and env added to the
// provider's environment (KRB5CCNAME, a test hook): the apply succeeds with no
// diagnostic of the provider's (no NTLM fallback warning among them), and the host
// ran every operation as user and saw only Kerberos logons.
func cliKerberosRead(t *testing.T, e *accEnv, cfg, user string, env ...string) {
	t.Helper()
	w := newCLI(t)
	w.env = append(w.env, env...)
	w.write(cfg + dataSourceConfig(e.addr, ""))
	r := w.apply()
	if r.Exit != 0 || len(r.errors()) != 0 || len(r.bySeverity("warning")) != 0 {
		t.Fatalf("terraform apply of the data source: exit %d, want 0 and no diagnostic of the provider's:\n%s", r.Exit, r.describe())
	}
	if err := e.ranAs(user, "kerberos"); err != nil {
		t.Fatal(err)
	}
}

// negotiate when no ticket can be had (the KDC does not answer): NTLM, encrypted
// over HTTP, and nothing Kerberos reaches the host.
func TestAccKerberos_negotiateFallsBackToNTLM(t *testing.T) {
	e, dc := adAccEnv(t)
	conf, _ := dc.Krb5ConfKDCDown(t)
	logon := fmt.Sprintf("    username = %q\n    password = %q", adAccount, adUserPass)
	// The NTLM logon names the SPN, which must be one of the host's own names (the
	// simulator refuses a logon meant for another host as relayed).
	cfg := e.winrmHTTPConfig(conf, "HTTP/"+e.addr, logon)
	lifecycleAs(t, e, cfg+resourceConfig(e.addr, ""), true, "ntlm", adAccount)
}

// A KDC that refuses (nothing listens on its port) is not a host that refuses:
// with auth "kerberos", and with "negotiate" where allow_ntlm_fallback is false,
// the plan fails at once naming the KDC, instead of asking again for the whole
// read timeout (issue 36: about 5 minutes per plan).
func TestAccKerberos_kdcDownFailsThePlanAtOnce(t *testing.T) {
	e, dc := adAccEnv(t)
	conf, kdcAddr := dc.Krb5ConfKDCDown(t)
	for name, cfg := range map[string]string{
		"kerberos": e.winrmHTTPConfig(conf, adSPN, fmt.Sprintf("    username = %q\n    password = %q\n    auth = \"kerberos\"", adUser+"@"+addc.Realm, adUserPass)),
		"negotiate without fallback": e.winrmHTTPConfig(conf, adSPN, fmt.Sprintf("    username = %q\n    password = %q\n    allow_ntlm_fallback = false",
			adAccount, adUserPass)),
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: protoV6Factories,
				Steps: []resource.TestStep{{
					Config:      cfg + resourceConfig(e.addr, ""),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(`no answer from the KDCs of\s+` + regexp.QuoteMeta(addc.Realm) + `\s+\(` + regexp.QuoteMeta(kdcAddr) + `\)`),
				}},
			})
			if d := time.Since(start); d > time.Minute {
				t.Errorf("the plan took %s with the KDC down, want seconds", d)
			}
		})
	}
}

// A krb5.conf with a realm block on one line, found through KRB5_CONFIG with the
// default auth and no password: the plan fails naming the file and the line; the
// provider does not panic (issue 14). No KDC is asked.
func TestAccKerberos_malformedKrb5ConfNamesLine(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "krb5.conf")
	if err := os.WriteFile(conf, []byte("[libdefaults]\n  default_realm = EXAMPLE.COM\n[realms]\nEXAMPLE.COM = { kdc = a }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KRB5_CONFIG", conf)
	t.Setenv(EnvWinRMPassword, "")
	t.Setenv(EnvWinRMKrb5Conf, "")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Factories,
		Steps: []resource.TestStep{{
			Config: requiredProviders + `
provider "mssqlifi" {
  winrm {
    username = "dba@EXAMPLE.COM"
  }
}
` + resourceConfig("sql01.example.com", ""),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`Unreadable krb5\.conf[\s\S]*` + regexp.QuoteMeta(filepath.Base(conf)) + `[\s\S]*line[\s\n]+4`),
		}},
	})
}
