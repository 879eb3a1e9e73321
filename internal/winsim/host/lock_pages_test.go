package host

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds/tdstest"
)

// dmvMemory runs contract.QueryMemory as sa: "model|max server memory".
func dmvMemory(t *testing.T, inst *Instance) string {
	t.Helper()
	rs, e := inst.TDSHandler().Batch(context.Background(), tds.Login{User: "sa"}, contract.QueryMemory)
	if e != nil {
		t.Fatalf("QueryMemory: Msg %d %s", e.Number, e.Message)
	}
	return strings.TrimSpace(strings.SplitN(tdstest.Render(rs), "\n", 2)[1])
}

// The memory model at each start (FIDELITY.md, "Lock Pages in Memory"): LOCK_PAGES
// when the token holds SeLockMemoryPrivilege, through the same SIDs as IFI's right,
// and the edition uses locked pages (KB 2659143); CONVENTIONAL otherwise. The DMV,
// the error log's line and the process agree.
func TestTokenLockPagesRule(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(*HostConfig)
		priv   bool
		model  string
	}{
		{"nobody holds it by default", func(c *HostConfig) {}, false, contract.MemoryModelConventional},
		{"Administrators do not hold it by default, even for a member", func(c *HostConfig) {
			c.Instances[0].ServiceAccount = `CONTOSO\sqlsvc`
			c.Administrators = []string{`CONTOSO\sqlsvc`}
		}, false, contract.MemoryModelConventional},
		{"the service SID holds it", func(c *HostConfig) {
			c.Rights = map[string][]string{contract.RightLockMemory: {`NT SERVICE\MSSQLSERVER`}}
		}, true, contract.MemoryModelLockPages},
		{"the start account holds it", func(c *HostConfig) {
			c.Instances[0].ServiceAccount = `CONTOSO\sqlsvc`
			c.Rights = map[string][]string{contract.RightLockMemory: {sqlsvcSID}}
		}, true, contract.MemoryModelLockPages},
		{"Administrators hold it and the start account is a member", func(c *HostConfig) {
			c.Instances[0].ServiceAccount = `CONTOSO\sqlsvc`
			c.Administrators = []string{`CONTOSO\sqlsvc`}
			c.Rights = map[string][]string{contract.RightLockMemory: {`BUILTIN\Administrators`}}
		}, true, contract.MemoryModelLockPages},
		{"LocalSystem's token has it with no holders", func(c *HostConfig) {
			c.Instances[0].ServiceAccount = "LocalSystem"
		}, true, contract.MemoryModelLockPages},
		{"SID type none: the service SID's grant does not count", func(c *HostConfig) {
			c.Instances[0].ServiceAccount = `CONTOSO\sqlsvc`
			c.Instances[0].ServiceSIDType = intp(0)
			c.Rights = map[string][]string{contract.RightLockMemory: {engineSID}}
		}, false, contract.MemoryModelConventional},
		{"SID type restricted: the service SID counts", func(c *HostConfig) {
			c.Instances[0].ServiceAccount = `CONTOSO\sqlsvc`
			c.Instances[0].ServiceSIDType = intp(3)
			c.Rights = map[string][]string{contract.RightLockMemory: {engineSID}}
		}, true, contract.MemoryModelLockPages},
		{"Standard Edition uses locked pages from 2012", func(c *HostConfig) {
			c.Instances[0].Edition = "Standard Edition (64-bit)"
			c.Rights = map[string][]string{contract.RightLockMemory: {engineSID}}
		}, true, contract.MemoryModelLockPages},
		{"Enterprise Edition", func(c *HostConfig) {
			c.Instances[0].Edition = "Enterprise Edition: Core-based Licensing (64-bit)"
			c.Rights = map[string][]string{contract.RightLockMemory: {engineSID}}
		}, true, contract.MemoryModelLockPages},
		{"Express Edition never does", func(c *HostConfig) {
			c.Instances[0].Edition = "Express Edition (64-bit)"
			c.Rights = map[string][]string{contract.RightLockMemory: {engineSID}}
		}, true, contract.MemoryModelConventional},
		{"IFI's right alone is not Lock Pages in Memory", func(c *HostConfig) {
			c.Rights = map[string][]string{contract.RightManageVolume: {engineSID}}
		}, false, contract.MemoryModelConventional},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := baseConfig()
			tc.mutate(&cfg)
			h := newHost(t, cfg)
			inst, _ := h.Instance("MSSQLSERVER")
			p := inst.Process()
			if p.LockMemory != tc.priv || p.MemoryModel != tc.model {
				t.Fatalf("privilege=%v model=%s, want %v/%s (token %v)", p.LockMemory, p.MemoryModel, tc.priv, tc.model, p.TokenSIDs)
			}
			if got := dmvMemory(t, inst); got != tc.model+"|2147483647" {
				t.Errorf("QueryMemory: %q", got)
			}
			el := h.instanceReport("MSSQLSERVER", contract.RightManageVolume).ErrorLog
			at := strings.Index(el.MemoryLine, "Using ")
			if el.MemoryModel != tc.model || at < 0 || contract.MemoryLines[el.MemoryLine[at:]] != tc.model {
				t.Errorf("error log: %q → %q, want %s", el.MemoryLine, el.MemoryModel, tc.model)
			}
		})
	}
}

