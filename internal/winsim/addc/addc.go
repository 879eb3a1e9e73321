// Package addc runs a real Active Directory domain controller for tests: Samba's AD
// DC (Debian's samba-ad-dc), a throwaway domain provisioned in a temporary
// directory, its KDC listening on a free loopback port only. The domain is
// provisioned once (provisioning takes tens of seconds; see template.go) and each
// test process starts a DC on its own copy, shared by the tests of that process,
// which each create accounts under their own names.
//
// Tests that need it skip, naming the missing package, when samba-tool, samba or the
// provisioning data (samba-ad-provision) are not installed. A package using it runs
// its tests through Main, which stops the DC and removes its directory at the end;
// the DC also ends when the test process does (it runs with -i and exits at the end
// of its standard input, a pipe the test process holds).
//
// Only tests import this package; production code never does.
package addc

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/kdc"
)

// The domain every DC of this package has.
const (
	Realm     = "CONTOSO.TEST"
	DNSDomain = "contoso.test"
	NetBIOS   = "CONTOSO"
	// UPNSuffix is an alternative UPN suffix of the forest (uPNSuffixes on the
	// Partitions container), which is no realm: AD finds an account by its UPN
	// anywhere in the forest.
	UPNSuffix = "corp.example"
)

// DC is the running domain controller.
type DC struct {
	Realm     string
	DNSDomain string
	NetBIOS   string
	// Dir holds the provisioned domain (private/, state/, etc/smb.conf) and the
	// keytabs and caches the helpers write.
	Dir string
	// SMBConf is the DC's private smb.conf.
	SMBConf string
	// Krb5Conf is a krb5.conf for clients naming this DC's KDC for the realm.
	Krb5Conf string
	// Addr is the KDC's address, 127.0.0.1:port, on TCP and UDP.
	Addr string
	// Ready is how long the domain took to be ready to start: a copy of the
	// provisioned domain, and its provisioning when this process did it.
	Ready time.Duration
	// Provisioned says whether this process provisioned the domain (for the test
	// log); otherwise it copied one provisioned earlier.
	Provisioned bool

	cmd    *exec.Cmd
	stdin  io.WriteCloser
	exited chan struct{}
	out    bytes.Buffer
	mu     sync.Mutex // serialises samba-tool runs: the ldb files take one writer
}

// programs the helper runs, the Debian package of each, and the provisioning data.
var needs = []struct{ path, pkg string }{
	{"samba-tool", "samba-ad-dc"},
	{"samba", "samba-ad-dc"},
	{"/usr/share/samba/setup/ad-schema", "samba-ad-provision"},
}

