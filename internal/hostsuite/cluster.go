package hostsuite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/hostsuite/transcript"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
)

// The optional cluster stage (issue 18): a node of a failover cluster instance
// (FCI). It reads the cluster and every possible owner's LSA, plans the data source
// with the real terraform CLI and, with MSSQLIFI_ACC_FCI_CHANGE=true, grants the
// right on every possible owner with restart = "never" and puts each node back as
// found. It never moves the role nor restarts it: no failover, no cluster restart.

const clusterNever = "this stage never moves the role nor restarts it (no failover, no cluster restart): restart = \"never\" only"

// clusterNotRunning says why the cluster stage does not run ("" when it runs).
func (s *Suite) clusterNotRunning() string {
	switch {
	case !s.cfg.Allowed[StageCluster]:
		return fmt.Sprintf("not allowed: %s does not name %s (it is %q)", EnvStages, StageCluster, s.allowedList())
	case s.cfg.FCINode == "":
		return fmt.Sprintf("no failover cluster instance: set %s to one of its nodes (%s, %s and %s optional)", EnvFCINode, EnvFCIInstance, EnvFCISQLHost, EnvFCINodes)
	case !s.cfg.DryRun && !s.rep.OK():
		return "an earlier allowed stage failed"
	}
	return ""
}

func (s *Suite) planCluster() []string {
	change := "skip the change: " + EnvFCIChange + " is not true (a second, explicit consent)"
	if s.cfg.FCIChange {
		change = "terraform apply of " + fciResAddr + " with restart = \"never\": grant " + contract.RightManageVolume + " on every possible owner that lacks it, restarting nothing; " +
			"check each node through read_instance and that the next plan is empty; then terraform state rm and revoke the right (set_right) on each node that lacked it, as found"
	}
	return []string{
		clusterNever,
		"run read_cluster on the node " + orDash(s.cfg.FCINode) + " (reads only): the cluster, the role of instance " + s.cfg.FCIInstance + ", its owner and possible owners",
		"run read_instance on each possible owner at its address (" + EnvFCINodes + ", else its name): report each node (owner, possible owner, grant, Group Policy) and whether IFI survives a failover",
		"terraform plan of the data source " + fciDataAddr + " (reads only): check its cluster_nodes and ifi_survives_failover against those reads",
		change,
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// fciTarget is the data source's and resource's arguments for the FCI.
func (s *Suite) fciTarget() target {
	return target{name: "fci", host: s.cfg.FCINode, instance: s.cfg.FCIInstance, sqlHost: s.cfg.FCISQLHost, nodes: s.cfg.FCINodes}
}

// nodeAddress is where WinRM reaches a node: its address in MSSQLIFI_ACC_FCI_NODES, else its name.
func (s *Suite) nodeAddress(name string) string {
	for k, v := range s.cfg.FCINodes {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return name
}

// cluster: the optional cluster stage.
func (s *Suite) cluster(ctx context.Context) {
	s.p.line("note: %s", clusterNever)
	ca, ok := s.readFCI(ctx)
	if !ok {
		return
	}
	tf, err := s.newTerraform()
	if err != nil {
		s.p.fail("terraform", "%v", err)
		return
	}
	defer tf.close()
	if !s.planFCI(ctx, tf, ca) {
		return
	}
	if !s.cfg.FCIChange {
		s.p.skip("cluster change", "%s is not true: nothing was changed (set it to grant on every possible owner with restart = \"never\", on a test cluster)", EnvFCIChange)
		return
	}
	s.changeFCI(ctx, tf, ca)
}

// readFCI reads the cluster on the node, then each possible owner, and reports them.
func (s *Suite) readFCI(ctx context.Context) (*ifi.ClusterAssessment, bool) {
	s.p.about("connect to WinRM on %s and run read_cluster for %s (reads only)", s.cfg.FCINode, s.cfg.FCIInstance)
	h, err := s.newHostAt(s.cfg.FCINode)
	if err != nil {
		s.p.fail("read_cluster", "%v. Fix the setting it names (%s, %s, %s)", err, EnvHTTPS, EnvPort, EnvAuth)
		return nil, false
	}
	c, err := h.ReadCluster(ctx, contract.ReadClusterParams{Instance: s.cfg.FCIInstance})
	if err != nil {
		var re *remote.Error
		if errors.As(err, &re) && re.Code == contract.CodeNotClustered {
			s.p.fail("read_cluster", "%v. %s names no node of a failover cluster instance %s: name a node, or leave %s unset", err, EnvFCINode, s.cfg.FCIInstance, EnvFCINode)
		} else {
			s.p.fail("read_cluster", "%v", err)
		}
		return nil, false
	}
	known := []string{s.cfg.FCINode, s.cfg.FCISQLHost, c.Cluster, c.VirtualName}
	for k, v := range s.cfg.FCINodes {
		known = append(known, k, v)
	}
	for _, n := range c.Nodes {
		known = append(known, n.Name)
	}
	s.opt.Recorder.Know(transcript.Known{Hosts: slices.DeleteFunc(known, func(h string) bool { return h == "" })})
	s.p.pass("read_cluster", "cluster %s, role %q of %s (virtual name %s) on %s; nodes %s; possible owners %s",
		c.Cluster, c.Group.Name, s.cfg.FCIInstance, c.VirtualName, c.Group.OwnerNode, nodeList(c.Nodes), strings.Join(ifi.PossibleOwnersOf(c), ", "))
	named := make([]string, 0, len(s.cfg.FCINodes))
	for n := range s.cfg.FCINodes {
		named = append(named, n)
	}
	sort.Strings(named)
	obs := ifi.ClusterObserved{Host: s.cfg.FCINode, Cluster: c, Nodes: map[string]ifi.NodeObservation{}, Named: named}
	for _, n := range ifi.PossibleOwnersOf(c) {
		addr := s.nodeAddress(n)
		s.p.about("read_instance on node %s at %s (reads only)", n, addr)
		o := ifi.NodeObservation{Address: addr}
		if nh, err := s.newHostAt(addr); err != nil {
			o.Err = err
		} else if r, err := nh.ReadInstance(ctx, contract.ReadInstanceParams{Instance: s.cfg.FCIInstance, Right: contract.RightManageVolume}); err != nil {
			o.Err = err
		} else {
			o.Instance = r
		}
		obs.Nodes[n] = o
	}
	ca, err := ifi.AssessCluster(ifi.Desired{Enabled: true, Grantee: ifi.GranteeServiceSID, Restart: ifi.RestartNever}, obs)
	if err != nil {
		s.p.fail("cluster nodes", "%v", err)
		return nil, false
	}
	for _, r := range clusterReport(ca) {
		s.p.result(r.Status, r.Check, "%s", r.Detail)
	}
	return ca, len(ca.Unreadable) == 0
}

func nodeList(nodes []contract.ClusterNode) string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name+" ("+n.State+")")
	}
	return strings.Join(out, ", ")
}