// Before 2012 the memory manager's line was worded otherwise, and the simulator
// writes none: the read finds no memory line (unknown), never a wrong one. 2014 has
// the line but not the DMV's column (error 207); max server memory reads on both.
func TestMemoryModelOnOlderBuilds(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.Rights = map[string][]string{contract.RightLockMemory: {engineSID, winsid.ServiceSID("MSSQL$OLD"), winsid.ServiceSID("MSSQL$LEGACY")}}
	cfg.Instances = append(cfg.Instances,
		InstanceConfig{Name: "OLD", Version: "12.0.6024.0", Logins: cfg.Instances[0].Logins, MaxServerMemoryMB: intp(4096)},
		InstanceConfig{Name: "LEGACY", Version: "10.50.6000.34", Logins: cfg.Instances[0].Logins})
	h := newHost(t, cfg)
	old, _ := h.Instance("OLD")
	if el := h.instanceReport("OLD", contract.RightManageVolume).ErrorLog; el.MemoryModel != contract.MemoryModelLockPages {
		t.Errorf("2014's error log: %+v", el)
	}
	if _, e := old.TDSHandler().Batch(context.Background(), tds.Login{User: "sa"}, contract.QueryMemory); e == nil || e.Number != 207 ||
		e.Message != "Invalid column name 'sql_memory_model_desc'." {
		t.Errorf("QueryMemory on 2014: %+v", e)
	}
	for _, user := range []string{"sa", "weak"} { // sys.configurations needs no VIEW SERVER STATE
		if got := batch(t, old, user, contract.QueryMaxServerMemory); got != "max_server_memory_mb:bigint\n4096\n" {
			t.Errorf("QueryMaxServerMemory on 2014 as %s: %q", user, got)
		}
	}
	legacy, _ := h.Instance("LEGACY")
	if p := legacy.Process(); p.MemoryModel != contract.MemoryModelLockPages {
		t.Errorf("2008 R2 Developer with the right: %s", p.MemoryModel)
	}
	if el := h.instanceReport("LEGACY", contract.RightManageVolume).ErrorLog; el.MemoryLine != "" || el.MemoryModel != "" {
		t.Errorf("2008 R2's error log has a memory line: %+v", el)
	}
}

