package addc

import (
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/kdc"
)

// startCopy starts a DC in a new directory of the test's, stopped at its end.
func startCopy(t *testing.T, choose func(int) ([]int, error)) *DC {
	t.Helper()
	dc, err := startIn(t.TempDir(), choose)
	if err != nil {
		t.Fatalf("starting a DC on a copy of the provisioned domain: %v", err)
	}
	t.Cleanup(dc.stop)
	return dc
}

// Each copy of the provisioned domain is a DC of its own: its own ports, its own
// accounts, tickets from its own KDC; only the first start provisions.
func TestCopiesOfTheDomainAreDCsOfTheirOwn(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	if _, err := exec.LookPath("kinit"); err != nil {
		t.Skip("skipping: kinit not installed: apt-get install krb5-user")
	}
	a := startCopy(t, kdc.FreePorts)
	b := startCopy(t, kdc.FreePorts)
	if b.Provisioned {
		t.Errorf("the second DC provisioned the domain again instead of copying it")
	}
	if a.Addr == b.Addr {
		t.Fatalf("both DCs listen on %s", a.Addr)
	}
	a.AddUser(t, "onlyina", "Only-In-A-Secret-1")
	a.Kinit(t, "onlyina@"+Realm, "Only-In-A-Secret-1", false)
	kinit := exec.Command("kinit", "onlyina@"+Realm)
	kinit.Env = append(b.env(), "KRB5CCNAME=FILE:"+t.TempDir()+"/cc")
	kinit.Stdin = strings.NewReader("Only-In-A-Secret-1\n")
	if out, err := kinit.CombinedOutput(); err == nil {
		t.Errorf("the second DC knows an account made on the first:\n%s", out)
	} else if !strings.Contains(string(out), "not found in Kerberos database") {
		t.Errorf("kinit against the second DC: %v\n%s", err, out)
	}
	b.Kinit(t, "Administrator@"+Realm, AdminPassword, false)
}

// A port taken between its choice and samba's bind makes samba exit; the DC
// starts again on other ports.
func TestATakenPortStartsTheDCOnOthers(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	choose, takenPort, calls := kdc.TakenFirst(t, kdc.FreePorts)
	dc := startCopy(t, choose)
	if *calls < 2 {
		t.Errorf("the DC started after %d choice of ports, want 2 or more (the taken one, then free ones)", *calls)
	}
	if dc.Addr == net.JoinHostPort("127.0.0.1", strconv.Itoa(takenPort)) {
		t.Errorf("the DC says it listens on the taken port %s", dc.Addr)
	}
	dc.Kinit(t, "Administrator@"+Realm, AdminPassword, false)
}
