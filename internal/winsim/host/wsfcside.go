package host

import (
	"context"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/wsfc"
)

// The host as a failover cluster (internal/winsim/wsfc) sees its node: nodeSide
// is the wsfc.Node the cluster was given.

// ClusterNode is the host as a node of a failover cluster (wsfc.NewCluster,
// Cluster.AddNode).
func (h *Host) ClusterNode() wsfc.Node { return nodeSide{h} }

// nodeSide is the host as its cluster sees it (wsfc.Node).
type nodeSide struct{ h *Host }

func (n nodeSide) Name() string           { return n.h.Name() }
func (n nodeSide) ComputerName() string   { return n.h.ComputerName() }
func (n nodeSide) Cluster() *wsfc.Cluster { return n.h.clusterOf() }

func (n nodeSide) SetCluster(c *wsfc.Cluster) {
	n.h.mu.Lock()
	defer n.h.mu.Unlock()
	n.h.cluster = c
	n.h.notifyLocked()
}

func (n nodeSide) StartService(name string) error            { return n.h.StartService(name) }
func (n nodeSide) StopService(name string, force bool) error { return n.h.StopService(name, force) }
func (n nodeSide) FailStarts(name string, code, times int) error {
	return n.h.FailStarts(name, code, times)
}
func (n nodeSide) TerminateProcess(name string) error { return n.h.TerminateProcess(name) }

func (n nodeSide) WaitServiceState(ctx context.Context, name, state string) error {
	return n.h.WaitServiceState(ctx, name, state)
}

func (n nodeSide) ServiceStatus(name string) (string, bool, error) {
	n.h.mu.Lock()
	defer n.h.mu.Unlock()
	s, err := n.h.service(name)
	if err != nil {
		return "", false, err
	}
	return s.state, s.failed, nil
}

func (n nodeSide) InstanceServices(instance string) (engine, agent string, err error) {
	inst, ok := n.h.Instance(instance)
	if !ok {
		return "", "", ErrNoSuchInstance
	}
	return inst.ServiceName(), inst.AgentServiceName(), nil
}

func (n nodeSide) EngineServices() []string {
	var out []string
	for _, inst := range n.h.Instances() {
		out = append(out, inst.ServiceName())
	}
	return out
}

func (n nodeSide) EngineReady(instance string) bool {
	n.h.mu.Lock()
	defer n.h.mu.Unlock()
	inst, ok := n.h.instanceLocked(instance)
	return ok && inst.ready
}

func (n nodeSide) WaitEngineReady(ctx context.Context, instance string) error {
	return n.h.WaitEngineReady(ctx, instance)
}

func (n nodeSide) EngineBackElsewhere(instance string) { n.h.EngineBackElsewhere(instance) }

func (n nodeSide) JoinFCI(instance, virtualName string) {
	inst, ok := n.h.Instance(instance)
	if !ok {
		return
	}
	inst.virtualName.Store(virtualName)
	n.h.mu.Lock()
	inst.clustered = true
	n.h.mu.Unlock()
}

func (n nodeSide) SetTCPPort(instance string, port int) {
	if inst, ok := n.h.Instance(instance); ok {
		inst.SetTCPPort(port)
	}
}