// clusterReport is the cluster's read as results: one per node, then whether IFI
// survives a failover. A possible owner that could not be read fails.
func clusterReport(ca *ifi.ClusterAssessment) []Result {
	var out []Result
	for _, n := range ca.Nodes {
		check := "node " + n.Name
		head := fmt.Sprintf("state %s, owner: %s, possible owner: %s", n.State, yesNo(n.Owner), yesNo(n.PossibleOwner))
		switch {
		case n.Reachable:
			gpo := "unknown (RSoP could not be read)"
			if n.GPOKnown {
				gpo = yesNo(n.GPODefines)
			}
			out = append(out, Result{Status: Pass, Check: check, Detail: fmt.Sprintf("%s, the service SID holds the right: %s, a Group Policy defines the right: %s (at %s)",
				head, yesNo(n.Granted), gpo, n.Address)})
		case n.PossibleOwner:
			out = append(out, Result{Status: Fail, Check: check, Detail: fmt.Sprintf("%s; not read at %s: %v. Give its address in %s (%s=address)",
				head, orDash(n.Address), n.Err, EnvFCINodes, n.Name)})
		default:
			out = append(out, Result{Status: Pass, Check: check, Detail: head + "; not read (the role cannot run there)"})
		}
	}
	survives := Result{Status: Pass, Check: "ifi survives failover"}
	switch {
	case ca.IFISurvivesFailover == nil:
		survives.Status, survives.Detail = Fail, "unknown: possible owner(s) "+strings.Join(ca.Unreadable, ", ")+" could not be read"
	case *ca.IFISurvivesFailover:
		survives.Detail = "yes: every possible owner (" + strings.Join(ca.PossibleOwners, ", ") + ") would start SQL Server with IFI"
	default:
		survives.Detail = "no: a failover to " + strings.Join(ca.Lacking, ", ") + " starts SQL Server without IFI (the resource grants on every possible owner)"
	}
	return append(out, survives)
}

