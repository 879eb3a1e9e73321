package addc_test

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/addc"
)

func TestMain(m *testing.M) { os.Exit(addc.Main(m)) }

// dcAccounts creates the test's user once per DC (a run with -count shares it).
var dcAccounts sync.Once

// The DC issues tickets: MIT's kinit logs on a user by its account name and by a
// UPN in an alternative suffix (sent as an enterprise principal).
func TestDCIssuesTickets(t *testing.T) {
	dc := addc.Shared(t)
	t.Logf("domain ready in %s (provisioned by this process: %t)", dc.Ready, dc.Provisioned)
	if _, err := exec.LookPath("klist"); err != nil {
		t.Skip("skipping: klist not installed: apt-get install krb5-user")
	}
	dcAccounts.Do(func() {
		dc.AddUser(t, "dcuser", "Dc-User-Secret-1")
		dc.SetUPN(t, "dcuser", "dc.user@"+addc.UPNSuffix)
	})
	for _, tc := range []struct {
		name       string
		enterprise bool
	}{{"dcuser@" + addc.Realm, false}, {"dc.user@" + addc.UPNSuffix, true}} {
		cc := dc.Kinit(t, tc.name, "Dc-User-Secret-1", tc.enterprise)
		out, err := exec.Command("klist", "-c", cc).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "krbtgt/"+addc.Realm+"@"+addc.Realm) {
			t.Errorf("klist after kinit %s: %v\n%s", tc.name, err, out)
		}
	}
}
