package winsim_test

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/wsfc"
)

// clusterFleet: node1 and node2 are the nodes of CLU1, whose role runs the FCI
// MSSQLSERVER (virtual name SQLFCI1); node1 grants the right to the instance's
// service SID, node2 does not (as a node added later). node3 has the instance
// installed, stopped, and is no node yet.
const clusterFleet = `{
  "hosts": [
    {"name": "node1", "address": "127.0.0.41", "domain": "CONTOSO",
     "accounts": {"CONTOSO\\sqlsvc": "S-1-5-21-1-2-3-1105"},
     "winrm": {"users": [{"name": "CONTOSO\\dba", "password": "Winsim-D0main!"}]},
     "rights": {"SeManageVolumePrivilege": ["BUILTIN\\Administrators", "NT SERVICE\\MSSQLSERVER"]},
     "instances": [{"name": "MSSQLSERVER", "service_account": "CONTOSO\\sqlsvc", "start_ms": 50, "stop_ms": 50,
                    "logins": [{"name": "sa", "password": "Winsim-Sql1!"}]}]},
    {"name": "node2", "address": "127.0.0.42", "domain": "CONTOSO",
     "accounts": {"CONTOSO\\sqlsvc": "S-1-5-21-1-2-3-1105"},
     "winrm": {"users": [{"name": "CONTOSO\\dba", "password": "Winsim-D0main!"}]},
     "instances": [{"name": "MSSQLSERVER", "service_account": "CONTOSO\\sqlsvc", "start_ms": 50, "stop_ms": 50,
                    "logins": [{"name": "sa", "password": "Winsim-Sql1!"}]}]},
    {"name": "node3", "address": "127.0.0.43", "domain": "CONTOSO",
     "accounts": {"CONTOSO\\sqlsvc": "S-1-5-21-1-2-3-1105"},
     "winrm": {"users": [{"name": "CONTOSO\\dba", "password": "Winsim-D0main!"}]},
     "instances": [{"name": "MSSQLSERVER", "service_account": "CONTOSO\\sqlsvc", "stopped": true,
                    "logins": [{"name": "sa", "password": "Winsim-Sql1!"}]}]}
  ],
  "clusters": [
    {"name": "CLU1", "nodes": ["node1", "node2"],
     "roles": [{"instance": "MSSQLSERVER", "virtual_name": "SQLFCI1", "virtual_address": "127.0.0.60",
                "preferred_owners": ["node1", "node2"], "failover_threshold": 1, "pending_timeout_ms": 20000}]}
  ]
}`

const fciGroup = "SQL Server (MSSQLSERVER)"

func startCluster(t *testing.T) *winsim.Sim {
	t.Helper()
	cfg, err := winsim.ParseConfig([]byte(clusterFleet))
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	return startSim(t, cfg)
}

