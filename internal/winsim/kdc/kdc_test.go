package kdc

import (
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// MIT's own kinit and klist (krb5-user) log on to the test KDC with a password and
// with a keytab, and the ticket lands in the credential cache we named.
func TestKinitKlistAgainstTestKDC(t *testing.T) {
	k := Start(t, Options{})
	for _, tool := range []string{"kinit", "klist"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipping: %s not installed: apt-get install krb5-user", tool)
		}
	}
	k.AddUser(t, "alice", "Secret-1")
	keytab := k.AddService(t, "HTTP/sql01.mssqlifi.test")

	ccache := "FILE:" + filepath.Join(t.TempDir(), "cc")
	env := append(k.Env(), "KRB5CCNAME="+ccache)
	kinit := exec.Command("kinit", "alice@"+k.Realm)
	kinit.Env = env
	kinit.Stdin = strings.NewReader("Secret-1\n")
	if out, err := kinit.CombinedOutput(); err != nil {
		t.Fatalf("kinit alice with the right password: %v\n%s\nkdc.log:\n%s", err, out, k.Log())
	}
	klist := exec.Command("klist")
	klist.Env = env
	out, err := klist.CombinedOutput()
	if err != nil {
		t.Fatalf("klist: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "alice@"+k.Realm) || !strings.Contains(string(out), "krbtgt/"+k.Realm+"@"+k.Realm) {
		t.Fatalf("klist does not show alice's TGT:\n%s", out)
	}

	// A wrong password is refused by the KDC (pre-authentication failed).
	bad := exec.Command("kinit", "alice@"+k.Realm)
	bad.Env = append(k.Env(), "KRB5CCNAME=FILE:"+filepath.Join(t.TempDir(), "cc2"))
	bad.Stdin = strings.NewReader("wrong\n")
	if out, err := bad.CombinedOutput(); err == nil || !strings.Contains(strings.ToLower(string(out)), "password incorrect") {
		t.Fatalf("kinit with a wrong password: err=%v, want 'Password incorrect':\n%s", err, out)
	}

	// The service keytab holds the service's keys: kinit -k logs on as the service.
	svc := exec.Command("kinit", "-k", "-t", keytab, "HTTP/sql01.mssqlifi.test@"+k.Realm)
	svc.Env = append(k.Env(), "KRB5CCNAME=FILE:"+filepath.Join(t.TempDir(), "cc3"))
	if out, err := svc.CombinedOutput(); err != nil {
		t.Fatalf("kinit -k with the service keytab %s: %v\n%s", keytab, err, out)
	}

	// After Stop, the KDC no longer answers.
	k.Stop(t)
	gone := exec.Command("kinit", "alice@"+k.Realm)
	gone.Env = append(k.Env(), "KRB5CCNAME=FILE:"+filepath.Join(t.TempDir(), "cc4"))
	gone.Stdin = strings.NewReader("Secret-1\n")
	if out, err := gone.CombinedOutput(); err == nil {
		t.Fatalf("kinit succeeded after the KDC stopped:\n%s", out)
	}
}

// A port taken between its choice and krb5kdc's bind makes krb5kdc exit; the KDC
// starts again on another port and answers there.
func TestATakenPortStartsTheKDCOnAnother(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	choose, takenPort, calls := TakenFirst(t, FreePorts)
	k := Start(t, Options{choosePorts: choose})
	if *calls < 2 {
		t.Errorf("the KDC started after %d choice of port, want 2 or more (the taken one, then a free one)", *calls)
	}
	if k.Addr == net.JoinHostPort("127.0.0.1", strconv.Itoa(takenPort)) {
		t.Errorf("the KDC says it listens on the taken port %s", k.Addr)
	}
	k.AddUser(t, "alice", "Alice-Secret-1")
	kinit := exec.Command("kinit", "alice@"+k.Realm)
	kinit.Env = append(k.Env(), "KRB5CCNAME=FILE:"+t.TempDir()+"/cc")
	kinit.Stdin = strings.NewReader("Alice-Secret-1\n")
	if out, err := kinit.CombinedOutput(); err != nil {
		t.Errorf("kinit against the KDC started on other port: %v\n%s", err, out)
	}
}

// A dead KDC address refuses connections for the test's duration, and no one
// else can listen on it.
func TestDeadAddrRefusesAndIsHeld(t *testing.T) {
	addr := DeadAddr(t)
	if c, err := net.Dial("tcp", addr); err == nil {
		_ = c.Close()
		t.Fatalf("a connection to the dead KDC address %s was accepted", addr)
	}
	if l, err := net.Listen("tcp", addr); err == nil {
		_ = l.Close()
		t.Fatalf("another listener could take the dead KDC address %s", addr)
	}
}
