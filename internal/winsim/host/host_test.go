package host

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds"
)

var (
	engineSID = winsid.ServiceSID("MSSQLSERVER") // design/windows-behaviour.md#service-sids known value below
	sqlsvcSID = "S-1-5-21-1004336348-1177238915-682003330-1105"
)

func intp(n int) *int    { return &n }
func boolp(b bool) *bool { return &b }

// baseConfig is a domain host with one default instance and an administrator user.
func baseConfig() HostConfig {
	return HostConfig{
		Name:     "sql01",
		Address:  "127.0.0.2",
		Domain:   "CONTOSO",
		Accounts: map[string]string{`CONTOSO\sqlsvc`: sqlsvcSID},
		WinRM: WinRMConfig{Users: []UserConfig{
			{Name: "Administrator", Password: "Passw0rd!"},
			{Name: `CONTOSO\reader`, Password: "r", Administrator: boolp(false)},
		}},
		Instances: []InstanceConfig{{
			Name:   "MSSQLSERVER",
			Logins: []LoginConfig{{Name: "sa", Password: "Sql!"}, {Name: "weak", Password: "w", ViewServerState: boolp(false)}},
		}},
	}
}

func newHost(t *testing.T, cfg HostConfig) *Host {
	t.Helper()
	h, err := New(cfg, Options{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(h.Close)
	return h
}

func waitState(t *testing.T, h *Host, name, state string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.WaitServiceState(ctx, name, state); err != nil {
		t.Fatal(err)
	}
}

// dmvIFI runs the provider's DMV query as login sa and returns the Engine row's IFI.
func dmvIFI(t *testing.T, inst *Instance) any {
	t.Helper()
	rs, serr := inst.TDSHandler().Batch(context.Background(), tds.Login{User: "sa", Password: "Sql!"}, contract.QueryServerServices)
	if serr != nil {
		t.Fatalf("DMV query failed: %d %s", serr.Number, serr.Message)
	}
	if len(rs) != 1 || len(rs[0].Rows) < 1 {
		t.Fatalf("DMV answered %+v", rs)
	}
	return rs[0].Rows[0][5]
}

func TestServiceSIDMatchesFacts(t *testing.T) {
	t.Parallel()
	if engineSID != "S-1-5-80-3880718306-3832830129-1677859214-2598158968-1052248003" {
		t.Fatalf("service SID of MSSQLSERVER = %s", engineSID)
	}
}

// The rule that matters (design/windows-behaviour.md#the-restart-rule): the Engine's
// token is captured at start; IFI = SeManageVolumePrivilege through the token's SIDs (or
// LocalSystem) and no TF 1806.
func TestTokenIFIRule(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		mutate    func(*HostConfig)
		wantPriv  bool
		wantIFI   bool
		wantAdmin bool
	}{
		{"default rights: Administrators only, virtual account not a member", func(c *HostConfig) {}, false, false, false},
		{"service SID holds the right (Setup's IFI checkbox)", func(c *HostConfig) {
			c.Rights = map[string][]string{contract.RightManageVolume: {winsid.Administrators, `NT SERVICE\MSSQLSERVER`}}
		}, true, true, false},
		{"only the start account holds it", func(c *HostConfig) {
			c.Instances[0].ServiceAccount = `CONTOSO\sqlsvc`
			c.Rights = map[string][]string{contract.RightManageVolume: {sqlsvcSID}}
		}, true, true, false},
		{"start account is an Administrators member", func(c *HostConfig) {
			c.Instances[0].ServiceAccount = `CONTOSO\sqlsvc`
			c.Administrators = []string{`CONTOSO\sqlsvc`}
		}, true, true, true},
		{"start account in a domain group nested in another one, which is in Administrators", func(c *HostConfig) {
			c.Instances[0].ServiceAccount = `CONTOSO\sqlsvc`
			c.Accounts[`CONTOSO\SQL Admins`] = "S-1-5-21-1004336348-1177238915-682003330-2201"
			c.Accounts[`CONTOSO\DBA`] = "S-1-5-21-1004336348-1177238915-682003330-2202"
			c.Administrators = []string{`CONTOSO\SQL Admins`}
			c.Groups = map[string][]string{`CONTOSO\SQL Admins`: {`CONTOSO\DBA`}, `CONTOSO\DBA`: {`CONTOSO\sqlsvc`}}
		}, true, true, true},
		{"a domain group in Administrators without the start account", func(c *HostConfig) {
			c.Instances[0].ServiceAccount = `CONTOSO\sqlsvc`
			c.Accounts[`CONTOSO\SQL Admins`] = "S-1-5-21-1004336348-1177238915-682003330-2201"
			c.Administrators = []string{`CONTOSO\SQL Admins`}
			c.Groups = map[string][]string{`CONTOSO\SQL Admins`: {}}
		}, false, false, false},
		{"LocalSystem has it even with no holders", func(c *HostConfig) {
			c.Instances[0].ServiceAccount = "LocalSystem"
			c.Rights = map[string][]string{contract.RightManageVolume: {}}
		}, true, true, true},
		{"SID type none: a grant to the service SID does not count", func(c *HostConfig) {
			c.Instances[0].ServiceAccount = `CONTOSO\sqlsvc`
			c.Instances[0].ServiceSIDType = intp(0)
			c.Rights = map[string][]string{contract.RightManageVolume: {`NT SERVICE\MSSQLSERVER`}}
		}, false, false, false},
		{"SID type restricted: the service SID counts", func(c *HostConfig) {
			c.Instances[0].ServiceAccount = `CONTOSO\sqlsvc`
			c.Instances[0].ServiceSIDType = intp(3)
			c.Rights = map[string][]string{contract.RightManageVolume: {engineSID}}
		}, true, true, false},
		{"trace flag 1806 disables IFI despite the privilege", func(c *HostConfig) {
			c.Rights = map[string][]string{contract.RightManageVolume: {engineSID}}
			c.Instances[0].StartupTraceFlags = []int{1806}
		}, true, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig()
			tc.mutate(&cfg)
			h := newHost(t, cfg)
			inst, _ := h.Instance("MSSQLSERVER")
			p := inst.Process()
			if p == nil {
				t.Fatal("Engine not running after New")
			}
			if p.ManageVolume != tc.wantPriv || p.IFI != tc.wantIFI {
				t.Fatalf("privilege=%v IFI=%v, want %v/%v (token %v)", p.ManageVolume, p.IFI, tc.wantPriv, tc.wantIFI, p.TokenSIDs)
			}
			hasAdmin := false
			for _, s := range p.TokenSIDs {
				hasAdmin = hasAdmin || s == winsid.Administrators
			}
			if hasAdmin != tc.wantAdmin {
				t.Fatalf("token has Administrators = %v, want %v (%v)", hasAdmin, tc.wantAdmin, p.TokenSIDs)
			}
			want := "N"
			if tc.wantIFI {
				want = "Y"
			}
			if got := dmvIFI(t, inst); got != want {
				t.Fatalf("DMV instant_file_initialization_enabled = %v, want %s", got, want)
			}
			wantLine := "Database Instant File Initialization: disabled."
			if tc.wantIFI {
				wantLine = "Database Instant File Initialization: enabled."
			}
			if !strings.Contains(inst.ErrorLog(), wantLine) {
				t.Fatalf("error log lacks %q:\n%s", wantLine, inst.ErrorLog())
			}
		})
	}
}

