package ifi

import (
	"fmt"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
)

// Managed is what one resource manages, as the refusal of a second resource for it
// names it: a SQL Server instance (ManagedInstance) or the role of a failover
// cluster instance (ManagedRole). Its fields are what the two topologies' refusals
// differ in; TwoResources writes the refusal once.
type Managed struct {
	kind    string   // the summary's noun
	what    string   // names it
	same    string   // how the second resource was found to manage it too
	harm    string   // what two resources for it do
	keep    string   // what one resource is kept per
	waysOut []string // ways out after keeping one
}

// ManagedInstance is a SQL Server instance, by the host and instance name the claim
// compared (normalised: hosts as addresses, names without case).
func ManagedInstance(host, instance string) Managed {
	return Managed{kind: "SQL Server instance",
		what: fmt.Sprintf("instance %s on %s", safetext.Escape(instance), safetext.Escape(host)),
		same: " (hosts are compared as addresses, so 127.0.2.2 and ::ffff:127.0.2.2 are one host, and DNS names and instance names without case)",
		harm: "two resources for one instance undo each other's changes and restart SQL Server on every apply",
		keep: "instance", waysOut: []string{"point one at the instance it was meant for"}}
}

// ManagedRole is the role of a failover cluster instance, which resources for
// different nodes reach alike.
func ManagedRole(cluster, role, instance, virtualName string) Managed {
	vn := "virtual name " + safetext.Escape(virtualName)
	if virtualName == "" {
		vn = "its virtual name not reported by the cluster"
	}
	return Managed{kind: "failover cluster instance",
		what: fmt.Sprintf("the role %q of cluster %s (instance %s, %s)", safetext.Escape(role), safetext.Escape(cluster),
			safetext.Escape(instance), vn),
		same: ", reaching it through a different node",
		harm: "two resources for one failover cluster instance undo each other's changes and restart it twice (one resource manages the whole instance, on every node)",
		keep: "failover cluster instance, addressed by any one node"}
}

// TwoResources refuses a second resource of this configuration for what another
// already manages: by is this resource and other the first, each by its arguments
// (`host = "sql01", instance = "MSSQLSERVER"`).
func TwoResources(by, other string, m Managed) *Refusal {
	return refusal("Two resources manage one "+m.kind,
		fmt.Sprintf("This resource (%s) manages %s", safetext.Escape(by), m.what),
		fmt.Sprintf("another mssqlifi_instant_file_initialization resource of this configuration (%s) manages it too%s, and %s",
			safetext.Escape(other), m.same, m.harm),
		"Nothing was changed.",
		append([]string{"keep one resource per " + m.keep + ", removing the other (terraform state rm if it is already in the state)"}, m.waysOut...)...)
}