// Available reports whether Samba's AD DC can be provisioned here, and if not, what
// to install.
func Available() error {
	var missing, pkgs []string
	for _, n := range needs {
		var err error
		if strings.HasPrefix(n.path, "/") {
			_, err = os.Stat(n.path)
		} else {
			_, err = lookPath(n.path)
		}
		if err != nil {
			missing = append(missing, n.path)
			if len(pkgs) == 0 || pkgs[len(pkgs)-1] != n.pkg {
				pkgs = append(pkgs, n.pkg)
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("Samba AD DC not installed (%s missing): apt-get install --no-install-recommends %s",
		strings.Join(missing, ", "), strings.Join(pkgs, " "))
}

func lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/usr/bin"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found on PATH or in /usr/sbin", name)
}

var shared struct {
	once sync.Once
	dc   *DC
	err  error
	dir  string
}

// Main runs a package's tests and then stops the shared DC, if one was started, and
// removes its directory. Use it from TestMain: os.Exit(addc.Main(m)). In a full run
// (TF_ACC set, as make test sets it, and no -run) with Samba installed, it starts
// provisioning the domain at once, so that the provisioning overlaps the tests that
// run before the first one that needs the DC.
func Main(m *testing.M) int {
	if !flag.Parsed() {
		flag.Parse()
	}
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() == "" && os.Getenv("TF_ACC") != "" && Available() == nil && !testing.Short() {
		go shared.once.Do(func() { shared.dc, shared.err = start() })
	}
	code := m.Run()
	shared.once.Do(func() {}) // waits for a provisioning still under way
	if dc := shared.dc; dc != nil {
		dc.stop()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	return code
}

// Shared returns the process's DC, provisioning and starting it at the first call.
// It skips the test when Samba's AD DC is not installed and fails it when the
// domain cannot be provisioned or the DC does not start.
func Shared(t testing.TB) *DC {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("skipping: this test needs a real AD domain controller: %v", err)
	}
	shared.once.Do(func() { shared.dc, shared.err = start() })
	if shared.err != nil {
		t.Fatalf("test AD DC: %v", shared.err)
	}
	return shared.dc
}

// AdminPassword is the domain's Administrator password.
const AdminPassword = "Admin-Pass-1!x"

func start() (*DC, error) {
	dir, err := os.MkdirTemp("", "mssqlifi-addc-")
	if err != nil {
		return nil, err
	}
	shared.dir = dir
	return startIn(dir, kdc.FreePorts)
}

// startIn starts a DC on a copy of the provisioned domain in dir, its KDC's and
// kpasswd's ports chosen by choose (kdc.FreePorts; a test makes it choose a taken
// one).
func startIn(dir string, choose func(int) ([]int, error)) (*DC, error) {
	began := time.Now()
	provisioned, err := copyTemplate(dir)
	if err != nil {
		return nil, err
	}
	dc := &DC{Realm: Realm, DNSDomain: DNSDomain, NetBIOS: NetBIOS, Dir: dir,
		SMBConf:  filepath.Join(dir, "etc", "smb.conf"),
		Krb5Conf: filepath.Join(dir, "krb5.conf"),
		Ready:    time.Since(began), Provisioned: provisioned}
	// The ports are chosen now, not when the domain was provisioned: a port free
	// then may be taken by the time samba binds it. One that is taken all the same
	// (by another process between our check and samba's bind) makes samba exit
	// saying so, and the DC starts again on other ports.
	var lastErr error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		ok, err := dc.run(choose)
		if err == nil {
			return dc, nil
		}
		lastErr = err
		if !ok {
			break
		}
	}
	return nil, lastErr
}

// startAttempts bounds the starts on other ports after samba found one taken.
const startAttempts = 5

// run writes the ports into the DC's smb.conf and krb5.conf and starts samba. It
// reports whether a failure was a port taken by somebody else (worth another try
// on other ports).
func (dc *DC) run(choose func(int) ([]int, error)) (retry bool, err error) {
	ports, err := choose(2)
	if err != nil {
		return false, fmt.Errorf("finding free loopback ports: %w", err)
	}
	kdcPort, kpasswdPort := ports[0], ports[1]
	dc.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(kdcPort))
	if err := setPorts(dc.SMBConf, kdcPort, kpasswdPort); err != nil {
		return false, err
	}
	krb5 := fmt.Sprintf(`[libdefaults]
	default_realm = %[1]s
	dns_lookup_kdc = false
	dns_lookup_realm = false
	rdns = false
	dns_canonicalize_hostname = false
	udp_preference_limit = 1

[realms]
	%[1]s = {
		kdc = %[2]s
	}

[domain_realm]
	.%[3]s = %[1]s
	%[3]s = %[1]s
`, Realm, dc.Addr, DNSDomain)
	if err := os.WriteFile(dc.Krb5Conf, []byte(krb5), 0o600); err != nil {
		return false, err
	}
	samba, _ := lookPath("samba")
	dc.mu.Lock()
	dc.out.Reset()
	dc.mu.Unlock()
	dc.exited = make(chan struct{})
	dc.cmd = exec.Command(samba, "-i", "-M", "single", "-s", dc.SMBConf, "--debug-stdout", "-d1")
	dc.cmd.Env = dc.env()
	dc.cmd.Stdout, dc.cmd.Stderr = &lockedWriter{w: &dc.out, mu: &dc.mu}, &lockedWriter{w: &dc.out, mu: &dc.mu}
	if dc.stdin, err = dc.cmd.StdinPipe(); err != nil {
		return false, err
	}
	if err := dc.cmd.Start(); err != nil {
		return false, fmt.Errorf("starting %s: %w", samba, err)
	}
	exited := dc.exited
	cmd := dc.cmd
	go func() { _ = cmd.Wait(); close(exited) }()
	if err := dc.waitReady(60 * time.Second); err != nil {
		dc.stop()
		out := dc.output()
		return strings.Contains(out, "NT_STATUS_ADDRESS_ALREADY_ASSOCIATED"),
			fmt.Errorf("samba did not start its KDC on %s: %v\nsamba output:\n%s", dc.Addr, err, out)
	}
	return false, nil
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (dc *DC) output() string {
	dc.mu.Lock()
	defer dc.mu.Unlock()
	return dc.out.String()
}

