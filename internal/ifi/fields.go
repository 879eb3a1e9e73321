package ifi

import (
	"fmt"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// Field is one fact the provider reports of an instance (a computed attribute of
// the resource, by its name).
type Field string

// The facts an apply can change.
const (
	FieldGranteeSID          Field = "grantee_sid"
	FieldPrivilegeGranted    Field = "privilege_granted"
	FieldIFIEnabled          Field = "ifi_enabled"
	FieldRestartPending      Field = "restart_pending"
	FieldVerifiedBy          Field = "verified_by"
	FieldSQLVersion          Field = "sql_version"
	FieldAvailabilityGroups  Field = "availability_groups"
	FieldAvailabilityRole    Field = "availability_role"
	FieldClusterNodes        Field = "cluster_nodes"
	FieldIFISurvivesFailover Field = "ifi_survives_failover"
	FieldLockPagesGranted    Field = "lock_pages_in_memory_granted"
	FieldMemoryModel         Field = "memory_model"
)

// AllFields are the facts an apply of an unknown action may change.
var AllFields = []Field{FieldGranteeSID, FieldPrivilegeGranted, FieldIFIEnabled, FieldRestartPending, FieldVerifiedBy, FieldSQLVersion,
	FieldAvailabilityGroups, FieldAvailabilityRole, FieldClusterNodes, FieldIFISurvivesFailover, FieldLockPagesGranted, FieldMemoryModel}

// MayChange lists the facts an apply of act may change, so that a plan shows
// every other one as the state has it (an exact diff); nil: none.
//   - grant and revoke change who holds the right (Lock pages in memory's holders,
//     lock_pages_in_memory_granted, only when the plan changes them:
//     Prediction.ChangesLockPages): privilege_granted, and with it
//     restart_pending (the running Engine keeps its token) and, on a failover
//     cluster instance, each node's grant (cluster_nodes) and the roll-up
//     (ifi_survives_failover). The right's grantee SID changes only with the
//     grantee argument (granteeChanged). How IFI is verified is asked again.
//   - a restart also changes what the running Engine has (ifi_enabled, its
//     memory_model) and may
//     fail an availability group over (availability_role); a failover cluster
//     instance's restart moves the role (cluster_nodes' current owner) and may
//     start it on a node with another build (sql_version).
//   - verify (the last apply failed part-way) and an unknown action may change
//     anything; refuse and none change nothing.
func MayChange(act Action, clustered, granteeChanged bool) []Field {
	var fs []Field
	switch act {
	case ActionNone, ActionRefuse:
		return nil
	case ActionVerify:
		return AllFields
	case ActionGrant, ActionRevoke:
		fs = []Field{FieldPrivilegeGranted, FieldRestartPending, FieldVerifiedBy}
	case ActionGrantAndRestart, ActionRevokeAndRestart:
		fs = []Field{FieldPrivilegeGranted, FieldRestartPending, FieldVerifiedBy, FieldIFIEnabled, FieldAvailabilityRole, FieldMemoryModel}
	case ActionRestart:
		fs = []Field{FieldRestartPending, FieldVerifiedBy, FieldIFIEnabled, FieldAvailabilityRole, FieldMemoryModel}
	default:
		return AllFields
	}
	if granteeChanged {
		fs = append(fs, FieldGranteeSID, FieldPrivilegeGranted)
	}
	if clustered {
		fs = append(fs, FieldClusterNodes, FieldIFISurvivesFailover)
		if act != ActionGrant && act != ActionRevoke {
			fs = append(fs, FieldSQLVersion)
		}
	}
	return fs
}

// After is what a successful apply of p (act, decided on the instance as assessed
// in a, which is not clustered) leaves of the facts whose value the plan can tell:
// each value is a bool, a string, or nil for null. A plan shows these known
// (Terraform then holds the apply to them: converge checks the apply's read-back
// against After, ExpectedAfter); the other facts MayChange lists stay unknown.
//   - privilege_granted and lock_pages_in_memory_granted: whether the grantee
//     holds the right once p's steps are made (holdersAfter); grantee_sid is the
//     grantee's SID as assessed.
//   - without a restart, the running Engine keeps what it has: restart_pending is
//     whether it differs from what its next start gives after the steps (null
//     when the running Engine's IFI is not known, as before), and verified_by
//     how it is verified now.
//   - a restart fails no availability group over on an instance in none:
//     availability_role stays null when SQL Server reported no group, or is not
//     asked (no sql block). What a restarted Engine reports (ifi_enabled,
//     memory_model, restart_pending, verified_by) is known only after it.
func (a *Assessment) After(act Action, p *Plan) map[Field]any {
	if a == nil || p == nil || a.Clustered {
		return nil
	}
	switch act {
	case ActionGrant, ActionRevoke, ActionGrantAndRestart, ActionRevokeAndRestart, ActionRestart:
	default:
		return nil
	}
	ri := a.observed.Instance
	after := map[Field]any{
		FieldGranteeSID:       a.GranteeSID,
		FieldPrivilegeGranted: holdersAfter(ri.RightHolders, p.Steps, contract.RightManageVolume)[a.GranteeSID],
	}
	if lp := a.LockPages; lp != nil && lp.Known && ri.LockPages != nil {
		after[FieldLockPagesGranted] = holdersAfter(ri.LockPages.Holders, p.Steps, contract.RightLockMemory)[a.GranteeSID]
	}
	if !p.Restart {
		after[FieldVerifiedBy] = string(a.VerifiedBy)
		after[FieldRestartPending] = nil
		if a.RunningIFI != nil {
			after[FieldRestartPending] = *a.RunningIFI != a.expectedAfter(p.Steps)
		}
		return after
	}
	if v := a.observed.Verification; v.AG != nil && len(v.AG.Groups) == 0 || !v.SQLConfigured && v.AG == nil {
		after[FieldAvailabilityRole] = nil
	}
	return after
}

// Fact is the value of f as a reports it (a bool, a string, or nil for null), for
// the facts After predicts; false when After never predicts f.
func (a *Assessment) Fact(f Field) (any, bool) {
	switch f {
	case FieldGranteeSID:
		return a.GranteeSID, true
	case FieldPrivilegeGranted:
		return a.PrivilegeGranted, true
	case FieldLockPagesGranted:
		if a.LockPages == nil || !a.LockPages.Known {
			return nil, true
		}
		return a.LockPages.Granted, true
	case FieldVerifiedBy:
		return string(a.VerifiedBy), true
	case FieldRestartPending:
		if a.RestartPending == nil {
			return nil, true
		}
		return *a.RestartPending, true
	case FieldAvailabilityRole:
		if a.AG == nil || len(a.AG.Groups) == 0 {
			return nil, true
		}
		return a.AG.Role, true
	}
	return nil, false
}

// ExpectedAfter checks an apply's read-back (now) against what its plan showed
// known of it (after, from After): a fact that reads otherwise is the error,
// naming it, since Terraform holds the apply to every value the plan knew.
func ExpectedAfter(after map[Field]any, now *Assessment) error {
	var wrong []string
	for _, f := range AllFields {
		want, ok := after[f]
		if !ok {
			continue
		}
		if got, known := now.Fact(f); known && got != want {
			wrong = append(wrong, fmt.Sprintf("%s is %s, the plan said %s", f, factString(got), factString(want)))
		}
	}
	if len(wrong) == 0 {
		return nil
	}
	return fmt.Errorf("after the change, %s reads otherwise than its plan said: %s. The change was made and the state holds what "+
		"the host reports now; the host or SQL Server answered otherwise than at plan time (something changed the instance during "+
		"the apply, or SQL Server did not answer). Run terraform plan again and review what it says", now.where(), strings.Join(wrong, "; "))
}

func factString(v any) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprintf("%v", v)
}
