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

// The fault matrix's restart rows (issue 14): the restart's dependents and its guard.
// The resource is first created with restart = "never" (the right granted, a restart
// pending); then the fault is injected and an apply with restart = "if_needed" makes
// the update that restarts. Each row checks that the Engine and its dependents end
// Running, that the apply ends within its timeout + 30 s, that the state says what
// the host has, that the next plan is empty or an update in place, and that nothing
// restarted twice.
func TestCLI_faultMatrixRestart(t *testing.T) {
	t.Parallel()
	const updateTimeout = time.Minute
	services := []string{"MSSQLSERVER", "SQLSERVERAGENT", "MSSQLLaunchpad"}
	rows := []struct {
		name       string
		launchpad  host.ServiceConfig
		mod        func(*host.HostConfig)
		actions    []winsim.Action
		wantErr    string // regexp on an error diagnostic; "": the apply succeeds
		wantStarts int    // Engine starts during the apply
		byTask     int64  // guards started by a scheduled task
	}{
		{name: "a dependent slower to stop than the deadline", wantStarts: 0,
			launchpad: host.ServiceConfig{StopMS: 40000}, // longer than the restart's deadline (about 30 s)
			wantErr:   `(?s)MSSQLSERVER was not stopped: its dependent MSSQLLaunchpad is Stop Pending.*Nothing more was stopped`},
		{name: "a Paused dependent", wantStarts: 1,
			actions: []winsim.Action{{Action: winsim.ActionPauseService, Service: "MSSQLLaunchpad"}}},
		{name: "Defender's ASR rule blocks WMI process creation", wantStarts: 1, byTask: 1,
			actions: []winsim.Action{{Action: winsim.ActionSetASRRule, Rule: host.ASRRulePsExecWMI, RuleAction: host.ASRBlock}}},
		// sc.exe races (issue 24): a dependent that stops by itself between the
		// restart's read of it and its sc.exe stop (1062, ERROR_SERVICE_NOT_ACTIVE) is
		// stopped as the restart wanted; one whose process ended and the SCM's recovery
		// started again is Start Pending when the stop arrives (1061), and so is an
		// Engine: the stop waits for it to settle and is sent again.
		{name: "a dependent that stops by itself before its stop", wantStarts: 1,
			actions: []winsim.Action{{Action: winsim.ActionRaceStop, Service: "MSSQLLaunchpad", Mode: host.RaceStopped}}},
		{name: "a dependent Start Pending when its stop arrives", wantStarts: 1,
			launchpad: host.ServiceConfig{StartMS: 1500},
			actions:   []winsim.Action{{Action: winsim.ActionRaceStop, Service: "MSSQLLaunchpad", Mode: host.RaceRestarting}}},
		// The Engine starts twice during this apply: once by the SCM's recovery (the
		// race), once by the restart; the restart itself starts it once.
		{name: "an Engine Start Pending when its stop arrives", wantStarts: 2,
			mod:     func(hc *host.HostConfig) { hc.Instances[0].StartMS = 1500 },
			actions: []winsim.Action{{Action: winsim.ActionRaceStop, Service: "MSSQLSERVER", Mode: host.RaceRestarting}}},
		{name: "the ASR rule, and the Task Scheduler stopped", wantStarts: 0,
			mod:     func(hc *host.HostConfig) { hc.TaskSchedulerStopped = true },
			actions: []winsim.Action{{Action: winsim.ActionSetASRRule, Rule: host.ASRRulePsExecWMI, RuleAction: host.ASRBlock}},
			wantErr: `(?s)guard process could not be started.*d1e49aac-8f56-4280-b9ba-993a6d77406c.*block mode.*Task Scheduler service is not running.*Nothing was stopped`},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			w := newCLI(t)
			e := startSim(t, func(hc *host.HostConfig) {
				hc.Instances[0].StartMS, hc.Instances[0].StopMS = 100, 100
				lp := r.launchpad
				lp.Name, lp.DependsOn = "MSSQLLaunchpad", []string{"MSSQLSERVER"}
				hc.Services = append(hc.Services, lp)
				if r.mod != nil {
					r.mod(hc)
				}
			})
			extra := func(restart string) string {
				return fmt.Sprintf("restart = %q\n  timeouts {\n    create = %q\n    update = %q\n  }", restart, updateTimeout, updateTimeout)
			}
			w.write(e.providerConfig(true) + resourceConfig(e.addr, extra("never")))
			if ap := w.apply(); ap.Exit != 0 {
				t.Fatalf("creating with restart = never:\n%s", ap.describe())
			}
			for _, a := range r.actions {
				if err := e.sim.Do(e.name, a); err != nil {
					t.Fatalf("injecting %+v: %v", a, err)
				}
			}
			h := e.host()
			starts0 := h.Transitions("MSSQLSERVER", contract.StateStartPending)
			w.write(e.providerConfig(true) + resourceConfig(e.addr, extra("if_needed")))
			ap := w.apply()
			if limit := updateTimeout + 30*time.Second; ap.Duration > limit {
				t.Errorf("the apply took %s, more than %s", ap.Duration.Round(time.Second), limit)
			}
			if r.wantErr == "" && ap.Exit != 0 {
				t.Fatalf("the apply failed:\n%s", ap.describe())
			}
			if r.wantErr != "" {
				re := regexp.MustCompile(r.wantErr)
				found := false
				for _, d := range ap.errors() {
					found = found || re.MatchString(d.Summary+": "+d.Detail)
				}
				if ap.Exit == 0 || !found {
					t.Errorf("want an error matching %s:\n%s", r.wantErr, ap.describe())
				} else {
					t.Logf("the apply failed as it should:\n%s", ap.describe())
				}
			}
			// The Engine and its dependents end Running.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for _, s := range services {
				if err := h.WaitServiceState(ctx, s, contract.StateRunning); err != nil {
					t.Errorf("%s is not Running at the end: %v", s, err)
				}
			}
			// Nothing restarted twice.
			if n := h.Transitions("MSSQLSERVER", contract.StateStartPending) - starts0; n != r.wantStarts {
				t.Errorf("the Engine started %d times during the apply, want %d", n, r.wantStarts)
			}
			if got := h.Stats().GuardsByTask; got != r.byTask {
				t.Errorf("%d guards were started by a scheduled task, want %d", got, r.byTask)
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
