package host

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// What a guard's powershell.exe runs is read from its command line: a Group Policy
// execution policy (AllSigned, Restricted) overrides -ExecutionPolicy Bypass for
// -File and refuses the unsigned guard file; the loader's -EncodedCommand is not
// subject to it, and runs only a file with a trusted owner and the hash it names.
func TestGuardProcessReadsItsCommandLine(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.GroupPolicyExecutionPolicy = "AllSigned"
	h := newHost(t, cfg)
	file, hash, err := h.prepareGuardFile()
	if err != nil {
		t.Fatal(err)
	}
	const token = "0123456789abcdef0123456789abcdef"
	fileLine := `powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -File "` + file + `" -Token ` + token + ` -RunnerId 7`
	if got, ended := h.startGuardProcess(fileLine, LauncherWMI, file); got != "" || !strings.Contains(ended, "execution policy AllSigned") {
		t.Errorf("-File under a Group Policy AllSigned: ran with token %q (%s); want it refused", got, ended)
	}
	loader, err := contract.GuardCommandLine(file, hash, token, 7)
	if err != nil {
		t.Fatal(err)
	}
	if got, ended := h.startGuardProcess(loader, LauncherWMI, file); got != token || ended != "" {
		t.Errorf("the loader under a Group Policy AllSigned: token %q, ended %q; want it run", got, ended)
	}
	wrong, err := contract.GuardCommandLine(file, strings.Repeat("0", 64), token, 7)
	if err != nil {
		t.Fatal(err)
	}
	if got, ended := h.startGuardProcess(wrong, LauncherWMI, file); got != "" || !strings.Contains(ended, "exited 4") {
		t.Errorf("a loader naming another hash: token %q, ended %q; want exit 4", got, ended)
	}
	h.mu.Lock()
	h.cfg.GroupPolicyExecutionPolicy = ""
	h.mu.Unlock()
	if got, ended := h.startGuardProcess(fileLine, LauncherWMI, file); got != token || ended != "" {
		t.Errorf("-File with no Group Policy: token %q, ended %q; want it run", got, ended)
	}
	h.mu.Lock()
	h.cfg.EndpointProtection.KillsPowerShellFrom = []string{LauncherWMI}
	h.mu.Unlock()
	if got, ended := h.startGuardProcess(loader, LauncherWMI, file); got != "" || !strings.Contains(ended, "endpoint-protection") {
		t.Errorf("an EDR ending WMI's children: token %q, ended %q", got, ended)
	}
	if got, _ := h.startGuardProcess(loader, LauncherTask, file); got != token {
		t.Errorf("the scheduled task's guard, which the EDR does not end, did not run")
	}
}

// Under a Group Policy execution policy, with Defender's ASR rule sending the guard
// to a scheduled task, the guard still starts (its loader is no script file): the
// restart succeeds.
func TestRestartGuardUnderGroupPolicyExecutionPolicy(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.GroupPolicyExecutionPolicy = "AllSigned"
	cfg.Defender.ASRRules = map[string]int{ASRRulePsExecWMI: ASRBlock}
	h := newHost(t, cfg)
	r := restartResult(t, execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30}))
	if r.Error != "" || !r.Finished || h.Stats().GuardsByTask != 1 {
		t.Fatalf("restart under a Group Policy AllSigned: %+v, %+v", r, h.Stats())
	}
}

// A guard ended at its start (an EDR ending WMI's children; the Task Scheduler
// stopped): the request refuses, naming what may have ended it, and nothing stops.
// With the scheduled task allowed, its guard runs the restart.
func TestRestartGuardKilledAtStart(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.EndpointProtection.KillsPowerShellFrom = []string{LauncherWMI}
	cfg.TaskSchedulerStopped = true
	h := newHost(t, cfg)
	res := execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30})
	if res.code != contract.ExitFailure {
		t.Fatalf("exit %d: %+v", res.code, res)
	}
	for _, want := range []string{"did not start within 30 s", "endpoint-protection product", "Nothing was stopped"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("the error does not say %q: %s", want, res.stdout)
		}
	}
	if n := engineStops(h); n != 0 {
		t.Errorf("the Engine was stopped %d times", n)
	}
	h.mu.Lock()
	h.cfg.TaskSchedulerStopped = false
	h.mu.Unlock()
	r := restartResult(t, execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30}))
	if r.Error != "" || h.Stats().GuardsByTask != 1 || h.Stats().GuardsByWMI != 0 {
		t.Fatalf("with the scheduled task: %+v, %+v", r, h.Stats())
	}
}

// A runner with no guard (restart_instance as it was before issue 24 went on when
// WMI created a process, whether or not the guard ran) ends with its shell: what it
// stopped stays stopped, and the marker reads as failed. The model keeps that
// possible so that the fault matrix can show it.
func TestUnguardedRunnerDiesWithTheShell(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.Instances[0].StartMS, cfg.Instances[0].StopMS = 200, 300
	h := newHost(t, cfg)
	j := &restartJob{done: make(chan struct{}), res: contract.RestartInstanceResult{Found: true, Phase: contract.PhaseStopping, ServiceName: "MSSQLSERVER", Stopped: []string{}, Started: []string{}}}
	h.mu.Lock()
	h.restarts["MSSQLSERVER"] = j
	h.mu.Unlock()
	inst, _ := h.Instance("MSSQLSERVER")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_ = h.WaitServiceState(context.Background(), "MSSQLSERVER", contract.StateStopPending)
		cancel()
	}()
	h.runRestart(j, inst, 30*time.Second, ctx, false)
	if s, _ := h.ServiceState("MSSQLSERVER"); s == contract.StateRunning {
		t.Errorf("the Engine runs again although its runner died with the shell")
	}
	if st := h.RestartStatus("MSSQLSERVER"); !st.Finished || st.Error != contract.RestartFailed {
		t.Errorf("restart_status after the runner died: %+v", st)
	}
}

// A restart starts two powershell.exe, restart_instance's and its guard's (through
// WMI), and counts each once.
func TestRestartCountsItsGuardOnce(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.Instances[0].StartMS, cfg.Instances[0].StopMS = 15, 15
	h := newHost(t, cfg)
	before := h.Stats()
	r := execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30})
	if r.code != 0 {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	after := h.Stats()
	if n := after.PowerShellProcesses - before.PowerShellProcesses; n != 2 || after.GuardsByWMI-before.GuardsByWMI != 1 {
		t.Errorf("a restart counted %d powershell.exe (%d guards by WMI); want 2: its own and its guard's", n, after.GuardsByWMI-before.GuardsByWMI)
	}
}
