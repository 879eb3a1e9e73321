package ifi

import (
	"fmt"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
)

// Claim says what two resources of one configuration both manage.
type Claim int

const (
	// ClaimInstance: one SQL Server instance, spelled two ways or twice.
	ClaimInstance Claim = iota
	// ClaimClusterRole: one failover cluster instance, reached through two nodes.
	ClaimClusterRole
)

// TwoResources is the refusal of a second resource for what another resource of
// the same run manages: by and other are how each spells its target; place and
// instance name what both manage (for a cluster role: the cluster and the
// instance, with the role's group and virtual name). One resource manages one
// instance, on every node; two undo each other's changes and restart it twice.
func TwoResources(kind Claim, by, other, place, instance, group, virtualName string) *Refusal {
	what := fmt.Sprintf("instance %s on %s (hosts are compared as addresses, so 127.0.2.2 and ::ffff:127.0.2.2 are one host, and DNS "+
		"names and instance names without case)", safetext.Escape(instance), safetext.Escape(place))
	summary, keep := "Two resources manage one SQL Server instance", "Keep one resource per instance: remove one of them (terraform state rm if it is "+
		"already in the state), or point it at the instance it was meant for."
	harm := "Two resources for one instance undo each other's changes and restart SQL Server on every apply."
	if kind == ClaimClusterRole {
		what = fmt.Sprintf("the role %q of cluster %s (instance %s, virtual name %s): they reach it through different nodes",
			safetext.Escape(group), safetext.Escape(place), safetext.Escape(instance), safetext.Escape(virtualName))
		summary = "Two resources manage one failover cluster instance"
		harm = "One resource manages the whole instance, on every node; two undo each other's changes and restart it twice."
		keep = "Keep one resource per failover cluster instance, addressed by any one node: remove the other (terraform state rm if it is already in the state)."
	}
	return &Refusal{Summary: summary,
		Detail: fmt.Sprintf("This resource (%s) and another mssqlifi_instant_file_initialization resource of this configuration (%s) both manage "+
			"%s. %s Nothing was changed. %s", by, other, what, harm, keep)}
}
