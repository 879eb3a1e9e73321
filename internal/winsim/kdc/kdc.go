// Package kdc runs a real MIT Kerberos KDC (Debian's krb5-kdc) for tests: a
// throwaway realm in a temporary directory, listening on loopback only, with the
// principals and keytabs a test asks for. The KDC is a child process of the test
// and is stopped at the test's cleanup.
//
// Tests that need it skip, naming the missing program and the Debian package, only
// when krb5kdc, kdb5_util or kadmin.local are not installed (apt-get install
// krb5-kdc krb5-admin-server; .ci/run installs them).
//
// Only tests import this package; production code never does.
package kdc

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// DefaultRealm is the realm Start uses when Options.Realm is empty.
const DefaultRealm = "MSSQLIFI.TEST"

// Options configure Start.
type Options struct {
	// Realm is the Kerberos realm, upper case. Default DefaultRealm.
	Realm string
	// Enctypes are the KDC's supported_enctypes for new keys, e.g.
	// "aes256-cts-hmac-sha1-96:normal". Default: AES256 and AES128 with SHA-1, what
	// Active Directory issues to current Windows hosts.
	Enctypes string
	// choosePorts chooses the KDC's port (FreePorts); the package's test makes it
	// choose a taken one.
	choosePorts func(int) ([]int, error)
}

// KDC is a running krb5kdc.
type KDC struct {
	Realm string
	// Dir holds the database, the stash, the configuration files and the log.
	Dir string
	// Krb5Conf is the krb5.conf clients use to find this KDC (KRB5_CONFIG).
	Krb5Conf string
	// KDCConf is the KDC's own profile (KRB5_KDC_PROFILE).
	KDCConf string
	// Addr is the KDC's address, 127.0.0.1:port, on UDP and TCP.
	Addr string

	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
	mu      sync.Mutex
}

// programs the helper runs, and the Debian package of each.
var programs = []struct{ name, pkg string }{
	{"krb5kdc", "krb5-kdc"},
	{"kdb5_util", "krb5-kdc"},
	{"kadmin.local", "krb5-admin-server"},
}

// lookPath finds a program on PATH or in /usr/sbin (not on every user's PATH).
func lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	p := "/usr/sbin/" + name // where Debian puts krb5kdc, kdb5_util and kadmin.local
	if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
		return p, nil
	}
	return "", fmt.Errorf("%s not found on PATH or in /usr/sbin", name)
}

// Available reports whether the MIT KDC programs are installed, and if not, why.
func Available() error {
	var missing []string
	pkgs := map[string]bool{}
	for _, p := range programs {
		if _, err := lookPath(p.name); err != nil {
			missing = append(missing, p.name)
			pkgs[p.pkg] = true
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var names []string
	for _, p := range programs {
		if pkgs[p.pkg] {
			names = append(names, p.pkg)
			delete(pkgs, p.pkg)
		}
	}
	return fmt.Errorf("MIT Kerberos KDC programs not installed (%s): apt-get install %s",
		strings.Join(missing, ", "), strings.Join(names, " "))
}

// Start creates a realm in a temporary directory, starts krb5kdc on a free
// loopback port and waits until it answers. It skips the test when the KDC
// programs are not installed and fails it when the KDC cannot start. The KDC is
// stopped at cleanup.
func Start(t testing.TB, opts Options) *KDC {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("skipping: this test needs a real KDC: %v", err)
	}
	realm := opts.Realm
	if realm == "" {
		realm = DefaultRealm
	}
	enctypes := opts.Enctypes
	if enctypes == "" {
		enctypes = "aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal"
	}
	dir := t.TempDir()
	k := &KDC{
		Realm:    realm,
		Dir:      dir,
		Krb5Conf: filepath.Join(dir, "krb5.conf"),
		KDCConf:  filepath.Join(dir, "kdc.conf"),
		logPath:  filepath.Join(dir, "kdc.log"),
		exited:   make(chan struct{}),
	}
	close(k.exited) // no krb5kdc runs yet
	masterPassword := "kdc-master-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := k.writeConf(enctypes, 88); err != nil {
		t.Fatalf("test KDC: %v", err)
	}
	k.run(t, "kdb5_util", "create", "-s", "-r", realm, "-P", masterPassword)
	t.Cleanup(func() { k.stop(t) })
	// The port is chosen now, just before krb5kdc binds it; one taken all the same
	// by another process in between makes krb5kdc exit saying so, and the KDC
	// starts again on another port.
	for attempt := 1; ; attempt++ {
		out, err := k.start(enctypes, opts.choosePorts)
		if err == nil {
			break
		}
		if attempt < startAttempts && strings.Contains(out+k.Log(), "Address already in use") {
			continue
		}
		t.Fatalf("test KDC for %s on %s did not start: %v\nkrb5kdc output:\n%s\nkdc.log:\n%s", realm, k.Addr, err, out, k.Log())
	}
	return k
}

// startAttempts bounds the starts on other ports after krb5kdc found one taken.
const startAttempts = 5