// env is the environment of samba and samba-tool: no Kerberos settings of the
// test process leak in.
func (dc *DC) env() []string {
	var env []string
	for _, e := range os.Environ() {
		if strings.HasPrefix(e, "KRB5") {
			continue
		}
		env = append(env, e)
	}
	return append(env, "KRB5_CONFIG="+dc.Krb5Conf)
}

// tool runs samba-tool against the DC's smb.conf (after provisioning).
func (dc *DC) tool(args ...string) (string, error) {
	path, err := lookPath("samba-tool")
	if err != nil {
		return "", err
	}
	if args[0] != "domain" || args[1] != "provision" {
		args = append(args, "-s", dc.SMBConf)
	}
	cmd := exec.Command(path, args...)
	cmd.Env = dc.env()
	cmd.Dir = dc.Dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		shown := make([]string, len(args))
		for i, a := range args {
			shown[i] = redact(a)
		}
		return string(out), fmt.Errorf("samba-tool %s failed: %v\n%s", strings.Join(shown, " "), err, out)
	}
	return string(out), nil
}

// redact hides the passwords of samba-tool's command lines in failure messages.
func redact(s string) string {
	if strings.HasPrefix(s, "--adminpass=") || strings.HasPrefix(s, "--newpassword=") {
		k, _, _ := strings.Cut(s, "=")
		return k + "=***"
	}
	return s
}

// Tool runs one samba-tool command on the DC's domain, e.g. "user", "disable", name.
func (dc *DC) Tool(t testing.TB, args ...string) string {
	t.Helper()
	out, err := dc.tool(args...)
	if err != nil {
		t.Fatalf("test AD DC: %v", err)
	}
	return out
}

// addUPNSuffix adds suffix to the forest's uPNSuffixes (what "Active Directory
// Domains and Trusts" does), so that accounts may have UPNs in it. samba-tool's
// own command for it needs the DC's RPC service; this writes the attribute with
// Samba's Python bindings, as samba-tool does.
func (dc *DC) addUPNSuffix(suffix string) error {
	return dc.modify("", "uPNSuffixes", suffix, true)
}

