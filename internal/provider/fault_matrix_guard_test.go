package provider

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// The fault matrix's rows about the restart's guard on hardened hosts (issue 24):
// a Group Policy execution policy, and a guard ended at its start by an
// endpoint-protection product. As in TestCLI_faultMatrixRestart, the resource is
// first created with restart = "never", then the fault is set and an apply with
// restart = "if_needed" makes the update that restarts; where the row says so, the
// WinRM service restarts (every shell ends) once the Engine is Stop Pending. Each row
// checks that the Engine and its dependents end Running, that the apply ends
// (wantApplyEnds) with the outcome the row names, that the state says what the
// host has, that the next plan is empty or an update in place, and that nothing
// restarted twice.
func TestCLI_faultMatrixGuard(t *testing.T) {
	t.Parallel()
	const updateTimeout = time.Minute
	services := []string{"MSSQLSERVER", "SQLSERVERAGENT"}
	rows := []struct {
		name       string
		mod        func(*host.HostConfig)
		loseShell  bool   // restart WinRM once the Engine is Stop Pending
		wantErr    string // regexp on an error diagnostic; "": the apply succeeds
		wantStarts int    // Engine starts during the apply
	}{
		{name: "execution policy AllSigned set by Group Policy, the guard from a scheduled task", wantStarts: 1,
			mod: func(hc *host.HostConfig) {
				hc.GroupPolicyExecutionPolicy = "AllSigned"
				hc.Defender.ASRRules = map[string]int{host.ASRRulePsExecWMI: host.ASRBlock}
			}},
		{name: "execution policy Restricted set by Group Policy, the shell lost mid-restart", wantStarts: 1, loseShell: true,
			mod: func(hc *host.HostConfig) { hc.GroupPolicyExecutionPolicy = "Restricted" }},
		{name: "the guard ended at its start, the shell lost mid-restart", wantStarts: 0, loseShell: true,
			mod: func(hc *host.HostConfig) {
				hc.EndpointProtection.KillsPowerShellFrom = []string{host.LauncherWMI, host.LauncherTask}
			},
			wantErr: `(?s)guard process could not be started.*did not start within 30 s.*endpoint-protection product.*Nothing was stopped`},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			w := newCLI(t)
			e := startSim(t, func(hc *host.HostConfig) {
				hc.Instances[0].StartMS, hc.Instances[0].StopMS = 100, 1500
				r.mod(hc)
			})
			extra := func(restart string) string {
				return fmt.Sprintf("restart = %q\n  timeouts {\n    create = %q\n    update = %q\n  }", restart, updateTimeout, updateTimeout)
			}
			w.write(e.providerConfig(true) + resourceConfig(e.addr, extra("never")))
			if ap := w.apply(); ap.Exit != 0 {
				t.Fatalf("creating with restart = never:\n%s", ap.describe())
			}
			h := e.host()
			starts0 := h.Transitions("MSSQLSERVER", contract.StateStartPending)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			lost := make(chan error, 1)
			if r.loseShell {
				go func() {
					if err := h.WaitServiceState(ctx, "MSSQLSERVER", contract.StateStopPending); err != nil {
						lost <- nil // the Engine never stopped
						return
					}
					lost <- e.sim.Do(e.name, winsim.Action{Action: winsim.ActionRestartWinRM})
				}()
			}
			w.write(e.providerConfig(true) + resourceConfig(e.addr, extra("if_needed")))
			ap := w.apply()
			wantApplyEnds(t, ap, updateTimeout, true)
			if r.wantErr == "" && ap.Exit != 0 {
				t.Errorf("the apply failed:\n%s", ap.describe())
			}
			if r.wantErr != "" {
				re := regexp.MustCompile(r.wantErr)
				found := false
				for _, d := range ap.errors() {
					found = found || re.MatchString(d.Summary+": "+d.Detail)
				}
				if ap.Exit == 0 || !found {
					t.Errorf("want an error matching %s:\n%s", r.wantErr, ap.describe())
				}
			}
			cancel()
			if r.loseShell {
				if err := <-lost; err != nil {
					t.Errorf("restarting WinRM: %v", err)
				}
			}
			// The Engine and its dependents end Running.
			wctx, wcancel := context.WithTimeout(context.Background(), time.Minute)
			defer wcancel()
			for _, s := range services {
				if err := h.WaitServiceState(wctx, s, contract.StateRunning); err != nil {
					t.Errorf("%s is not Running at the end: %v", s, err)
				}
			}
			// Nothing restarted twice.
			if n := h.Transitions("MSSQLSERVER", contract.StateStartPending) - starts0; n != r.wantStarts {
				t.Errorf("the Engine started %d times during the apply, want %d", n, r.wantStarts)
			}
			if tasks := h.ScheduledTasks(); len(tasks) != 0 {
				t.Errorf("scheduled tasks left behind: %v", tasks)
			}
			// The state says what the host has; the next plan is empty, or an
			// update in place (the restart still to do).
			_, p, ok := wantStateOfHostAndPlanInPlace(t, w, e, defaultSvcSID, "")
			if !ok {
				t.FailNow()
			}
			if r.wantErr == "" && p.Exit != 0 {
				t.Errorf("the next plan is not empty after a restart that succeeded:\n%s", p.describe())
			}
		})
	}
}
