package host

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// withLaunchpad is baseConfig with Launchpad depending on the Engine, as well as
// SQL Server Agent.
func withLaunchpad(stopMS int) HostConfig {
	cfg := baseConfig()
	cfg.Services = []ServiceConfig{{Name: "MSSQLLaunchpad", DependsOn: []string{"MSSQLSERVER"}, StopMS: stopMS}}
	return cfg
}

func waitRunning(t *testing.T, h *Host, names ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for _, n := range names {
		if err := h.WaitServiceState(ctx, n, contract.StateRunning); err != nil {
			t.Errorf("%s is not Running at the end: %v", n, err)
		}
	}
}

func engineStops(h *Host) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, e := range h.events {
		if e.service == "MSSQLSERVER" && e.state == contract.StateStopPending {
			n++
		}
	}
	return n
}

// Issue 14: a dependent still Stop Pending when the Engine would be stopped. The
// restart stops nothing more, reports stop_timeout naming the dependent and its
// state, and every dependent it stopped runs again (the slow one once it stopped);
// the Engine was never stopped. Before, the Engine's ServiceController.Stop() threw
// 1061 and Agent was left stopped.
func TestRestartDependentSlowToStop(t *testing.T) {
	t.Parallel()
	h := newHost(t, withLaunchpad(2500))
	r := restartResult(t, execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 1}))
	if r.Error != contract.RestartStopTimeout || !strings.Contains(r.Message, "MSSQLLaunchpad is Stop Pending") || !strings.Contains(r.Message, "Nothing more was stopped") {
		t.Fatalf("a dependent slow to stop: %+v", r)
	}
	if n := engineStops(h); n != 0 {
		t.Errorf("the Engine was stopped %d times; a dependent that is not Stopped must stop the restart before it", n)
	}
	waitRunning(t, h, "MSSQLSERVER", "SQLSERVERAGENT", "MSSQLLaunchpad")
	st := restartResult(t, execOp(t, h, "Administrator", contract.OpRestartStatus, contract.RestartStatusParams{Instance: "MSSQLSERVER", WaitSeconds: 10}))
	if !st.Finished || st.Error != contract.RestartStopTimeout {
		t.Fatalf("status after the dependents ran again: %+v", st)
	}
}

// Issue 37: a dependent that will not stop (Launchpad's stop outlasts the restart's
// deadline) does not keep SQL Server Agent, which the restart had already stopped,
// down with it: Agent runs again within seconds of the restart's decision not to
// stop the Engine, while Launchpad is still Stop Pending; Launchpad is started once
// its stop ends. Before, the dependents were started the last stopped first, and
// the wait on Launchpad's stop (up to 2 hours) came before Agent's start.
func TestRestartDependentThatWillNotStopLeavesAgentRunning(t *testing.T) {
	t.Parallel()
	h := newHost(t, withLaunchpad(100))
	if err := h.SetStopDuration("MSSQLLaunchpad", time.Hour); err != nil {
		t.Fatal(err)
	}
	r := restartResult(t, execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 1}))
	if r.Error != contract.RestartStopTimeout || !strings.Contains(r.Message, "MSSQLLaunchpad is Stop Pending") {
		t.Fatalf("a dependent that will not stop: %+v", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.WaitServiceState(ctx, "SQLSERVERAGENT", contract.StateRunning); err != nil {
		t.Fatalf("SQL Server Agent is not Running 5 s after the restart's answer while Launchpad is still stopping: %v", err)
	}
	if s, _ := h.ServiceState("MSSQLLaunchpad"); s != contract.StateStopPending {
		t.Fatalf("Launchpad is %s, want still Stop Pending", s)
	}
	if n := engineStops(h); n != 0 {
		t.Errorf("the Engine was stopped %d times", n)
	}
	if err := h.EndStopNow("MSSQLLaunchpad"); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, h, "MSSQLSERVER", "SQLSERVERAGENT", "MSSQLLaunchpad")
	st := restartResult(t, execOp(t, h, "Administrator", contract.OpRestartStatus, contract.RestartStatusParams{Instance: "MSSQLSERVER", WaitSeconds: 10}))
	if !st.Finished || st.Error != contract.RestartStopTimeout {
		t.Fatalf("status after the dependents ran again: %+v", st)
	}
}

