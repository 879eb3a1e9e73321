package provider

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/wsfc"
)

// What a user reads in terraform's output, through the real CLI (see cli_harness_test.go).

// opsSince returns the operations the host ran from index n of its audit log on.
func (e *accEnv) opsSince(n int) []string { return e.operations()[n:] }

func countOp(ops []string, op contract.Operation) int {
	n := 0
	for _, o := range ops {
		if o == string(op) {
			n++
		}
	}
	return n
}

// isRead reports whether op only reads the host: read_host (the run's one read of a
// host) or read_instance (an instance read alone).
func isRead(op string) bool {
	return op == string(contract.OpReadHost) || op == string(contract.OpReadInstance)
}

// countReads counts the reads of the host among ops.
func countReads(ops []string) int {
	n := 0
	for _, o := range ops {
		if isRead(o) {
			n++
		}
	}
	return n
}

func TestCLI_TDEWarningNamesTheDatabase(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, func(hc *host.HostConfig) {
		hc.Instances = []host.InstanceConfig{{
			Name:         "REPORTING",
			TDEDatabases: []string{"ReportServer"},
			Logins:       []host.LoginConfig{{Name: accSQLUser, Password: accSQLPass}},
		}}
	})
	w.write(e.providerConfig(true) + resourceConfig(e.addr, `instance = "REPORTING"`))
	r := w.mustApply()
	d := r.wantDiag(t, "warning", `^IFI does not apply to TDE-encrypted databases$`, `databases ReportServer use Transparent Data Encryption`)
	if !regexp.MustCompile(`instance REPORTING on ` + regexp.QuoteMeta(e.addr)).MatchString(d.Detail) {
		t.Errorf("the TDE warning does not name the instance and host: %q", d.Detail)
	}
	// Said once: the plan after the apply is quiet (warnings are news).
	p := w.plan()
	p.wantPlanExit(t, 0)
	p.wantNoDiag(t, "warning", `TDE`)
}

// restart = "never" after a grant: the apply warns that a restart is pending, the
// next plan is empty (exit 0) and quiet, the state says restart_pending.
func TestCLI_restartNeverPendingWarning(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, nil)
	before := e.engineStart()
	w.write(e.providerConfig(true) + resourceConfig(e.addr, `restart = "never"`))
	r := w.mustApply()
	const detail = `restart of the service MSSQLSERVER is pending for IFI to be on(.|\n)*restart = "never"`
	r.wantDiag(t, "warning", `^A restart of SQL Server is pending$`, detail)
	if !e.holds(defaultSvcSID) {
		t.Fatal("the apply did not grant the right")
	}
	// The apply said it; the next plan is empty and quiet (warnings are news), the
	// state says it.
	p := w.plan()
	p.wantPlanExit(t, 0)
	p.wantNoDiag(t, "warning", `^A restart of SQL Server is pending$`)
	a := w.attrs()
	if a["restart_pending"] != true || a["ifi_enabled"] != false || a["privilege_granted"] != true || a["enabled"] != true {
		t.Errorf("state: restart_pending %v, ifi_enabled %v, privilege_granted %v, enabled %v; want true, false, true, true",
			a["restart_pending"], a["ifi_enabled"], a["privilege_granted"], a["enabled"])
	}
	if a["clustered"] != false || a["cluster_nodes"] != nil || a["ifi_survives_failover"] != nil {
		t.Errorf("a standalone instance: clustered %v, cluster_nodes %v, ifi_survives_failover %v; want false, null, null",
			a["clustered"], a["cluster_nodes"], a["ifi_survives_failover"])
	}
	if s := e.engineStart(); !s.Equal(before) {
		t.Errorf("restart = never restarted the Engine: started %v, was %v", s, before)
	}
}

