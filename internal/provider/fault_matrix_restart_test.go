package provider

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
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
// Running, that the apply ends (wantApplyEnds), that the state says what
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
		// holdStop: this service's stops last until the apply has ended, when the
		// row ends the stop (EndStopNow): slower than any deadline by construction.
		holdStop string
		// upWhileHeld: these services are Running within seconds of the apply's end,
		// while holdStop's stop is still pending.
		upWhileHeld []string
	}{
		// Launchpad's stop lasts until the apply ended: longer than the restart's deadline (about 30 s).
		{name: "a dependent slower to stop than the deadline", wantStarts: 0, holdStop: "MSSQLLaunchpad",
			wantErr: `(?s)MSSQLSERVER was not stopped: its dependent MSSQLLaunchpad is Stop Pending.*Nothing more was stopped`},
		// Issue 37: SQL Server Agent, which the restart had stopped before Launchpad
		// would not, runs again at once, not once Launchpad's stop ends.
		{name: "a dependent that will not stop: Agent runs again at once", wantStarts: 0, holdStop: "MSSQLLaunchpad",
			upWhileHeld: []string{"MSSQLSERVER", "SQLSERVERAGENT"},
			wantErr:     `(?s)MSSQLSERVER was not stopped: its dependent MSSQLLaunchpad is Stop Pending.*Nothing more was stopped`},
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
			if r.holdStop != "" {
				if err := h.SetStopDuration(r.holdStop, time.Hour); err != nil {
					t.Fatal(err)
				}
			}
			starts0 := h.Transitions("MSSQLSERVER", contract.StateStartPending)
			w.write(e.providerConfig(true) + resourceConfig(e.addr, extra("if_needed")))
			ap := w.apply()
			wantApplyEnds(t, ap, updateTimeout, true)
			if len(r.upWhileHeld) > 0 {
				up, cancelUp := context.WithTimeout(context.Background(), 5*time.Second)
				for _, s := range r.upWhileHeld {
					if err := h.WaitServiceState(up, s, contract.StateRunning); err != nil {
						t.Errorf("%s is not Running within 5 s of the apply's end, while %s is still stopping: %v", s, r.holdStop, err)
					}
				}
				cancelUp()
			}
			if r.holdStop != "" {
				// The apply ended while the stop was still pending; now it ends.
				if err := h.EndStopNow(r.holdStop); err != nil {
					t.Errorf("the held stop of %s: %v", r.holdStop, err)
				}
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

// The fault matrix's rows of a create that restarts and fails part-way (issue 24):
// a half-done change is adopted, not undone. Each row creates the resource with
// restart = "if_needed" (grant and restart) under a fault, then clears the fault and
// applies again. Besides the matrix's checks (the Engine and its dependents end
// Running, the faulted apply ends (wantApplyEnds), the state says what
// the host has, the next plan's kind, nothing restarted twice), each checks that
// the state keeps enabled = true as configured after the failure, and that no
// follow-up revokes the right it then grants again (the audit of set_right and
// restart_instance changes on the host).
func TestCLI_faultMatrixRestartCreate(t *testing.T) {
	t.Parallel()
	const createTimeout = time.Minute
	rows := []struct {
		name      string
		stopMS    int             // the Engine's stop (default 100 ms)
		launchpad int             // a dependent's stop, in ms; 0: no such dependent
		actions   []winsim.Action // injected before the create
		during    func(*accEnv) func(*exec.Cmd)
		// startAfter: the Engine stays stopped after the fault (it would not start);
		// the DBA starts it once the cause is fixed, before the follow-up.
		startAfter bool
		wantErr    string // regexp on an error diagnostic of the create; "": any outcome
		// holdStop: this service's stops last until the create has ended, when the
		// row ends the stop (EndStopNow): slower than any deadline by construction.
		holdStop string
		// deadlines: the create's deadline divided by this (cliWork.divideDeadlines),
		// for a row whose fault outlasts it.
		deadlines int
	}{
		{name: "SIGINT during the restart", stopMS: 3000,
			during: func(e *accEnv) func(*exec.Cmd) { return signalAtStopPending(e.t, e, syscall.SIGINT) }},
		// The refusal outlasts the deadline and the read back after it, met after
		// 20 s (the deadline divided by 3) as after the minute.
		{name: "connections refused for 100 s, create = 1m", stopMS: 1500, deadlines: 3,
			actions: []winsim.Action{refuseFromStopPending(100 * time.Second)},
			wantErr: `(?s)was not seen to finish.*connection refused`},
		{name: "the Engine fails to start",
			actions: []winsim.Action{{Action: winsim.ActionFailStart, Service: "MSSQLSERVER", Code: 1067, Times: -1}},
			wantErr: `(?s)did not start after 3 attempts.*Windows error 1067`, startAfter: true},
		// Launchpad's stop lasts until the create ended: longer than the restart's deadline (about 30 s).
		{name: "a dependent slower to stop than create = 1m", launchpad: 100, holdStop: "MSSQLLaunchpad",
			wantErr: `(?s)MSSQLSERVER was not stopped: its dependent MSSQLLaunchpad is Stop Pending`},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			w := newCLI(t)
			if r.deadlines != 0 {
				w.divideDeadlines(r.deadlines)
			}
			services := []string{"MSSQLSERVER", "SQLSERVERAGENT"}
			e := startSim(t, func(hc *host.HostConfig) {
				hc.Instances[0].StartMS, hc.Instances[0].StopMS = 100, cmp.Or(r.stopMS, 100)
				if r.launchpad != 0 {
					hc.Services = append(hc.Services, host.ServiceConfig{Name: "MSSQLLaunchpad", DependsOn: []string{"MSSQLSERVER"}, StopMS: r.launchpad})
				}
			})
			if r.launchpad != 0 {
				services = append(services, "MSSQLLaunchpad")
			}
			for _, a := range r.actions {
				e.do(a)
			}
			if r.holdStop != "" {
				if err := e.host().SetStopDuration(r.holdStop, time.Hour); err != nil {
					t.Fatal(err)
				}
			}
			w.write(e.providerConfig(true) + resourceConfig(e.addr, fmt.Sprintf("timeouts {\n    create = %q\n  }", createTimeout)))
			var during func(*exec.Cmd)
			if r.during != nil {
				during = r.during(e)
			}
			ap := w.runWhile(during, "apply", "-auto-approve", "-json", "-no-color")
			wantApplyEnds(t, ap, createTimeout/time.Duration(cmp.Or(r.deadlines, 1)), true)
			if r.holdStop != "" {
				// The create ended while the stop was still pending; now it ends.
				if err := e.host().EndStopNow(r.holdStop); err != nil {
					t.Errorf("the held stop of %s: %v", r.holdStop, err)
				}
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
			t.Logf("the faulted create:\n%s", ap.describe())
			// The state keeps the configuration's intent, and records the change sent.
			a := w.attrs()
			if a == nil {
				t.Fatalf("the resource is not in the state although the create sent its change (host holds the grant: %v)", e.holds(defaultSvcSID))
			}
			if a["enabled"] != true {
				t.Errorf("after the failure the state says enabled = %v; want the configured true", a["enabled"])
			}
			if g, ok := a["privilege_granted"].(bool); ok && g != e.holds(defaultSvcSID) {
				t.Errorf("state privilege_granted %v, the host holds the grant: %v", g, e.holds(defaultSvcSID))
			}
			e.do(winsim.Action{Action: winsim.ActionClearFaults})
			e.do(winsim.Action{Action: winsim.ActionFailStart, Service: "MSSQLSERVER", Times: 0})
			h := e.host()
			if r.launchpad != 0 {
				e.do(winsim.Action{Action: winsim.ActionSlowStop, Service: "MSSQLLaunchpad", StopMS: 100})
			}
			if r.startAfter {
				e.do(winsim.Action{Action: winsim.ActionStartService, Service: "MSSQLSERVER"})
				e.do(winsim.Action{Action: winsim.ActionStartService, Service: "SQLSERVERAGENT"})
			}
			// The guard finishes what the fault interrupted: the services run again.
			wctx, wcancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer wcancel()
			for _, s := range services {
				if err := h.WaitServiceState(wctx, s, contract.StateRunning); err != nil {
					t.Fatalf("%s is not Running after the fault: %v", s, err)
				}
			}
			// The next plan: empty, an update in place, or the replace of the tainted create.
			p := w.plan()
			if p.Exit == 1 {
				t.Fatalf("the next plan failed:\n%s", p.describe())
			}
			t.Logf("the next plan: %v", p.Changes)
			for _, c := range p.Changes {
				if c.Action != "update" && c.Action != "replace" {
					t.Errorf("the next plan would %s %s; want nothing, an update in place or a replace:\n%s", c.Action, c.Addr, p.describe())
				}
			}
			// The follow-up takes away nothing it then grants again.
			mark := len(h.Audit())
			if ap := w.apply(); ap.Exit != 0 {
				t.Errorf("the follow-up apply failed:\n%s", ap.describe())
			}
			if rv := revokesOf(h.Audit()[mark:], defaultSvcSID); len(rv) != 0 {
				t.Errorf("the follow-up revoked the right it grants: %v", rv)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for _, s := range services {
				if err := h.WaitServiceState(ctx, s, contract.StateRunning); err != nil {
					t.Errorf("%s is not Running at the end: %v", s, err)
				}
			}
			if !e.holds(defaultSvcSID) || w.attrs()["enabled"] != true || w.attrs()["privilege_granted"] != true {
				t.Errorf("at the end: host holds %v, state %v; want the grant on both", e.holds(defaultSvcSID), w.attrs())
			}
			if p := w.plan(); p.Exit != 0 {
				t.Errorf("the plan after the follow-up is not empty:\n%s", p.describe())
			}
			// Nothing restarted twice: the Engine stopped at most once in all.
			if n := e.stops("MSSQLSERVER"); n > 1 {
				t.Errorf("the Engine was stopped %d times; want at most one restart", n)
			}
		})
	}
}

// revokesOf lists the host's operations in entries that took the right from sid
// (a set_right revoke, or a revoke among set_right's or restart_instance's changes).
func revokesOf(entries []host.AuditEntry, sid string) []string {
	var out []string
	for _, a := range entries {
		var p struct {
			SID     string                 `json:"sid"`
			Grant   *bool                  `json:"grant"`
			Changes []contract.RightChange `json:"changes"`
		}
		if json.Unmarshal(a.Params, &p) != nil {
			continue
		}
		switch contract.Operation(a.Operation) {
		case contract.OpSetRight:
			if len(p.Changes) == 0 && p.Grant != nil && !*p.Grant && strings.EqualFold(p.SID, sid) {
				out = append(out, fmt.Sprintf("set_right revoke %s at %s", p.SID, a.Time.Format(time.RFC3339)))
			}
			for _, c := range p.Changes {
				if !c.Grant && strings.EqualFold(c.SID, sid) {
					out = append(out, fmt.Sprintf("set_right revoke %s at %s", c.SID, a.Time.Format(time.RFC3339)))
				}
			}
		case contract.OpRestartInstance:
			for _, c := range p.Changes {
				if !c.Grant && strings.EqualFold(c.SID, sid) {
					out = append(out, fmt.Sprintf("restart_instance revoke %s at %s", c.SID, a.Time.Format(time.RFC3339)))
				}
			}
		}
	}
	return out
}
