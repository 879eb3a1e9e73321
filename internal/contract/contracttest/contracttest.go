// Package contracttest is the host that the unit tests of the layers over contract
// (ifi, converge) start from, so that they reason about the same instance: a
// running default instance on SQL01, started as the domain account CORP\svc-sql,
// with an unrestricted service SID and no Group Policy for the right; and how those
// tests show the contract's tri-state values. Tests only.
package contracttest

import (
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

// SIDs of the instance's service and start account.
var (
	ServiceSID = winsid.ServiceSID("MSSQLSERVER")
	AccountSID = "S-1-5-21-1-2-3-1105"
)

// RunningDefaultInstance is what read_instance reports of that instance, nobody
// holding the right; each call returns a new value for the test to change.
func RunningDefaultInstance() *contract.ReadInstanceResult {
	return &contract.ReadInstanceResult{
		ComputerName:    "SQL01",
		Found:           true,
		Instance:        "MSSQLSERVER",
		ServiceName:     "MSSQLSERVER",
		ServiceState:    contract.StateRunning,
		ProcessID:       4242,
		StartAccount:    `CORP\svc-sql`,
		StartAccountSID: AccountSID,
		ServiceSIDType:  1,
		GroupPolicy:     contract.GroupPolicyInfo{Known: true},
	}
}

// TriState shows one of the contract's *bool values (true, false, or null when the
// host could not tell) in a test's message.
func TriState(b *bool) string {
	switch {
	case b == nil:
		return "null"
	case *b:
		return "true"
	default:
		return "false"
	}
}
