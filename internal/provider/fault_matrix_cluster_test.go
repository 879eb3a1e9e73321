package provider

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/wsfc"
)

// The fault matrix's rows about failover cluster instances (issue 18). Each row
// starts a two-node FCI where neither node holds the right, creates the resource
// with restart = "never" (both nodes granted, a restart pending), injects the
// fault, then applies restart = "failover" and checks: the apply ends
// (wantApplyEnds) with the diagnostic the row names; the role ends Online on the
// node the row names, with SQL Server and Agent running there; the state says what
// the owner holds and the next plan is empty or an update in place
// (wantStateOfHostAndPlanInPlace); the cluster moved the role at most as the row allows.
func TestCLI_faultMatrixCluster(t *testing.T) {
	t.Parallel()
	const timeout = time.Minute
	for _, r := range []struct {
		name    string
		fault   func(e *fciEnv)
		wantErr string // regexp on the one error's summary and detail; "": the apply succeeds
		want    string // a warning (summary regexp) the apply gives; "": none needed
		ownerAt int    // the node the role ends on
	}{
		{name: "the connection is lost mid-move", ownerAt: 1,
			fault: func(e *fciEnv) {
				if err := e.sim.Do(e.nodes[0].name, winsim.Action{Action: winsim.ActionWinRMFault,
					WinRMFault: winsim.WinRMFault{Fault: winsim.FaultReset, Request: "Receive", Operation: string(contract.OpClusterMove)}}); err != nil {
					e.t.Fatal(err)
				}
			},
			want: `^The connection was lost during the cluster action; the role was followed to Online$`},
		{name: "a move that fails back", ownerAt: 0,
			fault: func(e *fciEnv) {
				e.do(winsim.ClusterAction{Action: winsim.ActionFailMove, Role: e.role, Mode: "fail_back"})
			},
			wantErr: `(?s)^The cluster did not restart SQL Server MSSQLSERVER as asked: .*the cluster left the role "SQL Server \(MSSQLSERVER\)" Online on NODE0, not on NODE1 \(a fail back`},
		{name: "a paused node", ownerAt: 0,
			fault: func(e *fciEnv) {
				e.do(winsim.ClusterAction{Action: winsim.ActionNodeState, Node: e.nodes[1].name, State: "paused"})
			},
			wantErr: `(?s)^No node to fail instance MSSQLSERVER .* over to: .*NODE1.*paused.*Nothing was changed on any node`},
	} {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			w := newCLI(t)
			e := startFCI(t, func(_ *wsfc.ClusterConfig, hcs []host.HostConfig) { hcs[0].Rights = nil })
			w.write(e.config("never"))
			w.mustApply()
			r.fault(e)
			moves := len(e.view().Events)
			w.write(e.config("failover"))
			ap := w.apply()
			wantApplyEnds(t, ap, timeout, true)
			names := strings.NewReplacer("NODE0", regexp.QuoteMeta(e.nodeName(0)), "NODE1", regexp.QuoteMeta(e.nodeName(1)))
			if r.wantErr == "" {
				if ap.Exit != 0 {
					t.Fatalf("the apply failed:\n%s", ap.describe())
				}
			} else {
				re := regexp.MustCompile(names.Replace(r.wantErr))
				if errs := ap.errors(); len(errs) != 1 || !re.MatchString(errs[0].Summary+": "+errs[0].Detail) {
					t.Errorf("errors %v, want one matching %s", errs, re)
				}
			}
			if r.want != "" && len(ap.find("warning", r.want, "")) == 0 {
				t.Errorf("no warning matching %s:\n%s", r.want, ap.describe())
			}
			// The faults end (a paused node stays paused: that is the operator's).
			if err := e.sim.Do(e.nodes[0].name, winsim.Action{Action: winsim.ActionClearFaults}); err != nil {
				t.Fatal(err)
			}
			owner := e.nodes[r.ownerAt]
			if v := e.view(); !strings.EqualFold(v.OwnerHost, owner.name) || v.State != wsfc.GroupOnline {
				t.Errorf("the role is %s on %s; want Online on %s", v.State, v.OwnerHost, owner.name)
			} else if n := len(v.Events) - moves; n > 2 {
				t.Errorf("the cluster acted %d times on the role (%v); want at most a move and its fail back", n, v.Events[moves:])
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for _, svc := range []string{"MSSQLSERVER", contract.DefaultAgentService} {
				if err := owner.host().WaitServiceState(ctx, svc, contract.StateRunning); err != nil {
					t.Errorf("%s is not Running on the owner %s at the end: %v", svc, owner.name, err)
				}
			}
			wantStateOfHostAndPlanInPlace(t, w, owner, defaultSvcSID, "")
		})
	}
}