func TestGrantTakesEffectOnlyAfterRestart(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.Instances[0].StartMS, cfg.Instances[0].StopMS = 20, 20
	h := newHost(t, cfg)
	inst, _ := h.Instance("MSSQLSERVER")
	if got := dmvIFI(t, inst); got != "N" {
		t.Fatalf("before grant: %v", got)
	}
	changed, err := h.GrantRight(contract.RightManageVolume, engineSID)
	if err != nil || !changed {
		t.Fatalf("grant: changed=%v err=%v", changed, err)
	}
	if changed, _ := h.GrantRight(contract.RightManageVolume, engineSID); changed {
		t.Fatal("granting a held right reported a change (LSA: no-op)")
	}
	if got := dmvIFI(t, inst); got != "N" {
		t.Fatalf("grant while running changed the DMV to %v; the token is captured at start", got)
	}
	if s := h.Snapshot(); *s.Instances[0].InstantFileInitialization {
		t.Fatal("snapshot says the running process has IFI before a restart")
	}
	oldPID := inst.Process().PID
	if err := h.RestartService("MSSQLSERVER"); err != nil {
		t.Fatal(err)
	}
	if got := dmvIFI(t, inst); got != "Y" {
		t.Fatalf("after restart the DMV says %v, want Y", got)
	}
	if inst.Process().PID == oldPID {
		t.Fatal("restart kept the process id")
	}
	// A revoke while running does not turn it off either.
	if changed, _ := h.RevokeRight(contract.RightManageVolume, engineSID); !changed {
		t.Fatal("revoke reported no change")
	}
	if got := dmvIFI(t, inst); got != "Y" {
		t.Fatalf("revoke while running changed the DMV to %v", got)
	}
}

