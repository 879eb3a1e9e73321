package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// The fault matrix (issues 8 and 14): each fault is injected through the
// simulator's control API, then a real terraform apply runs. Each row checks that
// the apply ends (wantApplyEnds: before its timeout unless the row's fault outlasts
// it) with a diagnostic naming the cause;
// that the state says what the host has (a change sent is in the state, and
// privilege_granted is the host's); that the Engine and SQL Server Agent end
// Running (unless the fault was that the Engine will not start); that the next plan
// is empty, an update in place, or (after a failed create) a replace that says
// whether it restarts; that the next apply leaves nothing to do; and that the
// Engine was stopped at most once in all.
func TestCLI_faultMatrix(t *testing.T) {
	t.Parallel()
	const createTimeout = time.Minute
	type row struct {
		name       string
		actions    []winsim.Action
		wantErr    string        // regexp on the error diagnostics; "" : the apply succeeds
		wantWarn   string        // regexp on a warning's summary the apply must give; "": none needed
		warnDetail string        // regexp on that warning's detail
		stopMS     int           // the Engine's stop duration (default 100 ms)
		wrongPort  bool          // sql_port is a port where nothing listens
		httpPort   bool          // sql_port is the host's WinRM HTTP port: it answers, but not with TDS
		timeout    time.Duration // the create timeout; 0: createTimeout
		engineUp   bool
		// untilDeadline: the fault may keep the apply until its deadline; false: the
		// apply ends before its timeout.
		untilDeadline bool
		// holdStop: this service's stops last until the apply has ended, when the
		// row ends the stop (EndStopNow): a stop slower than any deadline by
		// construction, where a timer would make the row wait its length.
		holdStop string
		// divide: the provider's fixed protocol waits divided by this
		// (cliWork.divideTimes), for a row that waits one of them out.
		divide int
		// deadlines: the apply's deadline divided by this (cliWork.divideDeadlines),
		// for a row whose fault outlasts it: met after 20 s of a 1m timeout with 3.
		deadlines int
		// sqlLogins: the provider's SQL Server login wait divided by this
		// (cliWork.divideSQLLogins), for a row whose every SQL check waits it out.
		sqlLogins int
		// restartOps: how many restart_instance requests the host must have seen
		// by the end of the apply (0: not checked).
		restartOps int
		gotApply   time.Duration
		gotResult  string
		gotPlan    string
	}
	rows := []*row{
		{name: "the Engine will not start (1067)", engineUp: false,
			actions: []winsim.Action{{Action: winsim.ActionFailStart, Service: "MSSQLSERVER", Code: 1067, Times: -1}},
			wantErr: `(?s)did not start after 3 attempts.*Windows error 1067.*17058`},
		{name: "two failed starts, then the Engine starts", engineUp: true,
			actions: []winsim.Action{{Action: winsim.ActionFailStart, Service: "MSSQLSERVER", Code: 1069, Times: 2}}},
		{name: "one reset of restart_instance's answer", engineUp: true, stopMS: 1500,
			actions: []winsim.Action{{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{Fault: winsim.FaultReset, Request: "Receive", Operation: "restart_instance"}}}},
		{name: "every answer of restart_instance reset", engineUp: true, stopMS: 1500,
			actions: []winsim.Action{{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{Fault: winsim.FaultReset, Request: "Receive", Operation: "restart_instance", Count: -1}}}},
		{name: "reset when the Engine is Stop Pending", engineUp: true, stopMS: 3000,
			actions: []winsim.Action{{Action: winsim.ActionWinRMFault, Service: "MSSQLSERVER",
				WinRMFault: winsim.WinRMFault{Fault: winsim.FaultReset, State: contract.StateStopPending, Count: -1}}}},
		{name: "connections refused for 8 s from Stop Pending", engineUp: true, untilDeadline: true, stopMS: 1500,
			actions: []winsim.Action{refuseFromStopPending(8 * time.Second)}},
		{name: "connections refused for 20 s from Stop Pending", engineUp: true, untilDeadline: true, stopMS: 1500,
			actions: []winsim.Action{refuseFromStopPending(20 * time.Second)}},
		// The refusal outlasts the deadline and the read back after it (20 s): with
		// the deadline divided by 3 as with the full minute.
		{name: "connections refused for 100 s from Stop Pending", engineUp: true, untilDeadline: true, stopMS: 1500, deadlines: 3,
			actions: []winsim.Action{refuseFromStopPending(100 * time.Second)},
			wantErr: `(?s)was not seen to finish.*connection refused`},
		// restart_status's 500 is the network's (transient): it is asked until the
		// deadline (divided by 3).
		{name: "answer lost, then HTTP 500 on restart_status", engineUp: true, untilDeadline: true, stopMS: 1500, deadlines: 3,
			actions: []winsim.Action{
				{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{Fault: winsim.FaultReset, Request: "Receive", Operation: "restart_instance", Count: -1}},
				{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{Fault: winsim.FaultHTTP500, Operation: "restart_status", Count: -1}},
			},
			wantWarn: `The apply hit an error, but the host converged`},
		{name: "answer lost, then HTTP 401 on restart_status", engineUp: true, stopMS: 1500,
			actions: []winsim.Action{
				{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{Fault: winsim.FaultReset, Request: "Receive", Operation: "restart_instance", Count: -1}},
				{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{Fault: winsim.FaultHTTP401, Operation: "restart_status", Count: -1}},
			},
			wantWarn: `The apply hit an error, but the host converged`},
		{name: "HTTP 500 on every read", engineUp: true,
			actions: []winsim.Action{
				{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{Fault: winsim.FaultHTTP500, Request: "Receive", Operation: "read_host", Count: -1}},
				{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{Fault: winsim.FaultHTTP500, Request: "Receive", Operation: "read_instance", Count: -1}},
			},
			wantErr: `(?s)HTTP 500.*after 3 attempts`},
		{name: "HTTP 500 on every Send", engineUp: true,
			actions: []winsim.Action{{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{Fault: winsim.FaultHTTP500, Request: "Send", Count: -1}}},
			wantErr: `(?s)HTTP 500.*after 3 attempts`},
		{name: "HTTP 500 on the Send of restart_instance", engineUp: true,
			actions: []winsim.Action{{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{Fault: winsim.FaultHTTP500, Request: "Send", Operation: "restart_instance", Count: -1}}},
			wantErr: `(?s)restart.*HTTP 500`},
		// A configured sql block that cannot reach SQL Server cannot tell whether a
		// backup runs: the restart is refused, nothing changes, and the warning names
		// the port (the restart gate, issue 23). The next apply refuses again: the
		// configuration is wrong, not the host.
		{name: "a wrong sql_port (nothing listens there)", engineUp: true, untilDeadline: true, wrongPort: true,
			wantErr:  `(?s)^Running backups unknown: refusing to restart.*sql block is configured.*Nothing was changed`,
			wantWarn: `^IFI could not be verified through SQL Server$`, warnDetail: `(?s)at [0-9.]+:\d+ failed.*connection refused.*set the resource's sql_port`},
		// The create's plan asks SQL Server too (ifi.Predict): a login's wait (10 s) more against a port that never
		// answers TDS. Every check waits the login out: the row divides that wait by 5 (2 s), the same sequence.
		{name: "a wrong sql_port that answers HTTP, not TDS", engineUp: true, httpPort: true, timeout: 3 * time.Minute, sqlLogins: 5,
			wantErr:  `(?s)^Running backups unknown: refusing to restart.*Nothing was changed`,
			wantWarn: `^IFI could not be verified through SQL Server$`, warnDetail: `(?s)at [0-9.]+:\d+ failed.*sql_port`},
		// The plan's SQL check meets the three drops and predicts a refusal; the
		// apply's reads SQL Server and would restart: it refuses to do what the plan
		// did not say, and changes nothing. With the drops over, the next plan
		// grants and restarts.
		{name: "TDS connections dropped after login (3 times)", engineUp: true,
			actions: []winsim.Action{{Action: winsim.ActionTDSDrop, Instance: "MSSQLSERVER", Times: 3}},
			wantErr: `(?s)changed since the plan: apply would grant_and_restart, the plan said refuse.*Nothing was changed`},
		// The gated restart's first answer (its prepared line) hangs: after 90 s (a
		// powershell.exe start, its checks and the guard's start, at most 30 s for each
		// of its two launchers) it is abandoned, having changed nothing, and sent again
		// ungated, which goes: within a create timeout of 2 m. The row plays it with
		// the waits divided by 10: abandoned after 9 s, the host's go line wait 3 s.
		{name: "a hung answer to restart_instance", engineUp: true, untilDeadline: true, stopMS: 1500, timeout: 2 * time.Minute, divide: 10, restartOps: 2,
			actions: []winsim.Action{{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{Fault: winsim.FaultHang, Request: "Receive", Operation: "restart_instance"}}}},
		{name: "slow replies (1 s each)", engineUp: true, untilDeadline: true,
			actions: []winsim.Action{{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{Fault: winsim.FaultSlow, DelayMS: 1000, Count: -1}}}},
		// The stop lasts until the apply ended (holdStop): longer than the restart's deadline (about 30 s).
		{name: "a stop slower than the restart's deadline", engineUp: true, untilDeadline: true, holdStop: "MSSQLSERVER",
			wantErr: `(?s)did not stop within \d+ seconds.*starts it again as soon as it has stopped`},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			w := newCLI(t)
			if r.divide != 0 {
				w.divideTimes(r.divide)
			}
			if r.deadlines != 0 {
				w.divideDeadlines(r.deadlines)
			}
			if r.sqlLogins != 0 {
				w.divideSQLLogins(r.sqlLogins)
			}
			stop := r.stopMS
			if stop == 0 {
				stop = 100
			}
			e := startSim(t, func(hc *host.HostConfig) { hc.Instances[0].StartMS, hc.Instances[0].StopMS = 100, stop })
			for _, a := range r.actions {
				if err := e.sim.Do(e.name, a); err != nil {
					t.Fatalf("injecting %+v: %v", a, err)
				}
			}
			if r.holdStop != "" {
				if err := e.host().SetStopDuration(r.holdStop, time.Hour); err != nil {
					t.Fatal(err)
				}
			}
			timeout := createTimeout
			if r.timeout != 0 {
				timeout = r.timeout
			}
			extra := fmt.Sprintf("timeouts {\n    create = %q\n  }", timeout)
			switch {
			case r.wrongPort:
				extra += fmt.Sprintf("\n  sql_port = %d", freePort(t, e.addr))
			case r.httpPort:
				extra += fmt.Sprintf("\n  sql_port = %d", e.httpPort)
			}
			w.write(e.providerConfig(true) + resourceConfig(e.addr, extra))
			ap := w.apply()
			r.gotApply = ap.Duration
			deadline := timeout
			if r.deadlines != 0 {
				deadline /= time.Duration(r.deadlines)
			}
			wantApplyEnds(t, ap, deadline, r.untilDeadline)
			if ops := e.operations(); r.restartOps != 0 && countOp(ops, contract.OpRestartInstance) != r.restartOps {
				t.Errorf("the host saw operations %v; want %d of %s", ops, r.restartOps, contract.OpRestartInstance)
			}
			if r.holdStop != "" {
				// The apply ended while the stop was still pending; now it ends.
				if err := e.host().EndStopNow(r.holdStop); err != nil {
					t.Errorf("the held stop of %s: %v", r.holdStop, err)
				}
			}
			if r.wantErr == "" {
				r.gotResult = "applied"
				if ap.Exit != 0 {
					t.Fatalf("apply failed (exit %d):\n%s", ap.Exit, ap.describe())
				}
			} else {
				errs := ap.errors()
				r.gotResult = "failed"
				if ap.Exit == 0 || len(errs) == 0 {
					t.Fatalf("the apply succeeded; want an error matching %s:\n%s", r.wantErr, ap.describe())
				}
				re := regexp.MustCompile(r.wantErr)
				found := false
				for _, d := range errs {
					if re.MatchString(d.Summary + ": " + d.Detail) {
						found = true
						r.gotResult = "failed: " + d.Summary
					}
				}
				if !found {
					t.Errorf("no error diagnostic matches %s:\n%s", r.wantErr, ap.describe())
				}
			}
			if r.wantWarn != "" {
				if len(ap.find("warning", r.wantWarn, r.warnDetail)) == 0 {
					t.Errorf("no warning matching %s (detail %s):\n%s", r.wantWarn, r.warnDetail, ap.describe())
				} else {
					r.gotResult += " with a warning"
				}
			}
			// The state says what the host has: a change sent is recorded (null where
			// unknown), and what it records is the host's.
			a := w.attrs()
			t.Logf("host operations: %v", e.operations())
			if a == nil && e.holds(defaultSvcSID) {
				t.Errorf("the host holds the grant the apply made, but the resource is not in the state")
			}
			if g, ok := a["privilege_granted"].(bool); ok && g != e.holds(defaultSvcSID) {
				t.Errorf("state privilege_granted %v, the host holds the grant: %v", g, e.holds(defaultSvcSID))
			}
			// With the faults cleared, the Engine and its dependents end Running.
			if err := e.sim.Do(e.name, winsim.Action{Action: winsim.ActionClearFaults}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if r.engineUp {
				for _, svc := range []string{"MSSQLSERVER", "SQLSERVERAGENT"} {
					if err := e.host().WaitServiceState(ctx, svc, contract.StateRunning); err != nil {
						t.Errorf("%s is not Running at the end: %v", svc, err)
					}
				}
			} else if st, _ := e.host().ServiceState("MSSQLSERVER"); st == contract.StateRunning {
				t.Errorf("the Engine runs although its starts fail")
			}
			// The next plan is empty, an update in place, or (after a failed create)
			// a replace that says it needs no restart.
			p := w.plan()
			if p.Exit == 1 {
				t.Errorf("the next plan failed:\n%s", p.describe())
			}
			r.gotPlan = checkNextPlan(t, p, r.engineUp, a == nil && !e.holds(defaultSvcSID))
			// The next apply finishes without a second restart, and leaves nothing to
			// do; with a sql_port that stays wrong it refuses again, changing nothing.
			if r.wrongPort || r.httpPort {
				if ap := w.apply(); ap.Exit == 0 {
					t.Errorf("the next apply with the wrong sql_port succeeded:\n%s", ap.describe())
				}
				if e.holds(defaultSvcSID) || e.stops("MSSQLSERVER") != 0 {
					t.Errorf("the refused applies changed the host: grant held %v, Engine stops %d", e.holds(defaultSvcSID), e.stops("MSSQLSERVER"))
				}
			} else if r.engineUp {
				if ap := w.apply(); ap.Exit != 0 {
					t.Errorf("the next apply failed:\n%s", ap.describe())
				}
				if p := w.plan(); p.Exit != 0 {
					t.Errorf("the plan after the next apply is not empty (exit %d): changes %v\n%s", p.Exit, p.Changes, p.describe())
				}
			}
			if n := e.stops("MSSQLSERVER"); n > 1 {
				t.Errorf("the Engine was stopped %d times; want at most one restart", n)
			}
		})
	}
	t.Cleanup(func() {
		var sb strings.Builder
		fmt.Fprintf(&sb, "\n%-48s | %-8s | %-40s | %s\n", "fault", "apply", "result", "next plan")
		for _, r := range rows {
			fmt.Fprintf(&sb, "%-48s | %-8s | %-40s | %s\n", r.name, r.gotApply.Round(time.Second), r.gotResult, r.gotPlan)
		}
		t.Log(sb.String())
	})
}