// Destroy revokes, never restarts, and says IFI stays on until the next restart.
func TestCLI_destroyWarnsIFIStaysOn(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, nil)
	w.write(e.providerConfig(true) + resourceConfig(e.addr, ""))
	w.mustApply()
	started := e.engineStart()
	if in := e.instance("MSSQLSERVER"); in.InstantFileInitialization == nil || !*in.InstantFileInitialization {
		t.Fatalf("after the apply the Engine does not have IFI: %+v", in)
	}
	pd := w.run("plan", "-destroy", "-json", "-no-color")
	pd.wantDiag(t, "warning", `^IFI stays on until the next restart$`, `MSSQLSERVER(.|\n)*maintenance window`)
	n := len(e.operations())
	r := w.destroy()
	if r.Exit != 0 {
		t.Fatalf("terraform destroy failed (exit %d):\n%s", r.Exit, r.describe())
	}
	r.wantDiag(t, "warning", `^IFI stays on until the next restart$`, `MSSQLSERVER(.|\n)*maintenance window`)
	if got := len(r.find("warning", `^IFI stays on until the next restart$`, "")); got != 1 {
		t.Errorf("destroy shows the stays-on warning %d times, want once:\n%s", got, r.describe())
	}
	if e.holds(defaultSvcSID) {
		t.Error("destroy left the grant in place")
	}
	if s := e.engineStart(); !s.Equal(started) {
		t.Errorf("destroy restarted the Engine: started %v, was %v", s, started)
	}
	if in := e.instance("MSSQLSERVER"); in.InstantFileInitialization == nil || !*in.InstantFileInitialization {
		t.Errorf("the running Engine lost IFI without a restart: %+v", in)
	}
	if ops := e.opsSince(n); countOp(ops, contract.OpRestartInstance) != 0 {
		t.Errorf("destroy ran restart_instance: %v", ops)
	}
}

// The destroy of an instance whose Engine runs as an administrator: the plan (which
// reads nothing) and the destroy say IFI stays on through Administrators and that
// no restart changes it, never to restart "for the revoke to take effect".
func TestCLI_destroyAdministratorStartAccountAdvisesNoRestart(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, func(hc *host.HostConfig) {
		hc.Administrators = []string{accSvcAcct}
		hc.Instances[0].ServiceAccount = accSvcAcct
	})
	w.write(e.providerConfig(true) + resourceConfig(e.addr, ""))
	w.mustApply()
	n := len(e.operations())
	pd := w.run("plan", "-destroy", "-json", "-no-color")
	for _, r := range []*tfRun{pd, w.destroy()} {
		if r.Exit != 0 {
			t.Fatalf("terraform %s failed (exit %d):\n%s", r.Args[0], r.Exit, r.describe())
		}
		r.wantDiag(t, "warning", `^IFI stays on after the destroy$`,
			`(?s)MSSQLSERVER.*`+regexp.QuoteMeta(accSvcAcct)+` is a member of Administrators.*no restart changes that`)
		if got := r.find("warning", `^IFI stays on`, `maintenance window|next restart`); len(got) != 0 {
			t.Errorf("terraform %s advises a restart: %+v", r.Args[0], got)
		}
		if got := len(r.find("warning", `^IFI stays on`, "")); got != 1 {
			t.Errorf("terraform %s gives %d stays-on warnings, want one:\n%s", r.Args[0], got, r.describe())
		}
	}
	if e.holds(defaultSvcSID) {
		t.Error("destroy left the grant in place")
	}
	if ops := e.opsSince(n); countOp(ops, contract.OpRestartInstance) != 0 {
		t.Errorf("destroy ran restart_instance: %v", ops)
	}
}