func TestGroupPolicyRefreshOverwritesLocalGrants(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.GroupPolicy.Rights = map[string][]string{contract.RightManageVolume: {winsid.Administrators}}
	h := newHost(t, cfg)
	if _, err := h.GrantRight(contract.RightManageVolume, engineSID); err != nil {
		t.Fatal(err)
	}
	holders, _ := h.RightHolders(contract.RightManageVolume)
	if len(holders) != 2 {
		t.Fatalf("after the local grant: %v", holders)
	}
	h.RefreshGroupPolicy()
	holders, _ = h.RightHolders(contract.RightManageVolume)
	if len(holders) != 1 || holders[0] != winsid.Administrators {
		t.Fatalf("after the policy refresh the holders are %v, want only the policy's [%s]", holders, winsid.Administrators)
	}
	// A policy set now applies only at the next refresh.
	if err := h.SetGroupPolicyRight(contract.RightManageVolume, []string{winsid.Administrators, engineSID}); err != nil {
		t.Fatal(err)
	}
	if holders, _ = h.RightHolders(contract.RightManageVolume); len(holders) != 1 {
		t.Fatalf("policy applied before a refresh: %v", holders)
	}
	h.RefreshGroupPolicy()
	if holders, _ = h.RightHolders(contract.RightManageVolume); len(holders) != 2 {
		t.Fatalf("policy not applied by the refresh: %v", holders)
	}
}

func TestStopWithDependents(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.Instances[0].StartMS, cfg.Instances[0].StopMS = 10, 30
	h := newHost(t, cfg)
	waitState(t, h, "SQLSERVERAGENT", contract.StateRunning)
	err := h.StopService("MSSQLSERVER", false)
	if err == nil || !strings.Contains(err.Error(), "dependent services") {
		t.Fatalf("stopping the Engine with a running Agent: err = %v", err)
	}
	if st, _ := h.ServiceState("MSSQLSERVER"); st != contract.StateRunning {
		t.Fatalf("a refused stop left the Engine %s", st)
	}
	if err := h.StopService("MSSQLSERVER", true); err != nil {
		t.Fatal(err)
	}
	// The dependent stops first; the Engine runs until then.
	if st, _ := h.ServiceState("MSSQLSERVER"); st != contract.StateRunning {
		t.Fatalf("Engine is %s while its Agent is still stopping", st)
	}
	inst, _ := h.Instance("MSSQLSERVER")
	waitState(t, h, "MSSQLSERVER", contract.StateStopped)
	if st, _ := h.ServiceState("SQLSERVERAGENT"); st != contract.StateStopped {
		t.Fatalf("Agent is %s", st)
	}
	if inst.Process() != nil || inst.Ready() {
		t.Fatal("a stopped Engine still has a process or accepts SQL")
	}
	// Starting the Agent starts the Engine first (SCM dependency start).
	if err := h.StartService("SQLSERVERAGENT"); err != nil {
		t.Fatal(err)
	}
	waitState(t, h, "SQLSERVERAGENT", contract.StateRunning)
	if st, _ := h.ServiceState("MSSQLSERVER"); st != contract.StateRunning {
		t.Fatalf("Engine is %s after its dependent started", st)
	}
}