// planFCI plans the data source and checks cluster_nodes against the reads.
func (s *Suite) planFCI(ctx context.Context, tf *terraform, ca *ifi.ClusterAssessment) bool {
	if err := tf.write(s.configFor(s.fciTarget(), nil)); err != nil {
		s.p.fail("cluster data source", "%v", err)
		return false
	}
	s.p.about("terraform plan of %s (reads only); nothing is applied", fciDataAddr)
	p, code, out, err := tf.plan(ctx)
	if err != nil || p == nil {
		s.p.fail("cluster data source", "terraform plan %s", tfOutcome(code, err, out))
		return false
	}
	d := p.data(fciDataAddr)
	if d == nil {
		s.p.fail("cluster data source", "the plan holds no %s", fciDataAddr)
		return false
	}
	if msg := compareClusterNodes(d, ca); msg != "" {
		s.p.fail("cluster data source", "%s", msg)
		return false
	}
	s.p.pass("cluster data source", "clustered %v, ifi_survives_failover %v, cluster_nodes %s", d["clustered"], d["ifi_survives_failover"], dataNodes(d))
	return true
}

// compareClusterNodes: the data source's cluster_nodes and ifi_survives_failover
// say what the suite's own reads say ("" when they agree).
func compareClusterNodes(d map[string]any, ca *ifi.ClusterAssessment) string {
	if d["clustered"] != true {
		return fmt.Sprintf("clustered is %v; read_cluster found cluster %s", d["clustered"], ca.Cluster)
	}
	nodes, _ := d["cluster_nodes"].([]any)
	if len(nodes) != len(ca.Nodes) {
		return fmt.Sprintf("cluster_nodes lists %d node(s); read_cluster %d", len(nodes), len(ca.Nodes))
	}
	for _, n := range ca.Nodes {
		var got map[string]any
		for _, x := range nodes {
			if m, _ := x.(map[string]any); m != nil && strings.EqualFold(fmt.Sprint(m["name"]), n.Name) {
				got = m
			}
		}
		switch {
		case got == nil:
			return "cluster_nodes has no node " + n.Name
		case got["current_owner"] != n.Owner || got["possible_owner"] != n.PossibleOwner:
			return fmt.Sprintf("cluster_nodes says %s is owner %v, possible owner %v; read_cluster %t, %t", n.Name, got["current_owner"], got["possible_owner"], n.Owner, n.PossibleOwner)
		case n.Reachable && got["privilege_granted"] != n.Granted:
			return fmt.Sprintf("cluster_nodes says %s grants the right: %v; its read_instance %t", n.Name, got["privilege_granted"], n.Granted)
		}
	}
	if want := ca.IFISurvivesFailover; want != nil && d["ifi_survives_failover"] != *want {
		return fmt.Sprintf("ifi_survives_failover is %v; the reads say %t", d["ifi_survives_failover"], *want)
	}
	return ""
}

func dataNodes(d map[string]any) string {
	nodes, _ := d["cluster_nodes"].([]any)
	var out []string
	for _, x := range nodes {
		m, _ := x.(map[string]any)
		out = append(out, fmt.Sprintf("%v (owner %v, possible owner %v, granted %v)", m["name"], m["current_owner"], m["possible_owner"], m["privilege_granted"]))
	}
	return strings.Join(out, "; ")
}