// A grant made on one node before the next node failed is recorded: the failed
// create leaves the resource in the state with that node's grant in
// cluster_nodes, and the next apply finishes on the other node.
func TestCLI_fciHalfDoneGrantsAreRecorded(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startFCI(t, func(_ *wsfc.ClusterConfig, hcs []host.HostConfig) { hcs[0].Rights = nil })
	if err := e.sim.Do(e.nodes[1].name, winsim.Action{Action: winsim.ActionWinRMFault,
		WinRMFault: winsim.WinRMFault{Fault: winsim.FaultHTTP500, Request: "Send", Operation: string(contract.OpSetRight), Count: -1}}); err != nil {
		t.Fatal(err)
	}
	w.write(e.config("never"))
	ap := w.apply()
	if ap.Exit == 0 {
		t.Fatalf("the apply succeeded although the second node's grant failed:\n%s", ap.describe())
	}
	ap.wantDiag(t, "error", `^Cannot grant the right on `, `HTTP 500`)
	if !e.nodes[0].holds(defaultSvcSID) || e.nodes[1].holds(defaultSvcSID) {
		t.Fatalf("want the first node granted and the second not: %v, %v", e.nodes[0].holds(defaultSvcSID), e.nodes[1].holds(defaultSvcSID))
	}
	a := w.attrs()
	if a == nil {
		t.Fatal("the half-done create is not in the state")
	}
	if n := clusterNode(t, a, e.nodeName(0)); n["privilege_granted"] != true {
		t.Errorf("cluster_nodes[%s] = %v; want the grant recorded", e.nodeName(0), n)
	}
	if n := clusterNode(t, a, e.nodeName(1)); n["privilege_granted"] != false {
		t.Errorf("cluster_nodes[%s] = %v; want no grant", e.nodeName(1), n)
	}
	if err := e.sim.Do(e.nodes[1].name, winsim.Action{Action: winsim.ActionClearFaults}); err != nil {
		t.Fatal(err)
	}
	w.mustApply()
	if !e.nodes[1].holds(defaultSvcSID) {
		t.Errorf("the next apply did not finish the grant on %s", e.nodeName(1))
	}
	w.plan().wantPlanExit(t, 0)
}