// An Engine run by an administrator keeps IFI: enabled = false warns why, and the
// next plan is empty.
func TestCLI_administratorStaysOnThenEmptyPlan(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, func(hc *host.HostConfig) {
		hc.Administrators = []string{accSvcAcct}
		hc.Instances[0].ServiceAccount = accSvcAcct
	})
	w.write(e.providerConfig(true) + resourceConfig(e.addr, "enabled = false"))
	r := w.mustApply()
	r.wantDiag(t, "warning", `^IFI stays on although enabled = false$`,
		regexp.QuoteMeta(accSvcAcct)+` is a member of Administrators(.|\n)*non-administrator`)
	p := w.plan()
	p.wantPlanExit(t, 0)
	p.wantNoDiag(t, "warning", `^IFI stays on although enabled = false$`) // said by the apply: news, not weather
	if a := w.attrs(); a["enabled"] != false || a["ifi_enabled"] != true {
		t.Errorf("state: enabled %v, ifi_enabled %v; want false, true", a["enabled"], a["ifi_enabled"])
	}
}

// No sql block and an error log without the IFI line (SQL Server 2014 SP1 does not
// write it): verified_by = none and a warning says how to make it verifiable.
func TestCLI_unverifiableWarns(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, func(hc *host.HostConfig) {
		hc.Instances[0].Version = "12.0.4100.1"
	})
	if e.instance("MSSQLSERVER").ErrorLog.Found {
		t.Fatal("the simulated 2014 SP1 error log has an IFI line; the test needs one without")
	}
	w.write(e.providerConfig(false) + resourceConfig(e.addr, ""))
	r := w.mustApply()
	r.wantDiag(t, "warning", `^IFI could not be verified$`, `MSSQLSERVER(.|\n)*sql block`)
	p := w.plan()
	p.wantPlanExit(t, 0)
	p.wantNoDiag(t, "warning", `^IFI could not be verified$`) // said by the apply's plan: news, not weather
	a := w.attrs()
	if a["verified_by"] != string(ifi.SourceNone) || a["ifi_enabled"] != nil || a["restart_pending"] != nil {
		t.Errorf("state: verified_by %v, ifi_enabled %v, restart_pending %v; want none, null, null",
			a["verified_by"], a["ifi_enabled"], a["restart_pending"])
	}
}

// Group Policy takes over the right after a first apply: the plan warns (ModifyPlan),
// the apply refuses naming the GPO setting, and nothing is changed on the host.
func TestCLI_groupPolicyWarnsAtPlanAndRefusesApply(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, nil)
	w.write(e.providerConfig(true) + resourceConfig(e.addr, "enabled = false"))
	w.mustApply()
	for _, a := range []winsim.Action{
		{Action: winsim.ActionSetGroupPolicyRight, Right: contract.RightManageVolume, SIDs: []string{winsid.Administrators}},
		{Action: winsim.ActionRefreshGroupPolicy},
	} {
		if err := e.sim.Do(e.name, a); err != nil {
			t.Fatalf("%s: %v", a.Action, err)
		}
	}
	w.write(e.providerConfig(true) + resourceConfig(e.addr, "enabled = true"))
	p := w.plan()
	p.wantPlanExit(t, 2)
	p.wantDiag(t, "warning", `^Group Policy owns the right$`, regexp.QuoteMeta(ifi.GPOSetting))
	if !slices.Contains(p.Changes, tfChange{resName, "update"}) {
		t.Errorf("the plan does not update %s: %v", resName, p.Changes)
	}
	r := w.apply()
	if r.Exit == 0 {
		t.Fatalf("the apply succeeded against Group Policy:\n%s", r.describe())
	}
	r.wantDiag(t, "error", `^Group Policy owns the right and does not grant it$`,
		`Nothing was changed(.|\n)*`+regexp.QuoteMeta(ifi.GPOSetting))
	if ops := e.operations(); countOp(ops, contract.OpSetRight) != 0 {
		t.Errorf("the provider changed a policy-owned right: %v", ops)
	}
	if e.holds(defaultSvcSID) {
		t.Error("the service SID holds the right although the policy does not list it")
	}
}

