package provider

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/testhooks"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/addc"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// The Active Directory accounts of these tests: a user whose UPN is in an
// alternative suffix and whose name part is not the account's name, and the
// simulated host's computer account with its HTTP SPN.
const (
	adUser     = "addba"
	adAccount  = addc.NetBIOS + `\` + adUser
	adUserUPN  = "dba.admin@" + addc.UPNSuffix
	adUserPass = "Ad-Dba-Secret-1"
	adHost     = "SQLAD"
	adSPN      = "HTTP/sqlad.contoso.test"
)

var adAccounts, adSvcAccount sync.Once

// adAccEnv is the process's AD domain controller (Samba) and a domain host reached
// over HTTP at its IP address that accepts Kerberos with its computer account's
// keys; CONTOSO\addba is one of its administrators.
func adAccEnv(t *testing.T) (*accEnv, *addc.DC) {
	t.Helper()
	dc := adDC(t)
	return adDomainHost(t, dc.HostKeytab(t, adHost, adSPN), nil), dc
}

// adDomainHost is a domain host of the AD domain with the keys of keytab.
func adDomainHost(t *testing.T, keytab string, mod func(*host.HostConfig)) *accEnv {
	t.Helper()
	return domainHost(t, addc.NetBIOS, addc.Realm, keytab, adUser, adUserPass, mod)
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

// adProviderConfig is the provider block for the AD host's HTTP listener, its SPN
// the computer account's; args holds the logon lines and auth.
func (e *accEnv) adProviderConfig(dc *addc.DC, args string) string {
	return e.winrmHTTPConfig(dc.Krb5Conf, adSPN, args)
}

// Every name form Active Directory takes, with each credential source, through the
// real CLI: DOMAIN\user, user@REALM in upper and lower case, and a UPN whose suffix
// corp.example is no realm (sent as an enterprise name to default_realm), each with
// its password, a keytab (the account's, exported under its name; the UPN's under
// the UPN) and a credential cache (kinit of the account, kinit -E of the UPN), and
// the cache with no user name. Each logon is Kerberos with a ticket from the DC for
// a host reached by IP address with winrm.spn, and the host runs every operation as
// CONTOSO\addba, whose name it takes from the ticket's PAC. One data source read a
// cell (the lifecycle is TestAccKerberosAD_negotiatePicksKerberos's), each cell its
// own simulator with the one host keytab.
func TestAccKerberosAD_nameFormsAndCredentials(t *testing.T) {
	dc := adDC(t)
	hostKT := dc.HostKeytab(t, adHost, adSPN)
	accountKT, upnKT := dc.Keytab(t, adUser+"@"+addc.Realm), dc.Keytab(t, adUserUPN)
	type cell struct {
		name, logon string
		kinit       func(t *testing.T) string // the credential cache, for KRB5CCNAME
	}
	kinitAccount := func(t *testing.T) string { return dc.Kinit(t, adUser, adUserPass, false) }
	kinitUPN := func(t *testing.T) string { return dc.Kinit(t, adUserUPN, adUserPass, true) }
	var cells []cell
	for _, n := range []struct {
		user, keytab string
		kinit        func(t *testing.T) string
	}{
		{adAccount, accountKT, kinitAccount},
		{adUser + "@" + addc.Realm, accountKT, kinitAccount},
		{adUser + "@" + strings.ToLower(addc.Realm), accountKT, kinitAccount},
		{adUserUPN, upnKT, kinitUPN},
	} {
		cells = append(cells,
			cell{n.user + " with password", fmt.Sprintf("    username = %q\n    password = %q", n.user, adUserPass), nil},
			cell{n.user + " with keytab", fmt.Sprintf("    username = %q\n    keytab = %q", n.user, n.keytab), nil},
			cell{n.user + " with credential cache", fmt.Sprintf("    username = %q", n.user), n.kinit})
	}
	cells = append(cells, cell{"credential cache alone", "", kinitUPN})
	for _, c := range cells {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var env []string
			if c.kinit != nil {
				env = append(env, "KRB5CCNAME="+c.kinit(t))
			}
			e := adDomainHost(t, hostKT, nil)
			cliKerberosRead(t, e, e.adProviderConfig(dc, c.logon+"\n    auth = \"kerberos\""), adAccount, env...)
		})
	}
}

// negotiate (the default) with the UPN, its realm given: Kerberos, no NTLM, through
// apply, an empty plan and destroy.
func TestAccKerberosAD_negotiatePicksKerberos(t *testing.T) {
	e, dc := adAccEnv(t)
	logon := fmt.Sprintf("    username = %q\n    password = %q\n    realm = %q", adUserUPN, adUserPass, addc.Realm)
	lifecycleAs(t, e, e.adProviderConfig(dc, logon)+resourceConfig(e.addr, ""), true, "kerberos", adAccount)
}

// A host reached by IP address: without winrm.spn the DC knows no HTTP/<address>,
// and the error names the SPN, the argument, and the logon's principal, here the
// credential cache's; with winrm.spn naming the host's computer account, the same
// logon is Kerberos.
func TestAccKerberosAD_hostByIPNeedsSPN(t *testing.T) {
	e, dc := adAccEnv(t)
	if net.ParseIP(e.addr) == nil {
		t.Fatalf("the host is reached at %q, not an IP address", e.addr)
	}
	cc := "KRB5CCNAME=" + dc.Kinit(t, adUser, adUserPass, false)
	t.Run("without spn", func(t *testing.T) {
		w := newCLI(t)
		w.env = append(w.env, cc)
		w.write(e.winrmHTTPConfig(dc.Krb5Conf, "", `    auth = "kerberos"`) + dataSourceConfig(e.addr, ""))
		r := w.apply()
		want := regexp.MustCompile(`authentication failed for\s+` + regexp.QuoteMeta(adUser+"@"+addc.Realm) + `\s+at[\s\S]*HTTP/` +
			regexp.QuoteMeta(e.addr) + `\s+\(KDC_ERR_S_PRINCIPAL_UNKNOWN\)[\s\S]*winrm\.spn`)
		for _, d := range r.Diags {
			if d.Severity == "error" && want.MatchString(d.Summary+" "+d.Detail) {
				return
			}
		}
		t.Fatalf("no error matches %q; exit %d:\n%s", want, r.Exit, r.describe())
	})
	t.Run("with spn", func(t *testing.T) {
		cliKerberosRead(t, e, e.adProviderConfig(dc, `    auth = "kerberos"`), adAccount, cc)
	})
}

// Bad Kerberos settings fail at plan, naming the argument.
func TestAccKerberosAD_planErrors(t *testing.T) {
	e, dc := adAccEnv(t)
	user := fmt.Sprintf("    username = %q\n", adUser+"@"+addc.Realm)
	dir := t.TempDir()
	for _, tc := range []struct {
		name, cfg string
		want      string
	}{
		{"missing keytab", e.adProviderConfig(dc, user+fmt.Sprintf("    keytab = %q\n    auth = \"kerberos\"", filepath.Join(dir, "missing.keytab"))), `Keytab not found[\s\S]*missing\.keytab`},
		{"unreadable krb5_conf", e.winrmHTTPConfig(filepath.Join(dir, "none.conf"), adSPN, user+"    password = \"x\"\n    auth = \"kerberos\""), `Unreadable krb5\.conf[\s\S]*none\.conf`},
		{"realm without KDC", e.adProviderConfig(dc, "    username = \"dba\"\n    realm = \"NOKDC.TEST\"\n    password = \"x\"\n    auth = \"kerberos\""), `Realm without KDC[\s\S]*NOKDC\.TEST`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resource.ParallelTest(t, resource.TestCase{
				ProtoV6ProviderFactories: protoV6Factories,
				Steps: []resource.TestStep{{
					Config:      tc.cfg + resourceConfig(e.addr, ""),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(tc.want),
				}},
			})
		})
	}
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
	e := adDomainHost(t, dc.ServiceKeytab(t, "svcwinrm", spn), nil)
	logon := fmt.Sprintf("    username = %q\n    password = %q\n    auth = \"kerberos\"", adUserUPN, adUserPass)
	lifecycleAs(t, e, e.winrmHTTPConfig(dc.Krb5Conf, spn, logon)+resourceConfig(e.addr, ""), true, "kerberos", adAccount)
}

// A domain host whose clock is 10 minutes ahead of the domain's (and of the
// runner's): the DC issues the ticket, the host refuses it with KRB_AP_ERR_SKEW,
// and the error names the clock skew and the fix.
func TestAccKerberosAD_clockSkew(t *testing.T) {
	dc := adDC(t)
	e := adDomainHost(t, dc.HostKeytab(t, adHost, adSPN), func(hc *host.HostConfig) { hc.WinRM.Kerberos.ClockOffsetSeconds = 600 })
	logon := fmt.Sprintf("    username = %q\n    password = %q\n    auth = \"kerberos\"", adUserUPN, adUserPass)
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Factories,
		Steps: []resource.TestStep{{
			Config:      e.adProviderConfig(dc, logon) + resourceConfig(e.addr, ""),
			ExpectError: regexp.MustCompile(`HTTP/sqlad\.contoso\.test\s+refused the ticket: its clock[\s\S]*skew\s+\(KRB_AP_ERR_SKEW; host\s+time[\s\S]*NTP`),
		}},
	})
}

// KDCs found through DNS, as on a domain-joined runner whose krb5.conf realmd or
// sssd wrote: dns_lookup_kdc = true and no kdc line. The provider binary asks a DNS
// server of the test's (testhooks.EnvDNSServer), which holds the realm's
// _kerberos._tcp and _kerberos._udp SRV records naming the DC's KDC port, as an AD
// domain's DNS zone does. negotiate logs on with Kerberos, with no fallback
// warning. Where DNS has no such records, allow_ntlm_fallback = false fails naming
// the lookup.
func TestAccKerberosAD_kdcFromDNS(t *testing.T) {
	e, dc := adAccEnv(t)
	conf := filepath.Join(t.TempDir(), "krb5.conf")
	text := fmt.Sprintf("[libdefaults]\n\tdefault_realm = %[1]s\n\tdns_lookup_kdc = true\n\tdns_lookup_realm = false\n\trdns = false\n\tudp_preference_limit = 1\n\n[domain_realm]\n\t.%[2]s = %[1]s\n", addc.Realm, dc.DNSDomain)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	_, p, err := net.SplitHostPort(dc.Addr)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(p)
	dcName := "dc1." + dc.DNSDomain + "."
	logon := fmt.Sprintf("    username = %q\n    password = %q", adAccount, adUserPass)
	t.Run("SRV records", func(t *testing.T) {
		dns := startDNS(t,
			srvRecord("_kerberos._tcp."+addc.Realm+".", dcName, port),
			srvRecord("_kerberos._udp."+addc.Realm+".", dcName, port),
			aRecord(dcName, "127.0.0.1"))
		cliKerberosRead(t, e, e.winrmHTTPConfig(conf, adSPN, logon), adAccount, testhooks.EnvDNSServer+"="+dns.addr)
		if dns.asked("_kerberos._tcp."+addc.Realm+".") == 0 {
			t.Fatalf("the provider logged on without asking DNS for the realm's KDCs")
		}
	})
	t.Run("no SRV records", func(t *testing.T) {
		dns := startDNS(t)
		w := newCLI(t)
		w.env = append(w.env, testhooks.EnvDNSServer+"="+dns.addr)
		w.write(e.winrmHTTPConfig(conf, adSPN, logon+"\n    allow_ntlm_fallback = false") + dataSourceConfig(e.addr, ""))
		r := w.apply()
		r.wantDiag(t, "error", "NTLM fallback refused", `_kerberos\._tcp\.`+regexp.QuoteMeta(addc.Realm)+`\s+and\s+_kerberos\._udp\.`+
			regexp.QuoteMeta(addc.Realm)+`\s+found\s+no\s+KDC[\s\S]*allow_ntlm_fallback = false`)
		if dns.asked("_kerberos._tcp."+addc.Realm+".") == 0 {
			t.Fatalf("the provider did not ask the test's DNS server for the realm's KDCs")
		}
	})
}

// fakeDNS is a DNS server on loopback UDP for a test: it answers from its records
// (names in any case), with an empty answer for a type a name has no record of,
// and NXDOMAIN for any other name.
type fakeDNS struct {
	addr    string
	records []dnsmessage.Resource
	mu      sync.Mutex
	queries map[string]int // questions by lower-case name
}

// startDNS serves records until the test ends.
func startDNS(t *testing.T, records ...dnsmessage.Resource) *fakeDNS {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &fakeDNS{addr: pc.LocalAddr().String(), records: records, queries: map[string]int{}}
	done := make(chan struct{})
	t.Cleanup(func() { _ = pc.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return // closed
			}
			if reply := d.answer(buf[:n]); reply != nil {
				_, _ = pc.WriteTo(reply, from)
			}
		}
	}()
	return d
}

// asked is how often the server was asked about name.
func (d *fakeDNS) asked(name string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.queries[strings.ToLower(name)]
}

func (d *fakeDNS) answer(query []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	name := strings.ToLower(q.Name.String())
	d.mu.Lock()
	d.queries[name]++
	d.mu.Unlock()
	var answers []dnsmessage.Resource
	rcode := dnsmessage.RCodeNameError
	for _, r := range d.records {
		if strings.EqualFold(r.Header.Name.String(), name) {
			rcode = dnsmessage.RCodeSuccess
			if r.Header.Type == q.Type {
				answers = append(answers, r)
			}
		}
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true,
		RecursionDesired: h.RecursionDesired, RecursionAvailable: true, RCode: rcode})
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil
	}
	for _, r := range answers {
		switch body := r.Body.(type) {
		case *dnsmessage.SRVResource:
			err = b.SRVResource(r.Header, *body)
		case *dnsmessage.AResource:
			err = b.AResource(r.Header, *body)
		}
		if err != nil {
			return nil
		}
	}
	msg, err := b.Finish()
	if err != nil {
		return nil
	}
	return msg
}

// srvRecord is an SRV record of name for target:port.
func srvRecord(name, target string, port int) dnsmessage.Resource {
	return dnsmessage.Resource{
		Header: dnsmessage.ResourceHeader{Name: dnsmessage.MustNewName(name), Type: dnsmessage.TypeSRV, Class: dnsmessage.ClassINET, TTL: 60},
		Body:   &dnsmessage.SRVResource{Priority: 0, Weight: 100, Port: uint16(port), Target: dnsmessage.MustNewName(target)},
	}
}

// aRecord is an A record of name for the IPv4 address ip.
func aRecord(name, ip string) dnsmessage.Resource {
	var a [4]byte
	copy(a[:], net.ParseIP(ip).To4())
	return dnsmessage.Resource{
		Header: dnsmessage.ResourceHeader{Name: dnsmessage.MustNewName(name), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 60},
		Body:   &dnsmessage.AResource{A: a},
	}
}
