package tsql_test

import (
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// The engine's tests run it where it runs in the simulator: in an instance of a
// host model, whose state its system views show.

var engineSID = winsid.ServiceSID("MSSQLSERVER")

func intp(n int) *int    { return &n }
func boolp(b bool) *bool { return &b }

// logins are a sysadmin "sa" and a login "weak" without VIEW SERVER STATE.
func logins() []host.LoginConfig {
	return []host.LoginConfig{{Name: "sa", Password: "Sql!"}, {Name: "weak", Password: "w", ViewServerState: boolp(false)}}
}

// defaultInstance is MSSQLSERVER, the build's default version, with logins().
func defaultInstance() host.InstanceConfig {
	return host.InstanceConfig{Name: "MSSQLSERVER", Logins: logins()}
}

// hostConfig is the domain host sql01 with the instances given.
func hostConfig(instances ...host.InstanceConfig) host.HostConfig {
	return host.HostConfig{Name: "sql01", Address: "127.0.0.2", Domain: "CONTOSO", Instances: instances}
}

// start builds a host of the instances given, closed when the test ends.
func start(t *testing.T, instances ...host.InstanceConfig) *host.Host {
	t.Helper()
	h, err := host.New(hostConfig(instances...), host.Options{})
	if err != nil {
		t.Fatalf("host.New: %v", err)
	}
	t.Cleanup(h.Close)
	return h
}

// sqlHost has four instances: the default one (2022) the primary replica of AG1,
// REPORTING (2019, two TDE databases) its secondary, OLD (2014: no IFI column,
// Always On off) and LEGACY (2008 R2: no Always On at all).
func sqlHost(t *testing.T) *host.Host {
	t.Helper()
	primary := defaultInstance()
	primary.AvailabilityGroup = &host.AvailabilityGroupConfig{Name: "AG1", Role: "Primary"}
	return start(t, primary,
		host.InstanceConfig{Name: "REPORTING", Version: "15.0.4355.3", TDEDatabases: []string{"Sales", "HR"}, Logins: logins(),
			AvailabilityGroup: &host.AvailabilityGroupConfig{Name: "AG1", Role: "secondary"}},
		host.InstanceConfig{Name: "OLD", Version: "12.0.6024.0", Logins: logins(), Agent: boolp(false)},
		host.InstanceConfig{Name: "LEGACY", Version: "10.50.6000.34", Logins: logins()})
}
