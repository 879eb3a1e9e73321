package provider

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// Issue 14: after any failure once a change was sent, the state holds what is
// known, and the next plan says what it will do.

// signalAtStopPending sends sig to terraform (or, for SIGKILL, to its whole process
// group: terraform and the provider) once the Engine is Stop Pending.
func signalAtStopPending(t *testing.T, e *accEnv, sig syscall.Signal) func(*exec.Cmd) {
	return func(cmd *exec.Cmd) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := e.host().WaitServiceState(ctx, "MSSQLSERVER", contract.StateStopPending); err != nil {
			t.Errorf("the Engine was not seen Stop Pending: %v", err)
			return
		}
		pid := cmd.Process.Pid
		if sig == syscall.SIGKILL {
			pid = -pid
		}
		if err := syscall.Kill(pid, sig); err != nil {
			t.Errorf("sending %v to terraform: %v", sig, err)
		}
	}
}

// waitEngineRunning waits until the Engine and SQL Server Agent run again.
func waitEngineRunning(t *testing.T, e *accEnv) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, svc := range []string{"MSSQLSERVER", "SQLSERVERAGENT"} {
		if err := e.host().WaitServiceState(ctx, svc, contract.StateRunning); err != nil {
			t.Fatalf("%s is not Running: %v", svc, err)
		}
	}
}

// finishWithoutRestart applies again and checks that the Engine was stopped once
// in all and that nothing is left to do.
func finishWithoutRestart(t *testing.T, w *cliWork, e *accEnv) {
	t.Helper()
	w.mustApply()
	if p := w.plan(); p.Exit != 0 {
		t.Errorf("the plan after the next apply is not empty (exit %d): changes %v\n%s", p.Exit, p.Changes, p.describe())
	}
	if n := e.stops("MSSQLSERVER"); n != 1 {
		t.Errorf("the Engine was stopped %d times; want the one restart", n)
	}
	if a := w.attrs(); a["privilege_granted"] != true || a["ifi_enabled"] != true {
		t.Errorf("state after the next apply: privilege_granted %v, ifi_enabled %v; want both true", a["privilege_granted"], a["ifi_enabled"])
	}
}

// SIGINT while the Engine is Stop Pending: the create ends at once, recording what
// it read back (Terraform taints it); the refresh says its replace needs no
// restart, and the replace does not restart SQL Server again.
func TestCLI_sigintDuringRestartIsRecorded(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, func(hc *host.HostConfig) { hc.Instances[0].StartMS, hc.Instances[0].StopMS = 100, 3000 })
	w.write(e.providerConfig(true) + resourceConfig(e.addr, ""))
	ap := w.runWhile(signalAtStopPending(t, e, syscall.SIGINT), "apply", "-auto-approve", "-json", "-no-color")
	if ap.Exit == 0 {
		t.Logf("the apply finished despite SIGINT:\n%s", ap.describe())
	}
	a := w.attrs()
	if a == nil {
		t.Fatalf("after SIGINT the resource is not in the state although the restart was sent:\n%s", ap.describe())
	}
	waitEngineRunning(t, e)
	p := w.plan()
	checkNextPlan(t, p, true, false)
	if ap.Exit != 0 && len(p.find("warning", `^Failed create of .*: its replace needs no restart`, "terraform untaint")) == 0 {
		t.Errorf("the plan after the interrupted create does not say its replace needs no restart:\n%s", p.describe())
	}
	finishWithoutRestart(t, w, e)
}

// SIGKILL of terraform and the provider while the Engine is Stop Pending: nothing
// is written, the host finishes the restart, and the next apply adopts what the
// host has without a second restart.
func TestCLI_sigkillDuringRestartIsAdopted(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, func(hc *host.HostConfig) { hc.Instances[0].StartMS, hc.Instances[0].StopMS = 100, 3000 })
	w.write(e.providerConfig(true) + resourceConfig(e.addr, ""))
	w.runWhile(signalAtStopPending(t, e, syscall.SIGKILL), "apply", "-auto-approve", "-json", "-no-color")
	waitEngineRunning(t, e)
	if !e.holds(defaultSvcSID) {
		t.Fatal("the host does not hold the grant the killed apply sent")
	}
	finishWithoutRestart(t, w, e)
}

