package wsfc

import "context"

// Node is what the cluster needs of a host that is one of its nodes: the host
// model implements it. The cluster calls it with the cluster's mutex held or not,
// never the other way round: a node does not call into the cluster while it holds
// its own lock.
type Node interface {
	// Name is the host's simulator name; ComputerName is its name in the cluster.
	Name() string
	ComputerName() string
	// Cluster is the cluster the node is a node of, nil when none; SetCluster
	// joins it to c, or with nil takes it out.
	Cluster() *Cluster
	SetCluster(c *Cluster)

	// The node's service control manager.
	StartService(name string) error
	StopService(name string, force bool) error
	WaitServiceState(ctx context.Context, name, state string) error
	// ServiceStatus is a service's state and whether its last start failed; an
	// error for a service the node does not have.
	ServiceStatus(name string) (state string, failed bool, err error)
	// FailStarts makes the service's next starts fail; TerminateProcess ends its
	// process as a crash does.
	FailStarts(name string, code, times int) error
	TerminateProcess(name string) error

	// The node's SQL Server instances. InstanceServices are an instance's Engine
	// and Agent service names (agent "" without Agent); err is the host's
	// ErrNoSuchInstance itself when it has no such instance.
	InstanceServices(instance string) (engine, agent string, err error)
	// EngineServices are every instance's Engine service.
	EngineServices() []string
	// EngineReady reports whether the instance's Engine accepts connections;
	// WaitEngineReady waits until it does, or its start failed.
	EngineReady(instance string) bool
	WaitEngineReady(ctx context.Context, instance string) error
	// EngineBackElsewhere: the instance's Engine, which left Running on this
	// node, runs again on another node (the instance is no longer down).
	EngineBackElsewhere(instance string)
	// JoinFCI makes the instance a failover cluster instance of the role whose
	// virtual network name is virtualName; SetTCPPort records the port its role
	// listens on.
	JoinFCI(instance, virtualName string)
	SetTCPPort(instance string, port int)
}
