package contract

import "context"

// OpReadHost reads several instances of one host in one process: what read_instance
// reports of each, with the host-wide parts (the right's holders, the members of
// Administrators, Group Policy) read once. The engine reads a host this way once
// per run and shares the answer between the run's operations on that host
// (design/winrm-stdin-and-cost-model.md, "One read per host per run").
const OpReadHost Operation = "read_host"

// MaxReadHostInstances is the most instances one read_host names (read_host.ps1
// holds the same number): a host has at most 50 instances of the Database Engine
// (SQL Server's "Maximum capacity specifications": 50 instances per computer).
const MaxReadHostInstances = 50

// ReadHostParams asks for the instances of one host.
type ReadHostParams struct {
	// Instances are the instances to read; empty reads every instance installed.
	// Names the host does not have are answered as read_instance answers them
	// (Found false).
	Instances []string `json:"instances"`
	Right     string   `json:"right"` // as ReadInstanceParams.Right
}

// ReadHostResult is each asked instance as read_instance would report it, in the
// order asked (for every installed instance: the registry's order).
type ReadHostResult struct {
	ComputerName       string               `json:"computer_name"`
	InstalledInstances []string             `json:"installed_instances"`
	Instances          []ReadInstanceResult `json:"instances"`
}

// HostReader is a Host that can read several instances at once (remote.Host and the
// simulator's client do); a Host without it is read instance by instance.
type HostReader interface {
	ReadHost(ctx context.Context, p ReadHostParams) (*ReadHostResult, error)
}
