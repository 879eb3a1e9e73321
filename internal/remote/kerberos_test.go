package remote

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ntlmauth"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/addc"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/certs"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

func TestMain(m *testing.M) { os.Exit(addc.Main(m)) }

// The Kerberos tests of this package run against the Samba AD DC (addc): a domain
// user and the simulated host's computer account with its HTTP SPN, whose keys the
// host accepts tickets with.
const (
	krbSPN  = "HTTP/sqlrm.contoso.test"
	krbHost = "SQLRM"
	krbUser = "rmuser"
	krbPass = "Rm-User-Secret-1"
)

var krbAccounts sync.Once

// testKDC is the realm of a test: the DC, the krb5.conf naming its KDC, and that
// KDC's address.
type testKDC struct {
	dc       *addc.DC
	Realm    string
	Krb5Conf string
	Addr     string
}

// Stop has the realm's KDC stop answering for this test: its krb5.conf is then one
// naming a loopback port nothing listens on (the shared DC itself stays up for the
// other tests). Call it before New reads the krb5.conf.
func (k *testKDC) Stop(t *testing.T) {
	t.Helper()
	k.Krb5Conf, k.Addr = k.dc.Krb5ConfKDCDown(t)
}

// UserKeytab exports the keys of the user into a new keytab.
func (k *testKDC) UserKeytab(t *testing.T, user string) string {
	return k.dc.Keytab(t, user+"@"+k.Realm)
}

// adKDC is the process's DC with the accounts of these tests, and the keytab of
// the host's computer account under krbSPN.
func adKDC(t *testing.T) (*testKDC, string) {
	t.Helper()
	dc := addc.Shared(t)
	krbAccounts.Do(func() {
		dc.AddUser(t, krbUser, krbPass)
		dc.AddComputer(t, krbHost)
	})
	return &testKDC{dc: dc, Realm: dc.Realm, Krb5Conf: dc.Krb5Conf, Addr: dc.Addr}, dc.HostKeytab(t, krbHost, krbSPN)
}

// krbSim is the realm and a domain host that accepts Kerberos with its computer
// account's keys; the host is reached at 127.0.0.1, so the SPN must be given (as
// for a host reached by IP address).
func krbSim(t *testing.T) (*testKDC, *simHost) {
	t.Helper()
	return krbSimWith(t, func(*host.KerberosConfig) {})
}

