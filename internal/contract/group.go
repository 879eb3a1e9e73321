package contract

import (
	"context"
	"fmt"
)

// An availability group's health, and its restart lock, are asked of its primary
// replica, which sees every replica (a secondary sees only its own row of
// sys.dm_hadr_availability_replica_states).

// QueryGroupPrimaries: one row per availability group the instance has a replica
// of, naming the server instance that hosts its primary replica (NULL when the
// cluster cannot tell). Needs VIEW SERVER STATE.
const QueryGroupPrimaries = "SELECT m.ag_name AS availability_group, gs.primary_replica " +
	"FROM sys.dm_hadr_availability_group_states AS gs " +
	"LEFT JOIN sys.dm_hadr_name_id_map AS m ON m.ag_id = gs.group_id"

// GroupChecker is an SQLChecker that can also ask a group's primary replica
// (internal/sqlcheck implements it).
type GroupChecker interface {
	// GroupHealth connects to t, checks that it hosts the primary replica of group,
	// and returns every replica of the group as the primary sees it.
	GroupHealth(ctx context.Context, t SQLTarget, group string) ([]Replica, error)
	// LockGroup connects to t (the group's primary) and takes the group's restart
	// lock for replica: a session-owned application lock, held while the returned
	// GroupLock's connection stays open. Another run holding it is a
	// *GroupLockedError.
	LockGroup(ctx context.Context, t SQLTarget, group, replica string) (GroupLock, error)
}

// GroupLock is a held restart lock of an availability group.
type GroupLock interface {
	// Health reads the group's replicas on the lock's own connection.
	Health(ctx context.Context) ([]Replica, error)
	// Release gives the lock back and closes the connection (whose end would
	// release it anyway).
	Release()
}

// NotPrimaryError: the instance asked does not host the group's primary replica
// (the group failed over since it was named primary). Primary is the replica it
// names as the primary now; "" when it names none (a failover in progress, or the
// cluster cannot tell).
type NotPrimaryError struct {
	Group, Address, Primary string
}

func (e *NotPrimaryError) Error() string {
	now := "it names no primary now"
	if e.Primary != "" {
		now = "it names " + e.Primary + " as the primary now"
	}
	return fmt.Sprintf("%s does not host the primary replica of availability group %s (%s)", e.Address, e.Group, now)
}

// GroupLockedError: another session holds the group's restart lock.
type GroupLockedError struct {
	Group string
	// Replica is the replica that session restarts ("" when it could not be told).
	Replica string
}

func (e *GroupLockedError) Error() string {
	who := "another replica"
	if e.Replica != "" {
		who = e.Replica
	}
	return fmt.Sprintf("another run holds the restart lock of availability group %s: it is restarting %s", e.Group, who)
}