// modifyScript changes one attribute of the object whose sAMAccountName is argv[2]
// (the Partitions container when it is empty) with Samba's Python bindings, on the
// DC's ldb files as samba-tool does.
const modifyScript = `import sys, ldb
from samba.samdb import SamDB
from samba.param import LoadParm
from samba.auth import system_session
lp = LoadParm(); lp.load(sys.argv[1])
db = SamDB(url=lp.private_path("sam.ldb"), session_info=system_session(), lp=lp)
if sys.argv[2]:
    res = db.search(base=db.domain_dn(), scope=ldb.SCOPE_SUBTREE, expression="(sAMAccountName=%s)" % ldb.binary_encode(sys.argv[2]), attrs=[])
    if len(res) != 1:
        sys.exit("%d objects have the sAMAccountName %s" % (len(res), sys.argv[2]))
    dn = res[0].dn
else:
    dn = ldb.Dn(db, "CN=Partitions," + str(db.get_config_basedn()))
m = ldb.Message(); m.dn = dn
m[sys.argv[3]] = ldb.MessageElement(sys.argv[4], ldb.FLAG_MOD_ADD if sys.argv[5] == "add" else ldb.FLAG_MOD_REPLACE, sys.argv[3])
db.modify(m)
`

func (dc *DC) modify(account, attr, value string, add bool) error {
	op := "replace"
	if add {
		op = "add"
	}
	// samba-tool's interpreter, which has Samba's bindings (a python3 earlier on
	// PATH may not).
	cmd := exec.Command("/usr/bin/python3", "-c", modifyScript, dc.SMBConf, account, attr, value, op)
	cmd.Env = dc.env()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("setting %s of %q to %s: %v\n%s", attr, account, value, err, out)
	}
	return nil
}

// Set replaces the attribute attr of the account (its sAMAccountName, with $ for a
// computer) with value, e.g. msDS-SupportedEncryptionTypes.
func (dc *DC) Set(t testing.TB, account, attr, value string) {
	t.Helper()
	if err := dc.modify(account, attr, value, false); err != nil {
		t.Fatalf("test AD DC: %v", err)
	}
}

// Encryption types of msDS-SupportedEncryptionTypes ([MS-KILE] 2.2.7).
const (
	EncRC4    = "4"
	EncAES    = "24" // AES128 and AES256: what a current Windows host sets at join
	EncRC4AES = "28"
)

// AddUser creates the user name with a password that never expires.
func (dc *DC) AddUser(t testing.TB, name, password string) {
	t.Helper()
	dc.Tool(t, "user", "create", name, password)
	dc.Tool(t, "user", "setexpiry", name, "--noexpiry")
}

// SetUPN gives the user name the user principal name upn.
func (dc *DC) SetUPN(t testing.TB, name, upn string) {
	t.Helper()
	dc.Tool(t, "user", "rename", name, "--upn="+upn)
}

// AddSPN registers spn on the account (a user or computer account, sAMAccountName).
func (dc *DC) AddSPN(t testing.TB, account, spn string) {
	t.Helper()
	dc.Tool(t, "spn", "add", spn, account)
}

// AddComputer creates the computer account name (without $) with the host's SPN
// HTTP/<name>.<domain> and AES keys (msDS-SupportedEncryptionTypes), as a domain
// join of a current Windows host does.
func (dc *DC) AddComputer(t testing.TB, name string) {
	t.Helper()
	dc.Tool(t, "computer", "create", name)
	// samba-tool creates the account without a password, so without keys; a join
	// sets a random one.
	dc.Tool(t, "user", "setpassword", name+"$", "--random-password")
	fqdn := strings.ToLower(name) + "." + dc.DNSDomain
	dc.AddSPN(t, name+"$", "HTTP/"+fqdn)
	dc.Set(t, name+"$", "msDS-SupportedEncryptionTypes", EncAES)
}