// A failover cluster instance whose owner lacks the right: with if_needed the plan
// says the apply will refuse and gives the choices, and the apply refuses before
// any change on any node; with never every node is granted, a restart is pending,
// nothing restarts, and the next plan is empty.
func TestCLI_clusteredInstance(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startFCI(t, func(_ *wsfc.ClusterConfig, hcs []host.HostConfig) { hcs[0].Rights = nil })
	before := e.nodes[0].engineStart()
	w.write(e.config("if_needed"))
	r := w.apply()
	if r.Exit == 0 {
		t.Fatalf("the apply restarted a clustered instance:\n%s", r.describe())
	}
	r.wantDiag(t, "warning", `apply will refuse: Failover cluster instance: refusing to restart it through the service manager$`,
		`restart = "failover"(.|\n)*restart = "cluster_restart"(.|\n)*restart = "never"`)
	r.wantDiag(t, "error", `^Failover cluster instance: refusing to restart it through the service manager$`, `Nothing was changed on any node`)
	for i, n := range e.nodes {
		if ops := n.operations(); countOp(ops, contract.OpSetRight) != 0 || countOp(ops, contract.OpRestartInstance) != 0 {
			t.Errorf("the refused apply changed node %s: %v", e.nodeName(i), ops)
		}
	}

	w.write(e.config("never"))
	w.mustApply()
	for i, n := range e.nodes {
		if !n.holds(defaultSvcSID) {
			t.Errorf("restart = never did not grant the right on %s", e.nodeName(i))
		}
		if ops := n.operations(); countOp(ops, contract.OpRestartInstance) != 0 || countOp(ops, contract.OpClusterMove) != 0 ||
			countOp(ops, contract.OpClusterRestart) != 0 {
			t.Errorf("a clustered instance was restarted on %s: %v", e.nodeName(i), ops)
		}
	}
	a := w.attrs()
	if a["restart_pending"] != true || a["clustered"] != true || a["ifi_survives_failover"] != true {
		t.Errorf("state: restart_pending %v, clustered %v, ifi_survives_failover %v; want true, true, true",
			a["restart_pending"], a["clustered"], a["ifi_survives_failover"])
	}
	if s := e.nodes[0].engineStart(); !s.Equal(before) {
		t.Errorf("the clustered Engine restarted: %v, was %v", s, before)
	}
	w.plan().wantPlanExit(t, 0)
}

// An instance whose Cluster registry key is set on a host where root\MSCluster
// does not answer: the provider cannot read the cluster, says so, and changes
// nothing (it never treats a clustered instance as a standalone one).
func TestCLI_clusterKeyWithoutACluster(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, func(hc *host.HostConfig) { hc.Instances[0].Clustered = true })
	w.write(e.providerConfig(true) + resourceConfig(e.addr, `restart = "never"`))
	r := w.apply()
	if r.Exit == 0 {
		t.Fatalf("the apply succeeded without reading the cluster:\n%s", r.describe())
	}
	r.wantDiag(t, "error", `^Cannot read the failover cluster of instance MSSQLSERVER on `, `(?s)root\\MSCluster.*Nothing was changed`)
	if ops := e.operations(); countOp(ops, contract.OpSetRight) != 0 || countOp(ops, contract.OpRestartInstance) != 0 {
		t.Errorf("the refused apply changed the host: %v", ops)
	}
}

