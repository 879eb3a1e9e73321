package remote

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/sqlcheck"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

const (
	simLogin    = "ifi_check"
	simLoginPwd = "Sql-p@ss:word/1"
)

// simHost is one simulated Windows host run by the simulator (internal/winsim): a
// real WS-Management endpoint, and a real TDS endpoint per instance that listens only
// while the model says the Engine accepts connections.
type simHost struct {
	sim      *winsim.Sim
	port     int            // WinRM over HTTP
	sqlPorts map[string]int // by instance name
}

func newSimHost(t testing.TB, cfg host.HostConfig) *simHost {
	t.Helper()
	sim, err := winsim.Start(&winsim.Config{Hosts: []host.HostConfig{cfg}}, winsim.Options{CertDir: t.TempDir(), Logf: t.Logf})
	if err != nil {
		t.Fatalf("winsim.Start: %v", err)
	}
	t.Cleanup(func() {
		if err := sim.Close(); err != nil {
			t.Errorf("closing the simulator: %v", err)
		}
	})
	info := sim.Info().Hosts[0]
	s := &simHost{sim: sim, port: portOf(t, info.WinRM), sqlPorts: map[string]int{}}
	for _, inst := range info.Instances {
		s.sqlPorts[inst.Name] = portOf(t, inst.SQL)
	}
	return s
}

// portOf is the port of a host:port address the simulator reports.
func portOf(t testing.TB, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("the simulator reported the address %q: %v", addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("the simulator reported the address %q: %v", addr, err)
	}
	return port
}