// A Paused dependent is stopped and started again with the others (before, it was
// skipped, then stopped by .NET's loop and never started again).
func TestRestartPausedDependent(t *testing.T) {
	t.Parallel()
	h := newHost(t, withLaunchpad(100))
	if err := h.PauseService("MSSQLLaunchpad"); err != nil {
		t.Fatal(err)
	}
	r := restartResult(t, execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30}))
	if r.Error != "" || !r.Finished || !strings.Contains(strings.Join(r.Started, ","), "MSSQLLaunchpad") {
		t.Fatalf("restart with a Paused dependent: %+v", r)
	}
	waitRunning(t, h, "MSSQLSERVER", "SQLSERVERAGENT", "MSSQLLaunchpad")
}

// A dependent that is Start Pending when the restart begins is waited for, then
// stopped and started again like the others.
func TestRestartStartPendingDependent(t *testing.T) {
	t.Parallel()
	cfg := withLaunchpad(100)
	cfg.Services[0].StartMS = 800
	cfg.Services[0].Stopped = true
	h := newHost(t, cfg)
	if err := h.StartService("MSSQLLaunchpad"); err != nil {
		t.Fatal(err)
	}
	if s, _ := h.ServiceState("MSSQLLaunchpad"); s != contract.StateStartPending {
		t.Fatalf("Launchpad is %s, want Start Pending", s)
	}
	r := restartResult(t, execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30}))
	if r.Error != "" || !strings.Contains(strings.Join(r.Stopped, ","), "MSSQLLaunchpad") || !strings.Contains(strings.Join(r.Started, ","), "MSSQLLaunchpad") {
		t.Fatalf("restart with a Start Pending dependent: %+v", r)
	}
	waitRunning(t, h, "MSSQLSERVER", "SQLSERVERAGENT", "MSSQLLaunchpad")
}

// ControlService(SERVICE_CONTROL_STOP), as sc.exe stop sends it: 1051 while a
// dependent is not Stopped, 1061 for a pending service, 1062 for a stopped one.
func TestControlStopErrors(t *testing.T) {
	t.Parallel()
	h := newHost(t, withLaunchpad(2000))
	var ce *ControlError
	if err := h.ControlStop("MSSQLSERVER"); !errors.As(err, &ce) || ce.Code != 1051 {
		t.Fatalf("stopping the Engine with running dependents: %v, want 1051", err)
	}
	if err := h.ControlStop("MSSQLLaunchpad"); err != nil {
		t.Fatal(err)
	}
	if err := h.ControlStop("MSSQLLaunchpad"); !errors.As(err, &ce) || ce.Code != 1061 {
		t.Fatalf("stopping a Stop Pending service: %v, want 1061", err)
	}
	if s, _ := h.ServiceState("SQLSERVERAGENT"); s != contract.StateRunning {
		t.Fatalf("ControlStop of Launchpad touched Agent: it is %s", s)
	}
	if err := h.StopService("SQLSERVERAGENT", false); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.WaitServiceState(ctx, "SQLSERVERAGENT", contract.StateStopped); err != nil {
		t.Fatal(err)
	}
	if err := h.ControlStop("SQLSERVERAGENT"); !errors.As(err, &ce) || ce.Code != 1062 {
		t.Fatalf("stopping a stopped service: %v, want 1062", err)
	}
}

// .NET Framework's ServiceController.Stop(): a dependent that is Stop Pending makes it
// throw at once (1061); a Running one is stopped and waited for at most 30 s
// (shortened here), then it throws TimeoutException.
func TestServiceControllerStopModel(t *testing.T) {
	t.Parallel()
	h := newHost(t, withLaunchpad(1500))
	// "At once": Stop() answers while the dependent is still Stop Pending, which it
	// stays until the test ends its stop (an order, not a duration).
	if err := h.SetStopDuration("MSSQLLaunchpad", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := h.ControlStop("MSSQLLaunchpad"); err != nil {
		t.Fatal(err)
	}
	err := h.ServiceControllerStop(context.Background(), "MSSQLSERVER")
	var ce *ControlError
	if !errors.As(err, &ce) || ce.Code != 1061 || ce.Service != "MSSQLLaunchpad" {
		t.Fatalf("Stop() with a Stop Pending dependent: %v, want 1061", err)
	}
	if s, _ := h.ServiceState("MSSQLLaunchpad"); s != contract.StateStopPending {
		t.Fatalf("Stop() answered 1061 only after the dependent's stop ended (it is %s), want at once", s)
	}
	if err := h.EndStopNow("MSSQLLaunchpad"); err != nil {
		t.Fatal(err)
	}
	if err := h.SetStopDuration("MSSQLLaunchpad", 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if s, _ := h.ServiceState("MSSQLSERVER"); s != contract.StateRunning {
		t.Fatalf("the Engine is %s after the throw", s)
	}
	waitRunningOrStopped := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.WaitServiceState(ctx, "MSSQLLaunchpad", contract.StateStopped)
	}
	waitRunningOrStopped()
	if err := h.StartService("MSSQLLaunchpad"); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, h, "MSSQLLaunchpad")
	old := netDependentWait
	netDependentWait = 300 * time.Millisecond
	t.Cleanup(func() { netDependentWait = old })
	if err := h.ServiceControllerStop(context.Background(), "MSSQLSERVER"); !errors.Is(err, ErrNetTimeout) {
		t.Fatalf("Stop() with a dependent slower than the fixed wait: %v, want TimeoutException", err)
	}
}

