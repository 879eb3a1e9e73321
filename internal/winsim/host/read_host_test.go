package host

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// read_host reports each instance exactly as read_instance does, in one process:
// the instances asked for, in the order asked, or every installed one.
func TestReadHostReportsEachInstanceAsReadInstance(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.Instances = append(cfg.Instances, InstanceConfig{Name: "REPORTING"}, InstanceConfig{Name: "STAGING"})
	cfg.Rights = map[string][]string{contract.RightManageVolume: {`BUILTIN\Administrators`, engineSID}, contract.RightLockMemory: {engineSID}}
	h := newHost(t, cfg)

	one := func(name string) string {
		ri := decode[contract.ReadInstanceResult](t, execOp(t, h, "Administrator", contract.OpReadInstance,
			contract.ReadInstanceParams{Instance: name, Right: contract.RightManageVolume}))
		b, _ := json.Marshal(ri)
		return string(b)
	}

	all := decode[contract.ReadHostResult](t, execOp(t, h, "Administrator", contract.OpReadHost,
		contract.ReadHostParams{Right: contract.RightManageVolume}))
	if all.ComputerName != "SQL01" || strings.Join(all.InstalledInstances, ",") != "MSSQLSERVER,REPORTING,STAGING" {
		t.Fatalf("read_host: computer %q, installed %v", all.ComputerName, all.InstalledInstances)
	}
	if len(all.Instances) != 3 {
		t.Fatalf("read_host with no names reported %d instances, want the 3 installed", len(all.Instances))
	}
	for _, ri := range all.Instances {
		b, _ := json.Marshal(ri)
		if want := one(ri.Instance); string(b) != want {
			t.Errorf("read_host's %s:\n%s\nread_instance's:\n%s", ri.Instance, b, want)
		}
		// Lock Pages in Memory's right, read once for the host, in every report.
		if lp := ri.LockPages; lp == nil || lp.Right != contract.RightLockMemory || len(lp.Holders) != 1 || lp.Holders[0].SID != engineSID {
			t.Errorf("read_host's %s: lock_pages %+v", ri.Instance, ri.LockPages)
		}
	}

	// Asked by name: those, in the order asked; one the host lacks answers as
	// read_instance answers it (not found, with the installed instances).
	some := decode[contract.ReadHostResult](t, execOp(t, h, "Administrator", contract.OpReadHost,
		contract.ReadHostParams{Instances: []string{"staging", "NOPE"}, Right: contract.RightManageVolume}))
	if len(some.Instances) != 2 || !some.Instances[0].Found || some.Instances[0].ServiceName != "MSSQL$STAGING" ||
		some.Instances[1].Found || len(some.Instances[1].InstalledInstances) != 3 {
		t.Fatalf("read_host of staging and NOPE: %+v", some.Instances)
	}

	// One process for the host, whatever its number of instances.
	before := h.Stats().PowerShellProcesses
	execOp(t, h, "Administrator", contract.OpReadHost, contract.ReadHostParams{Right: contract.RightManageVolume})
	if got := h.Stats().PowerShellProcesses - before; got != 1 {
		t.Errorf("read_host of 3 instances started %d powershell.exe, want 1", got)
	}
}

// read_host checks what it is given as read_instance does, and a user who is not an
// administrator is refused by the LSA before anything is reported.
func TestReadHostRefusals(t *testing.T) {
	t.Parallel()
	h := newHost(t, baseConfig())
	wantScriptError(t, execOp(t, h, "Administrator", contract.OpReadHost,
		contract.ReadHostParams{Instances: []string{"MSSQLSERVER", "bad name;"}, Right: contract.RightManageVolume}), contract.ExitInvalidParams, "invalid_parameters")
	wantScriptError(t, execOp(t, h, "Administrator", contract.OpReadHost,
		contract.ReadHostParams{Right: "x"}), contract.ExitInvalidParams, "invalid_parameters")
	many := make([]string, contract.MaxReadHostInstances+1)
	for i := range many {
		many[i] = fmt.Sprintf("I%d", i)
	}
	se := wantScriptError(t, execOp(t, h, "Administrator", contract.OpReadHost,
		contract.ReadHostParams{Instances: many, Right: contract.RightManageVolume}), contract.ExitInvalidParams, "invalid_parameters")
	if !strings.Contains(se.Message, "at most 50") {
		t.Errorf("51 names: %q, want it to say the bound", se.Message)
	}
	r := execOp(t, h, `CONTOSO\reader`, contract.OpReadHost, contract.ReadHostParams{Right: contract.RightManageVolume})
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "LsaOpenPolicy failed: Access is denied.") {
		t.Fatalf("non-admin: %+v", r)
	}
}