func TestStartFailure(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.Instances[0].Stopped = true
	cfg.Instances[0].FailStart = true
	cfg.Instances[0].StartMS = 10
	h := newHost(t, cfg)
	if err := h.StartService("SQLSERVERAGENT"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := h.WaitServiceState(ctx, "MSSQLSERVER", contract.StateRunning)
	if err == nil || !strings.Contains(err.Error(), "1067") {
		t.Fatalf("waiting for a failing Engine: %v", err)
	}
	err = h.WaitServiceState(ctx, "SQLSERVERAGENT", contract.StateRunning)
	if err == nil || !strings.Contains(err.Error(), "1068") {
		t.Fatalf("waiting for the Agent of a failed Engine: %v", err)
	}
}

func TestListenerHooksFollowEngine(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.Instances[0].StartMS, cfg.Instances[0].StopMS, cfg.Instances[0].ReadyMS = 10, 10, 40
	h := newHost(t, cfg)
	inst, _ := h.Instance("MSSQLSERVER")
	got := recordListenerHooks(inst)
	// New waits for nothing, so the Engine may still be within ready_ms: wait for it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.waitFor(ctx, func() (bool, error) { return inst.ready, nil }); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.HasSuffix(got(), "open") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
	}
	if !strings.HasSuffix(got(), "open") {
		t.Fatalf("listener not opened for a ready Engine: %s", got())
	}
	if err := h.StopService("MSSQLSERVER", true); err != nil {
		t.Fatal(err)
	}
	waitState(t, h, "MSSQLSERVER", contract.StateStopped)
	if !strings.HasSuffix(got(), "open,close") {
		t.Fatalf("listener not closed when the Engine stopped: %s", got())
	}
	if l := inst.TDSHandler().Login(context.Background(), tds.Login{User: "sa", Password: "Sql!"}); l == nil {
		t.Fatal("login accepted while the Engine is stopped")
	}
	if err := h.StartService("MSSQLSERVER"); err != nil {
		t.Fatal(err)
	}
	waitState(t, h, "MSSQLSERVER", contract.StateRunning)
	if inst.Ready() {
		t.Fatal("ready at once although ready_ms is 40")
	}
	if err := h.waitFor(ctx, func() (bool, error) { return inst.ready, nil }); err != nil {
		t.Fatal(err)
	}
	for !strings.HasSuffix(got(), "close,open") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if !strings.HasSuffix(got(), "close,open") {
		t.Fatalf("listener not reopened: %s", got())
	}
}