// An update whose restart cannot be followed (WinRM refuses connections for longer
// than the update's timeout) keeps the new intent in the state, marked unverified:
// the next plan is an update in place that says it verifies, and it finishes
// without a second restart. The update's deadline is divided by 3
// (cliWork.divideDeadlines): the refusal outlasts it and the read back after it as
// it outlasts the full minute.
func TestCLI_failedUpdateIsVerifiedByTheNextPlan(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	w.divideDeadlines(3)
	e := startSim(t, func(hc *host.HostConfig) { hc.Instances[0].StartMS, hc.Instances[0].StopMS = 100, 1500 })
	timeouts := "timeouts {\n    update = \"1m\"\n  }"
	w.write(e.providerConfig(true) + resourceConfig(e.addr, "enabled = false\n  "+timeouts))
	w.mustApply()
	w.write(e.providerConfig(true) + resourceConfig(e.addr, "enabled = true\n  "+timeouts))
	if err := e.sim.Do(e.name, refuseFromStopPending(100*time.Second)); err != nil {
		t.Fatal(err)
	}
	ap := w.apply()
	if ap.Exit == 0 {
		t.Fatalf("the update succeeded although WinRM refused connections beyond its timeout:\n%s", ap.describe())
	}
	wantApplyEnds(t, ap, time.Minute/3, true)
	if a := w.attrs(); a["enabled"] != true {
		t.Errorf("after the failed update the state says enabled = %v; want the new intent (true)", a["enabled"])
	}
	if err := e.sim.Do(e.name, winsim.Action{Action: winsim.ActionClearFaults}); err != nil {
		t.Fatal(err)
	}
	waitEngineRunning(t, e)
	p := w.plan()
	if len(p.Changes) != 1 || p.Changes[0].Action != "update" {
		t.Errorf("the next plan is %v; want an update in place", p.Changes)
	}
	p.wantDiag(t, "warning", fmt.Sprintf(`^Unverified change of instance MSSQLSERVER on %s: this update verifies it$`, e.addr), "update.*failed after its change was sent")
	finishWithoutRestart(t, w, e)
}

// Every read of an apply rides through a refused connection within its timeout:
// the host refuses connections from the final plan's read_host (its second: the
// plan's comes first), the read the create then uses. Refused for 8 s, the apply
// waits and succeeds; refused for longer than read = "1m" (a plan's reads are
// bounded by the read timeout), it fails with an error naming the host, the
// instance and what to check, having changed nothing. That row's deadlines are
// divided by 3 (cliWork.divideDeadlines): the refusal outlasts 20 s as it outlasts
// the minute.
func TestCLI_applyReadRidesThroughARefusal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		refuse   time.Duration
		timeout  string
		wantFail bool
		// deadlines: the operations' deadlines divided by this; 0: as configured
		deadlines int
	}{
		{name: "8 s, within the timeout", refuse: 8 * time.Second, timeout: "1m"},
		{name: "100 s, past the timeout", refuse: 100 * time.Second, timeout: "1m", wantFail: true, deadlines: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newCLI(t)
			if tc.deadlines != 0 {
				w.divideDeadlines(tc.deadlines)
			}
			e := startSim(t, nil)
			e.do(winsim.Action{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{Fault: winsim.FaultRefuse,
				Operation: string(contract.OpReadHost), After: 1, DurationMS: int(tc.refuse / time.Millisecond)}})
			w.write(e.providerConfig(true) + resourceConfig(e.addr, fmt.Sprintf("timeouts {\n    create = %q\n    read   = %q\n  }", tc.timeout, tc.timeout)))
			ap := w.apply()
			t.Logf("host operations: %v", e.operations())
			if !tc.wantFail {
				if ap.Exit != 0 {
					t.Fatalf("the create did not ride through the refusal:\n%s", ap.describe())
				}
				if !e.holds(defaultSvcSID) || w.attrs()["privilege_granted"] != true {
					t.Errorf("after the create: host holds %v, state %v", e.holds(defaultSvcSID), w.attrs())
				}
				return
			}
			if ap.Exit == 0 {
				t.Fatalf("the create succeeded although the host refused connections past its timeout:\n%s", ap.describe())
			}
			ap.wantDiag(t, "error", `^Cannot read SQL Server instance MSSQLSERVER on `+regexp.QuoteMeta(e.addr)+`$`, `(?s)connection refused.*firewall`)
			if countOp(e.operations(), contract.OpSetRight) != 0 || countOp(e.operations(), contract.OpRestartInstance) != 0 || e.holds(defaultSvcSID) {
				t.Errorf("the failed create changed the host: %v", e.operations())
			}
		})
	}
}