// start chooses a port, writes the configuration naming it and starts krb5kdc,
// waiting until it answers; on failure it returns krb5kdc's output.
func (k *KDC) start(enctypes string, choose func(int) ([]int, error)) (string, error) {
	if choose == nil {
		choose = FreePorts
	}
	ports, err := choose(1)
	if err != nil {
		return "", fmt.Errorf("finding a free loopback port: %w", err)
	}
	if err := k.writeConf(enctypes, ports[0]); err != nil {
		return "", err
	}
	_ = os.Remove(k.logPath)
	kdcPath, _ := lookPath("krb5kdc")
	cmd := exec.Command(kdcPath, "-n", "-r", k.Realm)
	cmd.Env = k.Env()
	cmd.Dir = k.Dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("starting %s: %w", kdcPath, err)
	}
	exited := make(chan struct{})
	k.mu.Lock()
	k.cmd, k.exited, k.waitErr = cmd, exited, nil
	k.mu.Unlock()
	go func() {
		err := cmd.Wait()
		k.mu.Lock()
		k.waitErr = err
		k.mu.Unlock()
		close(exited)
	}()
	if err := k.waitReady(10 * time.Second); err != nil {
		k.halt()
		return out.String(), err
	}
	return "", nil
}

// writeConf writes the KDC's kdc.conf and the clients' krb5.conf for a KDC on
// port.
func (k *KDC) writeConf(enctypes string, port int) error {
	k.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	kdcConf := fmt.Sprintf(`[kdcdefaults]
	kdc_listen = %[2]s
	kdc_tcp_listen = %[2]s

[realms]
	%[1]s = {
		database_name = %[3]s
		key_stash_file = %[4]s
		acl_file = %[5]s
		max_life = 10h 0m 0s
		max_renewable_life = 7d 0h 0m 0s
		supported_enctypes = %[6]s
		default_principal_flags = +preauth
	}

[logging]
	kdc = FILE:%[7]s
	admin_server = FILE:%[7]s
	default = FILE:%[7]s
`, k.Realm, k.Addr, filepath.Join(k.Dir, "principal"), filepath.Join(k.Dir, "stash"),
		filepath.Join(k.Dir, "kadm5.acl"), enctypes, k.logPath)
	krb5Conf := fmt.Sprintf(`[libdefaults]
	default_realm = %[1]s
	dns_lookup_kdc = false
	dns_lookup_realm = false
	rdns = false
	dns_canonicalize_hostname = false
	ignore_acceptor_hostname = false
	udp_preference_limit = 1
	ticket_lifetime = 10h

[realms]
	%[1]s = {
		kdc = %[2]s
		admin_server = %[2]s
	}

[domain_realm]
	.%[3]s = %[1]s
	%[3]s = %[1]s
`, k.Realm, k.Addr, strings.ToLower(k.Realm))
	for path, text := range map[string]string{k.KDCConf: kdcConf, k.Krb5Conf: krb5Conf, filepath.Join(k.Dir, "kadm5.acl"): ""} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return nil
}

// Env is the environment for MIT tools and clients to use this KDC: KRB5_CONFIG
// and KRB5_KDC_PROFILE, on top of the test process's environment.
func (k *KDC) Env() []string {
	env := make([]string, 0, len(os.Environ())+2)
	for _, e := range os.Environ() {
		if strings.HasPrefix(e, "KRB5_CONFIG=") || strings.HasPrefix(e, "KRB5_KDC_PROFILE=") || strings.HasPrefix(e, "KRB5CCNAME=") || strings.HasPrefix(e, "KRB5_KTNAME=") {
			continue
		}
		env = append(env, e)
	}
	return append(env, "KRB5_CONFIG="+k.Krb5Conf, "KRB5_KDC_PROFILE="+k.KDCConf)
}