// The cluster actions' guard (issue 23): a Ctrl-C (SIGINT to terraform), a SIGKILL
// of terraform, or a lost connection (the WinRM service restarted on the owner, every
// shell ended) once the cluster runs the action of `failover` or `cluster_restart`,
// and an offline slower than the budget: each ends with the role Online on a node
// with SQL Server and Agent running, the state saying what that node holds and the
// next plan empty or an update in place (wantStateOfHostAndPlanInPlace), and the
// cluster brought the role online at most once more than the action itself did.
// When the offline outlasts the budget, the apply's error says that the guard
// brings the role online, and that the offline did not finish in the half of the
// budget TakeOffline has: BringOnline is not sent during it (issue 37).
func TestCLI_faultMatrixClusterGuard(t *testing.T) {
	t.Parallel()
	type fault int
	const (
		sigint fault = iota
		sigkill
		lostShell
		slowOffline
	)
	for _, r := range []struct {
		name    string
		restart string
		fault   fault
	}{
		{name: "Ctrl-C during cluster_restart", restart: "cluster_restart", fault: sigint},
		{name: "SIGKILL during cluster_restart", restart: "cluster_restart", fault: sigkill},
		{name: "connection lost during cluster_restart", restart: "cluster_restart", fault: lostShell},
		{name: "Ctrl-C during failover", restart: "failover", fault: sigint},
		{name: "SIGKILL during failover", restart: "failover", fault: sigkill},
		{name: "connection lost during failover", restart: "failover", fault: lostShell},
		{name: "an offline slower than the budget (cluster_restart)", restart: "cluster_restart", fault: slowOffline},
	} {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			w := newCLI(t)
			e := startFCI(t, func(_ *wsfc.ClusterConfig, hcs []host.HostConfig) { hcs[0].Rights = nil })
			w.write(e.config("never"))
			w.mustApply()
			if r.fault == slowOffline {
				// The Engine's stop lasts until the apply has ended (then EndStopNow
				// ends it): slower than any budget by construction, where a stop of a
				// fixed length would make the row wait that long.
				if err := e.nodes[0].host().SetStopDuration("MSSQLSERVER", time.Hour); err != nil {
					t.Fatal(err)
				}
			}
			c, err := e.sim.Cluster(e.cluster)
			if err != nil {
				t.Fatal(err)
			}
			w.write(e.config(r.restart))
			var acting time.Time
			during := func(cmd *exec.Cmd) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if _, err := c.WaitRole(ctx, e.role, func(v wsfc.ClusterRoleView) bool { return v.Action != "" }); err != nil {
					t.Errorf("the cluster was not seen acting on the role: %v", err)
					return
				}
				acting = time.Now()
				switch r.fault {
				case sigint:
					err = syscall.Kill(cmd.Process.Pid, syscall.SIGINT)
				case sigkill:
					err = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				case lostShell:
					err = e.sim.Do(e.nodes[0].name, winsim.Action{Action: winsim.ActionRestartWinRM})
				}
				if err != nil {
					t.Errorf("injecting the fault: %v", err)
				}
			}
			ap := w.runWhile(during, "apply", "-auto-approve", "-json", "-no-color")
			applyTook := time.Since(acting)
			if r.fault == slowOffline {
				// The apply ended while the stop was still pending; now it ends.
				if err := e.nodes[0].host().EndStopNow("MSSQLSERVER"); err != nil {
					t.Errorf("the held stop of MSSQLSERVER: %v", err)
				}
			}
			t.Logf("the apply (exit %d):\n%s", ap.Exit, ap.describe())
			if r.fault == slowOffline {
				// The apply's time ran out with the role not Online: its error says that
				// the action's guard brings it online, and how to look again.
				d := ap.wantDiag(t, "error", "The cluster did not restart SQL Server", `The guard the action started on .* brings the role online once the cluster is done with it.*run terraform plan in a few minutes`)
				// Issue 37: TakeOffline had half the budget and BringOnline was not
				// sent during the offline (before: BringOnline got a second, was
				// refused, and the apply waited out the whole budget).
				if !regexp.MustCompile(`the offline of SQL Server did not finish in \d+ s \(.* is OfflinePending\): BringOnline was not called`).MatchString(d.Detail) ||
					strings.Contains(d.Detail, "BringOnline: ") {
					t.Errorf("the apply's error does not say that the offline did not finish, or says BringOnline was called:\n%s", d.Detail)
				}
				t.Logf("the apply ended %s after the cluster began the offline", applyTook)
			}
			// The role ends Online, whoever was left holding it.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			v, err := c.WaitRole(ctx, e.role, func(v wsfc.ClusterRoleView) bool {
				if v.Action != "" || v.State != wsfc.GroupOnline {
					return false
				}
				for _, res := range v.Resources {
					if res.State != wsfc.ResourceOnline {
						return false
					}
				}
				return true
			})
			if err != nil {
				t.Fatalf("the role is not Online at the end: %+v: %v", v, err)
			}
			owner := e.nodes[0]
			if strings.EqualFold(v.OwnerHost, e.nodes[1].name) {
				owner = e.nodes[1]
			}
			for _, svc := range []string{"MSSQLSERVER", contract.DefaultAgentService} {
				if err := owner.host().WaitServiceState(ctx, svc, contract.StateRunning); err != nil {
					t.Errorf("%s is not Running on the owner %s at the end: %v", svc, owner.name, err)
				}
			}
			wantStateOfHostAndPlanInPlace(t, w, owner, defaultSvcSID, "")
		})
	}
}