// Defender's ASR rule in block mode: Win32_Process.Create creates nothing, so the
// guard is started by a scheduled task, which is gone once the restart ended. In
// audit mode WMI is used.
func TestRestartGuardUnderASRRule(t *testing.T) {
	t.Parallel()
	h := newHost(t, baseConfig())
	if err := h.SetASRRule(ASRRulePsExecWMI, ASRBlock); err != nil {
		t.Fatal(err)
	}
	if rv := h.win32ProcessCreate("powershell.exe -File x.ps1"); rv == 0 {
		t.Fatal("Win32_Process.Create created a process under the ASR rule in block mode")
	}
	r := restartResult(t, execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30}))
	if r.Error != "" || !r.Finished {
		t.Fatalf("restart under the ASR rule: %+v", r)
	}
	if s := h.Stats(); s.GuardsByTask != 1 || s.GuardsByWMI != 0 {
		t.Fatalf("guards: %+v, want one started by a scheduled task", s)
	}
	if tasks := h.ScheduledTasks(); len(tasks) != 0 {
		t.Fatalf("tasks left behind: %v", tasks)
	}
	if err := h.SetASRRule(ASRRulePsExecWMI, ASRAudit); err != nil {
		t.Fatal(err)
	}
	r = restartResult(t, execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30}))
	if r.Error != "" || h.Stats().GuardsByWMI != 1 {
		t.Fatalf("restart with the rule in audit mode: %+v, %+v", r, h.Stats())
	}
}

// No launcher can start the guard: the request fails naming why, nothing is stopped.
func TestRestartGuardNotStartable(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.Defender.ASRRules = map[string]int{ASRRulePsExecWMI: ASRWarn}
	cfg.TaskSchedulerStopped = true
	h := newHost(t, cfg)
	res := execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30})
	if res.code != contract.ExitFailure {
		t.Fatalf("exit %d: %+v", res.code, res)
	}
	for _, want := range []string{ASRRulePsExecWMI, "warn", "Task Scheduler service is not running", "Nothing was stopped"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("the error does not say %q: %s", want, res.stdout)
		}
	}
	if n := engineStops(h); n != 0 {
		t.Errorf("the Engine was stopped %d times", n)
	}
}

// A %ProgramData%\mssqlifi someone else owns (any user may create it) refuses the
// restart before anything is written or stopped.
func TestRestartGuardDirectoryOwner(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.GuardDirectoryOwner = `CONTOSO\sqlsvc`
	h := newHost(t, cfg)
	res := execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30})
	if res.code != contract.ExitFailure || !strings.Contains(res.stdout, `C:\\ProgramData\\mssqlifi is owned by CONTOSO\\sqlsvc`) {
		t.Fatalf("a guard directory owned by another account: %+v", res)
	}
	if n := engineStops(h); n != 0 {
		t.Errorf("the Engine was stopped %d times", n)
	}
}