// wantApplyEnds is the fault matrix's deadline check: every wait has a deadline.
// It asserts the order of events, never a length of time: a row whose fault does
// not outlast the deadline (untilDeadline false) must end before its timeout, since
// an apply that waited for its deadline would have taken at least that long (a
// machine so slow that the apply's own steps took the whole timeout would have met
// the deadline inside the provider too). A wait without a deadline (a hang) is the
// harness's to catch: it kills a terraform run after cliRunLimit and fails the test.
// How long the apply took past its timeout is logged, not judged: make test runs
// many terraform processes side by side on two cores, and every step slows with them.
func wantApplyEnds(t *testing.T, ap *tfRun, timeout time.Duration, untilDeadline bool) {
	t.Helper()
	took := ap.Duration.Round(time.Second)
	switch {
	case !untilDeadline && ap.Duration >= timeout:
		t.Errorf("terraform %s took %s, its whole timeout %s: it waited for its deadline, though the row's fault does not outlast it",
			strings.Join(ap.Args, " "), took, timeout)
	case ap.Duration > timeout:
		t.Logf("terraform %s took %s, %s past its timeout %s (the read back after a failed step, and the machine's load)",
			strings.Join(ap.Args, " "), took, (ap.Duration - timeout).Round(time.Second), timeout)
	}
}

