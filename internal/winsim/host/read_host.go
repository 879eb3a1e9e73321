package host

import (
	"fmt"
	"io"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// opReadHost is read_host.ps1: its parameters checked as the script checks them,
// then the host-wide part (Get-HostRightFact: the LSA's holders first, which a user
// who is not an administrator cannot read), then each instance as read_instance
// reports it.
func (h *Host) opReadHost(p *contract.ReadHostParams, admin bool, stdout, stderr io.Writer, entry *AuditEntry) int {
	if code, ok := h.checkRightParam(p.Right, stdout, entry); !ok {
		return code
	}
	if len(p.Instances) > contract.MaxReadHostInstances {
		return h.scriptError(stdout, entry, contract.ExitInvalidParams, "invalid_parameters",
			fmt.Sprintf("read_host reads at most %d instances; %d were asked.", contract.MaxReadHostInstances, len(p.Instances)))
	}
	for _, name := range p.Instances {
		if code, ok := h.checkInstanceParam(name, stdout, entry); !ok {
			return code
		}
	}
	installed := h.installedNames()
	names := p.Instances
	if len(names) == 0 {
		for _, n := range installed {
			if contract.InstanceNameSyntaxValid(n) {
				names = append(names, n)
			}
		}
	}
	if !admin {
		return lsaTerminating(stderr, entry, lsaAccessDenied)
	}
	right, ok := canonicalRight(p.Right)
	if !ok {
		return lsaTerminating(stderr, entry, lsaNoPrivilege)
	}
	res := contract.ReadHostResult{ComputerName: h.computer, InstalledInstances: installed, Instances: []contract.ReadInstanceResult{}}
	for _, name := range names {
		res.Instances = append(res.Instances, h.instanceReport(name, right))
	}
	writeJSON(stdout, res)
	return contract.ExitOK
}
