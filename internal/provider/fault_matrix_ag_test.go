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

// The fault matrix's rows about restart safety (issue 14): availability-group
// primaries, replicas of one group and running backups. Each row creates the
// resource with restart = "never" (the grant, no restart), then asks for a restart
// and checks five things: the Engine and its dependents end Running, the apply ends
// (wantApplyEnds), the state matches the host, the next plan is empty or
// an update in place, and nothing restarts twice.

const agRowTimeout = time.Minute

// agRowConfig is the resource on e's host with restart and the row's timeout; the
// WinRM port is given when it is not the provider's.
func agRowConfig(e *accEnv, restart string, portOverride bool) string {
	extra := fmt.Sprintf("  restart = %q\n  timeouts {\n    update = %q\n  }", restart, agRowTimeout)
	if portOverride {
		extra += fmt.Sprintf("\n  port = %d", e.httpsPort)
	}
	return resourceConfig(e.addr, extra)
}

// agFiveChecks checks what every row checks after the apply under test ap, for the
// host e whose Engine had started at before; restarts is how many restarts the
// operations since opsBefore may hold.
func agFiveChecks(t *testing.T, w *cliWork, e *accEnv, ap *tfRun, before time.Time, opsBefore, restarts int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, svc := range []string{"MSSQLSERVER", contract.DefaultAgentService} {
		if err := e.host().WaitServiceState(ctx, svc, contract.StateRunning); err != nil {
			t.Errorf("%s is not Running at the end: %v", svc, err)
		}
	}
	wantApplyEnds(t, ap, agRowTimeout, true)
	wantStateOfHostAndPlanInPlace(t, w, e, defaultSvcSID, "")
	ops := e.opsSince(opsBefore)
	if n := countOp(ops, contract.OpRestartInstance); n > restarts {
		t.Errorf("%d restarts (operations %v), want at most %d", n, ops, restarts)
	}
	if restarts == 0 && !e.engineStart().Equal(before) {
		t.Errorf("the Engine restarted: started %v, was %v", e.engineStart(), before)
	}
}

func TestCLI_faultMatrixAG(t *testing.T) {
	t.Parallel()
	primary := func(clusterType string) func(*host.HostConfig) {
		return func(hc *host.HostConfig) {
			hc.Instances[0].StartMS, hc.Instances[0].StopMS = 100, 100
			hc.Instances[0].AvailabilityGroup = &host.AvailabilityGroupConfig{Name: "AG1", Role: host.AGRolePrimary, ClusterType: clusterType}
		}
	}
	for _, r := range []struct {
		name     string
		mod      func(*host.HostConfig)
		withSQL  bool
		before   []winsim.Action // after the create, before the apply under test
		restart  string
		planWarn string // a warning the plan gives before the apply (summary regexp)
		wantErr  string // the apply's error (summary: detail regexp)
	}{
		{name: "a login that cannot see catalog views", mod: primary(host.ClusterTypeNone), withSQL: true, restart: "if_needed",
			planWarn: `^instance MSSQLSERVER on 127\.[0-9.]+: apply will refuse: Primary availability replica: refusing to restart it$`,
			wantErr:  `(?s)^Primary availability replica: refusing to restart it: .*AG1 \(per SQL Server.*Nothing was changed`},
		{name: "a primary with no sql block (cluster type NONE)", mod: primary(host.ClusterTypeNone), restart: "if_needed",
			planWarn: `^instance MSSQLSERVER on 127\.[0-9.]+: apply will refuse: Availability group role unknown: refusing to restart`,
			wantErr:  `(?s)^Availability group role unknown: refusing to restart instance MSSQLSERVER on 127\.[0-9.]+: .*HADR_Enabled is 1.*sql block.*VIEW SERVER STATE.*if_needed_including_primary`},
		{name: "a primary with no sql block (WSFC)", mod: primary(""), restart: "if_needed",
			planWarn: `^instance MSSQLSERVER on 127\.[0-9.]+: apply will refuse: Primary availability replica`,
			wantErr:  `(?s)^Primary availability replica: refusing to restart it: .*AG1 \(per the failover cluster`},
		{name: "a backup running", mod: func(hc *host.HostConfig) { hc.Instances[0].StartMS, hc.Instances[0].StopMS = 100, 100 },
			withSQL: true, restart: "if_needed",
			before:   []winsim.Action{{Action: winsim.ActionStartBackup, Instance: "MSSQLSERVER"}},
			planWarn: `^instance MSSQLSERVER on 127\.[0-9.]+: apply will refuse: Backup or restore running`,
			wantErr:  `(?s)^Backup or restore running: refusing to restart instance MSSQLSERVER on .*BACKUP DATABASE \(session \d+\).*Nothing was changed`},
		{name: "a backup the sql login cannot see", mod: func(hc *host.HostConfig) {
			hc.Instances[0].StartMS, hc.Instances[0].StopMS = 100, 100
			hc.Instances[0].Logins[0].ViewServerState = boolPtr(false)
		}, withSQL: true, restart: "if_needed",
			before:   []winsim.Action{{Action: winsim.ActionStartBackup, Instance: "MSSQLSERVER"}},
			planWarn: `^instance MSSQLSERVER on 127\.[0-9.]+: apply will refuse: Running backups unknown`,
			wantErr:  `(?s)^Running backups unknown: refusing to restart instance MSSQLSERVER on .*sql block is configured.*VIEW SERVER STATE.*Nothing was changed`},
	} {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			w := newCLI(t)
			e := startSim(t, r.mod)
			w.write(e.providerConfig(r.withSQL) + agRowConfig(e, "never", false))
			w.mustApply()
			for _, a := range r.before {
				if err := e.sim.Do(e.name, a); err != nil {
					t.Fatalf("%+v: %v", a, err)
				}
			}
			before, opsBefore := e.engineStart(), len(e.operations())
			w.write(e.providerConfig(r.withSQL) + agRowConfig(e, r.restart, false))
			ap := w.apply()
			if ap.Exit == 0 {
				t.Fatalf("the apply restarted:\n%s", ap.describe())
			}
			re := regexp.MustCompile(r.wantErr)
			if errs := ap.errors(); len(errs) != 1 || !re.MatchString(errs[0].Summary+": "+errs[0].Detail) {
				t.Errorf("errors %v, want one matching %s", errs, r.wantErr)
			}
			if r.planWarn != "" && len(ap.find("warning", r.planWarn, "")) == 0 {
				t.Errorf("no plan warning matching %s:\n%s", r.planWarn, ap.describe())
			}
			agFiveChecks(t, w, e, ap, before, opsBefore, 0)
		})
	}
}

