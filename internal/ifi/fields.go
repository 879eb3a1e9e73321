package ifi

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
