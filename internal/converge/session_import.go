package converge

import (
	"context"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// An import and a list resource's result are one read: `terraform import` (its
// refresh after ImportState) and `terraform query`'s results of
// mssqlifi_instant_file_initialization both read an instance with Import, so that
// what a list result shows is what the import of it stores, and a generated
// configuration's plan after its import is empty.

// InstanceTarget is the target of one instance of host as a configuration names
// it: instance "" is the default instance (MSSQLSERVER); port and sqlPort 0 are
// unset (the provider's WinRM port, the port the host reports); replicas maps
// availability replica names to their SQL addresses (NewReplicaAddresses).
func InstanceTarget(host, instance string, port, sqlPort int, replicas map[string]string) Target {
	if instance == "" {
		instance = contract.DefaultInstance
	}
	return Target{Host: host, Instance: instance, Port: port, SQLPort: sqlPort, ReplicaAddresses: NewReplicaAddresses(replicas)}
}

// Import reads r's instance as an import finds it (Read with Imported): assessed
// against ImportDefaults, `enabled` what the host has (whether the service SID
// holds the right), planned_action none, on its path (a failover cluster instance
// through its cluster). r.Desired and r.Memo are not used.
func (s *Session) Import(ctx context.Context, r Request) (*Result, error) {
	r.Desired, r.Memo = ImportDefaults, nil
	return s.Read(ctx, ReadRequest{Request: r, Imported: true})
}

// ImportHost reads every SQL Server instance installed on r.Target's host (its
// Instance is not used), in the registry's order, each as Import reads it: the
// results of a list resource. All of them come from the run's one read of the host
// (hostReads; one powershell.exe); each instance's SQL check is its own. The first
// instance that cannot be read ends it with that instance's error.
func (s *Session) ImportHost(ctx context.Context, r Request) ([]HostInstance, error) {
	ctx = runWide(ctx) // the instances' reads share the host's
	_, names, err := s.Engine.Instances(ctx, r.Target)
	if err != nil {
		return nil, err
	}
	out := make([]HostInstance, 0, len(names))
	for _, name := range names {
		ir := Request{Target: r.Target}
		ir.Target.Instance, ir.Target.SQLPort = name, 0
		res, err := s.Import(ctx, ir)
		if err != nil {
			return out, err
		}
		res.NTLMFallback = "" // a list read on every plan has no memory of having said it (DescribeHost)
		out = append(out, HostInstance{Instance: name, Result: res})
	}
	return out, nil
}