// One restart_instance with two changes (IFI's and Lock Pages in Memory's rights)
// restarts once, and the Engine then has both; the event log names each right. A
// change of any other right is refused before anything changes or stops.
func TestRestartInstanceWithBothRights(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.Instances[0].StartMS, cfg.Instances[0].StopMS = 5, 5
	h := newHost(t, cfg)
	inst, _ := h.Instance("MSSQLSERVER")
	before := inst.Process()

	refused := contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30, Changes: []contract.RightChange{
		{Right: contract.RightLockMemory, SID: engineSID, Grant: true}, {Right: "SeDebugPrivilege", SID: engineSID, Grant: true}}}
	se := wantScriptError(t, execOp(t, h, "Administrator", contract.OpRestartInstance, refused), 2, "invalid_parameters")
	if !strings.Contains(se.Message, "'SeDebugPrivilege' is refused") {
		t.Errorf("refusal: %q", se.Message)
	}
	if holders, _ := h.RightHolders(contract.RightLockMemory); len(holders) != 0 {
		t.Fatalf("a refused request granted the first change: %v", holders)
	}
	if inst.Process().PID != before.PID {
		t.Fatal("a refused request restarted the Engine")
	}

	p := contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30, ReadBack: true, Changes: []contract.RightChange{
		{SID: engineSID, Grant: true}, {Right: contract.RightLockMemory, SID: engineSID, Grant: true}}}
	r := execOp(t, h, "Administrator", contract.OpRestartInstance, p)
	res := decode[contract.RestartInstanceResult](t, r)
	if r.code != 0 || !res.Finished || res.Error != "" || !res.Changed {
		t.Fatalf("exit %d %+v", r.code, res)
	}
	after := inst.Process()
	if !after.Started.After(before.Started) || !after.IFI || after.MemoryModel != contract.MemoryModelLockPages {
		t.Fatalf("after the restart: %+v", after)
	}
	if got := dmvMemory(t, inst); got != "LOCK_PAGES|2147483647" {
		t.Errorf("QueryMemory: %q", got)
	}
	rb := res.Instance
	if rb == nil || rb.LockPages == nil || rb.LockPages.Right != contract.RightLockMemory ||
		len(rb.LockPages.Holders) != 1 || rb.LockPages.Holders[0].SID != engineSID ||
		rb.ErrorLog.MemoryModel != contract.MemoryModelLockPages || rb.ErrorLog.Enabled == nil || !*rb.ErrorLog.Enabled {
		t.Fatalf("read back: %+v", rb)
	}
	restarts, rights := 0, []string{}
	for _, e := range h.EventLog() {
		switch e.Change {
		case "restart":
			restarts++
		case "grant":
			rights = append(rights, e.Right)
		}
	}
	if restarts != 1 || strings.Join(rights, ",") != contract.RightManageVolume+","+contract.RightLockMemory {
		t.Errorf("event log: %d restarts, grants of %v", restarts, rights)
	}
}

// set_right grants Lock Pages in Memory's right to the service SID; it takes effect
// at the next start only. read_instance reports its holders and Group Policy
// whatever right the read names.
func TestSetRightLockPages(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.GroupPolicy.Rights = map[string][]string{contract.RightLockMemory: {`BUILTIN\Administrators`}}
	h := newHost(t, cfg)
	read := decode[contract.ReadInstanceResult](t, execOp(t, h, "Administrator", contract.OpReadInstance,
		contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume}))
	if lp := read.LockPages; lp == nil || !lp.GroupPolicy.Known || !lp.GroupPolicy.Defined || read.GroupPolicy.Defined ||
		len(lp.GroupPolicy.Holders) != 1 || lp.GroupPolicy.Holders[0].SID != winsid.Administrators {
		t.Fatalf("lock_pages %+v, group_policy %+v", read.LockPages, read.GroupPolicy)
	}

	h2 := newHost(t, baseConfig())
	r := execOp(t, h2, "Administrator", contract.OpSetRight, contract.SetRightParams{Right: contract.RightLockMemory, SID: engineSID, Grant: true, ReadBack: "MSSQLSERVER"})
	res := decode[contract.SetRightResult](t, r)
	if r.code != 0 || !res.Changed || len(res.Holders) != 1 || res.Instance == nil || res.Instance.LockPages == nil || len(res.Instance.LockPages.Holders) != 1 {
		t.Fatalf("exit %d %+v", r.code, res)
	}
	if mv, _ := h2.RightHolders(contract.RightManageVolume); len(mv) != 1 || mv[0] != winsid.Administrators {
		t.Fatalf("IFI's right changed: %v", mv)
	}
	inst, _ := h2.Instance("MSSQLSERVER")
	if got := dmvMemory(t, inst); got != "CONVENTIONAL|2147483647" {
		t.Fatalf("before a restart: %q", got)
	}
	if ev := h2.EventLog(); len(ev) != 1 || ev[0].Right != contract.RightLockMemory || ev[0].Change != "grant" {
		t.Fatalf("event log %+v", ev)
	}
	if err := h2.RestartService("MSSQLSERVER"); err != nil {
		t.Fatal(err)
	}
	if got := dmvMemory(t, inst); got != "LOCK_PAGES|2147483647" {
		t.Fatalf("after a restart: %q", got)
	}
}