// Keytab exports the keys of principal (an account name, a UPN or an SPN) into a
// new keytab file and returns its path. The keys stay as they are.
func (dc *DC) Keytab(t testing.TB, principal string) string {
	t.Helper()
	path := filepath.Join(dc.Dir, "kt-"+strings.NewReplacer("/", "_", "@", "_", "$", "_", `\`, "_").Replace(principal)+"-"+strconv.FormatInt(time.Now().UnixNano(), 36)+".keytab")
	dc.Tool(t, "domain", "exportkeytab", path, "--principal="+principal)
	return path
}

// HostKeytab writes the keys of the computer account name (without $) under each
// of spns, realm CONTOSO.TEST, to a new keytab file and returns its path: the keys
// a domain-joined Windows host accepts tickets for its SPNs with (they are the
// computer account's keys, whatever the SPN).
func (dc *DC) HostKeytab(t testing.TB, name string, spns ...string) string {
	t.Helper()
	return dc.ServiceKeytab(t, name+"$", spns...)
}

// ServiceKeytab writes the keys of the account (its sAMAccountName: a user service
// account, or a computer's with $) under each of spns to a new keytab file and
// returns its path: the keys a service running as that account accepts tickets for
// its SPNs with.
func (dc *DC) ServiceKeytab(t testing.TB, account string, spns ...string) string {
	t.Helper()
	kt, err := keytab.Load(dc.Keytab(t, account))
	if err != nil {
		t.Fatalf("test AD DC: reading the keytab of %s: %v", account, err)
	}
	out := keytab.New()
	for _, spn := range spns {
		for _, e := range kt.Entries {
			if err := out.AddEntry(spn, dc.Realm, "", e.Timestamp, uint8(e.KVNO), e.Key.KeyType); err != nil {
				t.Fatal(err)
			}
			// AddEntry derives a key from a password; the account's own key replaces it.
			out.Entries[len(out.Entries)-1].Key = e.Key
			out.Entries[len(out.Entries)-1].KVNO = e.KVNO
		}
	}
	b, err := out.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dc.Dir, "svc-"+strings.Trim(strings.ToLower(account), "$")+"-"+strconv.FormatInt(time.Now().UnixNano(), 36)+".keytab")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Kinit logs principal on with password through MIT's kinit into a new credential
// cache and returns its name (FILE:<path>). enterprise sends the name as an
// enterprise principal (kinit -E), as a UPN must be.
func (dc *DC) Kinit(t testing.TB, principal, password string, enterprise bool) string {
	t.Helper()
	if _, err := exec.LookPath("kinit"); err != nil {
		t.Skip("skipping: kinit not installed: apt-get install krb5-user")
	}
	cc := "FILE:" + filepath.Join(t.TempDir(), "cc")
	args := []string{principal}
	if enterprise {
		args = []string{"-E", principal}
	}
	kinit := exec.Command("kinit", args...)
	kinit.Env = append(dc.env(), "KRB5CCNAME="+cc)
	kinit.Stdin = strings.NewReader(password + "\n")
	if out, err := kinit.CombinedOutput(); err != nil {
		t.Fatalf("test AD DC: kinit %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return cc
}

// waitReady polls until the domain's KDC answers on dc.Addr (a port that merely
// accepts a connection may be another process's: samba then exits, not having
// bound it), samba exits, or the deadline passes.
func (dc *DC) waitReady(budget time.Duration) error {
	deadline := time.Now().Add(budget)
	for {
		select {
		case <-dc.exited:
			return errors.New("samba exited")
		default:
		}
		err := dc.probe()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no ticket from %s within %s: %v", dc.Addr, budget, err)
		}
		select {
		case <-dc.exited:
		case <-time.After(50 * time.Millisecond): // polling interval, bounded by the deadline
		}
	}
}

// probe asks the KDC on dc.Addr whether it is the domain's.
func (dc *DC) probe() error { return kdc.Probe(dc.Addr, dc.Krb5Conf, Realm) }

// stop ends samba: the end of its standard input first (-i), SIGTERM after 5 s.
func (dc *DC) stop() {
	if dc.cmd == nil || dc.cmd.Process == nil {
		return
	}
	_ = dc.stdin.Close()
	select {
	case <-dc.exited:
	case <-time.After(5 * time.Second):
		_ = dc.cmd.Process.Signal(os.Interrupt)
		select {
		case <-dc.exited:
		case <-time.After(5 * time.Second):
			_ = dc.cmd.Process.Kill()
			<-dc.exited
		}
	}
}