// Two runs restart two replicas of one group: the first restarts the secondary;
// the second, on the primary (opted in), sees that secondary down or catching up
// and refuses, changing nothing. The first ends as usual.
func TestCLI_faultMatrixAG_twoRunsOneGroup(t *testing.T) {
	t.Parallel()
	envs := startAGPair(t)
	prim, sec := envs[0], envs[1]

	wSec, wPrim := newCLI(t), newCLI(t)
	wSec.write(prim.providerConfig(true) + withReplicaAddresses(agRowConfig(sec, "never", true), prim))
	wSec.mustApply()
	wPrim.write(prim.providerConfig(true) + agRowConfig(prim, "never", false))
	wPrim.mustApply()

	secBefore, secOps := sec.engineStart(), len(sec.operations())
	primBefore, primOps := prim.engineStart(), len(prim.operations())
	wSec.write(prim.providerConfig(true) + withReplicaAddresses(agRowConfig(sec, "if_needed", true), prim))
	first := make(chan *tfRun, 1)
	go func() { first <- wSec.apply() }()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := sec.host().WaitServiceState(ctx, "MSSQLSERVER", contract.StateStopPending); err != nil {
		t.Fatalf("the first run did not stop the secondary: %v", err)
	}
	wPrim.write(prim.providerConfig(true) + agRowConfig(prim, "if_needed_including_primary", false))
	second := wPrim.apply()
	if second.Exit == 0 {
		t.Errorf("the second run restarted the primary while its secondary was down:\n%s", second.describe())
	}
	second.wantDiag(t, "error", `^Availability group not healthy: refusing to restart instance MSSQLSERVER on `,
		`(?s)SQL\d+ of AG1: NOT_HEALTHY, (DISCONNECTED|CONNECTED).*Nothing was changed`)
	// The secondary catches up for a minute after its start (startAGPair), longer
	// than the second run by construction; with that run seen, it has caught up: the
	// first run, waiting for the group to be healthy again, ends.
	if err := sec.host().WaitServiceState(ctx, "MSSQLSERVER", contract.StateRunning); err != nil {
		t.Fatalf("the first run did not start the secondary again: %v", err)
	}
	if err := sec.host().EndAGSyncNow("MSSQLSERVER"); err != nil {
		t.Errorf("ending the secondary's catching up: %v", err)
	}
	ap := <-first
	if ap.Exit != 0 {
		t.Fatalf("the first run failed:\n%s", ap.describe())
	}
	agFiveChecks(t, wSec, sec, ap, secBefore, secOps, 1)
	agFiveChecks(t, wPrim, prim, second, primBefore, primOps, 0)
}