func TestErrorLogPerVersionAndArchive(t *testing.T) {
	t.Parallel()
	cases := []struct {
		version  string
		line     bool
		dmvColum bool
	}{
		{"11.0.6020.0", false, false}, // 2012 SP3
		{"11.0.7001.0", true, true},   // 2012 SP4
		{"12.0.4100.1", false, false}, // 2014 SP1
		{"12.0.5000.0", true, false},  // 2014 SP2: log line, no DMV column (unverified → absent)
		{"12.0.6024.0", true, false},  // 2014 SP3
		{"13.0.1601.5", true, false},  // 2016 RTM
		{"13.0.4001.0", true, true},   // 2016 SP1
		{"15.0.2000.5", true, true},
		{"16.0.4135.4", true, true},
	}
	for _, tc := range cases {
		t.Run(tc.version, func(t *testing.T) {
			cfg := baseConfig()
			cfg.Instances[0].Version = tc.version
			h := newHost(t, cfg)
			inst, _ := h.Instance("MSSQLSERVER")
			has := strings.Contains(inst.ErrorLog(), "Database Instant File Initialization: disabled. For security and performance considerations see the topic 'Database Instant File Initialization' in SQL Server Books Online. This is an informational message only. No user action is required.")
			if has != tc.line {
				t.Fatalf("IFI line present = %v, want %v:\n%s", has, tc.line, inst.ErrorLog())
			}
			rs, serr := inst.TDSHandler().Batch(context.Background(), tds.Login{User: "sa", Password: "Sql!"}, contract.QueryServerServices)
			if tc.dmvColum {
				if serr != nil || len(rs[0].Rows) != 2 {
					t.Fatalf("DMV: %v %+v", serr, rs)
				}
				if rs[0].Rows[1][5] != nil || rs[0].Rows[1][0] != "SQL Server Agent (MSSQLSERVER)" {
					t.Fatalf("Agent row: %v", rs[0].Rows[1])
				}
			} else if serr == nil || serr.Number != contract.SQLErrInvalidColumn || serr.Message != "Invalid column name 'instant_file_initialization_enabled'." {
				t.Fatalf("want error 207 on %s, got %+v", tc.version, serr)
			}
		})
	}

	// Archiving: each start archives the previous log as ERRORLOG.1.
	cfg := baseConfig()
	h := newHost(t, cfg)
	inst, _ := h.Instance("MSSQLSERVER")
	first := inst.ErrorLog()
	if _, ok := inst.ArchivedErrorLog(1); ok {
		t.Fatal("ERRORLOG.1 exists before any restart")
	}
	if _, err := h.GrantRight(contract.RightManageVolume, engineSID); err != nil {
		t.Fatal(err)
	}
	if err := h.RestartService("MSSQLSERVER"); err != nil {
		t.Fatal(err)
	}
	arch, ok := inst.ArchivedErrorLog(1)
	if !ok || !strings.HasPrefix(arch, first) || !strings.Contains(arch, "SQL Server shutdown has been initiated") {
		t.Fatalf("ERRORLOG.1 is not the previous log:\n%s", arch)
	}
	if !strings.Contains(inst.ErrorLog(), "Instant File Initialization: enabled.") || strings.Contains(inst.ErrorLog(), "disabled.") {
		t.Fatalf("new log:\n%s", inst.ErrorLog())
	}
}

