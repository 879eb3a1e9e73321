package winsim

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/wsfc"
)

// Failover clusters (README.md, "clusters"): each cluster's model
// (wsfc.Cluster), a TDS listener per role at its virtual address that serves the
// owner's Engine, and the hook that closes a down node's WinRM listeners.

// ClusterInfo is one cluster as the JSON line reports it.
type ClusterInfo struct {
	Name  string     `json:"name"`
	Nodes []string   `json:"nodes"` // host names
	Roles []RoleInfo `json:"roles"`
}

// RoleInfo is one FCI role: its virtual name and the TDS endpoint (host:port) at
// its virtual address.
type RoleInfo struct {
	Name           string `json:"name"`
	Instance       string `json:"instance"`
	VirtualName    string `json:"virtual_name"`
	VirtualAddress string `json:"virtual_address"`
	SQL            string `json:"sql"`
}

type simCluster struct {
	cfg   wsfc.ClusterConfig
	model *wsfc.Cluster
	vnns  map[string]*sqlEndpoint // by upper-case group name
}

// clusteredHostConfigs returns the hosts' configurations as the clusters make
// them: on every node, each role's instance is a failover cluster instance,
// stopped unless the node is the role's owner. cfg is not changed.
func clusteredHostConfigs(cfg *Config) []host.HostConfig {
	hosts := slices.Clone(cfg.Hosts)
	for _, c := range cfg.Clusters {
		for _, rc := range c.Roles {
			owner := rc.OwnerHost(c.Nodes)
			for _, n := range c.Nodes {
				for hi := range hosts {
					if !strings.EqualFold(hosts[hi].Name, n) {
						continue
					}
					hosts[hi].Instances = slices.Clone(hosts[hi].Instances)
					for ii := range hosts[hi].Instances {
						ic := &hosts[hi].Instances[ii]
						if strings.EqualFold(strings.TrimSpace(ic.Name), strings.TrimSpace(rc.Instance)) {
							ic.Clustered = true
							ic.Stopped = !strings.EqualFold(n, owner)
						}
					}
				}
			}
		}
	}
	return hosts
}

// fciInstance says whether host hostName's instance is a role of a cluster: its
// SQL endpoint is the role's virtual one, not one at the node's address.
func fciInstance(cfg *Config, hostName, instance string) bool {
	for _, c := range cfg.Clusters {
		if !slices.ContainsFunc(c.Nodes, func(n string) bool { return strings.EqualFold(n, hostName) }) {
			continue
		}
		for _, rc := range c.Roles {
			if strings.EqualFold(strings.TrimSpace(rc.Instance), instance) {
				return true
			}
		}
	}
	return false
}

func (s *Sim) startClusters(cfg *Config, validity time.Duration) error {
	hostOf := func(name string) (wsfc.Node, bool) {
		sh, ok := s.byName[strings.ToLower(strings.TrimSpace(name))]
		if !ok {
			return nil, false
		}
		return sh.model.ClusterNode(), true
	}
	for _, cc := range cfg.Clusters {
		model, err := wsfc.NewCluster(cc, hostOf, s.logf)
		if err != nil {
			return err
		}
		sc := &simCluster{cfg: cc, model: model, vnns: map[string]*sqlEndpoint{}}
		s.clusters = append(s.clusters, sc)
		model.SetNodeHook(s.nodeDown)
		for _, rc := range cc.Roles {
			if err := s.startVirtualName(sc, rc, validity); err != nil {
				return err
			}
		}
	}
	return nil
}