// startAGPair starts one simulator with two hosts: the primary replica of AG1 and
// its secondary, which catches up for a minute after each start.
func startAGPair(t *testing.T) []*accEnv {
	t.Helper()
	var hcs []host.HostConfig
	for i, role := range []string{host.AGRolePrimary, host.AGRoleSecondary} {
		n := nextAddr.Add(1)
		hc := defaultHostConfig(fmt.Sprintf("sql%02d", n), fmt.Sprintf("127.0.0.%d", 10+n))
		in := &hc.Instances[0]
		in.StartMS, in.StopMS = 100, 100
		if i == 1 {
			in.StopMS, in.AGSyncMS = 2000, 60000
		}
		in.AvailabilityGroup = &host.AvailabilityGroupConfig{Name: "AG1", Role: role}
		hcs = append(hcs, hc)
	}
	return startHosts(t, hcs)
}

func boolPtr(b bool) *bool { return &b }

// withReplicaAddresses adds availability_replica_addresses to a resource block,
// mapping each primary's replica name (its computer name: the default instance) to
// the simulator's SQL address of it.
func withReplicaAddresses(resourceBlock string, prims ...*accEnv) string {
	var lines []string
	for _, p := range prims {
		for _, hi := range p.sim.Info().Hosts {
			if strings.EqualFold(hi.Name, p.name) && len(hi.Instances) > 0 {
				lines = append(lines, fmt.Sprintf("    %q = %q", hi.Name, hi.Instances[0].SQL))
			}
		}
	}
	attr := "  availability_replica_addresses = {\n" + strings.Join(lines, "\n") + "\n  }\n}"
	i := strings.LastIndex(resourceBlock, "}")
	return resourceBlock[:i] + attr + resourceBlock[i+1:]
}

// downIntervals are the spans in which the Engine of e was not Running, from its
// service history (the simulator's own record, not the test's guess).
func downIntervals(e *accEnv, after time.Time) [][2]time.Time {
	var out [][2]time.Time
	var since time.Time
	for _, ev := range e.host().ServiceHistory("MSSQLSERVER") {
		if ev.At.Before(after) {
			continue
		}
		switch {
		case ev.State != contract.StateRunning && since.IsZero():
			since = ev.At
		case ev.State == contract.StateRunning && !since.IsZero():
			out = append(out, [2]time.Time{since, ev.At})
			since = time.Time{}
		}
	}
	if !since.IsZero() {
		out = append(out, [2]time.Time{since, time.Now().Add(time.Hour)})
	}
	return out
}

// Two working directories (two states), each managing one secondary of the same
// three-replica group, apply together: one restarts its secondary under the
// group's lock on the primary, the other refuses naming the group and the replica
// being restarted, and at no time are two replicas down.
func TestCLI_faultMatrixAG_twoStatesOneGroup(t *testing.T) {
	t.Parallel()
	var hcs []host.HostConfig
	for i, role := range []string{host.AGRolePrimary, host.AGRoleSecondary, host.AGRoleSecondary} {
		n := nextAddr.Add(1)
		hc := defaultHostConfig(fmt.Sprintf("sql%02d", n), fmt.Sprintf("127.0.0.%d", 10+n))
		in := &hc.Instances[0]
		in.StartMS, in.StopMS = 100, 100
		if i > 0 {
			in.StopMS, in.AGSyncMS = 1500, 1500 // a secondary catches up for a moment after its start
		}
		in.AvailabilityGroup = &host.AvailabilityGroupConfig{Name: "AG1", Role: role}
		hcs = append(hcs, hc)
	}
	envs := startHosts(t, hcs)
	prim, secs := envs[0], envs[1:]
	var ws []*cliWork
	for _, sec := range secs {
		w := newCLI(t)
		w.write(prim.providerConfig(true) + withReplicaAddresses(agRowConfig(sec, "never", true), prim))
		w.mustApply()
		ws = append(ws, w)
	}
	for i, sec := range secs {
		ws[i].write(prim.providerConfig(true) + withReplicaAddresses(agRowConfig(sec, "if_needed", true), prim))
	}
	start := time.Now()
	runs := make([]chan *tfRun, len(ws))
	for i := range ws {
		runs[i] = make(chan *tfRun, 1)
		go func(i int) { runs[i] <- ws[i].apply() }(i)
	}
	var ok, refused []int
	results := make([]*tfRun, len(ws))
	for i := range ws {
		results[i] = <-runs[i]
		if results[i].Exit == 0 {
			ok = append(ok, i)
		} else {
			refused = append(refused, i)
		}
	}
	if len(ok) != 1 || len(refused) != 1 {
		for _, r := range results {
			t.Log(r.describe())
		}
		t.Fatalf("%d applies succeeded and %d refused, want one of each", len(ok), len(refused))
	}
	restarted, other := secs[ok[0]], results[refused[0]]
	// The refusal names the group and the replica being restarted: the lock's
	// refusal, or (when it came after the stop) the primary's view of that replica.
	name := strings.ToUpper(restarted.name)
	other.wantDiag(t, "error", `^Availability group (AG1 is restarting another replica|not healthy): refusing to restart instance MSSQLSERVER on `,
		`(?is)(its replica `+name+`|`+name+` of AG1: NOT_HEALTHY).*Nothing was`)
	a, b := downIntervals(secs[0], start), downIntervals(secs[1], start)
	if len(a)+len(b) != 1 {
		t.Errorf("down intervals %v and %v, want exactly one restart", a, b)
	}
	for _, x := range a {
		for _, y := range b {
			if x[0].Before(y[1]) && y[0].Before(x[1]) {
				t.Errorf("two replicas were down at once: %v and %v", x, y)
			}
		}
	}
}

