package provider

import (
	"context"
	"fmt"
	"os/exec"
	"syscall"
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
	refused.wantDiag(t, "error", `^SQL Server ETL on 127\.[0-9.]+ was not restarted: the host's restart lease is held$`,
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

// A terraform killed between a gated restart's prepared line and its go line
// (issue 37): one run restarts two hosts with one restart slot; while host A's
// restart holds the slot (its stop held), host B's request is prepared, waiting
// for it, and terraform is killed (SIGKILL to its process group: no go line, no
// shell deleted). A's guard completes its restart; B's prepared request holds B's
// restart lease only for its go line's wait (seconds, not the update timeout),
// then nothing of it remains, and the next apply restarts B. Each host ends with
// its Engine and Agent Running, the state as the host has it, the next plan empty
// or an update in place, and no Engine stopped twice. The provider's protocol waits
// are divided by 5 (cliWork.divideTimes): the go line's wait is 6 s, not 30 s.
func TestCLI_faultMatrixKilledWhilePrepared(t *testing.T) {
	t.Parallel()
	var hcs []host.HostConfig
	for range 2 {
		n := nextAddr.Add(1)
		hc := defaultHostConfig(fmt.Sprintf("sql%02d", n), fmt.Sprintf("127.0.0.%d", 10+n))
		hc.Instances[0].StartMS, hc.Instances[0].StopMS = 100, 100
		hcs = append(hcs, hc)
	}
	envs := startHosts(t, hcs)
	const timeout = 2 * time.Minute
	config := func(restart string) string {
		cfg := withMaxParallelRestarts(envs[0].providerConfig(true), 1)
		for i, e := range envs {
			cfg += fmt.Sprintf("\nresource \"mssqlifi_instant_file_initialization\" \"h%d\" {\n  host    = %q\n  port    = %d\n  restart = %q\n"+
				"  timeouts {\n    update = %q\n  }\n}\n", i, e.addr, e.httpsPort, restart, timeout)
		}
		return cfg
	}
	w := newCLI(t)
	w.divideTimes(5)
	w.write(config("never"))
	w.mustApply()
	for _, e := range envs {
		if err := e.host().SetStopDuration("MSSQLSERVER", time.Hour); err != nil { // held until EndStopNow
			t.Fatal(err)
		}
	}
	w.write(config("if_needed"))
	var stopping, prepared *accEnv
	var killedAt time.Time
	during := func(cmd *exec.Cmd) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// Whichever host took the slot is Stop Pending; the other is prepared.
		got := make(chan int, 2)
		for i, e := range envs {
			go func() {
				if e.host().WaitServiceState(ctx, "MSSQLSERVER", contract.StateStopPending) == nil {
					got <- i
				}
			}()
		}
		select {
		case i := <-got:
			stopping, prepared = envs[i], envs[1-i]
		case <-ctx.Done():
			t.Errorf("no host was seen stopping: %v", ctx.Err())
			return
		}
		if err := prepared.host().WaitRestartPrepared(ctx, "MSSQLSERVER"); err != nil {
			t.Errorf("%s's restart was not seen prepared: %v", prepared.name, err)
			return
		}
		killedAt = time.Now()
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
			t.Errorf("killing terraform: %v", err)
		}
	}
	killed := w.runWhile(during, "apply", "-auto-approve", "-json", "-no-color")
	if stopping == nil || killedAt.IsZero() {
		t.Fatalf("the fault was not injected:\n%s", killed.describe())
	}
	if err := stopping.host().EndStopNow("MSSQLSERVER"); err != nil {
		t.Fatal(err)
	}
	// The prepared request gives the host back at its go line's wait.
	ctx, cancel := context.WithTimeout(context.Background(), timeout+30*time.Second)
	defer cancel()
	if err := prepared.host().WaitRestartLeaseFree(ctx); err != nil {
		t.Fatalf("%s's restart lease is still held: %v", prepared.name, err)
	}
	if held := time.Since(killedAt); held > 45*time.Second {
		t.Errorf("%s's prepared request held its restart lease %s after terraform was killed: want its go line's wait (seconds), not the %s timeout",
			prepared.name, held.Round(time.Second), timeout)
	}
	// The killed run's restart of the other host ends under its guard.
	if err := stopping.host().WaitRestartLeaseFree(ctx); err != nil {
		t.Fatalf("%s's restart did not end under its guard: %v", stopping.name, err)
	}
	if err := prepared.host().SetStopDuration("MSSQLSERVER", 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ap := w.apply()
	if ap.Exit != 0 {
		t.Fatalf("the apply after the kill failed:\n%s", ap.describe())
	}
	wantApplyEnds(t, ap, timeout, false)
	st := w.state()
	for i, e := range envs {
		for _, svc := range []string{"MSSQLSERVER", contract.DefaultAgentService} {
			if err := e.host().WaitServiceState(ctx, svc, contract.StateRunning); err != nil {
				t.Errorf("%s on %s is not Running at the end: %v", svc, e.name, err)
			}
		}
		a := st[fmt.Sprintf("mssqlifi_instant_file_initialization.h%d", i)]
		if granted, _ := a["privilege_granted"].(bool); granted != e.holds(defaultSvcSID) || !granted {
			t.Errorf("%s: state privilege_granted %v, the host holds the grant: %v", e.name, a["privilege_granted"], e.holds(defaultSvcSID))
		}
		if pending, _ := a["restart_pending"].(bool); pending {
			t.Errorf("%s: state restart_pending after the apply", e.name)
		}
		if n := e.stops("MSSQLSERVER"); n != 1 {
			t.Errorf("%s: the Engine stopped %d times, want once", e.name, n)
		}
	}
	p := w.plan()
	if p.Exit == 1 {
		t.Fatalf("the next plan failed:\n%s", p.describe())
	}
	t.Logf("the next plan: %s", checkNextPlan(t, p, true, false))
}