// startVirtualName opens the role's TDS endpoint at its virtual address: it
// serves whichever node owns the role, and listens only while SQL Server is Online.
func (s *Sim) startVirtualName(sc *simCluster, rc wsfc.ClusterRoleConfig, validity time.Duration) error {
	group := rc.GroupName()
	vname := strings.ToUpper(strings.TrimSpace(rc.VirtualName))
	ip := net.ParseIP(strings.TrimSpace(rc.VirtualAddress))
	cert, err := s.ca.Issue(vname, uniqueStrings([]string{vname, strings.ToLower(vname)}), []net.IP{ip}, validity)
	if err != nil {
		return fmt.Errorf("cluster %s: role %s: %w", sc.cfg.Name, group, err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), strconv.Itoa(rc.VirtualPort)))
	if err != nil {
		return fmt.Errorf("cluster %s: role %s: listening for SQL on the virtual address %s port %d: %w (pick another virtual_port, or 0 for a free one)",
			sc.cfg.Name, group, ip, rc.VirtualPort, err)
	}
	addr := l.Addr().String()
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close() // the cluster opens it when SQL Server is Online
	ep := &sqlEndpoint{
		instance: vname + `\` + strings.ToUpper(strings.TrimSpace(rc.Instance)),
		addr:     addr,
		server: tds.NewServer(&vnnHandler{cluster: sc.model, hosts: s.byName, role: group, vname: vname, instance: rc.Instance},
			tds.Options{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, Logf: s.logf}),
		logf:    s.logf,
		wg:      &s.wg,
		changed: make(chan struct{}),
		stats:   &wireStats{},
	}
	sc.vnns[strings.ToUpper(group)] = ep
	if err := sc.model.SetVirtualListener(group, port, ep.open, ep.close); err != nil {
		return err
	}
	view, err := sc.model.RoleView(group)
	if err != nil {
		return err
	}
	if view.State == wsfc.GroupOnline {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := ep.waitOpen(ctx); err != nil {
			return fmt.Errorf("cluster %s: role %s: the virtual name %s did not accept SQL connections at the simulator's start: %w", sc.cfg.Name, group, addr, err)
		}
	}
	return nil
}

// nodeDown is the clusters' hook: a down node's WinRM listeners refuse connections
// until it is up again.
func (s *Sim) nodeDown(hostName string, down bool) {
	sh, ok := s.byName[strings.ToLower(hostName)]
	if !ok {
		return
	}
	sh.downMu.Lock()
	defer sh.downMu.Unlock()
	switch {
	case down && sh.downStop == nil:
		sh.downStop = make(chan struct{})
		for _, g := range sh.faults.gates {
			if g.pause() {
				stop := sh.downStop
				s.wg.Add(1)
				go func() {
					defer s.wg.Done()
					g.reopenAfter(100*365*24*time.Hour, stop)
				}()
			}
		}
		s.logf("winsim: host %s: the cluster node is down: its WinRM listeners refuse connections", hostName)
	case !down && sh.downStop != nil:
		close(sh.downStop)
		sh.downStop = nil
		s.logf("winsim: host %s: the cluster node is up again", hostName)
	}
}

// endDown reopens (for Close) the listeners of every down node.
func (sh *simHost) endDown() {
	sh.downMu.Lock()
	defer sh.downMu.Unlock()
	if sh.downStop != nil {
		close(sh.downStop)
		sh.downStop = nil
	}
}

// vnnHandler is a virtual name's SQL side: the Engine of the role's owner now.
type vnnHandler struct {
	cluster  *wsfc.Cluster
	hosts    map[string]*simHost // the simulation's hosts by lower-case name (Sim.byName)
	role     string
	vname    string
	instance string
}

func (v *vnnHandler) owner() tds.Handler {
	node, instance := v.cluster.Owner(v.role)
	if node == nil {
		return nil
	}
	if sh, ok := v.hosts[strings.ToLower(node.Name())]; ok {
		if inst, ok := sh.model.Instance(instance); ok {
			return inst.TDSHandler()
		}
	}
	return nil
}

func (v *vnnHandler) ServerName() string {
	if o := v.owner(); o != nil {
		return o.ServerName()
	}
	return v.vname
}

func (v *vnnHandler) Version() (uint8, uint8, uint16) {
	if o := v.owner(); o != nil {
		return o.Version()
	}
	return 16, 0, 0
}

func (v *vnnHandler) Login(ctx context.Context, l tds.Login) *tds.SQLError {
	if o := v.owner(); o != nil {
		return o.Login(ctx, l)
	}
	return &tds.SQLError{Number: 17187, State: 1, Class: 16, Message: "SQL Server is not ready to accept new client connections. Wait a few minutes before trying again."}
}

func (v *vnnHandler) Batch(ctx context.Context, l tds.Login, sql string) ([]tds.ResultSet, *tds.SQLError) {
	if o := v.owner(); o != nil {
		return o.Batch(ctx, l, sql)
	}
	return nil, &tds.SQLError{Number: 17187, State: 1, Class: 16, Message: "SQL Server is not ready to accept new client connections."}
}

// clusterInfos lists the clusters for Info.
func (s *Sim) clusterInfos() []ClusterInfo {
	var out []ClusterInfo
	for _, sc := range s.clusters {
		v := sc.model.View()
		ci := ClusterInfo{Name: v.Name, Nodes: []string{}, Roles: []RoleInfo{}}
		for _, n := range v.Nodes {
			ci.Nodes = append(ci.Nodes, n.Host)
		}
		for _, r := range v.Roles {
			ri := RoleInfo{Name: r.Name, Instance: r.Instance, VirtualName: r.VirtualName, VirtualAddress: r.VirtualAddress}
			if ep := sc.vnns[strings.ToUpper(r.Name)]; ep != nil {
				ri.SQL = ep.addr
			}
			ci.Roles = append(ci.Roles, ri)
		}
		out = append(out, ci)
	}
	return out
}

// Cluster returns one cluster's model by name (case-insensitive).
func (s *Sim) Cluster(name string) (*wsfc.Cluster, error) {
	sc, err := s.simCluster(name)
	if err != nil {
		return nil, err
	}
	return sc.model, nil
}

func (s *Sim) simCluster(name string) (*simCluster, error) {
	var names []string
	for _, sc := range s.clusters {
		if strings.EqualFold(sc.model.Name(), name) {
			return sc, nil
		}
		names = append(names, sc.model.Name())
	}
	return nil, fmt.Errorf("%w: the simulation has no cluster %q (its clusters: %s)", wsfc.ErrNoSuchClusterObject, name, strings.Join(names, ", "))
}

// ClusterAction is one control-plane action on a cluster, the JSON body of
// POST /v1/clusters/{cluster}/actions.
//
//	{"action":"cluster_failover","role":"SQL Server (MSSQLSERVER)","node":"SQL03"}
//	{"action":"node_state","node":"SQL03","state":"paused"}   (up, paused, down)
//	{"action":"evict_node","node":"SQL03"}
//	{"action":"add_node","host":"sql04"}
//	{"action":"fail_move","role":"SQL Server (MSSQLSERVER)","mode":"fail_back"}   (fail_back, offline, "" clears)
//	{"action":"resource_offline","role":"SQL Server (MSSQLSERVER)","resource_type":"SQL Server"}
//	{"action":"resource_online","role":"SQL Server (MSSQLSERVER)","resource_type":"SQL Server"}
//
// A role is named by its group name, its instance or its virtual name; a node by
// its host name or its computer name. cluster_failover waits until the cluster
// finished the move ("timeout_seconds", default 60) unless "wait" is false.
type ClusterAction struct {
	Action         string `json:"action"`
	Role           string `json:"role,omitempty"`
	Node           string `json:"node,omitempty"`
	State          string `json:"state,omitempty"`
	Host           string `json:"host,omitempty"`
	Mode           string `json:"mode,omitempty"`
	ResourceType   string `json:"resource_type,omitempty"`
	Wait           *bool  `json:"wait,omitempty"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty"`
}

