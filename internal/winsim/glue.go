package winsim

import (
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// The few places where the simulator reads the host model's configuration.

func hostHTTPPort(hc host.HostConfig) int        { return hc.WinRM.HTTPPort }
func hostHTTPSPort(hc host.HostConfig) int       { return hc.WinRM.HTTPSPort }
func hostAllowBasic(hc host.HostConfig) bool     { return hc.WinRM.BasicEnabled() }
func hostAllowNTLM(hc host.HostConfig) bool      { return hc.WinRM.NTLMEnabled() }
func hostComputerName(hc host.HostConfig) string { return hc.ComputerNameOrDefault() }
func hostKerberos(hc host.HostConfig) *host.KerberosConfig {
	return hc.WinRM.Kerberos
}

type instanceView struct {
	name    string
	sqlPort int
}

func hostInstances(hc host.HostConfig) []instanceView {
	out := make([]instanceView, 0, len(hc.Instances))
	for _, ic := range hc.Instances {
		out = append(out, instanceView{name: ic.Name, sqlPort: ic.SQLPort})
	}
	return out
}

// instanceConfig returns the configuration of the named instance.
func instanceConfig(hc host.HostConfig, name string) host.InstanceConfig {
	for _, ic := range hc.Instances {
		if strings.EqualFold(ic.Name, name) {
			return ic
		}
	}
	return host.InstanceConfig{Name: name}
}
