package winsim_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/masterzen/winrm"
	"github.com/masterzen/winrm/soap"
	_ "github.com/microsoft/go-mssqldb"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
)

// Credentials from examples/fleet.json.
const (
	adminUser     = "Administrator"
	adminPassword = "Winsim-Adm1n!"
	domainUser    = `CONTOSO\winrm-admin`
	domainPass    = "Winsim-D0main!"
	sqlUser       = "sa"
	sqlPassword   = "Winsim-Sql1!"
)

var mssqlserverSID = winsid.ServiceSID("MSSQLSERVER")

// startFleet starts the example fleet in-process, every port picked by the kernel.
func startFleet(t *testing.T) *winsim.Sim {
	t.Helper()
	return startFleetWith(t, nil)
}

// startFleetWith is startFleet with the configuration changed by edit first.
func startFleetWith(t *testing.T, edit func(*winsim.Config)) *winsim.Sim {
	t.Helper()
	cfg, err := winsim.LoadConfig(examplePath)
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	if edit != nil {
		edit(cfg)
	}
	for i := range cfg.Hosts {
		cfg.Hosts[i].WinRM.HTTPPort, cfg.Hosts[i].WinRM.HTTPSPort = 0, 0
		for j := range cfg.Hosts[i].Instances {
			cfg.Hosts[i].Instances[j].SQLPort = 0
		}
	}
	return startSim(t, cfg)
}

// startSim starts a simulator in-process, closed when the test ends.
func startSim(t *testing.T, cfg *winsim.Config) *winsim.Sim {
	t.Helper()
	sim, err := winsim.Start(cfg, winsim.Options{CertDir: t.TempDir(), Logf: t.Logf})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := sim.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return sim
}

func hostInfo(t *testing.T, sim *winsim.Sim, name string) winsim.HostInfo {
	t.Helper()
	for _, h := range sim.Info().Hosts {
		if h.Name == name {
			return h
		}
	}
	t.Fatalf("Info() has no host %s: %+v", name, sim.Info())
	return winsim.HostInfo{}
}

func sqlAddr(t *testing.T, sim *winsim.Sim, hostName, instance string) string {
	t.Helper()
	for _, in := range hostInfo(t, sim, hostName).Instances {
		if in.Name == instance {
			return in.SQL
		}
	}
	t.Fatalf("Info() has no instance %s on %s", instance, hostName)
	return ""
}

// winrmClient returns a masterzen/winrm client on the host's HTTPS listener,
// verifying its certificate against the simulator's CA.
func winrmClient(t *testing.T, sim *winsim.Sim, hostName, user, password string, ntlm bool) *winrm.Client {
	t.Helper()
	h, p, err := net.SplitHostPort(hostInfo(t, sim, hostName).WinRMHTTPS)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(p)
	ep := winrm.NewEndpoint(h, port, true, false, sim.CACertPEM(), nil, nil, 30*time.Second)
	params := *winrm.DefaultParameters
	if ntlm {
		params.TransportDecorator = func() winrm.Transporter { return &stockNTLM{} }
	}
	c, err := winrm.NewClientWithParameters(ep, user, password, &params)
	if err != nil {
		t.Fatalf("winrm client: %v", err)
	}
	return c
}

// stockNTLM is masterzen/winrm's ClientNTLM, whose go-ntlmssp Negotiator runs each
// request's handshake over a pooled http.Transport. When two requests of one command
// run at once (stdin's Send and the output's Receive), a handshake's AUTHENTICATE can
// leave on another pooled connection than its NEGOTIATE, one already logged on, and
// the host refuses it with 401 (Windows as the simulator: an AUTHENTICATE answers the
// challenge of its own connection). A request refused with 401 was not processed, so
// it is sent once more; a wrong password is refused again.
type stockNTLM struct{ winrm.ClientNTLM }

func (n *stockNTLM) Post(c *winrm.Client, m *soap.SoapMessage) (string, error) {
	out, err := n.ClientNTLM.Post(c, m)
	if err != nil && strings.Contains(err.Error(), "http response error: 401") {
		return n.ClientNTLM.Post(c, m)
	}
	return out, err
}

