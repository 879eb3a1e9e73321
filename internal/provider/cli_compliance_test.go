package provider

import (
	"os"
	"regexp"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// complianceExample is the documented compliance report (docs/data-sources), run
// here as written but for its list of production instances.
const complianceExample = "../../examples/data-sources/mssqlifi_instant_file_initialization/data-source-compliance.tf"

// The compliance check of the docs must flag an instance whose running Engine still
// has IFI but whose service lost the right: it loses IFI at its next restart. A check
// on ifi_enabled alone passes it.
func TestCLI_complianceExampleFlagsALostRight(t *testing.T) {
	t.Parallel()
	e := startSim(t, nil)
	config := complianceConfig(t, e)

	w := newCLI(t)
	// The right granted and the Engine restarted: IFI is on, and compliant.
	for _, a := range []winsim.Action{
		{Action: winsim.ActionGrantRight, Right: contract.RightManageVolume, SID: defaultSvcSID},
		{Action: winsim.ActionRestartService, Service: "MSSQLSERVER"},
	} {
		if err := e.sim.Do(e.name, a); err != nil {
			t.Fatalf("%s: %v", a.Action, err)
		}
	}
	w.write(e.providerConfig(true) + config)
	p := w.plan()
	p.wantNoDiag(t, "warning", `^Check block assertion failed$`)

	// Someone revokes the right: the running Engine keeps IFI until its next restart.
	if err := e.sim.Do(e.name, winsim.Action{Action: winsim.ActionRevokeRight, Right: contract.RightManageVolume, SID: defaultSvcSID}); err != nil {
		t.Fatalf("revoking the right: %v", err)
	}
	p = w.plan()
	p.wantDiag(t, "warning", `^Check block assertion failed$`,
		`IFI is not compliant on: `+regexp.QuoteMeta(e.addr)+`/MSSQLSERVER: the Engine will not hold SeManageVolumePrivilege at its next start: IFI is lost at the next restart`)
	if d := p.find("warning", `^Check block assertion failed$`, `running Engine has IFI off|could not be verified`); len(d) != 0 {
		t.Errorf("the running Engine still has IFI, yet the check says it has not: %v", d)
	}
}

// complianceConfig is the compliance example pointed at e's default instance.
func complianceConfig(t *testing.T, e *accEnv) string {
	t.Helper()
	src, err := os.ReadFile(complianceExample)
	if err != nil {
		t.Fatalf("reading the compliance example: %v", err)
	}
	fleet := regexp.MustCompile(`(?s)  production = \{.*?\n  \}\n`)
	if !fleet.Match(src) {
		t.Fatalf("the compliance example has no `production = { ... }` map to point at the simulator:\n%s", src)
	}
	return string(fleet.ReplaceAllLiteral(src, []byte(`  production = {
    "`+e.addr+`/MSSQLSERVER" = { host = "`+e.addr+`", instance = "MSSQLSERVER" }
  }
`)))
}

// An Engine whose start account is an administrator has IFI without a grant of its
// own (privilege_granted = false): the compliance example reports no gap, and above
// all no false "lost at the next restart".
func TestCLI_complianceExampleAdministratorStartAccount(t *testing.T) {
	t.Parallel()
	e := startSim(t, func(hc *host.HostConfig) {
		hc.Administrators = []string{accSvcAcct}
		hc.Instances[0].ServiceAccount = accSvcAcct
	})
	w := newCLI(t)
	w.write(e.providerConfig(true) + complianceConfig(t, e))
	p := w.plan()
	if p.Exit == 1 {
		t.Fatalf("plan failed:\n%s", p.describe())
	}
	p.wantNoDiag(t, "warning", `^Check block assertion failed$`)
	if e.holds(defaultSvcSID) {
		t.Fatal("the service SID holds the right: this case is about an Engine that has IFI without it")
	}
	if in := e.instance("MSSQLSERVER"); in.InstantFileInitialization == nil || !*in.InstantFileInitialization {
		t.Fatalf("the administrator-run Engine does not have IFI: %+v", in)
	}
}
