package provider

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// The engine's memo in the private state keeps what later decisions use, nothing
// of who else administers the host: after an apply, the state file holds no member
// of Administrators and no holder of the right that cannot reach the Engine, while
// the next plan still predicts from the memo (an empty plan, no read needed).
func TestCLI_memoKeepsNoAdministrators(t *testing.T) {
	t.Parallel()
	const backupAdmin, etlAccount = "S-1-5-21-3623811015-3361044348-30300820-1107", "S-1-5-21-3623811015-3361044348-30300820-1108"
	w := newCLI(t)
	e := startSim(t, func(hc *host.HostConfig) {
		hc.Administrators = append(hc.Administrators, backupAdmin, "S-1-5-21-3623811015-3361044348-30300820-500")
		hc.Rights = map[string][]string{contract.RightManageVolume: {winsid.Administrators, etlAccount}}
	})
	w.write(e.providerConfig(true) + resourceConfig(e.addr, ""))
	w.mustApply()

	b, err := os.ReadFile(filepath.Join(w.dir, "terraform.tfstate"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Resources []struct {
			Instances []struct {
				Private string `json:"private"`
			} `json:"instances"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(b, &st); err != nil || len(st.Resources) != 1 || len(st.Resources[0].Instances) != 1 {
		t.Fatalf("state %v: %s", err, b)
	}
	private, err := base64.StdEncoding.DecodeString(st.Resources[0].Instances[0].Private)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string][]byte // the framework's private state: key → bytes
	if err := json.Unmarshal(private, &keys); err != nil {
		t.Fatalf("private state %s: %v", private, err)
	}
	memo := string(keys[privateEngine])
	if !strings.Contains(memo, `"read":`) {
		t.Fatalf("the memo keeps no read: %s", memo)
	}
	// Every SID the memo holds is one a decision uses: the service SID, the
	// well-known groups of the Engine's token.
	allowed := map[string]bool{defaultSvcSID: true, winsid.Administrators: true}
	for _, sid := range regexp.MustCompile(`S-1-5-[0-9-]+`).FindAllString(memo, -1) {
		if !allowed[sid] {
			t.Errorf("the memo holds the SID %s, which no decision uses:\n%s", sid, memo)
		}
	}
	for _, name := range []string{"Administrator", "administrators_members\":[{"} {
		if strings.Contains(memo, name) {
			t.Errorf("the memo holds %q:\n%s", name, memo)
		}
	}
	// The next plan predicts from it: nothing to do.
	w.plan().wantPlanExit(t, 0)
}