// The instance is uninstalled after an apply: the plan warns that it was removed
// from the state, and its plan to create it again fails naming the instance (a
// create's plan reads the host and does not guess); the plan only read the host.
func TestCLI_instanceUninstalled(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, nil)
	w.write(e.providerConfig(true) + resourceConfig(e.addr, ""))
	w.mustApply()
	if err := e.sim.Do(e.name, winsim.Action{Action: winsim.ActionUninstallInstance, Instance: "MSSQLSERVER"}); err != nil {
		t.Fatalf("uninstalling through the control API: %v", err)
	}
	n := len(e.operations())
	p := w.plan()
	p.wantPlanExit(t, 1)
	p.wantDiag(t, "warning", `removed from the state`, `"MSSQLSERVER" is not installed`)
	p.wantDiag(t, "error", `^SQL Server instance not found$`, `"MSSQLSERVER" is not installed on .*installed instances: none`)
	if !slices.Contains(p.Drift, tfChange{resName, "delete"}) {
		t.Errorf("the plan does not show %s deleted outside Terraform: drift %v", resName, p.Drift)
	}
	ops := e.opsSince(n)
	if len(ops) == 0 {
		t.Fatal("the plan did not read the host")
	}
	for _, op := range ops {
		if !isRead(op) {
			t.Errorf("the plan ran %s on the host (want only reads): %v", op, ops)
		}
	}
	// The orphaned service SID stays in the holder list, without a name.
	for _, p := range e.host().Snapshot().Rights[contract.RightManageVolume] {
		if p.SID == defaultSvcSID && p.Name != "" {
			t.Errorf("the orphaned service SID still has a name: %+v", p)
		}
	}
	if !e.holds(defaultSvcSID) {
		t.Error("uninstalling removed the service SID from the holder list; LSA keeps it")
	}
}

// Passwords never reach the logs: a whole apply, plan and a failed logon at TF_LOG=TRACE
// write neither the WinRM nor the SQL password anywhere in the log.
func TestCLI_passwordsNeverLogged(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	logPath := w.dir + "/trace.log"
	w.env = append(w.env, "TF_LOG=TRACE", "TF_LOG_PATH="+logPath)
	e := startSim(t, nil)
	w.write(e.providerConfig(true) + resourceConfig(e.addr, ""))
	w.mustApply()
	w.plan().wantPlanExit(t, 0)
	// A wrong password is logged as a failure, never as itself.
	const wrong = "Wr0ng-Pa55word-Never-Logged"
	w.write(e.providerConfigWith(wrong, true) + resourceConfig(e.addr, ""))
	w.plan().wantDiag(t, "error", "", `authentication failed`)
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatalf("no trace log: %v", err)
	}
	if len(log) < 10000 || !strings.Contains(string(log), "mssqlifi") {
		t.Fatalf("the trace log (%d bytes) does not look like the provider's", len(log))
	}
	for _, secret := range []string{accPassword, accSQLPass, wrong} {
		if strings.Contains(string(log), secret) {
			t.Errorf("the trace log contains a password (%d characters)", len(secret))
		}
	}
}

// twoInstances is two resources on the host at addr: its default instance and
// REPORTING.
func twoInstances(addr string) string {
	return fmt.Sprintf(`
resource "mssqlifi_instant_file_initialization" "default" {
  host = %[1]q
}
resource "mssqlifi_instant_file_initialization" "reporting" {
  host     = %[1]q
  instance = "REPORTING"
}
`, addr)
}

// A refresh costs at most one WinRM command per host (read_host, shared by the
// host's instances) and one SQL connection per resource: terraform plan over two
// instances of one host runs read_host once and logs in to each instance once.
func TestCLI_refreshCostsOneCommandAndOneConnectionPerResource(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, func(hc *host.HostConfig) {
		hc.Instances = append(hc.Instances, host.InstanceConfig{
			Name:   "REPORTING",
			Logins: []host.LoginConfig{{Name: accSQLUser, Password: accSQLPass}},
		})
	})
	w.write(e.providerConfig(true) + twoInstances(e.addr))
	w.mustApply()
	connections := func() map[string]int64 {
		m := map[string]int64{}
		for _, i := range e.host().Snapshot().Instances {
			if i.Process != nil {
				m[i.Name] = i.Process.Connections
			}
		}
		return m
	}
	n, before := len(e.operations()), connections()
	w.plan().wantPlanExit(t, 0)
	ops, after := e.opsSince(n), connections()
	if len(ops) != 1 || countOp(ops, contract.OpReadHost) != 1 {
		t.Errorf("terraform plan over 2 resources of one host ran %v over WinRM; want one read_host and nothing else", ops)
	}
	for _, name := range []string{"MSSQLSERVER", "REPORTING"} {
		if d := after[name] - before[name]; d != 1 {
			t.Errorf("terraform plan opened %d SQL connections to %s; want exactly 1", d, name)
		}
	}
}

