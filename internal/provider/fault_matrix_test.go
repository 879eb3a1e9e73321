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

// The fault matrix (issue 8): each fault is injected through the simulator's control
// API, then a real terraform apply runs. Each row checks that the apply ends within
// its timeout (plus 30 s) with a diagnostic naming the cause, that the state says
// what the host has (the next plan runs and privilege_granted is the host's), and
// that the Engine runs at the end unless the fault was that it will not start.
func TestCLI_faultMatrix(t *testing.T) {
	t.Parallel()
	const createTimeout = time.Minute
	type row struct {
		name      string
		actions   []winsim.Action
		wantErr   string // regexp on the error diagnostics; "" : the apply succeeds
		wantWarn  string // regexp on a warning the apply must give; "": none needed
		stopMS    int    // the Engine's stop duration (default 100 ms)
		wrongPort bool   // sql_port is a port where nothing listens
		engineUp  bool
		maxApply  time.Duration
		gotApply  time.Duration
		gotResult string
	}
	rows := []*row{
		{name: "the Engine will not start (1067)", engineUp: false, maxApply: 30 * time.Second,
			actions: []winsim.Action{{Action: winsim.ActionFailStart, Service: "MSSQLSERVER", Code: 1067, Times: -1}},
			wantErr: `(?s)did not start after 3 attempts.*Windows error 1067.*17058`},
		{name: "two failed starts, then the Engine starts", engineUp: true, maxApply: 45 * time.Second,
			actions: []winsim.Action{{Action: winsim.ActionFailStart, Service: "MSSQLSERVER", Code: 1069, Times: 2}}},
		{name: "one reset of restart_instance's answer", engineUp: true, maxApply: 30 * time.Second, stopMS: 1500,
			actions: []winsim.Action{{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{Fault: winsim.FaultReset, Request: "Receive", Operation: "restart_instance"}}}},
		{name: "every answer of restart_instance reset", engineUp: true, maxApply: 30 * time.Second, stopMS: 1500,
			actions: []winsim.Action{{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{Fault: winsim.FaultReset, Request: "Receive", Operation: "restart_instance", Count: -1}}}},
		{name: "reset when the Engine is Stop Pending", engineUp: true, maxApply: 30 * time.Second, stopMS: 3000,
			actions: []winsim.Action{{Action: winsim.ActionWinRMFault, Service: "MSSQLSERVER",
				WinRMFault: winsim.WinRMFault{Fault: winsim.FaultReset, State: contract.StateStopPending, Count: -1}}}},
		{name: "answer lost, then HTTP 500 on restart_status", engineUp: true, maxApply: 30 * time.Second, stopMS: 1500,
			actions: []winsim.Action{
				{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{Fault: winsim.FaultReset, Request: "Receive", Operation: "restart_instance", Count: -1}},
				{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{Fault: winsim.FaultHTTP500, Operation: "restart_status", Count: -1}},
			},
			wantWarn: `The apply hit an error, but the host converged`},
		{name: "answer lost, then HTTP 401 on restart_status", engineUp: true, maxApply: 30 * time.Second, stopMS: 1500,
			actions: []winsim.Action{
				{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{Fault: winsim.FaultReset, Request: "Receive", Operation: "restart_instance", Count: -1}},
				{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{Fault: winsim.FaultHTTP401, Operation: "restart_status", Count: -1}},
			},
			wantWarn: `The apply hit an error, but the host converged`},
		{name: "HTTP 500 on every read_instance", engineUp: true, maxApply: 30 * time.Second,
			actions: []winsim.Action{{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{Fault: winsim.FaultHTTP500, Request: "Receive", Operation: "read_instance", Count: -1}}},
			wantErr: `(?s)HTTP 500.*after 3 attempts`},
		{name: "HTTP 500 on every Send", engineUp: true, maxApply: 30 * time.Second,
			actions: []winsim.Action{{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{Fault: winsim.FaultHTTP500, Request: "Send", Count: -1}}},
			wantErr: `(?s)HTTP 500.*after 3 attempts`},
		{name: "HTTP 500 on the Send of restart_instance", engineUp: true, maxApply: 30 * time.Second,
			actions: []winsim.Action{{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{Fault: winsim.FaultHTTP500, Request: "Send", Operation: "restart_instance", Count: -1}}},
			wantErr: `(?s)restart.*HTTP 500`},
		{name: "a wrong sql_port (nothing listens there)", engineUp: true, maxApply: time.Minute + 15*time.Second, wrongPort: true,
			wantErr: `(?s)did not accept connections.*nothing accepts connections on port \d+`},
		{name: "TDS connections dropped after login (3 times)", engineUp: true, maxApply: 45 * time.Second,
			actions: []winsim.Action{{Action: winsim.ActionTDSDrop, Instance: "MSSQLSERVER", Times: 3}}},
		{name: "a hung answer to restart_instance", engineUp: true, maxApply: createTimeout + 30*time.Second, stopMS: 1500,
			actions:  []winsim.Action{{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{Fault: winsim.FaultHang, Request: "Receive", Operation: "restart_instance"}}},
			wantWarn: `The apply hit an error, but the host converged`},
		{name: "slow replies (1 s each)", engineUp: true, maxApply: createTimeout + 30*time.Second,
			actions: []winsim.Action{{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{Fault: winsim.FaultSlow, DelayMS: 1000, Count: -1}}}},
		{name: "a stop slower than the restart's deadline", engineUp: true, maxApply: createTimeout + 30*time.Second,
			actions: []winsim.Action{{Action: winsim.ActionSlowStop, Service: "MSSQLSERVER", StopMS: 40000}},
			wantErr: `(?s)did not stop within \d+ seconds.*starts it again as soon as it has stopped`},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			w := newCLI(t)
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
			extra := fmt.Sprintf("timeouts {\n    create = %q\n  }", createTimeout)
			if r.wrongPort {
				extra += fmt.Sprintf("\n  sql_port = %d", freePort(t, e.addr))
			}
			w.write(e.providerConfig(true) + resourceConfig(e.addr, extra))
			ap := w.apply()
			r.gotApply = ap.Duration
			if ap.Duration > r.maxApply {
				t.Errorf("the apply took %s, more than %s", ap.Duration.Round(time.Second), r.maxApply)
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
				if len(ap.find("warning", r.wantWarn, "")) == 0 {
					t.Errorf("no warning matching %s:\n%s", r.wantWarn, ap.describe())
				} else {
					r.gotResult += " with a warning"
				}
			}
			// The state says what the host has: the grant was made either way.
			a := w.attrs()
			t.Logf("host operations: %v", e.operations())
			granted, _ := a["privilege_granted"].(bool) // nil: not in the state (nothing was changed)
			if granted != e.holds(defaultSvcSID) {
				t.Errorf("state privilege_granted %v, the host holds the grant: %v", a["privilege_granted"], e.holds(defaultSvcSID))
			}
			// The next plan (with the faults cleared) runs and agrees with the host.
			if err := e.sim.Do(e.name, winsim.Action{Action: winsim.ActionClearFaults}); err != nil {
				t.Fatal(err)
			}
			p := w.plan()
			if p.Exit == 1 {
				t.Errorf("the next plan failed:\n%s", p.describe())
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := e.host().WaitServiceState(ctx, "MSSQLSERVER", contract.StateRunning)
			if r.engineUp && err != nil {
				t.Errorf("the Engine is not Running at the end: %v", err)
			}
			if !r.engineUp {
				if st, _ := e.host().ServiceState("MSSQLSERVER"); st == contract.StateRunning {
					t.Errorf("the Engine runs although its starts fail")
				}
			}
		})
	}
	t.Cleanup(func() {
		var sb strings.Builder
		fmt.Fprintf(&sb, "\n%-45s | %-8s | %s\n", "fault", "apply", "result")
		for _, r := range rows {
			fmt.Fprintf(&sb, "%-45s | %-8s | %s\n", r.name, r.gotApply.Round(time.Second), r.gotResult)
		}
		t.Log(sb.String())
	})
}