func TestSQLHandler(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.Instances = append(cfg.Instances, InstanceConfig{Name: "reporting", Version: "15.0.4355.3", Clustered: true,
		TDEDatabases: []string{"Sales", "HR"}, Logins: []LoginConfig{{Name: "sa", Password: "x"}}})
	h := newHost(t, cfg)
	def, _ := h.Instance("MSSQLSERVER")
	named, ok := h.Instance("Reporting")
	if !ok {
		t.Fatal("named instance not found case-insensitively")
	}
	if def.TDSHandler().ServerName() != "SQL01" || named.TDSHandler().ServerName() != `SQL01\REPORTING` {
		t.Fatalf("server names %s, %s", def.TDSHandler().ServerName(), named.TDSHandler().ServerName())
	}
	if maj, mnr, b := named.TDSHandler().Version(); maj != 15 || mnr != 0 || b != 4355 {
		t.Fatalf("version %d.%d.%d", maj, mnr, b)
	}
	ctx := context.Background()
	for _, l := range []tds.Login{{User: "sa", Password: "bad"}, {User: "nobody", Password: "Sql!"}} {
		e := def.TDSHandler().Login(ctx, l)
		if e == nil || e.Number != 18456 || e.Message != "Login failed for user '"+l.User+"'." {
			t.Fatalf("login %+v: %+v", l, e)
		}
	}
	if e := def.TDSHandler().Login(ctx, tds.Login{User: "SA", Password: "Sql!"}); e != nil {
		t.Fatalf("good login refused: %v", e)
	}
	// Whitespace and case do not matter.
	q := strings.ToLower(strings.ReplaceAll(contract.QueryServerProperties, ", ", ",\n\t"))
	rs, e := def.TDSHandler().Batch(ctx, tds.Login{User: "sa"}, q)
	if e != nil || rs[0].Rows[0][0] != "16.0.4135.4" || rs[0].Rows[0][3] != int32(0) || rs[0].Rows[0][4] != nil {
		t.Fatalf("server properties: %v %+v", e, rs)
	}
	rs, _ = named.TDSHandler().Batch(ctx, tds.Login{User: "sa"}, contract.QueryServerProperties)
	if rs[0].Rows[0][4] != "REPORTING" || rs[0].Rows[0][3] != int32(1) {
		t.Fatalf("named properties: %+v", rs[0].Rows)
	}
	rs, _ = named.TDSHandler().Batch(ctx, tds.Login{User: "sa"}, contract.QueryEncryptedDatabases)
	if len(rs[0].Rows) != 3 || rs[0].Rows[0][1] != "tempdb" || rs[0].Rows[0][2] != int32(3) || rs[0].Rows[1][1] != "Sales" {
		t.Fatalf("encryption keys: %+v", rs[0].Rows)
	}
	rs, _ = def.TDSHandler().Batch(ctx, tds.Login{User: "sa"}, contract.QueryEncryptedDatabases)
	if len(rs[0].Rows) != 0 {
		t.Fatalf("tempdb encrypted without TDE: %+v", rs[0].Rows)
	}
	rs, _ = named.TDSHandler().Batch(ctx, tds.Login{User: "sa"}, contract.QueryServerServices)
	if rs[0].Rows[0][4] != "Y" || rs[0].Rows[0][0] != "SQL Server (REPORTING)" || rs[0].Rows[0][3] != `NT Service\MSSQL$REPORTING` {
		t.Fatalf("named DMV: %+v", rs[0].Rows[0])
	}
	if _, ok := rs[0].Rows[0][2].(time.Time); !ok {
		t.Fatalf("last_startup_time is %T", rs[0].Rows[0][2])
	}
	if _, e := def.TDSHandler().Batch(ctx, tds.Login{User: "weak"}, contract.QueryServerServices); e == nil || e.Number != 300 {
		t.Fatalf("login without VIEW SERVER STATE: %+v", e)
	}
	if _, e := def.TDSHandler().Batch(ctx, tds.Login{User: "sa"}, "SELECT @@VERSION"); e == nil || e.Number != 50000 || !strings.Contains(e.Message, "winsim does not model @@VERSION") {
		t.Fatalf("unknown query: %+v", e)
	}
	// TDE databases never get IFI, even when the process has it.
	snap := h.Snapshot()
	for _, db := range snap.Instances[1].Databases {
		if db.Name == "Sales" && (db.IFIApplies || db.EncryptionState != 3) {
			t.Fatalf("Sales: %+v", db)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	cases := map[string]func(*HostConfig){
		"unknown dependency":    func(c *HostConfig) { c.Services = []ServiceConfig{{Name: "X", DependsOn: []string{"nope"}}} },
		"bad version":           func(c *HostConfig) { c.Instances[0].Version = "16" },
		"unknown right":         func(c *HostConfig) { c.Rights = map[string][]string{"SeFooPrivilege": {}} },
		"untranslatable member": func(c *HostConfig) { c.Administrators = []string{`CONTOSO\ghost`} },
		"bad SID type":          func(c *HostConfig) { c.Instances[0].ServiceSIDType = intp(2) },
		"AG role": func(c *HostConfig) {
			c.Instances[0].AvailabilityGroup = &AvailabilityGroupConfig{Name: "AG1", Role: "resolving"}
		},
		"AG without a name": func(c *HostConfig) {
			c.Instances[0].AvailabilityGroup = &AvailabilityGroupConfig{Role: "primary"}
		},
		"AG with Always On off": func(c *HostConfig) {
			c.Instances[0].AvailabilityGroup = &AvailabilityGroupConfig{Name: "AG1", Role: "primary"}
			c.Instances[0].HADREnabled = boolp(false)
		},
		"Always On before 2012": func(c *HostConfig) {
			c.Instances[0].Version = "10.50.6000.34"
			c.Instances[0].HADREnabled = boolp(true)
		},
		"max server memory below sp_configure's minimum": func(c *HostConfig) { c.Instances[0].MaxServerMemoryMB = intp(127) },
		"max server memory above its maximum":            func(c *HostConfig) { c.Instances[0].MaxServerMemoryMB = intp(1 << 31) },
		"an edition SQL Server does not report":          func(c *HostConfig) { c.Instances[0].Edition = "Premium Edition (64-bit)" },
		"Lock Pages in Memory's holder untranslatable": func(c *HostConfig) {
			c.Rights = map[string][]string{contract.RightLockMemory: {`CONTOSO\ghost`}}
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := baseConfig()
			mutate(&cfg)
			if h, err := New(cfg, Options{}); err == nil {
				h.Close()
				t.Fatal("accepted")
			}
		})
	}
}

// recordListenerHooks installs SQL listener hooks on inst that record each call, and
// returns the calls so far as "open,close,...".
func recordListenerHooks(inst *Instance) func() string {
	var mu sync.Mutex
	var calls []string
	record := func(call string) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, call)
	}
	inst.SetSQLListener(func() error { record("open"); return nil }, func() { record("close") })
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(calls, ",")
	}
}