// nodeHost is the provider's runner (internal/remote, masterzen/winrm) on a node's
// WinRM HTTPS listener, verified against the simulator's CA.
func nodeHost(t *testing.T, sim *winsim.Sim, name string) contract.Host {
	t.Helper()
	h, p, err := net.SplitHostPort(hostInfo(t, sim, name).WinRMHTTPS)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(p)
	rh, err := remote.New(remote.Config{Host: h, Port: port, HTTPS: true, CACert: sim.CACertPEM(), Auth: remote.AuthNTLM,
		Username: `CONTOSO\dba`, Password: "Winsim-D0main!", Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return rh
}

func virtualSQL(t *testing.T, sim *winsim.Sim) string {
	t.Helper()
	for _, c := range sim.Info().Clusters {
		for _, r := range c.Roles {
			if r.Name == fciGroup {
				return r.SQL
			}
		}
	}
	t.Fatalf("Info() has no role %s: %+v", fciGroup, sim.Info().Clusters)
	return ""
}

func opCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// physicalNode asks SQL Server on the virtual name which node it runs on, with its
// IFI and whether it says it is clustered.
func physicalNode(t *testing.T, db *sql.DB) (node, ifi string, clustered int) {
	t.Helper()
	ctx := opCtx(t)
	if err := db.QueryRowContext(ctx, "SELECT CAST(SERVERPROPERTY('ComputerNamePhysicalNetBIOS') AS nvarchar(128)), CAST(SERVERPROPERTY('IsClustered') AS int)").Scan(&node, &clustered); err != nil {
		t.Fatalf("SERVERPROPERTY through the virtual name: %v", err)
	}
	ifi, err := engineIFI(ctx, db)
	if err != nil {
		t.Fatalf("sys.dm_server_services through the virtual name: %v", err)
	}
	return node, ifi, clustered
}

func TestClusterReadClusterShape(t *testing.T) {
	t.Parallel()
	sim := startCluster(t)
	for _, n := range []string{"node1", "node2"} {
		r, err := nodeHost(t, sim, n).ReadCluster(opCtx(t), contract.ReadClusterParams{Instance: "MSSQLSERVER"})
		if err != nil {
			t.Fatalf("read_cluster on %s: %v", n, err)
		}
		if r.Cluster != "CLU1" || r.Node != strings.ToUpper(n) || r.VirtualName != "SQLFCI1" {
			t.Errorf("%s: cluster %q node %q virtual name %q", n, r.Cluster, r.Node, r.VirtualName)
		}
		if want := []contract.ClusterNode{{Name: "NODE1", State: "up"}, {Name: "NODE2", State: "up"}}; !slices.Equal(r.Nodes, want) {
			t.Errorf("%s: nodes %+v, want %+v", n, r.Nodes, want)
		}
		g := r.Group
		if g.Name != fciGroup || g.OwnerNode != "NODE1" || g.State != "Online" || !slices.Equal(g.PreferredOwners, []string{"NODE1", "NODE2"}) ||
			g.AutoFailbackType != 0 || g.FailbackWindowStart != -1 || g.FailbackWindowEnd != -1 || g.FailoverThreshold != 1 || g.FailoverPeriodHours != 6 {
			t.Errorf("%s: group %+v", n, g)
		}
		if !slices.Equal(r.PossibleOwners, []string{"NODE1", "NODE2"}) {
			t.Errorf("%s: possible owners %v", n, r.PossibleOwners)
		}
		var types []string
		for _, res := range r.Resources {
			types = append(types, res.Type)
			if res.State != "Online" || res.PendingTimeoutMS != 20000 || !slices.Equal(res.PossibleOwners, []string{"NODE1", "NODE2"}) {
				t.Errorf("%s: resource %+v", n, res)
			}
		}
		for _, want := range []string{"SQL Server", "SQL Server Agent", "Network Name", "IP Address", "Physical Disk"} {
			if !slices.Contains(types, want) {
				t.Errorf("%s: no %q resource among %v", n, want, types)
			}
		}
	}
	// node3 is no node: root\MSCluster does not answer there.
	_, err := nodeHost(t, sim, "node3").ReadCluster(opCtx(t), contract.ReadClusterParams{Instance: "MSSQLSERVER"})
	if scriptCode(err) != contract.CodeNotClustered {
		t.Errorf("read_cluster on node3 = %v; want the script error %s", err, contract.CodeNotClustered)
	}
	// Each node's read_instance: installed, clustered, running on the owner only,
	// one service SID for the instance on every node.
	for n, want := range map[string]string{"node1": contract.StateRunning, "node2": contract.StateStopped} {
		ri, err := nodeHost(t, sim, n).ReadInstance(opCtx(t), contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume})
		if err != nil {
			t.Fatal(err)
		}
		if !ri.Found || !ri.Clustered || ri.ServiceState != want {
			t.Errorf("%s read_instance: found %v clustered %v state %q, want clustered and %s", n, ri.Found, ri.Clustered, ri.ServiceState, want)
		}
		if ri.HADR == nil || !ri.HADR.ClusterKnown {
			t.Errorf("%s read_instance: hadr %+v; want cluster_known on a cluster node", n, ri.HADR)
		}
	}
}

// A move stops the Engine on the owner and starts it on the target with the
// target's token: IFI follows the target's LSA, and the virtual name follows the owner.
func TestClusterMoveFollowsTargetLSA(t *testing.T) {
	t.Parallel()
	sim := startCluster(t)
	db := openDB(t, virtualSQL(t, sim))
	if node, ifi, clustered := physicalNode(t, db); node != "NODE1" || ifi != "Y" || clustered != 1 {
		t.Fatalf("before the move: node %q IFI %q IsClustered %d; want NODE1, Y, 1", node, ifi, clustered)
	}
	n1 := nodeHost(t, sim, "node1")
	res, err := n1.ClusterMove(opCtx(t), contract.ClusterMoveParams{Instance: "MSSQLSERVER", Group: fciGroup, TargetNode: "NODE2", TimeoutS: 60})
	if err != nil {
		t.Fatalf("cluster_move: %v", err)
	}
	if res.OwnerBefore != "NODE1" || res.OwnerAfter != "NODE2" || res.State != "Online" || res.Error != "" {
		t.Fatalf("cluster_move = %+v; want NODE1 → NODE2 Online without error", res)
	}
	if node, ifi, _ := physicalNode(t, db); node != "NODE2" || ifi != "N" {
		t.Errorf("after the move to node2 (no grant): node %q IFI %q; want NODE2, N", node, ifi)
	}
	if d := sim.EnginesDown(); d.Now != 0 || d.Max != 1 {
		t.Errorf("engines_down after the move = %+v; want 0 now (the FCI runs on node2), 1 at most", d)
	}
	for n, want := range map[string]string{"node1": contract.StateStopped, "node2": contract.StateRunning} {
		m, _ := sim.Host(n)
		if st, _ := m.ServiceState("MSSQLSERVER"); st != want {
			t.Errorf("%s's Engine is %s, want %s", n, st, want)
		}
	}
	// Grant on node2, move away and back: the new process has the right.
	n2 := nodeHost(t, sim, "node2")
	if _, err := n2.SetRight(opCtx(t), contract.SetRightParams{Right: contract.RightManageVolume, SID: winsid.ServiceSID("MSSQLSERVER"), Grant: true}); err != nil {
		t.Fatal(err)
	}
	if node, ifi, _ := physicalNode(t, db); node != "NODE2" || ifi != "N" {
		t.Errorf("after the grant, before a restart: node %q IFI %q; want NODE2, N (the token is the start's)", node, ifi)
	}
	for _, target := range []string{"NODE1", "NODE2"} {
		res, err := n2.ClusterMove(opCtx(t), contract.ClusterMoveParams{Instance: "MSSQLSERVER", Group: fciGroup, TargetNode: target, TimeoutS: 60})
		if err != nil {
			t.Fatalf("cluster_move to %s: %v", target, err)
		}
		if res.Error != "" || res.OwnerAfter != target {
			t.Fatalf("cluster_move to %s = %+v", target, res)
		}
	}
	if node, ifi, _ := physicalNode(t, db); node != "NODE2" || ifi != "Y" {
		t.Errorf("after the grant and a move back to node2: node %q IFI %q; want NODE2, Y", node, ifi)
	}
	// The script refuses a move to the owner, before anything moves.
	_, err = n2.ClusterMove(opCtx(t), contract.ClusterMoveParams{Instance: "MSSQLSERVER", Group: fciGroup, TargetNode: "NODE2", TimeoutS: 60})
	if scriptCode(err) != contract.CodeClusterError {
		t.Errorf("cluster_move to the owner = %v; want %s", err, contract.CodeClusterError)
	}
	// Assert-ClusterRequest checks timeout_s before the target's name.
	_, err = n2.ClusterMove(opCtx(t), contract.ClusterMoveParams{Instance: "MSSQLSERVER", Group: fciGroup, TargetNode: "not a node!", TimeoutS: 0})
	if scriptCode(err) != "invalid_parameters" || !strings.Contains(err.Error(), "timeout_s") {
		t.Errorf("cluster_move with a bad timeout and target = %v; want invalid_parameters about timeout_s", err)
	}
}

// While SQL Server's resource goes offline for a move, the virtual name refuses
// connections; the move the cluster accepted goes on when the caller stops waiting.
func TestClusterVirtualNameRefusesWhileMoving(t *testing.T) {
	t.Parallel()
	sim := startCluster(t)
	addr := virtualSQL(t, sim)
	for _, n := range []string{"node1", "node2"} {
		m, _ := sim.Host(n)
		if err := m.SetStopDuration("MSSQLSERVER", 2*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	c, err := sim.Cluster("CLU1")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the caller is gone at once: the cluster goes on
	out, err := c.Move(ctx, fciGroup, "node2", "move", time.Minute)
	if err != nil || out.Err != nil || out.Finished {
		t.Fatalf("Move = %+v, %v; want an accepted move still under way", out, err)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	sqlPending := func(v wsfc.ClusterRoleView) bool {
		for _, r := range v.Resources {
			if r.Type == wsfc.ResourceTypeSQLServer {
				return r.State == wsfc.ResourceOfflinePending
			}
		}
		return false
	}
	if _, err := c.WaitRole(wctx, fciGroup, sqlPending); err != nil {
		t.Fatal(err)
	}
	if conn, err := net.DialTimeout("tcp", addr, 2*time.Second); err == nil {
		_ = conn.Close()
		t.Errorf("the virtual name %s accepted a connection while the role was moving", addr)
	}
	v, err := c.WaitRole(wctx, fciGroup, func(v wsfc.ClusterRoleView) bool { return v.State == wsfc.GroupOnline && v.Action == "" })
	if err != nil || v.OwnerNode != "NODE2" {
		t.Fatalf("the move did not end Online on NODE2: %+v, %v", v, err)
	}
	if node, _, _ := physicalNode(t, openDB(t, addr)); node != "NODE2" {
		t.Errorf("the virtual name serves %s after the move, want NODE2", node)
	}
}

func TestClusterMoveFailsBack(t *testing.T) {
	t.Parallel()
	sim := startCluster(t)
	if _, err := sim.ClusterDo(context.Background(), "CLU1", winsim.ClusterAction{Action: winsim.ActionFailMove, Role: fciGroup, Mode: wsfc.FailMoveFailBack}); err != nil {
		t.Fatal(err)
	}
	res, err := nodeHost(t, sim, "node1").ClusterMove(opCtx(t), contract.ClusterMoveParams{Instance: "MSSQLSERVER", Group: fciGroup, TargetNode: "NODE2", TimeoutS: 60})
	if err != nil {
		t.Fatalf("cluster_move: %v", err)
	}
	if res.OwnerAfter != "NODE1" || res.State != "Online" || !strings.Contains(res.Error, "failed back") && !strings.Contains(res.Error, "failed the role back") {
		t.Fatalf("cluster_move with a failing target = %+v; want the role back Online on NODE1 with the cluster's error", res)
	}
	if node, ifi, _ := physicalNode(t, openDB(t, virtualSQL(t, sim))); node != "NODE1" || ifi != "Y" {
		t.Errorf("after the failback: node %q IFI %q; want NODE1, Y", node, ifi)
	}
	// "offline": the resource will not come online and stays Failed there.
	if _, err := sim.ClusterDo(context.Background(), "CLU1", winsim.ClusterAction{Action: winsim.ActionFailMove, Role: fciGroup, Mode: wsfc.FailMoveOffline}); err != nil {
		t.Fatal(err)
	}
	res, err = nodeHost(t, sim, "node1").ClusterMove(opCtx(t), contract.ClusterMoveParams{Instance: "MSSQLSERVER", Group: fciGroup, TargetNode: "NODE2", TimeoutS: 60})
	if err != nil {
		t.Fatalf("cluster_move: %v", err)
	}
	if res.OwnerAfter != "NODE2" || res.State != "Failed" || res.Error == "" {
		t.Errorf("cluster_move whose resource will not come online = %+v; want Failed on NODE2 with an error", res)
	}
	// cluster_move's guard brings the role online once the move's script has ended
	// (the fault failed one start): the role ends Online on NODE2, not left Failed.
	c, err := sim.Cluster("CLU1")
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), time.Minute)
	defer wcancel()
	if _, err := c.WaitRole(wctx, fciGroup, func(v wsfc.ClusterRoleView) bool {
		return v.State == wsfc.GroupOnline && v.OwnerNode == "NODE2" && v.Action == ""
	}); err != nil {
		t.Fatalf("the cluster guard did not bring the Failed role online on NODE2: %v", err)
	}
	// A failover from outside (the cluster service's own, no guard) onto a node
	// where SQL Server will not start leaves it Failed: the virtual name refuses.
	if _, err := sim.ClusterDo(context.Background(), "CLU1", winsim.ClusterAction{Action: winsim.ActionFailMove, Role: fciGroup, Mode: wsfc.FailMoveOffline}); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.ClusterDo(context.Background(), "CLU1", winsim.ClusterAction{Action: winsim.ActionClusterFailover, Role: fciGroup, Node: "NODE1"}); err == nil || !strings.Contains(err.Error(), "will not come online") {
		t.Fatalf("failover onto a node where SQL Server will not start: %v, want the cluster's error", err)
	}
	if v, err := c.WaitRole(wctx, fciGroup, func(v wsfc.ClusterRoleView) bool { return v.Action == "" }); err != nil || v.OwnerNode != "NODE1" || v.State != wsfc.GroupFailed {
		t.Fatalf("after a failover onto a node where SQL Server will not start: %+v, %v; want Failed on NODE1", v, err)
	}
	if conn, err := net.DialTimeout("tcp", virtualSQL(t, sim), 2*time.Second); err == nil {
		_ = conn.Close()
		t.Errorf("the virtual name accepts connections while SQL Server is Failed")
	}
}

// A paused node keeps its roles but cannot take one; a down node's WinRM refuses
// connections and the role it owned fails over.
func TestClusterPausedAndDownNodes(t *testing.T) {
	t.Parallel()
	sim := startCluster(t)
	do := func(a winsim.ClusterAction) {
		t.Helper()
		if _, err := sim.ClusterDo(context.Background(), "CLU1", a); err != nil {
			t.Fatalf("%s: %v", a.Action, err)
		}
	}
	do(winsim.ClusterAction{Action: winsim.ActionNodeState, Node: "node2", State: wsfc.NodePaused})
	r, err := nodeHost(t, sim, "node1").ReadCluster(opCtx(t), contract.ReadClusterParams{Instance: "MSSQLSERVER"})
	if err != nil || !slices.Contains(r.Nodes, contract.ClusterNode{Name: "NODE2", State: "paused"}) {
		t.Fatalf("read_cluster after the pause: %+v, %v", r.Nodes, err)
	}
	res, err := nodeHost(t, sim, "node1").ClusterMove(opCtx(t), contract.ClusterMoveParams{Instance: "MSSQLSERVER", Group: fciGroup, TargetNode: "NODE2", TimeoutS: 60})
	if err != nil {
		t.Fatalf("cluster_move to a paused node: %v", err)
	}
	if res.OwnerAfter != "NODE1" || res.State != "Online" || !strings.Contains(res.Error, "paused") {
		t.Fatalf("cluster_move to a paused node = %+v, %v; want refused by the cluster, the role Online on NODE1", res, err)
	}
	if _, err := sim.ClusterDo(context.Background(), "CLU1", winsim.ClusterAction{Action: winsim.ActionClusterFailover, Role: fciGroup, Node: "node2"}); err == nil {
		t.Errorf("cluster_failover to a paused node succeeded")
	}
	do(winsim.ClusterAction{Action: winsim.ActionNodeState, Node: "node2", State: wsfc.NodeUp})
	do(winsim.ClusterAction{Action: winsim.ActionNodeState, Node: "node1", State: wsfc.NodeDown})
	if conn, err := net.DialTimeout("tcp", hostInfo(t, sim, "node1").WinRMHTTPS, 2*time.Second); err == nil {
		_ = conn.Close()
		t.Errorf("node1 is down but its WinRM accepted a connection")
	}
	c, _ := sim.Cluster("CLU1")
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if v, err := c.WaitRole(wctx, fciGroup, func(v wsfc.ClusterRoleView) bool { return v.State == wsfc.GroupOnline && v.OwnerNode == "NODE2" }); err != nil {
		t.Fatalf("the role did not fail over to NODE2 when NODE1 went down: %+v, %v", v, err)
	}
	if node, ifi, _ := physicalNode(t, openDB(t, virtualSQL(t, sim))); node != "NODE2" || ifi != "N" {
		t.Errorf("after node1 went down: node %q IFI %q; want NODE2, N", node, ifi)
	}
	do(winsim.ClusterAction{Action: winsim.ActionNodeState, Node: "node1", State: wsfc.NodeUp})
	if _, err := nodeHost(t, sim, "node1").ReadCluster(opCtx(t), contract.ReadClusterParams{Instance: "MSSQLSERVER"}); err != nil {
		t.Errorf("read_cluster on node1 once it is up again: %v", err)
	}
}

// Taking SQL Server offline takes Agent with it; bringing SQL Server alone online
// leaves Agent offline; cluster_restart brings the whole group online.
func TestClusterRestartBringsAgentBackOnlyThroughTheGroup(t *testing.T) {
	t.Parallel()
	sim := startCluster(t)
	c, _ := sim.Cluster("CLU1")
	ctx := opCtx(t)
	state := func(typ string) string {
		v, _ := c.RoleView(fciGroup)
		for _, r := range v.Resources {
			if r.Type == typ {
				return r.State
			}
		}
		return ""
	}
	if out, err := c.TakeResourceOffline(ctx, fciGroup, wsfc.ResourceTypeSQLServer, time.Minute); err != nil || out.Err != nil {
		t.Fatalf("TakeOffline: %+v, %v", out, err)
	}
	if sqlState, agent := state(wsfc.ResourceTypeSQLServer), state(wsfc.ResourceTypeAgent); sqlState != "Offline" || agent != "Offline" {
		t.Fatalf("after taking SQL Server offline: SQL Server %s, Agent %s; want both Offline", sqlState, agent)
	}
	if out, err := c.BringResourceOnline(ctx, fciGroup, wsfc.ResourceTypeSQLServer, time.Minute); err != nil || out.Err != nil {
		t.Fatalf("BringOnline: %+v, %v", out, err)
	}
	if sqlState, agent := state(wsfc.ResourceTypeSQLServer), state(wsfc.ResourceTypeAgent); sqlState != "Online" || agent != "Offline" {
		t.Fatalf("after bringing SQL Server alone online: SQL Server %s, Agent %s; want Online, Offline", sqlState, agent)
	}
	v, _ := c.RoleView(fciGroup)
	if v.State != wsfc.GroupPartialOnline {
		t.Errorf("group state %s with Agent offline, want PartialOnline", v.State)
	}
	// cluster_restart refuses a group that is not Online.
	n1 := nodeHost(t, sim, "node1")
	_, err := n1.ClusterRestart(ctx, contract.ClusterRestartParams{Instance: "MSSQLSERVER", TimeoutS: 60})
	if scriptCode(err) != contract.CodeClusterError {
		t.Errorf("cluster_restart of a PartialOnline group = %v; want %s", err, contract.CodeClusterError)
	}
	if out, err := c.BringGroupOnline(ctx, fciGroup, time.Minute); err != nil || out.Err != nil {
		t.Fatal(out, err)
	}
	m1, _ := sim.Host("node1")
	pidBefore := m1.Instances()[0].Process().PID
	res, err := n1.ClusterRestart(ctx, contract.ClusterRestartParams{Instance: "MSSQLSERVER", TimeoutS: 60})
	if err != nil {
		t.Fatalf("cluster_restart: %v", err)
	}
	if res.Error != "" || res.State != "Online" || res.OwnerAfter != "NODE1" {
		t.Fatalf("cluster_restart = %+v", res)
	}
	for _, r := range res.Resources {
		if r.State != "Online" {
			t.Errorf("after cluster_restart %s is %s", r.Name, r.State)
		}
	}
	if st, _ := m1.ServiceState("SQLSERVERAGENT"); st != contract.StateRunning {
		t.Errorf("SQLSERVERAGENT is %s after cluster_restart", st)
	}
	if p := m1.Instances()[0].Process(); p == nil || p.PID == pidBefore {
		t.Errorf("cluster_restart did not start a new Engine process (pid %d before)", pidBefore)
	}
}

// add_node joins node3 without the grant; evict_node removes a node from every
// owner list.
func TestClusterAddAndEvictNode(t *testing.T) {
	t.Parallel()
	sim := startCluster(t)
	ctx := context.Background()
	if _, err := sim.ClusterDo(ctx, "CLU1", winsim.ClusterAction{Action: winsim.ActionAddNode, Host: "node3"}); err != nil {
		t.Fatal(err)
	}
	r, err := nodeHost(t, sim, "node3").ReadCluster(opCtx(t), contract.ReadClusterParams{Instance: "MSSQLSERVER"})
	if err != nil {
		t.Fatalf("read_cluster on the added node: %v", err)
	}
	if !slices.Equal(r.PossibleOwners, []string{"NODE1", "NODE2", "NODE3"}) || !slices.Equal(r.Group.PreferredOwners, []string{"NODE1", "NODE2"}) {
		t.Errorf("after add_node: possible %v preferred %v", r.PossibleOwners, r.Group.PreferredOwners)
	}
	ri, err := nodeHost(t, sim, "node3").ReadInstance(opCtx(t), contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume})
	if err != nil || !ri.Clustered || slices.ContainsFunc(ri.RightHolders, func(p contract.Principal) bool { return p.SID == winsid.ServiceSID("MSSQLSERVER") }) {
		t.Errorf("node3 read_instance: %+v, %v; want clustered, without the grant", ri, err)
	}
	if _, err := sim.ClusterDo(ctx, "CLU1", winsim.ClusterAction{Action: winsim.ActionClusterFailover, Role: fciGroup, Node: "NODE3"}); err != nil {
		t.Fatal(err)
	}
	if node, ifi, _ := physicalNode(t, openDB(t, virtualSQL(t, sim))); node != "NODE3" || ifi != "N" {
		t.Errorf("on the added node: %q IFI %q; want NODE3, N", node, ifi)
	}
	if _, err := sim.ClusterDo(ctx, "CLU1", winsim.ClusterAction{Action: winsim.ActionEvictNode, Node: "node3"}); err != nil {
		t.Fatal(err)
	}
	r, err = nodeHost(t, sim, "node1").ReadCluster(opCtx(t), contract.ReadClusterParams{Instance: "MSSQLSERVER"})
	if err != nil || r.Group.OwnerNode == "NODE3" || slices.Contains(r.PossibleOwners, "NODE3") || len(r.Nodes) != 2 {
		t.Errorf("after evicting node3: %+v, %v", r, err)
	}
	_, err = nodeHost(t, sim, "node3").ReadCluster(opCtx(t), contract.ReadClusterParams{Instance: "MSSQLSERVER"})
	if scriptCode(err) != contract.CodeNotClustered {
		t.Errorf("read_cluster on the evicted node = %v; want %s", err, contract.CodeNotClustered)
	}
}

// scriptCode is the script's error code of an operation's error, "" for another error.
func scriptCode(err error) string {
	var re *remote.Error
	if errors.As(err, &re) {
		return re.ScriptCode()
	}
	return ""
}

func TestClusterConfigErrors(t *testing.T) {
	t.Parallel()
	base := func(cluster string) string {
		return `{"hosts": [
		  {"name": "a", "address": "127.0.0.41", "instances": [{"name": "MSSQLSERVER"}]},
		  {"name": "b", "address": "127.0.0.42", "instances": [{"name": "MSSQLSERVER"}]},
		  {"name": "c", "address": "127.0.0.43"}],
		 "clusters": [` + cluster + `]}`
	}
	for _, tc := range []struct{ cluster, want string }{
		{`{"name": "C", "nodes": ["a", "x"]}`, `node "x" is not a host`},
		{`{"name": "C", "nodes": ["a", "c"], "roles": [{"instance": "MSSQLSERVER", "virtual_name": "V", "virtual_address": "127.0.0.60"}]}`, `node "c" has no instance MSSQLSERVER`},
		{`{"name": "C", "nodes": ["a", "b"], "roles": [{"instance": "MSSQLSERVER", "virtual_name": "V", "virtual_address": "127.0.0.42"}]}`, `is host "b"'s address`},
		{`{"name": "C", "nodes": ["a", "b"], "roles": [{"instance": "MSSQLSERVER", "virtual_name": "AVERYLONGVIRTUALNAME", "virtual_address": "127.0.0.60"}]}`, `is not a NetBIOS name`},
		{`{"name": "C", "nodes": ["a", "b"], "roles": [{"instance": "MSSQLSERVER", "virtual_name": "V", "virtual_address": "127.0.0.60", "owner": "c"}]}`, `not one of the cluster's nodes`},
		{`{"name": "C", "nodes": ["a", "b"], "roles": [{"instance": "MSSQLSERVER", "virtual_name": "V", "virtual_address": "127.0.0.60", "possible_owners": {"SQL Server": ["b"]}, "owner": "a"}]}`, `the owner "a" is not a possible owner of "SQL Server"`},
		{`{"name": "C", "nodes": ["a", "b"], "roles": [{"instance": "MSSQLSERVER", "virtual_name": "V", "virtual_address": "127.0.0.60", "possible_owners": {"Quorum": ["a"]}}]}`, `neither a resource nor a resource type`},
		{`{"name": "C", "nodes": ["a", "b"], "roles": [{"instance": "MSSQLSERVER", "virtual_name": "V", "virtual_address": "127.0.0.60", "failback_window_start": 3}]}`, `set both "failback_window_start" and "failback_window_end"`},
		{`{"name": "C", "nodes": ["a", "b"], "roles": [{"instance": "MSSQLSERVER", "virtual_name": "V", "virtual_address": "127.0.0.60", "auto_failback_type": 2}]}`, `"auto_failback_type" 2`},
	} {
		_, err := winsim.ParseConfig([]byte(base(tc.cluster)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("cluster %s: error %v; want one containing %q", tc.cluster, err, tc.want)
		}
	}
	stopped := strings.Replace(base(`{"name": "C", "nodes": ["a", "b"], "roles": [{"instance": "MSSQLSERVER", "virtual_name": "V", "virtual_address": "127.0.0.60"}]}`),
		`"address": "127.0.0.42", "instances": [{"name": "MSSQLSERVER"`, `"address": "127.0.0.42", "instances": [{"name": "MSSQLSERVER", "stopped": true`, 1)
	if _, err := winsim.ParseConfig([]byte(stopped)); err == nil || !strings.Contains(err.Error(), `the cluster decides where an FCI runs`) {
		t.Errorf("a node's FCI instance marked stopped: %v", err)
	}
}

// The demo fleet (demo/fleet.json) loads, with its two-node FCI.
func TestDemoFleetHasAnFCI(t *testing.T) {
	t.Parallel()
	cfg, err := winsim.LoadConfig("../../demo/fleet.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Clusters) != 1 || len(cfg.Clusters[0].Nodes) != 2 || len(cfg.Clusters[0].Roles) != 1 {
		t.Errorf("demo/fleet.json clusters: %+v; want one two-node cluster with one role", cfg.Clusters)
	}
}

// Windows' default FailoverThreshold (0xFFFFFFFF) reads as -1 (read_cluster reads
// cluster DWORDs as signed). A start slower than the resource's PendingTimeout
// leaves SQL Server Failed.
func TestClusterDefaultThresholdAndPendingTimeout(t *testing.T) {
	t.Parallel()
	raw := strings.Replace(clusterFleet, `"failover_threshold": 1, "pending_timeout_ms": 20000`, `"pending_timeout_ms": 300`, 1)
	cfg, err := winsim.ParseConfig([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Hosts[1].Instances[0].StartMS = 2000 // node2's Engine starts slower than the pending timeout
	sim := startSim(t, cfg)
	r, err := nodeHost(t, sim, "node1").ReadCluster(opCtx(t), contract.ReadClusterParams{Instance: "MSSQLSERVER"})
	if err != nil || r.Group.FailoverThreshold != -1 {
		t.Errorf("read_cluster with Windows' default FailoverThreshold 0xFFFFFFFF: %+v, %v; want the threshold read as signed, -1", r.Group, err)
	}
	c, _ := sim.Cluster("CLU1")
	out, err := c.Move(opCtx(t), fciGroup, "node2", "move", time.Minute)
	if err != nil || out.Err == nil || !strings.Contains(out.Err.Error(), "pending timeout") {
		t.Fatalf("Move to a node whose start outlasts the pending timeout = %+v, %v; want the cluster's timeout error", out, err)
	}
	if v, _ := c.RoleView(fciGroup); v.OwnerNode != "NODE1" || v.State != wsfc.GroupOnline {
		t.Errorf("after the timed-out move: %s on %s; want the role failed back Online on NODE1", v.State, v.OwnerNode)
	}
	m2, _ := sim.Host("node2")
	if st, _ := m2.ServiceState("MSSQLSERVER"); st != contract.StateStopped {
		t.Errorf("node2's Engine is %s after its start outlasted the pending timeout; want it ended (Stopped)", st)
	}
}

// The WinRM connection is lost while cluster_move waits: the caller gets an error,
// and the cluster finishes the move it accepted.
func TestClusterMoveSurvivesALostConnection(t *testing.T) {
	t.Parallel()
	sim := startCluster(t)
	m1, _ := sim.Host("node1")
	if err := m1.SetStopDuration("MSSQLSERVER", time.Second); err != nil {
		t.Fatal(err)
	}
	if err := sim.Do("node1", winsim.Action{Action: winsim.ActionWinRMFault, WinRMFault: winsim.WinRMFault{
		Fault: winsim.FaultReset, Request: "Receive", Operation: string(contract.OpClusterMove), Count: -1}}); err != nil {
		t.Fatal(err)
	}
	_, err := nodeHost(t, sim, "node1").ClusterMove(opCtx(t), contract.ClusterMoveParams{Instance: "MSSQLSERVER", Group: fciGroup, TargetNode: "NODE2", TimeoutS: 60})
	if err == nil {
		t.Fatal("cluster_move answered although every Receive was reset")
	}
	t.Logf("cluster_move over a lost connection: %v", err)
	c, _ := sim.Cluster("CLU1")
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := c.WaitRole(wctx, fciGroup, func(v wsfc.ClusterRoleView) bool {
		return v.State == wsfc.GroupOnline && v.Action == "" && v.OwnerNode == "NODE2"
	})
	if err != nil {
		t.Fatalf("the move the cluster accepted did not finish on NODE2 after the connection was lost: %+v, %v", v, err)
	}
	r, err := nodeHost(t, sim, "node2").ReadCluster(opCtx(t), contract.ReadClusterParams{Instance: "MSSQLSERVER"})
	if err != nil || r.Group.OwnerNode != "NODE2" || r.Group.State != "Online" {
		t.Errorf("read_cluster after the lost connection: %+v, %v", r, err)
	}
}

// read_cluster reports what the last cluster action's guard recorded on the node the
// action was sent to (cluster_guard.ps1's marker): nothing before any action; after
// a cluster_restart whose shell ended while SQL Server's resource went offline, the
// guard, once the cluster was done, brought the role online once and recorded it.
func TestReadClusterReportsTheGuardsRecord(t *testing.T) {
	t.Parallel()
	sim := startCluster(t)
	n1 := nodeHost(t, sim, "node1")
	r, err := n1.ReadCluster(opCtx(t), contract.ReadClusterParams{Instance: "MSSQLSERVER"})
	if err != nil || r.Guard != nil {
		t.Fatalf("read_cluster before any cluster action: guard %+v, %v; want none", r.Guard, err)
	}
	m1, _ := sim.Host("node1")
	// The Engine's stop lasts until EndStopNow: the shell ends while it is pending.
	if err := m1.SetStopDuration("MSSQLSERVER", time.Hour); err != nil {
		t.Fatal(err)
	}
	c, _ := sim.Cluster("CLU1")
	ctx := opCtx(t)
	done := make(chan error, 1)
	go func() {
		_, err := n1.ClusterRestart(ctx, contract.ClusterRestartParams{Instance: "MSSQLSERVER", TimeoutS: 600})
		done <- err
	}()
	if _, err := c.WaitRole(ctx, fciGroup, func(v wsfc.ClusterRoleView) bool { return v.Action != "" }); err != nil {
		t.Fatalf("the cluster was not seen taking the role offline: %v", err)
	}
	if err := sim.Do("node1", winsim.Action{Action: winsim.ActionRestartWinRM}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Fatal("cluster_restart answered although its shell was ended")
	}
	if err := m1.EndStopNow("MSSQLSERVER"); err != nil {
		t.Fatal(err)
	}
	if _, err := m1.WaitClusterGuard(ctx, "MSSQLSERVER"); err != nil {
		t.Fatalf("the guard did not finish: %v", err)
	}
	r, err = nodeHost(t, sim, "node1").ReadCluster(opCtx(t), contract.ReadClusterParams{Instance: "MSSQLSERVER"})
	want := contract.ClusterGuardRecord{Finished: true, Group: fciGroup, BroughtOnline: 1, State: contract.ClusterOnline}
	if err != nil || r.Guard == nil || *r.Guard != want || r.Group.State != contract.ClusterOnline {
		t.Fatalf("read_cluster after the guard: %+v (guard %+v), %v; want the role Online and the guard's record %+v", r, r.Guard, err, want)
	}
	// The other node ran no action: it has no record.
	r, err = nodeHost(t, sim, "node2").ReadCluster(opCtx(t), contract.ReadClusterParams{Instance: "MSSQLSERVER"})
	if err != nil || r.Guard != nil {
		t.Errorf("read_cluster on node2: guard %+v, %v; want none", r.Guard, err)
	}
}

// Issue 37: after a cluster_restart that leaves the role Failed (its SQL Server
// will not start on either node), the guard calls BringOnline at most
// contract.ClusterGuardAttempts times, pausing longer each time, then stops and
// says why; its record is written at each turn, so read_cluster sees its progress
// before it ends. Before, it called BringOnline again each time the cluster was
// done, for 2 hours, and wrote its record only at the end.
func TestClusterGuardStopsAfterRepeatedFailures(t *testing.T) {
	t.Parallel()
	sim := startCluster(t)
	m1, _ := sim.Host("node1")
	m2, _ := sim.Host("node2")
	for _, m := range []*host.Host{m1, m2} {
		if err := m.FailStarts("MSSQLSERVER", 1067, -1); err != nil {
			t.Fatal(err)
		}
	}
	ctx := opCtx(t)
	start := time.Now()
	if r, err := nodeHost(t, sim, "node1").ClusterRestart(ctx, contract.ClusterRestartParams{Instance: "MSSQLSERVER", TimeoutS: 30}); err == nil && r.Error == "" {
		t.Fatalf("cluster_restart succeeded with an Engine that will not start: %+v", r)
	}
	var progress host.ClusterGuardOutcome
	if err := waitUntil(ctx, func() bool {
		progress, _ = m1.ClusterGuard("MSSQLSERVER")
		return progress.Finished || progress.BroughtOnline >= 1
	}); err != nil || progress.Finished {
		t.Fatalf("no progress record before the guard ended: %+v, %v", progress, err)
	}
	out, err := m1.WaitClusterGuard(ctx, "MSSQLSERVER")
	if err != nil {
		t.Fatalf("the guard did not stop: %v", err)
	}
	if out.BroughtOnline != contract.ClusterGuardAttempts || !strings.Contains(out.Error, "did not bring the role") || out.State == contract.ClusterOnline {
		t.Errorf("the guard's outcome: %+v; want %d BringOnline calls and why it stopped", out, contract.ClusterGuardAttempts)
	}
	// The pauses between the calls: 2 s, then 4 s, then 8 s before the guard gives up.
	if took, least := time.Since(start), 14*time.Second; took < least {
		t.Errorf("the guard stopped %s after the action: its pauses (at least %s in all) were not kept", took, least)
	}
}

// Issue 37: a role whose SQL Server resource came Online under the guard (its Agent
// failing) and that someone then takes offline (a DBA repairing it: the cluster
// itself puts a resource that fails into Failed, never Offline) is left Offline: the
// guard stops and says so, rather than bringing it back.
func TestClusterGuardLeavesARoleTakenOfflineBySomeoneElse(t *testing.T) {
	t.Parallel()
	sim := startCluster(t)
	m1, _ := sim.Host("node1")
	m2, _ := sim.Host("node2")
	for _, m := range []*host.Host{m1, m2} {
		if err := m.FailStarts("SQLSERVERAGENT", 1067, -1); err != nil {
			t.Fatal(err)
		}
	}
	ctx := opCtx(t)
	if r, err := nodeHost(t, sim, "node1").ClusterRestart(ctx, contract.ClusterRestartParams{Instance: "MSSQLSERVER", TimeoutS: 30}); err == nil && r.Error == "" {
		t.Fatalf("cluster_restart succeeded with an Agent that will not start: %+v", r)
	}
	c, _ := sim.Cluster("CLU1")
	if err := waitUntil(ctx, func() bool {
		g, _ := m1.ClusterGuard("MSSQLSERVER")
		v, err := c.RoleView(fciGroup)
		return g.BroughtOnline >= 1 && err == nil && v.Action == ""
	}); err != nil {
		t.Fatalf("the guard did not bring the role online once: %v", err)
	}
	// The DBA takes the role offline (the cluster may be busy with the guard's call).
	if err := waitUntil(ctx, func() bool {
		off, err := c.TakeResourceOffline(ctx, fciGroup, wsfc.ResourceTypeSQLServer, 20*time.Second)
		return err == nil && off.Err == nil && off.Finished
	}); err != nil {
		t.Fatalf("taking the role offline: %v", err)
	}
	out, err := m1.WaitClusterGuard(ctx, "MSSQLSERVER")
	if err != nil {
		t.Fatalf("the guard did not stop: %v", err)
	}
	if !strings.Contains(out.Error, "taken offline after it had come Online") || out.BroughtOnline > 2 {
		t.Errorf("the guard's outcome: %+v; want it stopped at the role taken offline", out)
	}
	if v, _ := c.RoleView(fciGroup); sqlResourceState(v) != wsfc.ResourceOffline {
		t.Errorf("the role's SQL Server resource is %s after the guard ended; want it left Offline", sqlResourceState(v))
	}
}

func sqlResourceState(v wsfc.ClusterRoleView) string {
	for _, r := range v.Resources {
		if r.Type == wsfc.ResourceTypeSQLServer {
			return r.State
		}
	}
	return ""
}

// waitUntil polls cond every 50 ms until it holds or ctx ends.
func waitUntil(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// A cluster action whose guard cannot start (WMI's process creation blocked by the
// ASR rule, the Task Scheduler stopped) is refused before anything is taken
// offline: cluster_error, and the role stays Online on its owner.
func TestClusterRestartRefusedWithoutAGuard(t *testing.T) {
	t.Parallel()
	cfg, err := winsim.ParseConfig([]byte(clusterFleet))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Hosts[0].TaskSchedulerStopped = true
	sim := startSim(t, cfg)
	if err := sim.Do("node1", winsim.Action{Action: winsim.ActionSetASRRule, Rule: host.ASRRulePsExecWMI, RuleAction: host.ASRBlock}); err != nil {
		t.Fatal(err)
	}
	_, err = nodeHost(t, sim, "node1").ClusterRestart(opCtx(t), contract.ClusterRestartParams{Instance: "MSSQLSERVER", TimeoutS: 60})
	if scriptCode(err) != contract.CodeClusterError || !strings.Contains(err.Error(), "guard process could not be started") ||
		!strings.Contains(err.Error(), "Nothing was taken offline") {
		t.Fatalf("cluster_restart without a guard: %v; want cluster_error, nothing taken offline", err)
	}
	c, _ := sim.Cluster("CLU1")
	if v, err := c.RoleView("MSSQLSERVER"); err != nil || v.State != wsfc.GroupOnline || v.Action != "" || v.OwnerNode != "NODE1" {
		t.Errorf("the role after the refusal: %+v, %v; want it Online on NODE1, untouched", v, err)
	}
}

// Issue 37: a slow offline. cluster_restart's TakeOffline waits at most half the
// time left and BringOnline keeps the other half: an offline still pending at half
// time is reported as such (BringOnline not called on it, so no false "failed to
// come online" from a BringOnline left a second), the script ends at half time, and
// the guard brings the role online once the offline ends. An offline that ends
// within the half leaves BringOnline the rest, and the restart succeeds.
func TestClusterRestartSlowOfflineLeavesBringOnlineItsHalf(t *testing.T) {
	t.Parallel()
	sim := startCluster(t)
	m1, _ := sim.Host("node1")
	c, _ := sim.Cluster("CLU1")
	ctx := opCtx(t)
	n1 := nodeHost(t, sim, "node1")

	// Within the half (1.5 s of about 4: half the time left once the guard runs):
	// the restart succeeds.
	if err := m1.SetStopDuration("MSSQLSERVER", 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	res, err := n1.ClusterRestart(ctx, contract.ClusterRestartParams{Instance: "MSSQLSERVER", TimeoutS: 8})
	if err != nil || res.Error != "" || res.State != wsfc.GroupOnline {
		t.Fatalf("cluster_restart with a 1.5 s offline of 8 s = %+v, %v; want Online", res, err)
	}

	// Past the half and past the timeout (10 s of 8): the offline is named.
	if err := m1.SetStopDuration("MSSQLSERVER", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	pidBefore := m1.Instances()[0].Process().PID
	start := time.Now()
	res, err = n1.ClusterRestart(ctx, contract.ClusterRestartParams{Instance: "MSSQLSERVER", TimeoutS: 8})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("cluster_restart: %v", err)
	}
	if !regexp.MustCompile(`^the offline of SQL Server did not finish in [34] s \(SQL Server \(MSSQLSERVER\) is OfflinePending\): BringOnline was not called`).MatchString(res.Error) ||
		strings.Contains(res.Error, "BringOnline:") {
		t.Errorf("cluster_restart's error = %q; want the offline that did not finish in half the time named, no BringOnline called", res.Error)
	}
	if took > 6500*time.Millisecond {
		t.Errorf("cluster_restart took %s; want it to end at half of its 8 s", took)
	}
	out, err := m1.WaitClusterGuard(ctx, "MSSQLSERVER")
	if err != nil {
		t.Fatalf("the guard did not end: %v", err)
	}
	if out.BroughtOnline != 1 || out.Error != "" || out.State != contract.ClusterOnline {
		t.Errorf("the guard's outcome: %+v; want the role brought online once, after the offline ended", out)
	}
	v, _ := c.RoleView(fciGroup)
	if v.State != wsfc.GroupOnline || sqlResourceState(v) != wsfc.ResourceOnline {
		t.Errorf("the role is %s (SQL Server %s) after the guard; want Online", v.State, sqlResourceState(v))
	}
	if p := m1.Instances()[0].Process(); p == nil || p.PID == pidBefore {
		t.Errorf("the Engine did not start again (pid %d before)", pidBefore)
	}
}