// refuseFromStopPending is the fault "the host's WinRM listeners refuse connections
// for d, from when the Engine is Stop Pending".
func refuseFromStopPending(d time.Duration) winsim.Action {
	return winsim.Action{Action: winsim.ActionWinRMFault, Service: "MSSQLSERVER",
		WinRMFault: winsim.WinRMFault{Fault: winsim.FaultRefuse, State: contract.StateStopPending, DurationMS: int(d / time.Millisecond)}}
}

// checkNextPlan fails unless the plan after a faulted apply is empty, an update in
// place, or a replace (of a create that failed) whose warning says whether it
// restarts SQL Server, or a create when nothing was changed (unchanged); it
// returns what the plan was.
func checkNextPlan(t *testing.T, p *tfRun, engineUp, unchanged bool) string {
	t.Helper()
	if len(p.Changes) == 0 {
		return "empty"
	}
	var kinds []string
	for _, c := range p.Changes {
		kinds = append(kinds, c.Action)
		switch c.Action {
		case "update":
		case "create":
			if !unchanged {
				t.Errorf("the next plan creates %s again although the failed apply changed the host:\n%s", c.Addr, p.describe())
			}
		case "replace":
			// The refresh says whether the replace restarts SQL Server; it may only when
			// the failed apply never restarted it (the Engine stops at most once in all).
			if engineUp && len(p.find("warning", `^Failed create of .*: its replace (needs no restart|restarts SQL Server)`, "untaint")) == 0 {
				t.Errorf("the next plan replaces %s without saying whether it restarts SQL Server:\n%s", c.Addr, p.describe())
			}
		default:
			t.Errorf("the next plan would %s %s; want no change, an update in place, or a replace that needs no restart:\n%s",
				c.Action, c.Addr, p.describe())
		}
	}
	return strings.Join(kinds, ", ")
}