// changeFCI grants on every possible owner with restart = "never", checks each node
// and the next plan, then forgets the resource and revokes where it was not held.
func (s *Suite) changeFCI(ctx context.Context, tf *terraform, ca *ifi.ClusterAssessment) {
	spec := resourceSpec{restart: "never", enabled: true}
	if err := tf.write(s.configFor(s.fciTarget(), &spec)); err != nil {
		s.p.fail("cluster grant", "%v", err)
		return
	}
	s.p.about("terraform apply of %s with restart = \"never\": grant %s on every possible owner (%s); nothing restarts, no failover",
		fciResAddr, contract.RightManageVolume, strings.Join(ca.PossibleOwners, ", "))
	out, code, err := tf.run(ctx, "apply", "-auto-approve", "-no-color", "-input=false")
	if err != nil || code != 0 {
		s.p.fail("cluster grant", "terraform apply %s", tfOutcome(code, err, out))
	} else {
		s.p.pass("cluster grant", "terraform apply with restart = \"never\" finished")
		for _, n := range ca.Nodes {
			if n.PossibleOwner {
				s.checkNode(ctx, "cluster grant (lsa "+n.Name+")", n, true)
			}
		}
		s.p.about("terraform plan: expect no changes")
		if out, code, err := tf.run(ctx, "plan", "-no-color", "-input=false", "-detailed-exitcode"); err != nil || code != 0 {
			s.p.fail("cluster grant (plan)", "terraform plan (0 = no changes) %s", tfOutcome(code, err, out))
		} else {
			s.p.pass("cluster grant (plan)", "the next plan is empty")
		}
	}
	// Put every node back as found, whatever happened above.
	s.p.about("terraform state rm %s (a destroy would revoke on every node, also where the right was held before)", fciResAddr)
	if out, code, err := tf.run(ctx, "state", "rm", "-no-color", fciResAddr); err != nil || code != 0 {
		s.p.fail("cluster restore", "terraform state rm %s", tfOutcome(code, err, out))
	}
	for _, n := range ca.Nodes {
		if !n.PossibleOwner {
			continue
		}
		check := "cluster restore (" + n.Name + ")"
		r, err := s.readNode(ctx, n)
		if err != nil {
			s.p.fail(check, "%v", err)
			continue
		}
		sid := serviceSIDOf(r)
		if holds(r, sid) == n.Granted {
			s.p.pass(check, "the service SID holds the right: %s, as found", yesNo(n.Granted))
			continue
		}
		s.p.about("%s %s for %s on node %s (set_right), as found", grantWord(n.Granted), contract.RightManageVolume, sid, n.Name)
		h, err := s.newHostAt(n.Address)
		if err == nil {
			_, err = h.SetRight(ctx, contract.SetRightParams{Right: contract.RightManageVolume, SID: sid, Grant: n.Granted, Agent: contract.UserAgent("hostsuite")})
		}
		if err != nil {
			s.p.fail(check, "%v. %s the right for %s on %s by hand (secpol.msc, User Rights Assignment)", err, grantWord(n.Granted), sid, n.Name)
			continue
		}
		s.checkNode(ctx, check, n, n.Granted)
	}
}

func (s *Suite) readNode(ctx context.Context, n ifi.NodeState) (*contract.ReadInstanceResult, error) {
	h, err := s.newHostAt(n.Address)
	if err != nil {
		return nil, err
	}
	return h.ReadInstance(ctx, contract.ReadInstanceParams{Instance: s.cfg.FCIInstance, Right: contract.RightManageVolume})
}

// checkNode reads a node's holders back through read_instance.
func (s *Suite) checkNode(ctx context.Context, check string, n ifi.NodeState, want bool) {
	s.p.about("read the holders on node %s through the LSA (read_instance)", n.Name)
	r, err := s.readNode(ctx, n)
	if err != nil {
		s.p.fail(check, "%v", err)
		return
	}
	if holds(r, serviceSIDOf(r)) != want {
		s.p.fail(check, "the LSA of %s says the service SID holds the right: %s; expected %s", n.Name, yesNo(!want), yesNo(want))
		return
	}
	s.p.pass(check, "the LSA of %s says the service SID holds the right: %s", n.Name, yesNo(want))
}
