package converge_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
)

// The FCI path of the engine against the simulator, through the provider's WinRM
// runner (masterzen/winrm): the scripts' answers as the engine reads them. SQL
// Server is not asked here (converge does not link the SQL driver); verification
// falls back to the owner's error log.

// simFCI: node1 and node2 are the nodes of CLU1, whose role runs MSSQLSERVER; only
// node1 grants the right to the service SID.
const simFCI = `{
  "hosts": [
    {"name": "node1", "address": "127.0.0.51", "domain": "CONTOSO",
     "accounts": {"CONTOSO\\sqlsvc": "S-1-5-21-1-2-3-1105"},
     "winrm": {"users": [{"name": "CONTOSO\\dba", "password": "Winsim-D0main!"}]},
     "rights": {"SeManageVolumePrivilege": ["BUILTIN\\Administrators", "NT SERVICE\\MSSQLSERVER"]},
     "instances": [{"name": "MSSQLSERVER", "service_account": "CONTOSO\\sqlsvc", "start_ms": 50, "stop_ms": 50}]},
    {"name": "node2", "address": "127.0.0.52", "domain": "CONTOSO",
     "accounts": {"CONTOSO\\sqlsvc": "S-1-5-21-1-2-3-1105"},
     "winrm": {"users": [{"name": "CONTOSO\\dba", "password": "Winsim-D0main!"}]},
     "instances": [{"name": "MSSQLSERVER", "service_account": "CONTOSO\\sqlsvc", "start_ms": 50, "stop_ms": 50}]}
  ],
  "clusters": [
    {"name": "CLU1", "nodes": ["node1", "node2"],
     "roles": [{"instance": "MSSQLSERVER", "virtual_name": "SQLFCI9", "virtual_address": "127.0.0.61",
                "preferred_owners": ["node1", "node2"], "failover_threshold": 2, "pending_timeout_ms": 20000}]}
  ]
}`

type simClients struct {
	sim   *winsim.Sim
	hosts map[string]converge.Host
}

func (c *simClients) Host(addr string, _ int) (converge.Host, error) {
	if h, ok := c.hosts[strings.ToLower(addr)]; ok {
		return h, nil
	}
	for _, hi := range c.sim.Info().Hosts {
		if !strings.EqualFold(hi.Name, addr) {
			continue
		}
		h, p, err := net.SplitHostPort(hi.WinRMHTTPS)
		if err != nil {
			return nil, err
		}
		port, _ := strconv.Atoi(p)
		rh, err := remote.New(remote.Config{Host: h, Port: port, HTTPS: true, CACert: c.sim.CACertPEM(), Auth: remote.AuthNTLM,
			Username: `CONTOSO\dba`, Password: "Winsim-D0main!", Timeout: 20 * time.Second})
		if err != nil {
			return nil, err
		}
		c.hosts[strings.ToLower(addr)] = rh
		return rh, nil
	}
	return nil, fmt.Errorf("no simulated host %s", addr)
}

func (c *simClients) SQLChecker() (contract.SQLChecker, error) { return nil, nil }

func TestClusterPathOnTheSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the simulator")
	}
	cfg, err := winsim.ParseConfig([]byte(simFCI))
	if err != nil {
		t.Fatal(err)
	}
	sim, err := winsim.Start(cfg, winsim.Options{CertDir: t.TempDir(), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	e := converge.New(&simClients{sim: sim, hosts: map[string]converge.Host{}})
	// The cluster's node names are the computers' names; the test's hosts are named
	// by the simulator's host names, which the nodes argument would map them to.
	ct := converge.ClusterTarget{Target: converge.Target{Host: "node1", Instance: "MSSQLSERVER"},
		Resolve: strings.ToLower}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	out, err := e.ReadCluster(ctx, ct, ifi.Desired{Enabled: true, Restart: ifi.RestartFailover})
	if err != nil {
		t.Fatalf("ReadCluster: %v", err)
	}
	ca := out.Cluster
	if ca.Cluster != "CLU1" || len(ca.PossibleOwners) != 2 || ca.IFISurvivesFailover == nil || *ca.IFISurvivesFailover || len(ca.Lacking) != 1 {
		t.Fatalf("cluster %s, possible owners %v, survives %v, lacking %v; want CLU1, two, false, the second node", ca.Cluster, ca.PossibleOwners,
			ca.IFISurvivesFailover, ca.Lacking)
	}
	lacking := ca.Lacking[0]
	owner := ca.Owner
	t.Logf("owner %s, lacking %s, nodes %+v", owner, lacking, ca.Nodes)

	// A failover from outside Terraform to the node without the right: the running
	// Engine has IFI off there (its error log says so).
	if _, err := sim.ClusterDo(ctx, "CLU1", winsim.ClusterAction{Action: winsim.ActionClusterFailover, Role: "MSSQLSERVER", Node: lacking}); err != nil {
		t.Fatal(err)
	}
	// The next run (a new engine: a run's reads of a host are shared for a while).
	e = converge.New(&simClients{sim: sim, hosts: map[string]converge.Host{}})
	out, err = e.ReadCluster(ctx, ct, ifi.Desired{Enabled: true, Restart: ifi.RestartFailover})
	if err != nil {
		t.Fatalf("ReadCluster after the failover: %v", err)
	}
	if ow := out.Cluster.OwnerAssessment; out.Cluster.Owner != lacking || ow == nil || ow.RunningIFI == nil || *ow.RunningIFI || out.Enabled {
		t.Fatalf("owner %s (%+v) after the failover to %s; want IFI off there", out.Cluster.Owner, out.Cluster.OwnerAssessment, lacking)
	}

	// restart = "failover": grant on the node that lacks it, then move the role to
	// the first preferred owner, which holds the right.
	ct.Target.Host = "node2"
	out, err = e.ApplyCluster(ctx, ct, ifi.Desired{Enabled: true, Restart: ifi.RestartFailover})
	if err != nil {
		t.Fatalf("ApplyCluster (failover): %v", err)
	}
	if out.Move == nil || !out.Move.Ended() || !strings.EqualFold(out.Move.To, owner) || !out.Restarted {
		t.Fatalf("move %+v", out.Move)
	}
	ca = out.Cluster
	if ow := ca.OwnerAssessment; !strings.EqualFold(ca.Owner, owner) || ow.RunningIFI == nil || !*ow.RunningIFI || !*ca.IFISurvivesFailover || !out.Enabled {
		t.Errorf("after the failover: owner %s, running %v, survives %v", ca.Owner, ow.RunningIFI, ca.IFISurvivesFailover)
	}
}