// krbSimWith is krbSim with the host's Kerberos settings changed by mod.
func krbSimWith(t *testing.T, mod func(*host.KerberosConfig)) (*testKDC, *simHost) {
	t.Helper()
	k, kt := adKDC(t)
	no := false
	kc := &host.KerberosConfig{Realm: k.Realm, Keytab: kt}
	mod(kc)
	s := newSimHost(t, host.HostConfig{
		Name: "sql01", Address: "127.0.0.1", Domain: addc.NetBIOS,
		WinRM: host.WinRMConfig{Basic: &no, Kerberos: kc,
			Users: []host.UserConfig{{Name: addc.NetBIOS + `\` + krbUser, Password: krbPass}}},
		Instances: []host.InstanceConfig{{Name: "MSSQLSERVER"}},
	})
	return k, s
}

func readMSSQLSERVER(h Host) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := h.ReadInstance(ctx, contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume})
	if err == nil && !r.Found {
		return errors.New("instance not found")
	}
	return err
}

// auth = "kerberos" with a password, a keytab and a credential cache each runs
// read_instance on a domain host.
func TestKerberosAuthSources(t *testing.T) {
	k, s := krbSim(t)
	base := Config{Host: "127.0.0.1", Port: s.port, Auth: "kerberos", SPN: krbSPN, Krb5Conf: k.Krb5Conf, Timeout: 20 * time.Second}
	withPassword := base
	withPassword.Username, withPassword.Password = krbUser+"@"+k.Realm, krbPass
	withKeytab := base
	withKeytab.Username, withKeytab.Keytab = addc.NetBIOS+`\`+krbUser, k.UserKeytab(t, krbUser)
	cases := map[string]Config{"password": withPassword, "keytab": withKeytab}
	if _, err := exec.LookPath("kinit"); err == nil {
		t.Setenv("KRB5CCNAME", k.dc.Kinit(t, krbUser, krbPass, false))
		cases["ccache"] = base
	} else {
		t.Log("kinit not installed (krb5-user): the credential cache case is not run")
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			h, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := readMSSQLSERVER(h); err != nil {
				t.Fatalf("read_instance over Kerberos (%s): %v", name, err)
			}
		})
	}
}

// A host that seals its answers as MS-KILE 3.4.5.4.1 describes Windows' GSS_WrapEx
// (EC = 16 filler bytes, the trailer rotated by RRC + EC) and asserts an acceptor
// subkey in its AP-REP: every sealed answer over HTTP decrypts, and the requests
// sealed with the acceptor's subkey are accepted (issue 14).
func TestKerberosHostWithFillerAndAcceptorSubkey(t *testing.T) {
	for name, mod := range map[string]func(*host.KerberosConfig){
		"EC 16":                  func(kc *host.KerberosConfig) { kc.ExtraCount = 16 },
		"acceptor subkey":        func(kc *host.KerberosConfig) { kc.AcceptorSubkey = true },
		"EC 16, acceptor subkey": func(kc *host.KerberosConfig) { kc.ExtraCount, kc.AcceptorSubkey = 16, true },
	} {
		t.Run(name, func(t *testing.T) {
			k, s := krbSimWith(t, mod)
			h, err := New(Config{Host: "127.0.0.1", Port: s.port, Auth: "kerberos", SPN: krbSPN, Krb5Conf: k.Krb5Conf, Timeout: 20 * time.Second,
				Username: krbUser + "@" + k.Realm, Password: krbPass})
			if err != nil {
				t.Fatal(err)
			}
			// Two operations: the second one's sequence numbers follow the first's.
			for i := range 2 {
				if err := readMSSQLSERVER(h); err != nil {
					t.Fatalf("read_instance %d over Kerberos-sealed HTTP: %v", i+1, err)
				}
			}
		})
	}
}

// Without spn, a host reached by IP address gets HTTP/127.0.0.1, which no
// account has: the error names the unknown SPN and the spn argument.
func TestKerberosUnknownSPNNamed(t *testing.T) {
	k, s := krbSim(t)
	h, err := New(Config{Host: "127.0.0.1", Port: s.port, Auth: "kerberos", Username: krbUser + "@" + k.Realm, Password: krbPass, Krb5Conf: k.Krb5Conf, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = readMSSQLSERVER(h)
	var re *Error
	if !errors.As(err, &re) || re.Kind != KindAuth || !errors.Is(err, krb.ErrUnknownSPN) ||
		!strings.Contains(err.Error(), "HTTP/127.0.0.1") || re.Setting != SettingSPN {
		t.Fatalf("read_instance with the default SPN of an IP address: %v\nwant a KindAuth error naming HTTP/127.0.0.1, setting SPN", err)
	}
}

// The KDC is down: the error says the KDC cannot be reached (KindUnreachable),
// not that the password is wrong.
func TestKerberosKDCUnreachableNamed(t *testing.T) {
	k, s := krbSim(t)
	k.Stop(t)
	h, err := New(Config{Host: "127.0.0.1", Port: s.port, Auth: "kerberos", SPN: krbSPN, Username: krbUser + "@" + k.Realm, Password: krbPass, Krb5Conf: k.Krb5Conf, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = readMSSQLSERVER(h)
	var re *Error
	if !errors.As(err, &re) || re.Kind != KindUnreachable || !strings.Contains(err.Error(), k.Addr) || strings.Contains(err.Error(), "password") {
		t.Fatalf("read_instance with the KDC stopped: %v\nwant KindUnreachable naming %s", err, k.Addr)
	}
}

// A KDC that refuses (on loopback, nothing listening on its port) is not a host
// that refuses: where Kerberos is required (auth "kerberos") or negotiate may not
// fall back to NTLM, the read fails at once, naming the KDC, and is neither asked
// again nor ridden through until the read timeout (Refused, which converge rides
// every read of an apply through).
func TestKDCRefusedFailsAtOnce(t *testing.T) {
	k, s := krbSim(t)
	k.Stop(t)
	no := false
	for name, cfg := range map[string]Config{
		"kerberos": {Host: "127.0.0.1", Port: s.port, Auth: AuthKerberos, SPN: krbSPN, Username: krbUser + "@" + k.Realm, Password: krbPass,
			Krb5Conf: k.Krb5Conf, Timeout: 20 * time.Second},
		"negotiate without fallback": {Host: "127.0.0.1", Port: s.port, Auth: AuthNegotiate, Username: addc.NetBIOS + `\` + krbUser, Password: krbPass,
			Krb5Conf: k.Krb5Conf, Timeout: 20 * time.Second, AllowNTLMFallback: &no},
	} {
		t.Run(name, func(t *testing.T) {
			h, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			err = readMSSQLSERVER(h)
			var re *Error
			if !errors.As(err, &re) || !errors.Is(err, krb.ErrKDCUnreachable) || !strings.Contains(err.Error(), k.Addr) {
				t.Fatalf("read with the KDC refusing: %v\nwant the unreachable KDC, named (%s)", err, k.Addr)
			}
			if re.Refused() || Transient(err) || re.Attempts > 1 {
				t.Errorf("the KDC's refusal counts as the host's: Refused %v, Transient %v, %d attempts: %v", re.Refused(), Transient(err), re.Attempts, err)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("the read took %s with the KDC refusing, want seconds", d)
			}
		})
	}
}

// krbSimTLS is krbSim with the host's HTTPS listener and CbtHardeningLevel level;
// it returns the simulator (for its CA) and the HTTPS port.
func krbSimTLS(t *testing.T, level string) (*testKDC, *winsim.Sim, int) {
	t.Helper()
	k, kt := adKDC(t)
	sim, err := winsim.Start(&winsim.Config{Hosts: []host.HostConfig{{
		Name: "sql01", Address: "127.0.0.1", Domain: addc.NetBIOS,
		WinRM: host.WinRMConfig{CBTHardeningLevel: level, Kerberos: &host.KerberosConfig{Realm: k.Realm, Keytab: kt},
			Users: []host.UserConfig{{Name: addc.NetBIOS + `\` + krbUser, Password: krbPass}}},
		Instances: []host.InstanceConfig{{Name: "MSSQLSERVER"}},
	}}}, winsim.Options{CertDir: t.TempDir(), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	return k, sim, portOf(t, sim.Info().Hosts[0].WinRMHTTPS)
}

// Over HTTPS the authenticator carries the TLS channel bindings: a host with
// CbtHardeningLevel Strict, which refuses a logon without them, accepts it.
func TestKerberosOverHTTPSSendsChannelBindings(t *testing.T) {
	k, sim, port := krbSimTLS(t, "strict")
	h, err := New(Config{Host: "127.0.0.1", Port: port, HTTPS: true, CACert: sim.CACertPEM(), Auth: AuthKerberos, SPN: krbSPN,
		Username: krbUser + "@" + k.Realm, Password: krbPass, Krb5Conf: k.Krb5Conf, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := readMSSQLSERVER(h); err != nil {
		t.Fatalf("read_instance over HTTPS with Kerberos against CbtHardeningLevel Strict: %v", err)
	}
}

// A TLS-terminating proxy between the provider and the host: the channel bindings
// the provider sends are those of the proxy's certificate, and the host refuses
// the logon; the error names the channel bindings (not the password) and the
// HTTPS setting.
func TestKerberosCBTMismatchNamed(t *testing.T) {
	k, _, port := krbSimTLS(t, "relaxed")
	caPEM, cert := certs.ForLoopback(t, "localhost")
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			down, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer down.Close()
				up, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the test's interception proxy
				if err != nil {
					return
				}
				defer up.Close()
				go func() { _, _ = io.Copy(up, down) }()
				_, _ = io.Copy(down, up)
			}()
		}
	}()
	h, err := New(Config{Host: "127.0.0.1", Port: portOf(t, l.Addr().String()), HTTPS: true, CACert: caPEM, Auth: AuthKerberos, SPN: krbSPN,
		Username: krbUser + "@" + k.Realm, Password: krbPass, Krb5Conf: k.Krb5Conf, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = readMSSQLSERVER(h)
	var re *Error
	if !errors.As(err, &re) || re.Kind != KindAuth || re.Setting != SettingHTTPS || !errors.Is(err, krb.ErrBindings) ||
		!strings.Contains(err.Error(), "channel bindings") || strings.Contains(err.Error(), "password") {
		t.Fatalf("read_instance through a TLS-intercepting proxy: %v\nwant KindAuth, setting HTTPS, ErrBindings, naming the channel bindings", err)
	}
}

// The clock of this machine is 10 minutes ahead of the host's: the error names the
// clock skew, not the password.
func TestKerberosClockSkewNamedThroughRemote(t *testing.T) {
	k, s := krbSim(t)
	kerberosClock = func() time.Time { return time.Now().Add(10 * time.Minute) }
	t.Cleanup(func() { kerberosClock = nil })
	h, err := New(Config{Host: "127.0.0.1", Port: s.port, Auth: AuthKerberos, SPN: krbSPN, Username: krbUser + "@" + k.Realm, Password: krbPass,
		Krb5Conf: k.Krb5Conf, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = readMSSQLSERVER(h)
	if !errors.Is(err, krb.ErrClockSkew) || !strings.Contains(err.Error(), "clock") || strings.Contains(err.Error(), "password") {
		t.Fatalf("read_instance with a 10-minute skew: %v\nwant ErrClockSkew naming the clock", err)
	}
}

// A host that takes the Kerberos logon without answering an AP-REP (an impostor
// that cannot decrypt the ticket) never gets a message: the transport refuses it
// for want of mutual authentication.
func TestKerberosRefusesHostWithoutAPRep(t *testing.T) {
	k, _ := krbSim(t)
	var bodies, logons atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if len(b) > 0 {
			bodies.Add(1)
		}
		if strings.HasPrefix(r.Header.Get("Authorization"), "Negotiate ") {
			logons.Add(1)
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	h, err := New(Config{Host: "127.0.0.1", Port: portOf(t, strings.TrimPrefix(srv.URL, "http://")), Auth: AuthKerberos, SPN: krbSPN,
		Username: krbUser + "@" + k.Realm, Password: krbPass, Krb5Conf: k.Krb5Conf, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = readMSSQLSERVER(h)
	if !errors.Is(err, krb.ErrMutualAuth) || !strings.Contains(err.Error(), "AP-REP") {
		t.Fatalf("read_instance against a host without AP-REP: %v, want ErrMutualAuth", err)
	}
	if logons.Load() == 0 || bodies.Load() != 0 {
		t.Fatalf("the impostor got %d logons and %d message bodies; want a logon and no body", logons.Load(), bodies.Load())
	}
}

// krb's channel bindings hash is NTLM's MsvAvChannelBindings for the same data.
func TestKerberosBindingsHashIsNTLMs(t *testing.T) {
	data := []byte("tls-server-end-point:0123456789abcdef0123456789abcdef")
	if a, b := krb.BindingsHash(data), ntlmauth.ChannelBindingsHash(data); !bytes.Equal(a, b) {
		t.Fatalf("krb.BindingsHash = %x, ntlmauth.ChannelBindingsHash = %x", a, b)
	}
}

// When negotiate tries Kerberos (docs: "Authentication and transport security").
func TestKerberosWanted(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "krb5.conf")
	if err := os.WriteFile(conf, []byte("[libdefaults]\n default_realm = CONTOSO.COM\n[realms]\n CONTOSO.COM = {\n  kdc = 127.0.0.1:88\n }\n[domain_realm]\n .mapped.example = CONTOSO.COM\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dnsConf := filepath.Join(dir, "dns.conf")
	if err := os.WriteFile(dnsConf, []byte("[libdefaults]\n default_realm = CONTOSO.TEST\n dns_lookup_kdc = true\n [realms]\n EMPTY.TEST = {\n }\n CONTOSO.TEST = {\n }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stubSRV(t, map[string][]*net.SRV{"_kerberos._tcp.CONTOSO.TEST": {{Target: "dc1.contoso.test.", Port: 88}}})
	t.Setenv("KRB5_CONFIG", filepath.Join(dir, "absent.conf"))
	for _, tc := range []struct {
		name string
		cfg  Config
		want bool
		err  bool
	}{
		{"kerberos", Config{Auth: AuthKerberos, Username: "u", Password: "p"}, true, false},
		{"ntlm", Config{Auth: AuthNTLM, Username: `CONTOSO\u`, Password: "p", Krb5Conf: conf}, false, false},
		{"negotiate with a keytab", Config{Auth: AuthNegotiate, Username: "u", Keytab: "k"}, true, false},
		{"negotiate without password: the credential cache", Config{Auth: AuthNegotiate}, true, false},
		{"DOMAIN\\user in a listed realm", Config{Auth: AuthNegotiate, Username: `CONTOSO\u`, Password: "p", Krb5Conf: conf}, true, false},
		{"user@REALM listed", Config{Auth: AuthNegotiate, Username: "u@contoso.com", Password: "p", Krb5Conf: conf}, true, false},
		{"realm argument listed", Config{Auth: AuthNegotiate, Username: "u", Realm: "contoso.com", Password: "p", Krb5Conf: conf}, true, false},
		{"bare user: never default_realm", Config{Auth: AuthNegotiate, Username: "Administrator", Password: "p", Krb5Conf: conf}, false, false},
		{"local account HOST\\user", Config{Auth: AuthNegotiate, Username: `SQL01\Administrator`, Password: "p", Krb5Conf: conf}, false, false},
		{"realm without KDC", Config{Auth: AuthNegotiate, Username: "u@OTHER.TEST", Password: "p", Krb5Conf: conf}, false, false},
		{"no krb5.conf at the default places", Config{Auth: AuthNegotiate, Username: "u@CONTOSO.COM", Password: "p"}, false, false},
		{"named krb5.conf missing", Config{Auth: AuthNegotiate, Username: "u@CONTOSO.COM", Password: "p", Krb5Conf: filepath.Join(dir, "nope")}, false, true},
		// A UPN suffix is not a realm: the UPN goes to the realm setting or the realm
		// [domain_realm] maps the suffix to, never to default_realm alone.
		{"UPN with the realm argument", Config{Auth: AuthNegotiate, Username: "svc@corp.example", Realm: "CONTOSO.COM", Password: "p", Krb5Conf: conf}, true, false},
		{"UPN mapped by domain_realm", Config{Auth: AuthNegotiate, Username: "svc@mapped.example", Password: "p", Krb5Conf: conf}, true, false},
		{"UPN with default_realm alone", Config{Auth: AuthNegotiate, Username: "svc@corp.example", Password: "p", Krb5Conf: conf}, false, false},
		// krb5.conf as realmd and sssd write it: no kdc lines, KDCs from DNS.
		{"dns_lookup_kdc, SRV records", Config{Auth: AuthNegotiate, Username: "u@CONTOSO.TEST", Password: "p", Krb5Conf: dnsConf}, true, false},
		{"dns_lookup_kdc, no SRV records", Config{Auth: AuthNegotiate, Username: "u@EMPTY.TEST", Password: "p", Krb5Conf: dnsConf}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why, err := kerberosWanted(tc.cfg)
			if got != tc.want || (err != nil) != tc.err {
				t.Fatalf("kerberosWanted(%+v) = %v, %v; want %v, error %v", tc.cfg, got, err, tc.want, tc.err)
			}
			// negotiate says why it uses NTLM; nothing else has a reason to give.
			fellBack := tc.cfg.Auth == AuthNegotiate && !got && err == nil
			if fellBack != strings.HasPrefix(why, "no realm: ") {
				t.Fatalf("kerberosWanted(%+v) gave the NTLM reason %q", tc.cfg, why)
			}
		})
	}
}

// stubSRV answers the DNS lookups of KDCs from records (keyed _service._proto.name)
// for the test; a name without records is NXDOMAIN.
func stubSRV(t *testing.T, records map[string][]*net.SRV) {
	t.Helper()
	saved := lookupSRV
	t.Cleanup(func() { lookupSRV = saved })
	lookupSRV = func(_ context.Context, service, proto, name string) (string, []*net.SRV, error) {
		key := "_" + service + "._" + proto + "." + name
		if rr, ok := records[key]; ok {
			return key, rr, nil
		}
		return "", nil, &net.DNSError{Err: "no such host", Name: key, IsNotFound: true}
	}
}

// The reason negotiate gives for NTLM names what it looked at: the DNS lookup of
// the realm's KDCs, and a UPN's suffix that is not a realm.
func TestKerberosWantedWhy(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "krb5.conf")
	if err := os.WriteFile(conf, []byte("[libdefaults]\n default_realm = EMPTY.TEST\n dns_lookup_kdc = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stubSRV(t, nil)
	for _, tc := range []struct {
		user, want string
	}{
		{"u@EMPTY.TEST", "_kerberos._tcp.EMPTY.TEST and _kerberos._udp.EMPTY.TEST found no KDC"},
		{"svc@corp.example", `"svc@corp.example" is a user principal name whose suffix is not a realm`},
	} {
		_, why, err := kerberosWanted(Config{Auth: AuthNegotiate, Username: tc.user, Password: "p", Krb5Conf: conf})
		if err != nil || !strings.Contains(why, tc.want) {
			t.Errorf("kerberosWanted(%s) = %q, %v; want a reason with %q", tc.user, why, err, tc.want)
		}
	}
	// With allow_ntlm_fallback = false the error says the same.
	no := false
	_, err := New(Config{Host: "sql01", Auth: AuthNegotiate, Username: "u@EMPTY.TEST", Password: "p", Krb5Conf: conf, AllowNTLMFallback: &no})
	if !errors.Is(err, ErrNTLMFallback) || !strings.Contains(err.Error(), "_kerberos._tcp.EMPTY.TEST") {
		t.Errorf("New with the fallback refused: %v, want ErrNTLMFallback naming the DNS lookup", err)
	}
}
