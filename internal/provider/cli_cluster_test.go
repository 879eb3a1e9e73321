package provider

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/wsfc"
)

// Failover cluster instances (issue 18) with the real terraform CLI against the
// simulator's cluster model: a two-node FCI whose first node holds the right (SQL
// Server Setup's box ticked there) and whose second node was added later without it.

// fciEnv is one simulator with a two-node cluster and one FCI of the default
// instance, owned by nodes[0] at the start.
type fciEnv struct {
	t       *testing.T
	sim     *winsim.Sim
	nodes   []*accEnv
	cluster string
	role    string // the role's virtual name, which names it to the control plane
	vaddr   string // the role's virtual address, the resource's sql_host
}

// startFCI starts the cluster; mod may change the cluster and the nodes' hosts.
// Both nodes listen for WinRM on one port, as real nodes do (5986): the provider
// reaches every node with the resource's port.
func startFCI(t *testing.T, mod func(*wsfc.ClusterConfig, []host.HostConfig)) *fciEnv {
	t.Helper()
	var hcs []host.HostConfig
	for range 2 {
		n := nextAddr.Add(1)
		hc := defaultHostConfig(fmt.Sprintf("sql%02d", n), fmt.Sprintf("127.0.0.%d", 10+n))
		hc.Instances[0].StartMS, hc.Instances[0].StopMS = 100, 100
		hcs = append(hcs, hc)
	}
	hcs[0].Rights = map[string][]string{contract.RightManageVolume: {"S-1-5-32-544", defaultSvcSID}}
	v := nextAddr.Add(1)
	one := int64(1)
	cc := wsfc.ClusterConfig{Name: fmt.Sprintf("CLU%02d", v), Nodes: []string{hcs[0].Name, hcs[1].Name},
		Roles: []wsfc.ClusterRoleConfig{{Instance: "MSSQLSERVER", VirtualName: fmt.Sprintf("SQLFCI%02d", v),
			VirtualAddress: fmt.Sprintf("127.0.0.%d", 10+v), Owner: hcs[0].Name, PreferredOwners: []string{hcs[0].Name, hcs[1].Name},
			FailoverThreshold: &one}}}
	if mod != nil {
		mod(&cc, hcs)
	}
	var sim *winsim.Sim
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		p := freePort(t, hcs[0].Address)
		for i := range hcs {
			hcs[i].WinRM.HTTPSPort = p
		}
		sim, err = winsim.Start(&winsim.Config{Hosts: hcs, Clusters: []wsfc.ClusterConfig{cc}}, winsim.Options{CertDir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	if err != nil {
		t.Fatalf("starting the simulator: %v", err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	e := &fciEnv{t: t, sim: sim, cluster: cc.Name, role: cc.Roles[0].VirtualName, vaddr: cc.Roles[0].VirtualAddress}
	for _, hc := range hcs {
		n := &accEnv{t: t, sim: sim, name: hc.Name, addr: hc.Address}
		for _, hi := range sim.Info().Hosts {
			if strings.EqualFold(hi.Name, hc.Name) {
				n.httpsPort, n.httpPort = port(t, hi.WinRMHTTPS), port(t, hi.WinRM)
			}
		}
		e.nodes = append(e.nodes, n)
	}
	return e
}

// nodeName is the cluster's name of node i (the host's computer name).
func (e *fciEnv) nodeName(i int) string { return strings.ToUpper(e.nodes[i].name) }

// config is the provider block and one resource for the FCI, addressed by node 0,
// with every node's address in nodes.
func (e *fciEnv) config(restart string) string {
	var nodes []string
	for i, n := range e.nodes {
		nodes = append(nodes, fmt.Sprintf("    %s = %q", e.nodeName(i), n.addr))
	}
	return e.nodes[0].providerConfig(true) + fmt.Sprintf(`
resource "mssqlifi_instant_file_initialization" "this" {
  host     = %q
  sql_host = %q
  restart  = %q
  nodes = {
%s
  }
  timeouts {
    create = "1m"
    update = "1m"
  }
}
`, e.nodes[0].addr, e.vaddr, restart, strings.Join(nodes, "\n"))
}

// view is the role as the cluster sees it.
func (e *fciEnv) view() wsfc.ClusterRoleView {
	e.t.Helper()
	c, err := e.sim.Cluster(e.cluster)
	if err != nil {
		e.t.Fatal(err)
	}
	v, err := c.RoleView(e.role)
	if err != nil {
		e.t.Fatal(err)
	}
	return v
}

// do applies a control-plane action to the cluster (from outside Terraform).
func (e *fciEnv) do(a winsim.ClusterAction) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := e.sim.ClusterDo(ctx, e.cluster, a); err != nil {
		e.t.Fatalf("cluster action %+v: %v", a, err)
	}
}

// clusterNode is one element of the state's cluster_nodes, by node name.
func clusterNode(t *testing.T, a map[string]any, name string) map[string]any {
	t.Helper()
	list, _ := a["cluster_nodes"].([]any)
	for _, n := range list {
		if m, ok := n.(map[string]any); ok && strings.EqualFold(fmt.Sprint(m["name"]), name) {
			return m
		}
	}
	t.Fatalf("cluster_nodes has no node %s: %v", name, a["cluster_nodes"])
	return nil
}

// The second node lacks the right: the plan names it and says the apply grants
// there without a restart (the running Engine has IFI); the apply grants it; the
// state shows every node and the roll-up; the next plan is empty.
func TestCLI_fciSecondNodeLacksTheRight(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startFCI(t, nil)
	w.write(e.config("if_needed"))
	p := w.plan()
	p.wantPlanExit(t, 2)
	second := regexp.QuoteMeta(e.nodeName(1))
	p.wantDiag(t, "warning", `^IFI does not survive a failover of instance MSSQLSERVER .* to `+second+`$`, second)
	p.wantDiag(t, "warning", `apply grants the right on `+second+`$`, `no restart`)

	before := e.nodes[0].engineStart()
	w.mustApply()
	if !e.nodes[1].holds(defaultSvcSID) {
		t.Errorf("the apply did not grant the right on %s", e.nodeName(1))
	}
	if !e.nodes[0].engineStart().Equal(before) {
		t.Errorf("the Engine restarted although it had IFI")
	}
	a := w.attrs()
	if a["ifi_enabled"] != true || a["ifi_survives_failover"] != true || a["clustered"] != true || a["verified_by"] != "sql_dmv" {
		t.Errorf("state: ifi_enabled %v, ifi_survives_failover %v, clustered %v, verified_by %v; want true, true, true, sql_dmv",
			a["ifi_enabled"], a["ifi_survives_failover"], a["clustered"], a["verified_by"])
	}
	for i, owner := range []bool{true, false} {
		n := clusterNode(t, a, e.nodeName(i))
		if n["current_owner"] != owner || n["possible_owner"] != true || n["privilege_granted"] != true {
			t.Errorf("cluster_nodes[%s] = %v; want current_owner %v, possible_owner and privilege_granted true", e.nodeName(i), n, owner)
		}
	}
	w.plan().wantPlanExit(t, 0)
}

// A failover from outside Terraform to the node without the right: the refresh
// shows IFI off and names that node. Then restart = "failover" grants there and
// moves the role back to the first preferred owner, which holds the right: IFI is
// verified on through the virtual name, and the next plan is empty.
func TestCLI_fciFailoverFromOutsideThenRestartFailover(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startFCI(t, nil)
	w.write(e.config("never"))
	w.mustApply()
	// Someone revokes the grant on the second node and fails the role over there.
	if err := e.sim.Do(e.nodes[1].name, winsim.Action{Action: winsim.ActionRevokeRight, Right: contract.RightManageVolume, SID: defaultSvcSID}); err != nil {
		t.Fatal(err)
	}
	e.do(winsim.ClusterAction{Action: winsim.ActionClusterFailover, Role: e.role, Node: e.nodes[1].name})

	// The plan shows the drift, names the node, and grants there.
	second := regexp.QuoteMeta(e.nodeName(1))
	p := w.plan()
	p.wantPlanExit(t, 2)
	if len(p.Drift) == 0 {
		t.Errorf("the plan shows no drift after the failover:\n%s", p.describe())
	}
	p.wantDiag(t, "warning", `^IFI does not survive a failover of instance MSSQLSERVER .* to `+second+`$`, second)
	p.wantDiag(t, "warning", `grants the right on `+second, second)
	// What the refresh stores: IFI off, the role on the node without the right.
	if r := w.run("apply", "-refresh-only", "-auto-approve", "-json", "-no-color"); r.Exit != 0 {
		t.Fatalf("refresh failed:\n%s", r.describe())
	}
	a := w.attrs()
	if a["ifi_enabled"] != false || a["ifi_survives_failover"] != false {
		t.Errorf("after the failover: ifi_enabled %v, ifi_survives_failover %v; want false, false", a["ifi_enabled"], a["ifi_survives_failover"])
	}
	if n := clusterNode(t, a, e.nodeName(1)); n["current_owner"] != true || n["privilege_granted"] != false {
		t.Errorf("cluster_nodes[%s] = %v; want the owner, without the right", e.nodeName(1), n)
	}

	w.write(e.config("failover"))
	p = w.plan()
	p.wantDiag(t, "warning", `grants the right on `+second+`, then moves the role from `+second+` to `+regexp.QuoteMeta(e.nodeName(0))+`$`,
		`about a restart's downtime`)
	w.mustApply()
	if v := e.view(); !strings.EqualFold(v.OwnerHost, e.nodes[0].name) || v.State != wsfc.GroupOnline {
		t.Errorf("the role is %s on %s; want Online on %s", v.State, v.OwnerHost, e.nodes[0].name)
	}
	a = w.attrs()
	if a["ifi_enabled"] != true || a["verified_by"] != "sql_dmv" || a["ifi_survives_failover"] != true {
		t.Errorf("after the failover: ifi_enabled %v (verified by %v), ifi_survives_failover %v; want true by sql_dmv, true",
			a["ifi_enabled"], a["verified_by"], a["ifi_survives_failover"])
	}
	if n := clusterNode(t, a, e.nodeName(0)); n["current_owner"] != true {
		t.Errorf("cluster_nodes[%s] = %v; want the owner", e.nodeName(0), n)
	}
	w.plan().wantPlanExit(t, 0)
}

// restart = "cluster_restart" restarts the role on its node, SQL Server Agent
// included: the running Engine gets the right the apply granted.
func TestCLI_fciClusterRestart(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startFCI(t, func(_ *wsfc.ClusterConfig, hcs []host.HostConfig) {
		hcs[0].Rights = nil // the owner lacks it too: its running Engine has no IFI
	})
	before := e.nodes[0].engineStart()
	w.write(e.config("cluster_restart"))
	p := w.plan()
	p.wantDiag(t, "warning", `restarts the role on `+regexp.QuoteMeta(e.nodeName(0))+` through the cluster$`, `SQL Server Agent`)
	w.mustApply()
	if s := e.nodes[0].engineStart(); !s.After(before) {
		t.Errorf("the Engine was not restarted (started %v, was %v)", s, before)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.nodes[0].host().WaitServiceState(ctx, contract.DefaultAgentService, contract.StateRunning); err != nil {
		t.Errorf("SQL Server Agent is not back: %v", err)
	}
	if v := e.view(); !strings.EqualFold(v.OwnerHost, e.nodes[0].name) || v.State != wsfc.GroupOnline {
		t.Errorf("the role is %s on %s; want Online on %s", v.State, v.OwnerHost, e.nodes[0].name)
	}
	a := w.attrs()
	if a["ifi_enabled"] != true || a["ifi_survives_failover"] != true {
		t.Errorf("state: ifi_enabled %v, ifi_survives_failover %v; want true, true", a["ifi_enabled"], a["ifi_survives_failover"])
	}
	w.plan().wantPlanExit(t, 0)
}

// A possible owner that cannot be reached (its address answers nothing): a clear
// error naming it, and nothing is changed on any node, so nothing is left
// unrecorded. With its address right, the apply goes through.
func TestCLI_fciUnreachableNode(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startFCI(t, nil)
	good := e.nodes[1].addr
	e.nodes[1].addr = unusedLoopback(t)
	w.write(e.config("never"))
	ap := w.apply()
	if ap.Exit == 0 {
		t.Fatalf("the apply succeeded with a node unreachable:\n%s", ap.describe())
	}
	second := regexp.QuoteMeta(e.nodeName(1))
	ap.wantDiag(t, "error", `^Possible owner `+second+` of instance MSSQLSERVER .* cannot be reached$`,
		`(?s)`+regexp.QuoteMeta(e.nodes[1].addr)+`.*Nothing was changed on any node`)
	for i, n := range e.nodes {
		if countOp(n.operations(), contract.OpSetRight) != 0 {
			t.Errorf("node %s was changed: %v", e.nodeName(i), n.operations())
		}
	}
	if a := w.attrs(); a != nil {
		t.Errorf("the resource is in the state although nothing was changed: %v", a)
	}
	e.nodes[1].addr = good
	w.write(e.config("never"))
	w.mustApply()
	if !e.nodes[1].holds(defaultSvcSID) {
		t.Errorf("the apply did not grant the right on %s", e.nodeName(1))
	}
}

// unusedLoopback is a loopback address where nothing listens.
func unusedLoopback(t *testing.T) string {
	t.Helper()
	a := fmt.Sprintf("127.0.0.%d", 10+nextAddr.Add(1))
	if c, err := net.DialTimeout("tcp", net.JoinHostPort(a, "5986"), time.Second); err == nil {
		c.Close()
		t.Fatalf("%s answers", a)
	}
	return a
}

// An FCI that is also the primary replica of an availability group: a restart
// through the cluster is refused as the availability-group guard refuses it, and
// nothing changes on any node.
func TestCLI_fciAGPrimaryIsRefused(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startFCI(t, func(_ *wsfc.ClusterConfig, hcs []host.HostConfig) {
		for i := range hcs {
			hcs[i].Rights = nil
			hcs[i].Instances[0].AvailabilityGroup = &host.AvailabilityGroupConfig{Name: "AG1", Role: host.AGRolePrimary}
		}
	})
	w.write(e.config("failover"))
	ap := w.apply()
	if ap.Exit == 0 {
		t.Fatalf("the apply restarted an availability group primary:\n%s", ap.describe())
	}
	ap.wantDiag(t, "error", `^Primary availability replica: refusing to restart instance MSSQLSERVER`, `(?s)AG1.*Nothing was changed on any node`)
	for i, n := range e.nodes {
		if countOp(n.operations(), contract.OpSetRight) != 0 || countOp(n.operations(), contract.OpClusterMove) != 0 {
			t.Errorf("node %s was changed: %v", e.nodeName(i), n.operations())
		}
	}
}

// Two resources for one cluster role, one through each node: the plan is refused
// and names both.
func TestCLI_fciTwoResourcesForOneRoleAreRefused(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startFCI(t, nil)
	cfg := e.config("never")
	const res = `resource "mssqlifi_instant_file_initialization" "this" {`
	_, body, _ := strings.Cut(cfg, res)
	cfg += strings.NewReplacer(`"this"`, `"other"`, fmt.Sprintf("host     = %q", e.nodes[0].addr), fmt.Sprintf("host     = %q", e.nodes[1].addr)).
		Replace(res + body)
	w.write(cfg)
	p := w.plan()
	if p.Exit != 1 {
		t.Fatalf("plan exit %d, want 1 (refused):\n%s", p.Exit, p.describe())
	}
	d := p.wantDiag(t, "error", `^Two resources manage one failover cluster instance$`, `(?s)role "SQL Server \(MSSQLSERVER\)" of cluster `+e.cluster)
	for _, n := range e.nodes {
		if !strings.Contains(d.Detail, `host = "`+n.addr+`"`) {
			t.Errorf("the error does not name the resource on %s: %s", n.addr, d.Detail)
		}
	}
}

// The data source reads an FCI as the resource does, without changing anything:
// every node, and whether IFI survives a failover.
func TestCLI_fciDataSource(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startFCI(t, nil)
	w.write(e.nodes[0].providerConfig(true) + fmt.Sprintf(`
data "mssqlifi_instant_file_initialization" "fci" {
  host     = %q
  sql_host = %q
  nodes    = { %s = %q }
}

output "fci" {
  value = {
    ifi_enabled           = data.mssqlifi_instant_file_initialization.fci.ifi_enabled
    ifi_survives_failover = data.mssqlifi_instant_file_initialization.fci.ifi_survives_failover
    lacking               = [for n in data.mssqlifi_instant_file_initialization.fci.cluster_nodes : n.name if n.possible_owner && n.privilege_granted != true]
  }
}
`, e.nodes[0].addr, e.vaddr, e.nodeName(1), e.nodes[1].addr))
	w.mustApply()
	out := w.run("output", "-json", "fci")
	want := fmt.Sprintf(`{"ifi_enabled":true,"ifi_survives_failover":false,"lacking":[%q]}`, e.nodeName(1))
	if got := strings.Join(strings.Fields(out.Stdout), ""); got != want {
		t.Errorf("output fci = %s, want %s", got, want)
	}
	for i, n := range e.nodes {
		if countOp(n.operations(), contract.OpSetRight) != 0 {
			t.Errorf("the data source changed node %s: %v", e.nodeName(i), n.operations())
		}
	}
}

// A failover to a node that is not the first preferred owner of a role that
// allows failback: the plan says a second outage follows.
func TestCLI_fciFailbackIsAnnounced(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startFCI(t, func(c *wsfc.ClusterConfig, hcs []host.HostConfig) {
		hcs[0].Rights = nil
		c.Roles[0].AutoFailbackType = 1
	})
	w.write(e.config("failover"))
	p := w.plan()
	p.wantPlanExit(t, 2)
	p.wantDiag(t, "warning", `^A failback can follow the failover of instance MSSQLSERVER .* to `+regexp.QuoteMeta(e.nodeName(1))+`: a second outage$`,
		`AutoFailbackType 1`)
	for i, n := range e.nodes {
		if ops := n.operations(); countOp(ops, contract.OpSetRight) != 0 || countOp(ops, contract.OpClusterMove) != 0 {
			t.Errorf("the plan changed node %s: %v", e.nodeName(i), ops)
		}
	}
}