// Log returns the KDC's log so far (for failure messages).
func (k *KDC) Log() string {
	b, err := os.ReadFile(k.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return string(b)
}

// AddUser creates the principal name@REALM with a password.
func (k *KDC) AddUser(t testing.TB, name, password string) {
	t.Helper()
	k.kadmin(t, fmt.Sprintf("addprinc -pw %s %s", quote(password), name))
}

// AddService creates a principal with a random key, e.g. "HTTP/sql01.mssqlifi.test",
// and writes its keys to a new keytab file in the KDC's directory, whose path it
// returns.
func (k *KDC) AddService(t testing.TB, principal string) string {
	t.Helper()
	k.kadmin(t, "addprinc -randkey "+principal)
	path := filepath.Join(k.Dir, strings.NewReplacer("/", "_", "@", "_").Replace(principal)+".keytab")
	k.kadmin(t, fmt.Sprintf("ktadd -k %s -norandkey %s", path, principal))
	return path
}

// UserKeytab writes the keys of an existing user principal to a new keytab
// without changing them (so the password keeps working) and returns its path.
func (k *KDC) UserKeytab(t testing.TB, name string) string {
	t.Helper()
	path := filepath.Join(k.Dir, strings.NewReplacer("/", "_", "@", "_").Replace(name)+".keytab")
	k.kadmin(t, fmt.Sprintf("ktadd -k %s -norandkey %s", path, name))
	return path
}

// KinitAvailable reports whether MIT's kinit (krb5-user) is installed, and if not,
// what to install.
func KinitAvailable() error {
	if _, err := exec.LookPath("kinit"); err != nil {
		return fmt.Errorf("kinit not installed: apt-get install krb5-user")
	}
	return nil
}

// Kinit logs user@REALM on with password through MIT's kinit into a new credential
// cache and returns the cache's name (FILE:<path>), for KRB5CCNAME.
func (k *KDC) Kinit(t testing.TB, user, password string) string {
	t.Helper()
	if err := KinitAvailable(); err != nil {
		t.Fatalf("test KDC: %v", err)
	}
	cc := "FILE:" + filepath.Join(t.TempDir(), "cc")
	kinit := exec.Command("kinit", user+"@"+k.Realm)
	kinit.Env = append(k.Env(), "KRB5CCNAME="+cc)
	kinit.Stdin = strings.NewReader(password + "\n")
	if out, err := kinit.CombinedOutput(); err != nil {
		t.Fatalf("test KDC: kinit %s@%s: %v\n%s\nkdc.log:\n%s", user, k.Realm, err, out, k.Log())
	}
	return cc
}

// Kadmin runs one kadmin.local query, e.g. "modprinc -expire now alice".
func (k *KDC) Kadmin(t testing.TB, query string) string {
	t.Helper()
	return k.kadmin(t, query)
}

func (k *KDC) kadmin(t testing.TB, query string) string {
	t.Helper()
	out := k.run(t, "kadmin.local", "-r", k.Realm, "-q", query)
	// kadmin.local exits 0 even when the query fails; it reports a failure as
	// "<function>: <message>" (add_principal: ..., ktadd: ..., kadmin.local: ...).
	for _, line := range strings.Split(out, "\n") {
		if kadminFailure.MatchString(line) {
			t.Fatalf("test KDC: kadmin.local -q %q failed: %s", redact(query), out)
		}
	}
	return out
}

var kadminFailure = regexp.MustCompile(`^[a-z_.0-9]+: `)

func (k *KDC) run(t testing.TB, name string, args ...string) string {
	t.Helper()
	path, err := lookPath(name)
	if err != nil {
		t.Fatalf("test KDC: %v", err)
	}
	cmd := exec.Command(path, args...)
	cmd.Env = k.Env()
	cmd.Dir = k.Dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		shown := make([]string, len(args))
		for i, a := range args {
			shown[i] = redact(a)
		}
		t.Fatalf("test KDC: %s %s failed: %v\n%s", name, strings.Join(shown, " "), err, out)
	}
	return string(out)
}

// redact hides passwords in commands shown in failure messages.
func redact(s string) string {
	if i := strings.Index(s, "-pw "); i >= 0 {
		rest := s[i+4:]
		if j := strings.IndexByte(rest, ' '); j >= 0 {
			return s[:i+4] + "***" + rest[j:]
		}
		return s[:i+4] + "***"
	}
	return s
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

// waitReady polls until the KDC of the realm answers on k.Addr (a port that
// merely accepts a connection may be another process's: krb5kdc then exits, not
// having bound it), the KDC process exits, or the deadline passes.
func (k *KDC) waitReady(budget time.Duration) error {
	deadline := time.Now().Add(budget)
	for {
		select {
		case <-k.exited:
			k.mu.Lock()
			err := k.waitErr
			k.mu.Unlock()
			return fmt.Errorf("krb5kdc exited: %v", err)
		default:
		}
		err := k.probe()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer from a KDC of %s on %s within %s: %v", k.Realm, k.Addr, budget, err)
		}
		select {
		case <-k.exited:
		case <-time.After(20 * time.Millisecond): // polling interval, bounded by the deadline
		}
	}
}

// Stop ends the KDC (tests use it to simulate an unreachable KDC). Cleanup calls
// it too; calling it twice is harmless.
func (k *KDC) Stop(t testing.TB) {
	t.Helper()
	k.stop(t)
}

func (k *KDC) stop(t testing.TB) {
	if k.halt() {
		t.Logf("test KDC %s did not stop within 5s of SIGINT; killed it", k.Addr)
	}
}

// halt ends krb5kdc, if it runs: SIGINT, SIGKILL after 5 s (then it reports true).
func (k *KDC) halt() (killed bool) {
	k.mu.Lock()
	cmd, exited := k.cmd, k.exited
	k.mu.Unlock()
	select {
	case <-exited:
		return false
	default:
	}
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case <-exited:
		return false
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		return true
	}
}

// probe asks the KDC on k.Addr whether it is the realm's.
func (k *KDC) probe() error { return Probe(k.Addr, k.Krb5Conf, k.Realm) }
