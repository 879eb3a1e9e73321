package winsim_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
)

// restart_winrm plays Restart-Service WinRM under a restart_instance in progress:
// the masterzen command loses its shell and connection mid-command, the listener
// refuses connections for a while, and the restart's guard, which lives outside
// WinRM, still brings the Engine and its dependents back; a new connection reads
// the outcome with restart_status.
func TestRestartWinRMLosesTheShellAndTheGuardFinishesTheRestart(t *testing.T) {
	sim := startFleetWith(t, func(cfg *winsim.Config) {
		for i := range cfg.Hosts[0].Instances {
			if cfg.Hosts[0].Instances[i].Name == "MSSQLSERVER" {
				cfg.Hosts[0].Instances[i].StopMS = 1500 // the restart is still stopping when WinRM restarts
			}
		}
	})
	ctl := control{t, sim.Info().Control}
	c := winrmClient(t, sim, "sql01", adminUser, adminPassword, true)
	h, err := sim.Host("sql01")
	if err != nil {
		t.Fatal(err)
	}
	before := readInstance(t, c)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	shell, err := c.CreateShell()
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := shell.ExecuteWithContext(ctx, contract.CommandLine())
	if err != nil {
		t.Fatal(err)
	}
	input, err := contract.EncodeInput(contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cmd.Stdin.Write(input); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Stdin.Close()
	if err := h.WaitServiceState(ctx, "MSSQLSERVER", contract.StateStopPending); err != nil {
		t.Fatalf("the restart never began stopping the Engine: %v", err)
	}

	// Long enough that the dial below surely falls inside it; the answer comes at once.
	res := ctl.action("sql01", map[string]any{"action": "restart_winrm", "duration_ms": 3000, "wait": false})
	if n, _ := res["shells_ended"].(float64); n < 1 {
		t.Errorf("restart_winrm answered %v; want shells_ended ≥ 1 (the restart's shell)", res)
	}
	winrmHTTPS := hostInfo(t, sim, "sql01").WinRMHTTPS
	if conn, err := net.Dial("tcp", winrmHTTPS); !errors.Is(err, syscall.ECONNREFUSED) {
		if conn != nil {
			conn.Close()
		}
		t.Fatalf("a connection while WinRM restarts: %v; want ECONNREFUSED", err)
	}
	cmd.Wait()
	if cmd.Error() == nil {
		t.Fatalf("the command whose shell WinRM ended reported no error (exit %d); want the lost connection", cmd.ExitCode())
	}
	t.Logf("the command lost mid-restart: %v", cmd.Error())

	// The listener comes back on the same port.
	deadline := time.Now().Add(20 * time.Second)
	for {
		conn, err := net.Dial("tcp", winrmHTTPS)
		if err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("WinRM did not listen again: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // poll interval while waiting on the listener, with a deadline
	}
	// The old shell is gone: a command in it gets the unknown-shell fault, not a
	// CommandId. (masterzen's Post drops the HTTP status, so its Shell.Close cannot
	// tell a fault from success; a Command's answer it parses.)
	if cmd, err := shell.ExecuteWithContext(ctx, "hostname"); err == nil {
		t.Errorf("a command in the shell WinRM's restart ended started (CommandId %v); want the unknown-shell fault", cmd)
	}

	var st contract.RestartInstanceResult
	runOp(t, c, contract.OpRestartStatus, contract.RestartStatusParams{Instance: "MSSQLSERVER", WaitSeconds: 30}, &st)
	if !st.Finished || st.Error != "" || st.ServiceState != contract.StateRunning {
		t.Fatalf("restart_status after WinRM's restart = %+v; want the guard to have finished the restart, Running, no error", st)
	}
	for _, svc := range []string{"MSSQLSERVER", "SQLSERVERAGENT", "MSSQLLaunchpad"} {
		if state, err := h.ServiceState(svc); err != nil || state != contract.StateRunning {
			t.Errorf("%s is %q (%v) after the guard's restart; want Running", svc, state, err)
		}
	}
	after := readInstance(t, c)
	if after.ProcessStartTime == nil || before.ProcessStartTime == nil || !after.ProcessStartTime.After(*before.ProcessStartTime) {
		t.Errorf("process start time %v → %v; want a later start", before.ProcessStartTime, after.ProcessStartTime)
	}
}

// restart_winrm with the default wait answers once WinRM listens again; a negative
// duration is refused as a malformed action.
func TestRestartWinRMWaitsForTheListener(t *testing.T) {
	sim := startFleet(t)
	ctl := control{t, sim.Info().Control}
	res := ctl.action("sql02", map[string]any{"action": "restart_winrm"})
	if res["state"] != contract.StateRunning || res["service"] != "WinRM" {
		t.Errorf("restart_winrm answered %v; want service WinRM, state Running", res)
	}
	conn, err := net.Dial("tcp", hostInfo(t, sim, "sql02").WinRM)
	if err != nil {
		t.Fatalf("WinRM after restart_winrm answered: %v; want it listening", err)
	}
	conn.Close()
	readInstance(t, winrmClient(t, sim, "sql02", adminUser, adminPassword, true))
	var out map[string]any
	if code := ctl.do("POST", "/v1/hosts/sql02/actions", map[string]any{"action": "restart_winrm", "duration_ms": -1}, &out); code != http.StatusBadRequest {
		t.Errorf("restart_winrm with duration_ms -1 answered %d %v; want 400", code, out)
	}
}