// Trace flag 1806 turns IFI off whatever the right says: the apply grants, does not
// restart (a restart would not help), warns about the flag, and the next plan is empty.
func TestCLI_traceFlag1806(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, func(hc *host.HostConfig) { hc.Instances[0].StartupTraceFlags = []int{1806} })
	before := e.engineStart()
	w.write(e.providerConfig(true) + resourceConfig(e.addr, ""))
	r := w.mustApply()
	r.wantDiag(t, "warning", `^Trace flag 1806 disables IFI$`, `-T1806`)
	a := w.attrs()
	if a["privilege_granted"] != true || a["ifi_enabled"] != false || a["restart_pending"] != false {
		t.Errorf("state: privilege_granted %v, ifi_enabled %v, restart_pending %v; want true, false, false",
			a["privilege_granted"], a["ifi_enabled"], a["restart_pending"])
	}
	if s := e.engineStart(); !s.Equal(before) {
		t.Errorf("the Engine was restarted (started %v, was %v) although trace flag 1806 keeps IFI off", s, before)
	}
	w.plan().wantPlanExit(t, 0)
}

// The start account is in a domain group that is a member of Administrators; the
// host lists the group but not its members. enabled = false: the apply restarts
// once, SQL Server still reports IFI on, and the apply warns (not fails) naming the
// nested group. The next plan is empty and the next apply does not restart again.
func TestCLI_nestedGroupKeepsIFIOnWithoutRestartLoop(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	const groupName, groupSID = `CONTOSO\SQL Admins`, accDomSID + "-2201"
	e := startSim(t, func(hc *host.HostConfig) {
		hc.Accounts[groupName] = groupSID
		hc.Administrators = []string{groupName}
		hc.Groups = map[string][]string{groupName: {accSvcAcct}}
		hc.Instances[0].ServiceAccount = accSvcAcct
	})
	w.write(e.providerConfig(true) + resourceConfig(e.addr, "enabled = false"))
	n := len(e.operations())
	r := w.apply()
	if r.Exit != 0 {
		t.Fatalf("terraform apply failed (exit %d), want success with a warning:\n%s", r.Exit, r.describe())
	}
	const summary = `^IFI stays on through a group the host cannot expand$`
	r.wantDiag(t, "warning", summary, `domain or nested group in Administrators(.|\n)*cannot expand(.|\n)*`+
		regexp.QuoteMeta(groupSID)+`(.|\n)*whoami /groups /priv`)
	if got := countOp(e.opsSince(n), contract.OpRestartInstance); got != 1 {
		t.Fatalf("the apply ran restart_instance %d times, want once", got)
	}
	if in := e.instance("MSSQLSERVER"); in.InstantFileInitialization == nil || !*in.InstantFileInitialization {
		t.Fatalf("the simulated Engine lost IFI although its token has Administrators: %+v", in)
	}
	a := w.attrs()
	if a["enabled"] != false || a["ifi_enabled"] != true || a["restart_pending"] != false {
		t.Errorf("state: enabled %v, ifi_enabled %v, restart_pending %v; want false, true, false",
			a["enabled"], a["ifi_enabled"], a["restart_pending"])
	}

	started := e.engineStart()
	n = len(e.operations())
	// The apply said it: the plan and the second apply are quiet about it.
	p := w.plan()
	p.wantPlanExit(t, 0)
	p.wantNoDiag(t, "warning", summary)
	r = w.mustApply()
	r.wantNoDiag(t, "warning", summary)
	if ops := e.opsSince(n); countOp(ops, contract.OpRestartInstance) != 0 || countOp(ops, contract.OpSetRight) != 0 {
		t.Errorf("plan and second apply changed the host: %v", ops)
	}
	if s := e.engineStart(); !s.Equal(started) {
		t.Errorf("the second apply restarted the Engine: started %v, was %v", s, started)
	}
}