// set_right makes a list of changes in one process (issue 41): every right is
// checked before anything changes, then each change is made in order, and the
// answer says whether any changed and reads the instance back.
func TestSetRightWithBothRights(t *testing.T) {
	t.Parallel()
	h := newHost(t, baseConfig())
	refused := contract.SetRightParams{Changes: []contract.RightChange{
		{SID: engineSID, Grant: true}, {Right: "SeDebugPrivilege", SID: engineSID, Grant: true}}}
	se := wantScriptError(t, execOp(t, h, "Administrator", contract.OpSetRight, refused), 2, "invalid_parameters")
	if !strings.Contains(se.Message, "'SeDebugPrivilege' is refused") {
		t.Errorf("refusal: %q", se.Message)
	}
	if holders, _ := h.RightHolders(contract.RightManageVolume); slices.Contains(holders, engineSID) {
		t.Fatalf("a refused request made its first change: %v", holders)
	}

	both := contract.SetRightParams{ReadBack: "MSSQLSERVER", Changes: []contract.RightChange{
		{SID: engineSID, Grant: true}, {Right: contract.RightLockMemory, SID: engineSID, Grant: true}}}
	r := execOp(t, h, "Administrator", contract.OpSetRight, both)
	res := decode[contract.SetRightResult](t, r)
	if r.code != 0 || !res.Changed || res.Instance == nil || res.Instance.LockPages == nil {
		t.Fatalf("exit %d %+v", r.code, res)
	}
	for _, right := range contract.ManagedRights {
		if holders, _ := h.RightHolders(right); !slices.Contains(holders, engineSID) {
			t.Errorf("%s holders after the request: %v; want %s", right, holders, engineSID)
		}
	}
	if !slices.Contains(res.Instance.LockPages.Holders, contract.Principal{SID: engineSID}) {
		t.Errorf("the read-back's Lock Pages holders %v lack the grant", res.Instance.LockPages.Holders)
	}
	// Again: nothing changes.
	if res := decode[contract.SetRightResult](t, execOp(t, h, "Administrator", contract.OpSetRight, both)); res.Changed {
		t.Error("the same changes again reported a change")
	}
	// A change that fails ends the request, naming its right and SID; the ones
	// before it were made.
	se = wantScriptError(t, execOp(t, h, `CONTOSO\reader`, contract.OpSetRight, both), 1, "lsa_error")
	if !strings.Contains(se.Message, contract.RightManageVolume) || !strings.Contains(se.Message, engineSID) {
		t.Errorf("lsa_error %q does not name the change", se.Message)
	}
	many := contract.SetRightParams{Changes: make([]contract.RightChange, contract.MaxRestartChanges+1)}
	for i := range many.Changes {
		many.Changes[i] = contract.RightChange{SID: engineSID, Grant: true}
	}
	wantScriptError(t, execOp(t, h, "Administrator", contract.OpSetRight, many), 2, "invalid_parameters")
}