// A failure after the first stop (here a dependent that does not accept the stop
// control, 1052, after Agent and another one stopped) starts again what the restart
// stopped before it reports; the Engine was never stopped.
func TestRestartFailureStartsAgainWhatItStopped(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.Services = []ServiceConfig{
		{Name: "MSSQLLaunchpad", DependsOn: []string{"MSSQLSERVER"}, StopMS: 100},
		{Name: "SQLTelemetry", DependsOn: []string{"MSSQLSERVER"}, RefuseStop: true},
	}
	h := newHost(t, cfg)
	r := restartResult(t, execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30}))
	if r.Error != contract.RestartFailed || !strings.Contains(r.Message, "1052") || !strings.Contains(r.Message, "What it had stopped was started again") {
		t.Fatalf("a dependent that refuses the stop: %+v", r)
	}
	if len(r.Stopped) != 2 {
		t.Errorf("the restart stopped %v before the refusal, want Agent and Launchpad", r.Stopped)
	}
	if n := engineStops(h); n != 0 {
		t.Errorf("the Engine was stopped %d times", n)
	}
	for _, n := range []string{"SQLSERVERAGENT", "MSSQLLaunchpad"} {
		if s, _ := h.ServiceState(n); s != contract.StateRunning {
			t.Errorf("%s is %s when the restart reported, want Running", n, s)
		}
	}
}

// A race armed with RaceNextStop plays just before the next SERVICE_CONTROL_STOP:
// a service that stopped by itself answers 1062, one that the SCM's recovery is
// starting again answers 1061 while Start Pending; each race is used once.
func TestRaceNextStop(t *testing.T) {
	t.Parallel()
	cfg := withLaunchpad(100)
	cfg.Services[0].StartMS = 2000
	h := newHost(t, cfg)
	var ce *ControlError
	if err := h.RaceNextStop("MSSQLLaunchpad", RaceStopped); err != nil {
		t.Fatal(err)
	}
	if err := h.ControlStop("MSSQLLaunchpad"); !errors.As(err, &ce) || ce.Code != 1062 {
		t.Fatalf("a service that stopped before its control: %v, want 1062", err)
	}
	if s, _ := h.ServiceState("MSSQLLaunchpad"); s != contract.StateStopped {
		t.Fatalf("Launchpad is %s, want Stopped", s)
	}
	if err := h.StartService("MSSQLLaunchpad"); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, h, "MSSQLLaunchpad")
	if err := h.RaceNextStop("MSSQLLaunchpad", RaceRestarting); err != nil {
		t.Fatal(err)
	}
	if err := h.ControlStop("MSSQLLaunchpad"); !errors.As(err, &ce) || ce.Code != 1061 {
		t.Fatalf("a service restarting before its control: %v, want 1061", err)
	}
	if s, _ := h.ServiceState("MSSQLLaunchpad"); s != contract.StateStartPending {
		t.Fatalf("Launchpad is %s, want Start Pending", s)
	}
	waitRunning(t, h, "MSSQLLaunchpad")
	if err := h.ControlStop("MSSQLLaunchpad"); err != nil {
		t.Fatalf("the race is used once, but the next stop failed: %v", err)
	}
	if err := h.RaceNextStop("MSSQLLaunchpad", "crashed"); err == nil {
		t.Fatal("an unknown race was accepted")
	}
}

// Issue 37: an exception from WMI's Win32_Process.Create itself (access denied on
// root\cimv2, say) is the WMI launcher's failure: the guard is started by the
// scheduled task and the restart goes. Before, the exception ended the request with
// its raw message and the task launcher was never tried.
func TestRestartGuardAfterAWMIException(t *testing.T) {
	t.Parallel()
	h := newHost(t, baseConfig())
	h.SetWMIError("Access denied (WBEM_E_ACCESS_DENIED 0x80041003)")
	r := restartResult(t, execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30}))
	if r.Error != "" || !r.Finished {
		t.Fatalf("restart with WMI throwing: %+v", r)
	}
	if s := h.Stats(); s.GuardsByTask != 1 || s.GuardsByWMI != 0 {
		t.Fatalf("guards: %+v, want one started by a scheduled task", s)
	}
	if tasks := h.ScheduledTasks(); len(tasks) != 0 {
		t.Fatalf("tasks left behind: %v", tasks)
	}
	// With the Task Scheduler stopped as well, the refusal names both launchers' failures.
	cfg := baseConfig()
	cfg.TaskSchedulerStopped = true
	h = newHost(t, cfg)
	h.SetWMIError("Access denied (WBEM_E_ACCESS_DENIED 0x80041003)")
	res := execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30})
	if res.code == 0 || !strings.Contains(res.stdout, "Win32_Process.Create failed: Access denied") || !strings.Contains(res.stdout, "Task Scheduler service is not running") ||
		!strings.Contains(res.stdout, "Nothing was stopped") {
		t.Fatalf("WMI throwing and the Task Scheduler stopped: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
}