// Turning IFI on for an instance already in the state: the apply uses the read of
// the plan's refresh moments before (converge.DefaultReadFreshness) and makes the
// grant, the restart and the read-back in one restart_instance. The whole terraform
// apply reads the host once.
func TestCLI_enablingUpdateUsesThePlanRead(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, nil)
	w.write(e.providerConfig(true) + resourceConfig(e.addr, "enabled = false"))
	w.mustApply()
	w.write(e.providerConfig(true) + resourceConfig(e.addr, "enabled = true"))
	n := len(e.operations())
	w.mustApply()
	ops := e.opsSince(n)
	if countReads(ops) != 1 || countOp(ops, contract.OpRestartInstance) != 1 || countOp(ops, contract.OpSetRight) != 0 {
		t.Errorf("the enabling apply ran %v; want one read (the refresh), then restart_instance once", ops)
	}
	if a := w.attrs(); a["enabled"] != true || a["ifi_enabled"] != true || a["privilege_granted"] != true {
		t.Errorf("state: enabled %v, ifi_enabled %v, privilege_granted %v; want all true", a["enabled"], a["ifi_enabled"], a["privilege_granted"])
	}
	p := w.plan()
	p.wantPlanExit(t, 0)
}

// A create with restart = "never" says the pending restart once: its plan says
// that the apply grants without a restart (the Engine keeps IFI off until its next
// restart), and the apply, which makes the restart pending, says so, whether the plan
// is saved and applied later or planned and applied in one terraform apply (where
// Terraform also plans the create again during the apply).
func TestCLI_restartNeverPendingSaidOnce(t *testing.T) {
	t.Parallel()
	const pending = `^A restart of SQL Server is pending$`
	count := func(r *tfRun) int { return len(r.find("warning", pending, "")) }
	const noRestart = `apply grants the right, no restart$`
	t.Run("saved plan", func(t *testing.T) {
		t.Parallel()
		w := newCLI(t)
		e := startSim(t, nil)
		w.write(e.providerConfig(true) + resourceConfig(e.addr, `restart = "never"`))
		p := w.run("plan", "-json", "-no-color", "-out=create.tfplan")
		if p.Exit != 0 || count(p) != 0 {
			t.Fatalf("the plan said the pending restart %d times (exit %d), want none (the apply says it):\n%s", count(p), p.Exit, p.describe())
		}
		p.wantDiag(t, "warning", noRestart, `with no restart: restart = "never"; the running Engine keeps IFI off until its next restart`)
		a := w.run("apply", "-json", "-no-color", "create.tfplan")
		if a.Exit != 0 || !e.holds(defaultSvcSID) {
			t.Fatalf("the saved plan's apply failed or did not grant (exit %d):\n%s", a.Exit, a.describe())
		}
		if n := count(a); n != 1 {
			t.Errorf("the apply of the saved plan said the pending restart %d times, want once:\n%s", n, a.describe())
		}
		if st := w.attrs(); st["restart_pending"] != true {
			t.Errorf("state restart_pending %v, want true", st["restart_pending"])
		}
	})
	t.Run("one apply", func(t *testing.T) {
		t.Parallel()
		w := newCLI(t)
		e := startSim(t, nil)
		w.write(e.providerConfig(true) + resourceConfig(e.addr, `restart = "never"`))
		a := w.mustApply()
		if n := count(a); n != 1 {
			t.Errorf("terraform apply (plan, final plan and apply) said the pending restart %d times, want once:\n%s", n, a.describe())
		}
		w.plan().wantNoDiag(t, "warning", pending)
	})
}