// runOp runs one contract operation over WinRM as the provider will: the bootstrap
// on the command line, parameters and script on stdin. It decodes stdout into out.
func runOp(t *testing.T, c *winrm.Client, op contract.Operation, params, out any) {
	t.Helper()
	input, err := contract.EncodeInput(op, params)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code, err := c.RunWithContextWithInput(ctx, contract.CommandLine(), &stdout, &stderr, bytes.NewReader(input))
	if err != nil {
		t.Fatalf("%s over WinRM: %v (stderr %s)", op, err, stderr.String())
	}
	if code != 0 {
		t.Fatalf("%s exited %d; stdout %s; stderr %s", op, code, stdout.String(), stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("%s printed %q, not its result JSON: %v", op, stdout.String(), err)
	}
}

// readInstance runs read_instance for the default instance.
func readInstance(t *testing.T, c *winrm.Client) contract.ReadInstanceResult {
	t.Helper()
	var r contract.ReadInstanceResult
	runOp(t, c, contract.OpReadInstance, contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume}, &r)
	return r
}

func holderSIDs(ps []contract.Principal) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.SID)
	}
	return out
}

func TestWinRMReadInstanceBasicAndNTLMOverVerifiedHTTPS(t *testing.T) {
	sim := startFleet(t)
	sqlPort := func() int {
		_, p, _ := net.SplitHostPort(sqlAddr(t, sim, "sql01", "MSSQLSERVER"))
		n, _ := strconv.Atoi(p)
		return n
	}()
	for _, tc := range []struct {
		name, user, password string
		ntlm                 bool
	}{
		{"basic local admin", adminUser, adminPassword, false},
		// NTLM for a domain user: the challenge carries the host's domain as its
		// TargetName, which Azure/go-ntlmssp uses in the NTLMv2 hash.
		{"basic domain admin", domainUser, domainPass, false},
		{"ntlm domain admin", domainUser, domainPass, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := winrmClient(t, sim, "sql01", tc.user, tc.password, tc.ntlm)
			r := readInstance(t, c)
			if !r.Found || r.ComputerName != "SQL01" || r.ServiceName != "MSSQLSERVER" {
				t.Fatalf("read_instance = found %v, computer %q, service %q; want SQL01 MSSQLSERVER", r.Found, r.ComputerName, r.ServiceName)
			}
			if r.Version != "16.0.4135.4" || r.ServiceState != contract.StateRunning || r.ProcessStartTime == nil {
				t.Errorf("version %q state %q start %v; want 16.0.4135.4, Running, a start time", r.Version, r.ServiceState, r.ProcessStartTime)
			}
			if !strings.EqualFold(r.StartAccount, `NT Service\MSSQLSERVER`) || r.StartAccountSID != mssqlserverSID {
				t.Errorf("start account %q (%s); want NT Service\\MSSQLSERVER (%s)", r.StartAccount, r.StartAccountSID, mssqlserverSID)
			}
			if r.TCPPort != sqlPort {
				t.Errorf("tcp_port %d; want the SQL listener's port %d", r.TCPPort, sqlPort)
			}
			if !slices.Contains(holderSIDs(r.RightHolders), winsid.Administrators) || slices.Contains(holderSIDs(r.RightHolders), mssqlserverSID) {
				t.Errorf("holders %v; want BUILTIN\\Administrators only, as the example says", r.RightHolders)
			}
			if !slices.Contains(r.InstalledInstances, "REPORTING") {
				t.Errorf("installed instances %v; want REPORTING too", r.InstalledInstances)
			}
		})
	}

	// On a domain-joined host a local account logs on over NTLM when its name
	// carries the computer's name as the domain ("SQL01\\Administrator"), as Windows
	// checks such a logon against the local SAM. Azure/go-ntlmssp (v0.1.1 on) sends the
	// domain the name carries; older versions answered for the challenge's domain.
	t.Run("local account over NTLM on a domain host, named with its computer", func(t *testing.T) {
		c := winrmClient(t, sim, "sql01", `SQL01\`+adminUser, adminPassword, true)
		input, _ := contract.EncodeInput(contract.OpReadInstance, contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := c.RunWithContextWithInput(ctx, contract.CommandLine(), io.Discard, io.Discard, bytes.NewReader(input)); err != nil {
			t.Errorf("NTLM as SQL01\\%s on a CONTOSO host: %v; want the local account's logon", adminUser, err)
		}
	})

	t.Run("wrong password is refused", func(t *testing.T) {
		for _, ntlm := range []bool{false, true} {
			c := winrmClient(t, sim, "sql01", adminUser, "wrong", ntlm)
			input, _ := contract.EncodeInput(contract.OpReadInstance, contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_, err := c.RunWithContextWithInput(ctx, contract.CommandLine(), io.Discard, io.Discard, bytes.NewReader(input))
			cancel()
			if err == nil || !strings.Contains(err.Error(), "401") {
				t.Errorf("ntlm=%v with a wrong password: err %v; want an HTTP 401", ntlm, err)
			}
		}
	})

	t.Run("HTTPS certificate names the host", func(t *testing.T) {
		// The CA from Info's file verifies sql02's listener under its name and
		// computer name as well as its address.
		pem, err := os.ReadFile(sim.Info().CACert)
		if err != nil || !bytes.Equal(pem, sim.CACertPEM()) {
			t.Fatalf("ca_cert file %s: %v; want the CA PEM", sim.Info().CACert, err)
		}
		h := hostInfo(t, sim, "sql02")
		_, p, _ := net.SplitHostPort(h.WinRMHTTPS)
		port, _ := strconv.Atoi(p)
		for _, name := range []string{"sql02", "SQL02"} {
			ep := winrm.NewEndpoint(h.Address, port, true, false, pem, nil, nil, 30*time.Second)
			ep.TLSServerName = name
			c, err := winrm.NewClientWithParameters(ep, adminUser, adminPassword, winrm.DefaultParameters)
			if err != nil {
				t.Fatal(err)
			}
			var r contract.ReadInstanceResult
			runOp(t, c, contract.OpReadInstance, contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume}, &r)
			if r.ComputerName != "SQL02" || r.StartAccount != `CONTOSO\sqlsvc` {
				t.Errorf("sql02 read_instance: computer %q account %q", r.ComputerName, r.StartAccount)
			}
		}
	})
}

// openDB opens a go-mssqldb pool on one instance that keeps no idle connection, so
// every query after a restart logs in afresh.
func openDB(t *testing.T, addr string) *sql.DB {
	t.Helper()
	u := url.URL{Scheme: "sqlserver", User: url.UserPassword(sqlUser, sqlPassword), Host: addr, RawQuery: "encrypt=disable&dial+timeout=5"}
	db, err := sql.Open("sqlserver", u.String())
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxIdleConns(0)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// engineIFI reads the Engine row's instant_file_initialization_enabled.
func engineIFI(ctx context.Context, db *sql.DB) (string, error) {
	rows, err := db.QueryContext(ctx, contract.QueryServerServices)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	for rows.Next() {
		var name, account string
		var pid sql.NullInt64
		var started sql.NullTime
		var clustered, ifi sql.NullString
		if err := rows.Scan(&name, &pid, &started, &account, &clustered, &ifi); err != nil {
			return "", err
		}
		if strings.HasPrefix(name, "SQL Server (") {
			return ifi.String, nil
		}
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	return "", errors.New("sys.dm_server_services has no Engine row")
}

// waitIFI polls the DMV until the Engine answers (it may be starting), then returns
// its IFI column.
func waitIFI(t *testing.T, db *sql.DB) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		v, err := engineIFI(ctx, db)
		cancel()
		if err == nil {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("sys.dm_server_services did not answer within 30s: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // poll interval
	}
}

func TestRestartRuleEndToEnd(t *testing.T) {
	sim := startFleet(t)
	c := winrmClient(t, sim, "sql01", domainUser, domainPass, true)
	db := openDB(t, sqlAddr(t, sim, "sql01", "MSSQLSERVER"))

	if got := waitIFI(t, db); got != "N" {
		t.Fatalf("before any grant the DMV says %q; want N (NT Service\\MSSQLSERVER holds no right)", got)
	}

	var set contract.SetRightResult
	runOp(t, c, contract.OpSetRight, contract.SetRightParams{Right: contract.RightManageVolume, SID: mssqlserverSID, Grant: true}, &set)
	if !set.Changed || !slices.Contains(holderSIDs(set.Holders), mssqlserverSID) {
		t.Fatalf("set_right grant = %+v; want changed and the service SID among the holders", set)
	}
	runOp(t, c, contract.OpSetRight, contract.SetRightParams{Right: contract.RightManageVolume, SID: mssqlserverSID, Grant: true}, &set)
	if set.Changed {
		t.Errorf("a second grant reported changed; LsaAddAccountRights of a held right is a no-op")
	}
	if got := waitIFI(t, db); got != "N" {
		t.Fatalf("after a grant while running the DMV says %q; want N until the service restarts", got)
	}
	before := readInstance(t, c)

	var rr contract.RestartInstanceResult
	runOp(t, c, contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 60}, &rr)
	if rr.ServiceState != contract.StateRunning || !slices.Contains(rr.Stopped, "MSSQLSERVER") || !slices.Contains(rr.Started, "MSSQLSERVER") {
		t.Fatalf("restart_instance = %+v; want MSSQLSERVER stopped and started, Running", rr)
	}
	for _, dep := range []string{"SQLSERVERAGENT", "MSSQLLaunchpad"} {
		if !slices.Contains(rr.Started, dep) {
			t.Errorf("restart_instance started %v; want the running dependent %s started again", rr.Started, dep)
		}
	}
	if got := waitIFI(t, db); got != "Y" {
		t.Fatalf("after the restart the DMV says %q; want Y", got)
	}
	after := readInstance(t, c)
	if after.ProcessStartTime == nil || before.ProcessStartTime == nil || !after.ProcessStartTime.After(*before.ProcessStartTime) {
		t.Errorf("process start time %v → %v; want a later start after the restart", before.ProcessStartTime, after.ProcessStartTime)
	}
	if after.ErrorLog.Enabled == nil || !*after.ErrorLog.Enabled {
		t.Errorf("error log IFI line %+v; want enabled after the restart", after.ErrorLog)
	}

	// The audit log saw every operation, in order, with the user and exit code.
	h, err := sim.Host("sql01")
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, e := range h.Audit() {
		ops = append(ops, e.Operation)
		if e.ExitCode != 0 || !strings.EqualFold(e.User, domainUser) {
			t.Errorf("audit entry %+v; want exit 0 by %s", e, domainUser)
		}
	}
	want := []string{"set_right", "set_right", "read_instance", "restart_instance", "read_instance"}
	if !slices.Equal(ops, want) {
		t.Errorf("audit operations %v; want %v", ops, want)
	}
}

// Lock Pages in Memory through the real clients: set_right grants
// SeLockMemoryPrivilege to the service SID (no effect until a start), then one
// restart_instance with two changes (IFI's right and Lock Pages in Memory's, already
// held) restarts once, and go-mssqldb reads LOCK_PAGES from sys.dm_os_sys_info
// with IFI on; read_instance reports the holders and the error log's memory line.
func TestLockPagesEndToEnd(t *testing.T) {
	sim := startFleet(t)
	c := winrmClient(t, sim, "sql01", domainUser, domainPass, true)
	db := openDB(t, sqlAddr(t, sim, "sql01", "MSSQLSERVER"))
	h, err := sim.Host("sql01")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	memory := func() (model string, maxMB int64) {
		t.Helper()
		if err := h.WaitEngineReady(ctx, "MSSQLSERVER"); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRowContext(ctx, contract.QueryMemory).Scan(&model, &maxMB); err != nil {
			t.Fatalf("QueryMemory: %v", err)
		}
		return model, maxMB
	}
	if m, mb := memory(); m != contract.MemoryModelConventional || mb != contract.DefaultMaxServerMemoryMB {
		t.Fatalf("before any grant: %s, %d MB", m, mb)
	}

	var set contract.SetRightResult
	runOp(t, c, contract.OpSetRight, contract.SetRightParams{Right: contract.RightLockMemory, SID: mssqlserverSID, Grant: true}, &set)
	if !set.Changed || !slices.Equal(holderSIDs(set.Holders), []string{mssqlserverSID}) {
		t.Fatalf("set_right %s = %+v; want changed, the service SID the only holder", contract.RightLockMemory, set)
	}
	if m, _ := memory(); m != contract.MemoryModelConventional {
		t.Fatalf("after a grant while running: %s; want CONVENTIONAL until the Engine restarts", m)
	}

	var rr contract.RestartInstanceResult
	runOp(t, c, contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 60, ReadBack: true,
		Changes: []contract.RightChange{{SID: mssqlserverSID, Grant: true}, {Right: contract.RightLockMemory, SID: mssqlserverSID, Grant: true}}}, &rr)
	if !rr.Finished || rr.Error != "" || !rr.Changed {
		t.Fatalf("restart_instance = %+v", rr)
	}
	if m, _ := memory(); m != contract.MemoryModelLockPages {
		t.Errorf("after the restart sys.dm_os_sys_info says %s; want LOCK_PAGES", m)
	}
	if got := waitIFI(t, db); got != "Y" {
		t.Errorf("after the restart the IFI DMV says %q; want Y", got)
	}
	after := readInstance(t, c)
	if after.LockPages == nil || !slices.Equal(holderSIDs(after.LockPages.Holders), []string{mssqlserverSID}) ||
		after.ErrorLog.MemoryModel != contract.MemoryModelLockPages || !strings.HasSuffix(after.ErrorLog.MemoryLine, "Using locked pages in the memory manager.") {
		t.Errorf("read_instance: lock_pages %+v, errorlog %+v", after.LockPages, after.ErrorLog)
	}
	restarts := 0
	for _, e := range h.EventLog() {
		if e.Change == "restart" {
			restarts++
		}
	}
	if restarts != 1 {
		t.Errorf("%d restarts in the event log; want one for both changes", restarts)
	}
}

// set_max_server_memory is sp_configure with RECONFIGURE: max server memory is
// dynamic, so go-mssqldb reads the new value at once, without a restart; out of
// sp_configure's range is a bad action (400) that changes nothing.
func TestControlSetMaxServerMemory(t *testing.T) {
	sim := startFleet(t)
	ctl := control{t, sim.ControlAddr()}
	db := openDB(t, sqlAddr(t, sim, "sql01", "MSSQLSERVER"))
	h, err := sim.Host("sql01")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	read := func() int64 {
		t.Helper()
		if err := h.WaitEngineReady(ctx, "MSSQLSERVER"); err != nil {
			t.Fatal(err)
		}
		var mb int64
		if err := db.QueryRowContext(ctx, contract.QueryMaxServerMemory).Scan(&mb); err != nil {
			t.Fatalf("QueryMaxServerMemory: %v", err)
		}
		return mb
	}
	pid := h.Snapshot().Instances[0].Process.PID
	ctl.action("sql01", map[string]any{"action": "set_max_server_memory", "instance": "MSSQLSERVER", "value": 8192})
	if got := read(); got != 8192 {
		t.Fatalf("after set_max_server_memory 8192: %d", got)
	}
	var out map[string]any
	if code := ctl.do("POST", "/v1/hosts/sql01/actions", map[string]any{"action": "set_max_server_memory", "instance": "MSSQLSERVER", "value": 64}, &out); code != http.StatusBadRequest {
		t.Errorf("max server memory 64: %d %v; want 400", code, out)
	}
	ctl.action("sql01", map[string]any{"action": "set_max_server_memory", "instance": "MSSQLSERVER"})
	if got := read(); got != contract.DefaultMaxServerMemoryMB {
		t.Errorf("after set_max_server_memory without a value: %d; want the default", got)
	}
	if h.Snapshot().Instances[0].Process.PID != pid {
		t.Error("setting max server memory restarted the Engine")
	}
}

// control is a tiny client of the HTTP control plane.
type control struct {
	t    *testing.T
	base string
}

func (c control) do(method, path string, body any, out any) int {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		c.t.Errorf("%s %s answered Content-Type %q; want JSON", method, path, ct)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			c.t.Fatalf("%s %s answered %d %q: %v", method, path, resp.StatusCode, raw, err)
		}
	}
	return resp.StatusCode
}

func (c control) action(hostName string, a map[string]any) map[string]any {
	c.t.Helper()
	var out map[string]any
	if code := c.do("POST", "/v1/hosts/"+hostName+"/actions", a, &out); code != http.StatusOK {
		c.t.Fatalf("action %v on %s: %d %v", a, hostName, code, out)
	}
	return out
}

func TestGroupPolicyRefreshRevertsALocalGrant(t *testing.T) {
	sim := startFleet(t)
	ctl := control{t, sim.Info().Control}
	c := winrmClient(t, sim, "sql01", adminUser, adminPassword, false)
	db := openDB(t, sqlAddr(t, sim, "sql01", "MSSQLSERVER"))

	// A GPO now defines the right as Administrators only; it applies at the next refresh.
	ctl.action("sql01", map[string]any{"action": "set_group_policy_right", "right": contract.RightManageVolume, "sids": []string{winsid.Administrators}})
	var set contract.SetRightResult
	runOp(t, c, contract.OpSetRight, contract.SetRightParams{Right: contract.RightManageVolume, SID: mssqlserverSID, Grant: true}, &set)
	if r := readInstance(t, c); !slices.Contains(holderSIDs(r.RightHolders), mssqlserverSID) {
		t.Fatalf("holders before the refresh %v; want the local grant", r.RightHolders)
	}

	ctl.action("sql01", map[string]any{"action": "refresh_group_policy"})
	r := readInstance(t, c)
	if got := holderSIDs(r.RightHolders); !slices.Equal(got, []string{winsid.Administrators}) {
		t.Errorf("holders after the refresh %v; want exactly the policy's [%s]", got, winsid.Administrators)
	}
	if !r.GroupPolicy.Known || !r.GroupPolicy.Defined || !slices.Equal(holderSIDs(r.GroupPolicy.Holders), []string{winsid.Administrators}) {
		t.Errorf("group_policy %+v; want known, defined, holders [Administrators]", r.GroupPolicy)
	}
	// The grant is gone before the restart: the new process has no IFI.
	ctl.action("sql01", map[string]any{"action": "restart_service", "service": "MSSQLSERVER"})
	if got := waitIFI(t, db); got != "N" {
		t.Errorf("after refresh and restart the DMV says %q; want N", got)
	}
}

// dialState reports whether a TCP connection to addr is accepted.
func dialState(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err == nil {
		_ = c.Close()
	}
	return err
}

func TestStoppedEngineRefusesSQLConnections(t *testing.T) {
	sim := startFleet(t)
	ctl := control{t, sim.Info().Control}
	addr := sqlAddr(t, sim, "sql01", "MSSQLSERVER")
	db := openDB(t, addr)
	waitIFI(t, db)

	out := ctl.action("sql01", map[string]any{"action": "stop_service", "service": "MSSQLSERVER", "force": true})
	if out["state"] != contract.StateStopped {
		t.Errorf("stop_service answered %v; want state Stopped", out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := dialState(addr)
		if errors.Is(err, syscall.ECONNREFUSED) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the SQL port %s still answers (%v) 10s after the Engine stopped; want connection refused", addr, err)
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
	if snap := hostSnapshot(t, ctl, "sql01"); !strings.Contains(snap, "Stopped") {
		t.Errorf("snapshot after the stop does not mention a Stopped service:\n%s", snap)
	}

	out = ctl.action("sql01", map[string]any{"action": "start_service", "service": "MSSQLSERVER"})
	if out["state"] != contract.StateRunning {
		t.Errorf("start_service answered %v; want state Running", out)
	}
	waitIFI(t, db) // answers again, on the same port
	if _, p, _ := net.SplitHostPort(addr); sqlAddr(t, sim, "sql01", "MSSQLSERVER") != addr {
		t.Errorf("the instance moved from port %s after a restart", p)
	}
}

func hostSnapshot(t *testing.T, ctl control, name string) string {
	t.Helper()
	var raw json.RawMessage
	if code := ctl.do("GET", "/v1/hosts/"+name, nil, &raw); code != http.StatusOK {
		t.Fatalf("GET /v1/hosts/%s: %d %s", name, code, raw)
	}
	return string(raw)
}

func TestControlAPIOverHTTP(t *testing.T) {
	sim := startFleet(t)
	ctl := control{t, sim.Info().Control}

	var hosts []winsim.HostInfo
	if code := ctl.do("GET", "/v1/hosts", nil, &hosts); code != http.StatusOK || len(hosts) != 2 || hosts[0].Name != "sql01" || hosts[1].Address != "127.0.0.3" {
		t.Fatalf("GET /v1/hosts = %d %+v; want sql01 and sql02", code, hosts)
	}

	var e map[string]string
	for _, tc := range []struct {
		method, path string
		body         any
		status       int
		want         string
	}{
		{"GET", "/v1/hosts/nope", nil, 404, `unknown host "nope"`},
		{"GET", "/v1/hosts/nope/audit", nil, 404, `unknown host "nope"`},
		{"POST", "/v1/hosts/nope/actions", map[string]any{"action": "refresh_group_policy"}, 404, `unknown host`},
		{"POST", "/v1/hosts/sql01/actions", map[string]any{"action": "format_disk"}, 400, `unknown action "format_disk"`},
		{"POST", "/v1/hosts/sql01/actions", map[string]any{"action": "grant_right", "right": contract.RightManageVolume}, 400, `needs the field "sid"`},
		{"POST", "/v1/hosts/sql01/actions", map[string]any{"action": "grant_right", "right": contract.RightManageVolume, "sid": "not-a-sid"}, 400, `not a SID`},
		{"POST", "/v1/hosts/sql01/actions", map[string]any{"action": "grant_right", "right": "SeMadeUpPrivilege", "sid": winsid.Administrators}, 400, `privilege does not exist`},
		{"POST", "/v1/hosts/sql01/actions", map[string]any{"action": "stop_service", "service": "NoSuchService"}, 404, `does not exist`},
		{"POST", "/v1/hosts/sql01/actions", "not an object", 400, `not an action object`},
		{"GET", "/v2/anything", nil, 404, `no control endpoint`},
	} {
		e = nil
		if code := ctl.do(tc.method, tc.path, tc.body, &e); code != tc.status || !strings.Contains(e["error"], tc.want) {
			t.Errorf("%s %s %v = %d %q; want %d with %q", tc.method, tc.path, tc.body, code, e["error"], tc.status, tc.want)
		}
	}

	grant := map[string]any{"action": "grant_right", "right": contract.RightManageVolume, "sid": mssqlserverSID}
	if out := ctl.action("sql01", grant); out["changed"] != true {
		t.Errorf("first grant answered %v; want changed true", out)
	}
	if out := ctl.action("sql01", grant); out["changed"] != false {
		t.Errorf("second grant answered %v; want changed false", out)
	}
	if snap := hostSnapshot(t, ctl, "sql01"); !strings.Contains(snap, mssqlserverSID) {
		t.Errorf("the snapshot does not list the granted SID %s", mssqlserverSID)
	}
	// The Go API is the same: revoke through Sim.Do and the snapshot forgets it.
	if err := sim.Do("sql01", winsim.Action{Action: "revoke_right", Right: contract.RightManageVolume, SID: mssqlserverSID}); err != nil {
		t.Fatalf("Do(revoke_right): %v", err)
	}
	h, err := sim.Host("SQL01")
	if err != nil {
		t.Fatalf("Host(SQL01): %v", err)
	}
	if holders, _ := h.RightHolders(contract.RightManageVolume); slices.Contains(holders, mssqlserverSID) {
		t.Errorf("holders after Do(revoke_right) %v; want the SID gone", holders)
	}
	if _, err := sim.Host("nope"); !errors.Is(err, winsim.ErrUnknownHost) {
		t.Errorf("Host(nope) = %v; want ErrUnknownHost", err)
	}

	// The audit log over HTTP: one read_instance with its user, params and exit code.
	c := winrmClient(t, sim, "sql02", domainUser, domainPass, false)
	readInstance(t, c)
	var audit []struct {
		User      string         `json:"user"`
		Operation string         `json:"operation"`
		Params    map[string]any `json:"params"`
		ExitCode  int            `json:"exit_code"`
	}
	if code := ctl.do("GET", "/v1/hosts/sql02/audit", nil, &audit); code != http.StatusOK || len(audit) != 1 {
		t.Fatalf("GET audit = %d, %d entries; want one", code, len(audit))
	}
	a := audit[0]
	if a.Operation != "read_instance" || a.ExitCode != 0 || !strings.Contains(strings.ToLower(a.User), "winrm-admin") || a.Params["instance"] != "MSSQLSERVER" {
		t.Errorf("audit entry %+v (params %v); want read_instance by winrm-admin, exit 0, instance MSSQLSERVER", a, a.Params)
	}
}

func TestCloseIsIdempotentAndReleasesPorts(t *testing.T) {
	sim := startFleet(t)
	info := sim.Info()
	if err := sim.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := sim.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	addrs := []string{info.Control}
	for _, h := range info.Hosts {
		addrs = append(addrs, h.WinRM, h.WinRMHTTPS)
		for _, in := range h.Instances {
			addrs = append(addrs, in.SQL)
		}
	}
	for _, a := range addrs {
		if err := dialState(a); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("after Close, %s: %v; want connection refused", a, err)
		}
	}
	if _, err := os.Stat(info.CACert); err != nil {
		// CertDir was the test's own directory: the CA file stays for the test to read.
		t.Errorf("CA file %s after Close: %v", info.CACert, err)
	}
}

func TestInfoJSONShape(t *testing.T) {
	sim := startFleet(t)
	line, err := json.Marshal(sim.Info())
	if err != nil {
		t.Fatal(err)
	}
	// Each level decoded as raw members: only the key sets matter here.
	type object = map[string]json.RawMessage
	var generic object
	if err := json.Unmarshal(line, &generic); err != nil {
		t.Fatal(err)
	}
	keys := func(m object) string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return strings.Join(ks, ",")
	}
	first := func(raw json.RawMessage, what string) object {
		t.Helper()
		var list []object
		if err := json.Unmarshal(raw, &list); err != nil || len(list) == 0 {
			t.Fatalf("%s: %s is not a non-empty list of objects (%v)", what, raw, err)
		}
		return list[0]
	}
	if got := keys(generic); got != "ca_cert,control,hosts" {
		t.Errorf("Info keys %s; want ca_cert,control,hosts", got)
	}
	h0 := first(generic["hosts"], "hosts")
	if got := keys(h0); got != "address,instances,name,winrm,winrm_https" {
		t.Errorf("host keys %s", got)
	}
	in0 := first(h0["instances"], "instances")
	if got := keys(in0); got != "name,sql" {
		t.Errorf("instance keys %s", got)
	}
	if !strings.HasPrefix(string(line), `{"control":"127.0.0.1:`) {
		t.Errorf("line %s; want it to start with the control address", line)
	}
	for _, h := range sim.Info().Hosts {
		for _, a := range append([]string{h.WinRM, h.WinRMHTTPS}, func() []string {
			var s []string
			for _, in := range h.Instances {
				s = append(s, in.SQL)
			}
			return s
		}()...) {
			host, port, err := net.SplitHostPort(a)
			if err != nil || host != h.Address || port == "0" {
				t.Errorf("listener %q of %s; want %s:<port>", a, h.Name, h.Address)
			}
		}
	}
}
