package provider

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// The fault matrix's row about the host's restart lease (issue 14): two runs, in
// two working directories with their own states, restart two instances of one host
// at the same time. The first restarts; the second is refused before it changes
// anything, with an error naming the host, both instances and what to do; a later
// apply of the second restarts it. Each apply is held to the five checks.

const leaseRowTimeout = time.Minute

// leaseInstance is one instance of the row's host, as one run manages it.
type leaseInstance struct {
	name, engine, agent, sid string
	w                        *cliWork
}

func (li leaseInstance) config(e *accEnv, restart string) string {
	return e.providerConfig(true) + resourceConfig(e.addr, fmt.Sprintf("  instance = %q\n  restart = %q\n  timeouts {\n    update = %q\n  }",
		li.name, restart, leaseRowTimeout))
}

// leaseFiveChecks checks, after the apply ap of li's run: the Engine and its Agent
// end Running; the apply ended (wantApplyEnds); the state matches the
// host; the next plan is empty or an update in place; the Engine stopped stops times
// in all (never twice).
func leaseFiveChecks(t *testing.T, e *accEnv, li leaseInstance, ap *tfRun, stops int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, svc := range []string{li.engine, li.agent} {
		if err := e.host().WaitServiceState(ctx, svc, contract.StateRunning); err != nil {
			t.Errorf("%s is not Running at the end: %v", svc, err)
		}
	}
	wantApplyEnds(t, ap, leaseRowTimeout, true)
	a, _, _ := wantStateOfHostAndPlanInPlace(t, li.w, e, li.sid, li.name+": ")
	if pending, _ := a["restart_pending"].(bool); pending != (stops == 0) {
		t.Errorf("%s: state restart_pending %v after %d restart(s)", li.name, a["restart_pending"], stops)
	}
	if n := e.stops(li.engine); n != stops {
		t.Errorf("%s stopped %d times, want %d", li.engine, n, stops)
	}
}

func TestCLI_faultMatrixLease(t *testing.T) {
	t.Parallel()
	e := startSim(t, func(hc *host.HostConfig) {
		hc.Instances[0].StartMS, hc.Instances[0].StopMS = 100, 100
		hc.Instances = append(hc.Instances, host.InstanceConfig{Name: "ETL", StartMS: 100, StopMS: 100,
			Logins: []host.LoginConfig{{Name: accSQLUser, Password: accSQLPass}}})
	})
	first := leaseInstance{name: "MSSQLSERVER", engine: "MSSQLSERVER", agent: contract.DefaultAgentService, sid: defaultSvcSID, w: newCLI(t)}
	second := leaseInstance{name: "ETL", engine: "MSSQL$ETL", agent: contract.AgentServicePrefix + "ETL", sid: winsid.ServiceSID("MSSQL$ETL"), w: newCLI(t)}
	for _, li := range []leaseInstance{first, second} {
		li.w.write(li.config(e, "never")) // the grant, no restart
		li.w.mustApply()
	}

	// The first run's restart is held Stop Pending until the second run was refused.
	if err := e.host().SetStopDuration(first.engine, time.Hour); err != nil {
		t.Fatal(err)
	}
	first.w.write(first.config(e, "if_needed"))
	firstRun := make(chan *tfRun, 1)
	go func() { firstRun <- first.w.apply() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.host().WaitServiceState(ctx, first.engine, contract.StateStopPending); err != nil {
		t.Fatalf("the first run did not stop %s: %v", first.engine, err)
	}
	second.w.write(second.config(e, "if_needed"))
	refused := second.w.apply()
	if err := e.host().EndStopNow(first.engine); err != nil {
		t.Errorf("the first run's restart was no longer stopping when the second was answered: %v", err)
	}
	if refused.Exit == 0 {
		t.Errorf("the second run restarted ETL while MSSQLSERVER restarted:\n%s", refused.describe())
	}
	refused.wantDiag(t, "error", `^SQL Server ETL on 127\.[0-9.]+ was not restarted: another instance of the host is restarting$`,
		`(?s)restart of instance MSSQLSERVER on SQL\d+ is in progress \(since 20\d\d-.*Nothing was changed for ETL. Apply again once that restart has finished.*next plan shows`)
	ap := <-firstRun
	if ap.Exit != 0 {
		t.Fatalf("the first run failed:\n%s", ap.describe())
	}
	leaseFiveChecks(t, e, first, ap, 1)
	leaseFiveChecks(t, e, second, refused, 0)

	// Once the first restart finished, the second run's apply restarts ETL.
	again := second.w.apply()
	if again.Exit != 0 {
		t.Fatalf("the second run's later apply failed:\n%s", again.describe())
	}
	leaseFiveChecks(t, e, second, again, 1)
	if n := e.stops(first.engine); n != 1 {
		t.Errorf("%s stopped %d times, want 1", first.engine, n)
	}
}
