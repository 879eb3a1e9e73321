package host

import (
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// No operation compiles C# any more (lsa.ps1 declares the LSA calls through
// reflection); the simulator would charge Add-Type's compilation where a script
// still used it.
func TestNoOperationCompilesCSharp(t *testing.T) {
	t.Parallel()
	for _, op := range contract.Operations {
		if UsesAddType(op) {
			t.Errorf("%s's script uses Add-Type: every call would start csc.exe", op)
		}
	}
	if !scriptUsesAddType("# comment\nAdd-Type -TypeDefinition $source\n") || scriptUsesAddType("# Add-Type in a comment\n") {
		t.Fatal("scriptUsesAddType does not tell code from comments")
	}
}

func TestCostModelOffUnlessEnabled(t *testing.T) {
	t.Parallel()
	if c := (CostConfig{}).Resolve(); c != (Cost{}) {
		t.Fatalf("a disabled cost model costs %+v", c)
	}
	ps := 50
	c := CostConfig{Enabled: true, PowerShellStartMS: &ps}.Resolve()
	if c.PowerShellStart != 50*time.Millisecond || c.AddType != DefaultAddTypeMS*time.Millisecond || c.RoundTrip != DefaultRoundTripMS*time.Millisecond {
		t.Fatalf("resolved %+v", c)
	}
}

// The process start is charged per powershell.exe and counted.
func TestCostModelChargesProcessStart(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	ps := 300
	cfg.Cost = CostConfig{Enabled: true, PowerShellStartMS: &ps}
	h := newHost(t, cfg)
	begin := time.Now()
	r := execOp(t, h, "Administrator", contract.OpReadInstance, contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume})
	if r.code != 0 {
		t.Fatalf("read_instance: %+v", r)
	}
	if d := time.Since(begin); d < 300*time.Millisecond {
		t.Errorf("read_instance took %v with a 300 ms PowerShell start", d)
	}
	if st := h.Stats(); st.PowerShellProcesses != 1 || st.AddTypeCompilations != 0 {
		t.Errorf("stats = %+v, want one process and no compilation", st)
	}
}