// The group fails over while the run restarts one of its secondaries (issue 37):
// the primary whose restart lock the run holds becomes a secondary. The run stops
// waiting on it as soon as the replica is back (seconds, not the update timeout
// that a wait for a HEALTHY it could never see would take), says that the group
// failed over and which replica is its primary now, and ends as every row does.
func TestCLI_faultMatrixAG_failoverDuringRestart(t *testing.T) {
	t.Parallel()
	var hcs []host.HostConfig
	for i, role := range []string{host.AGRolePrimary, host.AGRoleSecondary, host.AGRoleSecondary} {
		n := nextAddr.Add(1)
		hc := defaultHostConfig(fmt.Sprintf("sql%02d", n), fmt.Sprintf("127.0.0.%d", 10+n))
		in := &hc.Instances[0]
		in.StartMS, in.StopMS = 100, 100
		if i == 1 {
			in.StopMS, in.AGSyncMS = 1500, 1500 // the restarted one: stops slowly enough to fail over meanwhile
		}
		in.AvailabilityGroup = &host.AvailabilityGroupConfig{Name: "AG1", Role: role}
		hcs = append(hcs, hc)
	}
	envs := startHosts(t, hcs)
	prim, sec, next := envs[0], envs[1], envs[2]
	config := func(restart string) string {
		return prim.providerConfig(true) + withReplicaAddresses(agRowConfig(sec, restart, true), prim, next)
	}
	w := newCLI(t)
	w.write(config("never"))
	w.mustApply()
	before, opsBefore := sec.engineStart(), len(sec.operations())
	w.write(config("if_needed"))
	done := make(chan *tfRun, 1)
	go func() { done <- w.apply() }()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := sec.host().WaitServiceState(ctx, "MSSQLSERVER", contract.StateStopPending); err != nil {
		t.Fatalf("the run did not stop the secondary: %v", err)
	}
	// The failover: the old primary steps down, then the other secondary takes the
	// role (a moment with no primary between, as a failover's RESOLVING).
	for _, step := range []struct {
		e    *accEnv
		role string
	}{{prim, host.AGRoleSecondary}, {next, host.AGRolePrimary}} {
		if err := step.e.sim.Do(step.e.name, winsim.Action{Action: winsim.ActionSetAGRole, Instance: "MSSQLSERVER", Role: step.role}); err != nil {
			t.Fatalf("failover, %s to %s: %v", step.e.name, step.role, err)
		}
	}
	ap := <-done
	ended := time.Now()
	if ap.Exit != 0 {
		t.Fatalf("the apply failed:\n%s", ap.describe())
	}
	var running time.Time
	for _, ev := range sec.host().ServiceHistory("MSSQLSERVER") {
		if ev.State == contract.StateRunning {
			running = ev.At
		}
	}
	if after := ended.Sub(running); running.Before(before) || after > 20*time.Second {
		t.Errorf("the apply ended %s after the secondary was Running again (at %v): want seconds, not its %s timeout", after.Round(time.Second), running, agRowTimeout)
	}
	ap.wantDiag(t, "warning", `Availability group failed over during the restart`,
		`(?s)AG1 failed over meanwhile: .*`+strings.ToUpper(next.name)+` as the primary now`)
	agFiveChecks(t, w, sec, ap, before, opsBefore, 1)
}