// Issue 37: NT SERVICE\ALL SERVICES (S-1-5-80-0) is in the token of a service whose
// SID type is unrestricted or restricted (FIDELITY.md): the right granted to it
// alone gives the Engine IFI at its next start; with SID type none it does not.
func TestAllServicesInTheServiceToken(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sidType int
		want    string
	}{{1, "enabled."}, {3, "enabled."}, {0, "disabled."}} {
		cfg := baseConfig()
		cfg.Instances[0].ServiceSIDType = &c.sidType
		h := newHost(t, cfg)
		if _, err := h.GrantRight(contract.RightManageVolume, winsid.AllServices); err != nil {
			t.Fatal(err)
		}
		if err := h.RestartService("MSSQLSERVER"); err != nil {
			t.Fatal(err)
		}
		inst, _ := h.Instance("MSSQLSERVER")
		if log := inst.ErrorLog(); !strings.Contains(log, "Instant File Initialization: "+c.want) {
			t.Errorf("SID type %d, the right granted to ALL SERVICES: the Engine's log does not say IFI %s\n%s", c.sidType, c.want, log)
		}
	}
}

// RSoP logging turned off (RSoPLogging = 0): a refresh still applies the policy,
// but RSoP keeps what it logged before (here: no policy defining the right), so
// read_instance reports the right's Group Policy as unknown, naming the value, not
// "no Group Policy defines the right" from stale data (issue 37). Turned on again,
// the next refresh logs the policy.
func TestRSoPLoggingOffReportsGroupPolicyUnknown(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.GroupPolicy.Rights = map[string][]string{contract.RightManageVolume: {winsid.Administrators}}
	cfg.GroupPolicy.RSoPLoggingOff = true
	h := newHost(t, cfg)
	ri := decode[contract.ReadInstanceResult](t, execOp(t, h, "Administrator", contract.OpReadInstance, contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume}))
	gp := ri.GroupPolicy
	if gp.Known || gp.Defined || !strings.Contains(gp.RSoPLoggingOff, `System\RSoPLogging = 0`) || !strings.Contains(gp.Detail, "RSoP logging is turned off") {
		t.Fatalf("group policy with RSoP logging off: %+v; want unknown, naming RSoPLogging = 0", gp)
	}
	if holders, _ := h.RightHolders(contract.RightManageVolume); len(holders) != 1 || holders[0] != winsid.Administrators {
		t.Errorf("the policy was not applied with RSoP logging off: %v", holders)
	}
	h.SetRSoPLogging(false)
	h.RefreshGroupPolicy()
	ri = decode[contract.ReadInstanceResult](t, execOp(t, h, "Administrator", contract.OpReadInstance, contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume}))
	if gp := ri.GroupPolicy; !gp.Known || !gp.Defined || gp.RSoPLoggingOff != "" {
		t.Errorf("group policy once logging is on again and policy refreshed: %+v; want known and defined", gp)
	}
}