// Cluster action names.
const (
	ActionClusterFailover = "cluster_failover"
	ActionNodeState       = "node_state"
	ActionEvictNode       = "evict_node"
	ActionAddNode         = "add_node"
	ActionFailMove        = "fail_move"
	ActionResourceOffline = "resource_offline"
	ActionResourceOnline  = "resource_online"
)

var clusterActionNames = []string{ActionClusterFailover, ActionNodeState, ActionEvictNode, ActionAddNode, ActionFailMove, ActionResourceOffline, ActionResourceOnline}

// ClusterActionResult is what the control plane answers to a cluster action: the
// role's state afterwards (for role actions) or the cluster's.
type ClusterActionResult struct {
	Cluster string                 `json:"cluster"`
	Action  string                 `json:"action"`
	Role    *wsfc.ClusterRoleView  `json:"role,omitempty"`
	Nodes   []wsfc.ClusterNodeView `json:"nodes"`
	// Error is the cluster's own error when it refused or failed the move.
	Error string `json:"error,omitempty"`
}

// errClusterRefused wraps a cluster's refusal (409).
var errClusterRefused = errors.New("the cluster refused")

// ClusterDo applies one action to a cluster, as POST /v1/clusters/{cluster}/actions does.
func (s *Sim) ClusterDo(ctx context.Context, cluster string, a ClusterAction) (ClusterActionResult, error) {
	sc, err := s.simCluster(cluster)
	if err != nil {
		return ClusterActionResult{}, err
	}
	c := sc.model
	res := ClusterActionResult{Cluster: c.Name(), Action: a.Action}
	need := func(field, value string) error {
		if strings.TrimSpace(value) == "" {
			return fmt.Errorf("%w: %q needs the field %q; see internal/winsim/README.md", ErrBadAction, a.Action, field)
		}
		return nil
	}
	finish := func() (ClusterActionResult, error) {
		v := c.View()
		res.Nodes = v.Nodes
		if a.Role != "" {
			if rv, err := c.RoleView(a.Role); err == nil {
				res.Role = &rv
			}
		}
		return res, nil
	}
	switch a.Action {
	case ActionClusterFailover:
		if err := errors.Join(need("role", a.Role), need("node", a.Node)); err != nil {
			return res, err
		}
		wait := defaultActionWaitTimeout
		if a.TimeoutSeconds > 0 {
			wait = time.Duration(a.TimeoutSeconds) * time.Second
		}
		if a.Wait != nil && !*a.Wait {
			wait = 0
		}
		out, err := c.Move(ctx, a.Role, a.Node, "failover", wait)
		if err != nil {
			return res, err
		}
		if out.Err != nil {
			res.Error = out.Err.Error()
			return res, fmt.Errorf("%w: cluster_failover of %s to %s: %s", errClusterRefused, a.Role, a.Node, out.Err)
		}
		if !out.Finished && wait > 0 {
			return res, fmt.Errorf("cluster_failover of %s to %s: the move did not finish within %s (it goes on; GET /v1/clusters/%s shows it)", a.Role, a.Node, wait, c.Name())
		}
	case ActionNodeState:
		if err := errors.Join(need("node", a.Node), need("state", a.State)); err != nil {
			return res, err
		}
		if err := c.SetNodeState(a.Node, a.State); err != nil {
			if !errors.Is(err, wsfc.ErrNoSuchClusterObject) {
				err = fmt.Errorf("%w: %v", ErrBadAction, err)
			}
			return res, err
		}
	case ActionEvictNode:
		if err := need("node", a.Node); err != nil {
			return res, err
		}
		if err := c.EvictNode(ctx, a.Node); err != nil {
			return res, err
		}
	case ActionAddNode:
		if err := need("host", a.Host); err != nil {
			return res, err
		}
		sh, ok := s.byName[strings.ToLower(strings.TrimSpace(a.Host))]
		if !ok {
			return res, fmt.Errorf("%w %q", ErrUnknownHost, a.Host)
		}
		port := func(role string) int {
			if ep := sc.vnns[strings.ToUpper(role)]; ep != nil {
				if _, p, err := net.SplitHostPort(ep.addr); err == nil {
					n, _ := strconv.Atoi(p)
					return n
				}
			}
			return 0
		}
		if err := c.AddNode(sh.model.ClusterNode(), port); err != nil {
			return res, err
		}
		// An FCI's Engine listens on the role's virtual address only: the node's own
		// endpoint for the instance closes for good.
		for _, rv := range c.View().Roles {
			for _, ep := range sh.instances {
				if _, n, _ := strings.Cut(ep.instance, `\`); strings.EqualFold(n, rv.Instance) {
					ep.shutdown()
				}
			}
		}
	case ActionFailMove:
		if err := need("role", a.Role); err != nil {
			return res, err
		}
		if err := c.FailNextMove(a.Role, a.Mode); err != nil {
			if !errors.Is(err, wsfc.ErrNoSuchClusterObject) {
				err = fmt.Errorf("%w: %v", ErrBadAction, err)
			}
			return res, err
		}
	case ActionResourceOffline, ActionResourceOnline:
		if err := errors.Join(need("role", a.Role), need("resource_type", a.ResourceType)); err != nil {
			return res, err
		}
		var out wsfc.ActionOutcome
		var err error
		if a.Action == ActionResourceOffline {
			out, err = c.TakeResourceOffline(ctx, a.Role, a.ResourceType, defaultActionWaitTimeout)
		} else {
			out, err = c.BringResourceOnline(ctx, a.Role, a.ResourceType, defaultActionWaitTimeout)
		}
		if err != nil {
			return res, err
		}
		if out.Err != nil {
			res.Error = out.Err.Error()
			return res, fmt.Errorf("%w: %s: %s", errClusterRefused, a.Action, out.Err)
		}
		if !out.Finished {
			return res, fmt.Errorf("%s of %s: the cluster did not finish within %s (it goes on)", a.Action, a.Role, defaultActionWaitTimeout)
		}
	case "":
		return res, fmt.Errorf("%w: the body has no \"action\"; use one of %s", ErrBadAction, strings.Join(clusterActionNames, ", "))
	default:
		return res, fmt.Errorf("%w: unknown cluster action %q; use one of %s", ErrBadAction, a.Action, strings.Join(clusterActionNames, ", "))
	}
	return finish()
}

// clusterState is the simulator's part of a host's down state.
type clusterState struct {
	downMu   sync.Mutex
	downStop chan struct{} // closed when the node is up again; nil while it is up
}