// remote logs on as user with the test password.
func (s *simHost) remote(t testing.TB, user string) Host {
	t.Helper()
	h, err := New(Config{Host: "127.0.0.1", Port: s.port, Auth: "ntlm", Username: user, Password: testPassword, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func simConfig() host.HostConfig {
	no := false
	return host.HostConfig{
		Name: "sql01", Address: "127.0.0.1",
		WinRM: host.WinRMConfig{Users: []host.UserConfig{
			{Name: testUser, Password: testPassword},
			{Name: "operator", Password: testPassword, Administrator: &no},
		}},
		Instances: []host.InstanceConfig{
			{Name: "MSSQLSERVER", Logins: []host.LoginConfig{{Name: simLogin, Password: simLoginPwd}}},
			{Name: "FCI", Clustered: true},
		},
	}
}

func hasSID(ps []contract.Principal, sid string) bool {
	return slices.ContainsFunc(ps, func(p contract.Principal) bool { return p.SID == sid })
}

// The provider's whole apply path against the simulator: read, grant, verify that the
// running Engine does not have IFI yet, restart, wait, verify it has.
func TestAgainstSimulatorGrantRestartVerify(t *testing.T) {
	sim := newSimHost(t, simConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h := sim.remote(t, testUser)
	check := sqlcheck.New(sqlcheck.Config{Username: simLogin, Password: simLoginPwd, Encrypt: "disable"})
	target := sqlcheck.Target{Host: "127.0.0.1", Port: sim.sqlPorts["MSSQLSERVER"], Instance: "MSSQLSERVER"}
	serviceSID := winsid.ServiceSID("MSSQLSERVER")

	before, err := h.ReadInstance(ctx, contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume})
	if err != nil {
		t.Fatal(err)
	}
	if !before.Found || before.ServiceName != "MSSQLSERVER" || before.ServiceState != contract.StateRunning || before.ProcessStartTime == nil ||
		before.TCPPort != target.Port || hasSID(before.RightHolders, serviceSID) || before.Clustered {
		t.Fatalf("read_instance before = %+v", before)
	}
	if !slices.ContainsFunc(before.Dependents, func(s contract.ServiceInfo) bool { return s.State == contract.StateRunning }) {
		t.Fatalf("dependents = %+v, want the running Agent", before.Dependents)
	}
	r, err := check.Check(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	if r.IFIEnabled == nil || *r.IFIEnabled {
		t.Fatalf("IFI before the grant = %v", show(r.IFIEnabled))
	}

	set, err := h.SetRight(ctx, contract.SetRightParams{Right: contract.RightManageVolume, SID: serviceSID, Grant: true})
	if err != nil || !set.Changed || !hasSID(set.Holders, serviceSID) {
		t.Fatalf("set_right = %+v, %v", set, err)
	}
	again, err := h.SetRight(ctx, contract.SetRightParams{Right: contract.RightManageVolume, SID: serviceSID, Grant: true})
	if err != nil || again.Changed {
		t.Fatalf("a second grant = %+v, %v; want unchanged", again, err)
	}
	if r, err = check.Check(ctx, target); err != nil || r.IFIEnabled == nil || *r.IFIEnabled {
		t.Fatalf("IFI after the grant, before a restart = %v, %v; want false", r, err)
	}

	rr, err := h.RestartInstance(ctx, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(rr.Stopped, "MSSQLSERVER") || len(rr.Started) < 2 || rr.Started[0] != "MSSQLSERVER" || rr.ServiceState != contract.StateRunning {
		t.Fatalf("restart_instance = %+v", rr)
	}
	if err := check.WaitReady(ctx, target); err != nil {
		t.Fatal(err)
	}
	if r, err = check.Check(ctx, target); err != nil || r.IFIEnabled == nil || !*r.IFIEnabled {
		t.Fatalf("IFI after the restart = %+v, %v; want true", r, err)
	}
	after, err := h.ReadInstance(ctx, contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume})
	if err != nil {
		t.Fatal(err)
	}
	if !hasSID(after.RightHolders, serviceSID) || after.ErrorLog.Enabled == nil || !*after.ErrorLog.Enabled ||
		after.ProcessStartTime == nil || !after.ProcessStartTime.After(*before.ProcessStartTime) {
		t.Fatalf("read_instance after = %+v (errorlog %+v)", after, after.ErrorLog)
	}
}

func TestAgainstSimulatorRefusals(t *testing.T) {
	sim := newSimHost(t, simConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h := sim.remote(t, testUser)

	missing, err := h.ReadInstance(ctx, contract.ReadInstanceParams{Instance: "NOPE", Right: contract.RightManageVolume})
	if err != nil || missing.Found || !slices.Contains(missing.InstalledInstances, "FCI") {
		t.Fatalf("read_instance of a missing instance = %+v, %v", missing, err)
	}
	// read_instance by a non-administrator: LsaOpenPolicy throws, a terminating
	// PowerShell error (CLIXML on stderr) that must arrive readable.
	_, err = sim.remote(t, "operator").ReadInstance(ctx, contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume})
	if e := asError(t, err); e.Kind != KindScript || e.Code != "" || !strings.Contains(e.Message, "Access is denied") || strings.Contains(e.Message, "_x000D_") {
		t.Fatalf("read_instance as a non-administrator: %v", err)
	}
	for _, tc := range []struct {
		name string
		run  func(Host) error
		code string
		exit int
	}{
		{"hostile instance name", func(h Host) error {
			_, err := h.ReadInstance(ctx, contract.ReadInstanceParams{Instance: "x'; Remove-Item C:\\ -Recurse; '", Right: contract.RightManageVolume})
			return err
		}, "invalid_parameters", contract.ExitInvalidParams},
		{"clustered", func(h Host) error {
			_, err := h.RestartInstance(ctx, contract.RestartInstanceParams{Instance: "FCI", TimeoutSeconds: 30})
			return err
		}, "clustered", contract.ExitRefused},
		{"non-administrator", func(Host) error {
			_, err := sim.remote(t, "operator").SetRight(ctx, contract.SetRightParams{Right: contract.RightManageVolume, SID: "S-1-5-32-545", Grant: true})
			return err
		}, "lsa_error", contract.ExitFailure},
		// Only the managed rights: set_right and restart_instance's changes refuse
		// any other, before anything changes.
		{"set_right of another right", func(h Host) error {
			_, err := h.SetRight(ctx, contract.SetRightParams{Right: "SeDebugPrivilege", SID: "S-1-5-32-545", Grant: true})
			return err
		}, "invalid_parameters", contract.ExitInvalidParams},
		{"restart_instance changing another right", func(h Host) error {
			_, err := h.RestartInstance(ctx, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30,
				Changes: []contract.RightChange{{Right: "SeDebugPrivilege", SID: "S-1-5-32-545", Grant: true}}})
			return err
		}, "invalid_parameters", contract.ExitInvalidParams},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run(h)
			e := asError(t, err)
			if e.Kind != KindScript || e.Code != tc.code || e.ExitCode != tc.exit || e.Message == "" {
				t.Fatalf("error = %v (%+v)", err, e)
			}
		})
	}
}

// The read of Lock Pages in Memory arrives through the client whole: lock_pages
// (its holders and Group Policy, whatever right the read names) and the error log's
// memory manager line; set_right grants it like IFI's right.
func TestAgainstSimulatorLockPagesRead(t *testing.T) {
	cfg := simConfig()
	serviceSID := winsid.ServiceSID("MSSQLSERVER")
	cfg.Rights = map[string][]string{contract.RightLockMemory: {serviceSID}}
	cfg.GroupPolicy.Rights = map[string][]string{contract.RightLockMemory: {serviceSID, "BUILTIN\\Administrators"}}
	sim := newSimHost(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h := sim.remote(t, testUser)
	r, err := h.ReadInstance(ctx, contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume})
	if err != nil {
		t.Fatal(err)
	}
	lp := r.LockPages
	if lp == nil || lp.Right != contract.RightLockMemory || !hasSID(lp.Holders, serviceSID) ||
		!lp.GroupPolicy.Known || !lp.GroupPolicy.Defined || !hasSID(lp.GroupPolicy.Holders, winsid.Administrators) || r.GroupPolicy.Defined {
		t.Fatalf("lock_pages = %+v (group_policy of IFI's right %+v)", lp, r.GroupPolicy)
	}
	if r.ErrorLog.MemoryModel != contract.MemoryModelLockPages || !strings.HasSuffix(r.ErrorLog.MemoryLine, "Using locked pages in the memory manager.") {
		t.Fatalf("errorlog = %+v", r.ErrorLog)
	}
	// The policy made the local list its own at start (the service SID and
	// Administrators); a local grant adds to it until the next refresh.
	const users = "S-1-5-32-545"
	set, err := h.SetRight(ctx, contract.SetRightParams{Right: contract.RightLockMemory, SID: users, Grant: true, ReadBack: "MSSQLSERVER"})
	if err != nil || !set.Changed || !hasSID(set.Holders, users) || set.Instance == nil || set.Instance.LockPages == nil ||
		len(set.Instance.LockPages.Holders) != 3 {
		t.Fatalf("set_right %s = %+v, %v", contract.RightLockMemory, set, err)
	}
}

func show(b *bool) string {
	if b == nil {
		return "nil"
	}
	return strconv.FormatBool(*b)
}

// Terraform refreshes and applies resources in parallel, so one Host runs several
// operations at once. Over NTLM each needs its own authenticated connection: the
// operations must all succeed, and each must get its own answer.
func TestAgainstSimulatorConcurrentOperationsOverNTLM(t *testing.T) {
	cfg := simConfig()
	cfg.Instances = append(cfg.Instances, host.InstanceConfig{Name: "REPORTING"})
	s := newSimHost(t, cfg)
	h := s.remote(t, testUser)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	got := make([]string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			name := "MSSQLSERVER"
			if i%2 == 1 {
				name = "REPORTING"
			}
			r, err := h.ReadInstance(ctx, contract.ReadInstanceParams{Instance: name, Right: contract.RightManageVolume})
			errs[i] = err
			if err == nil {
				got[i] = r.Instance
			}
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		want := "MSSQLSERVER"
		if i%2 == 1 {
			want = "REPORTING"
		}
		if err != nil {
			t.Errorf("operation %d: %v", i, err)
		} else if got[i] != want {
			t.Errorf("operation %d read %q; want %q (answers crossed)", i, got[i], want)
		}
	}
}

// A host whose PowerShell runs in ConstrainedLanguage mode (AppLocker or App Control
// script enforcement): every operation fails through masterzen/winrm with the
// script error constrained_language, exit 3, a message naming the mode and a hint,
// and nothing changes on the host.
func TestAgainstSimulatorConstrainedLanguage(t *testing.T) {
	cfg := simConfig()
	cfg.PowerShellLanguageMode = host.LanguageConstrained
	sim := newSimHost(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h := sim.remote(t, testUser)
	serviceSID := winsid.ServiceSID("MSSQLSERVER")
	for op, call := range map[contract.Operation]func() error{
		contract.OpReadInstance: func() error {
			_, err := h.ReadInstance(ctx, contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume})
			return err
		},
		contract.OpSetRight: func() error {
			_, err := h.SetRight(ctx, contract.SetRightParams{Right: contract.RightManageVolume, SID: serviceSID, Grant: true})
			return err
		},
		contract.OpRestartInstance: func() error {
			_, err := h.RestartInstance(ctx, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30})
			return err
		},
	} {
		err := call()
		var re *Error
		if !errors.As(err, &re) {
			t.Fatalf("%s: error %v (%T), want *remote.Error", op, err, err)
		}
		if re.Kind != KindScript || re.Code != contract.CodeConstrainedLanguage || re.ExitCode != contract.ExitRefused || re.Op != op {
			t.Errorf("%s: kind %v, code %q, exit %d, op %s; want the script error %s, exit %d", op, re.Kind, re.Code, re.ExitCode, re.Op,
				contract.CodeConstrainedLanguage, contract.ExitRefused)
		}
		for _, want := range []string{"127.0.0.1", "ConstrainedLanguage mode", "AppLocker", "App Control", "LanguageMode"} {
			if !strings.Contains(re.Error(), want) {
				t.Errorf("%s: error %q does not say %q", op, re.Error(), want)
			}
		}
	}
	hs, err := sim.sim.Host("sql01")
	if err != nil {
		t.Fatal(err)
	}
	if hasSID(hs.Snapshot().Rights[contract.RightManageVolume], serviceSID) {
		t.Error("set_right granted the right in ConstrainedLanguage mode")
	}
	for _, a := range hs.Audit() {
		if a.Operation != "" || a.ExitCode != contract.ExitRefused {
			t.Errorf("audit entry %+v: want no operation run (stdin unread) and exit %d", a, contract.ExitRefused)
		}
	}
}
