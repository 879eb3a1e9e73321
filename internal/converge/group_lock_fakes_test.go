package converge

import (
	"context"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// The fake checker as a contract.GroupChecker: the group's primary (SQL01 unless
// the local replica is primary) sees primarySees (by default every replica
// HEALTHY), and its restart lock is held by another run when lockedBy is set.

var _ contract.GroupChecker = (*fakeChecker)(nil)

// primaries is what the replica names as each group's primary.
func (c *fakeChecker) primaries() map[string]string {
	if c.replicas == nil {
		return nil
	}
	m := map[string]string{}
	for _, r := range c.replicas {
		if !r.Local {
			continue
		}
		switch {
		case c.noPrimaryName:
			m[r.Group] = ""
		case r.Role == "PRIMARY":
			m[r.Group] = r.Server
		default:
			m[r.Group] = "SQL01"
		}
	}
	return m
}

func (c *fakeChecker) GroupHealth(ctx context.Context, t contract.SQLTarget, group string) ([]contract.Replica, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.primaryAsks = append(c.primaryAsks, t)
	if c.groupErr != nil {
		return nil, c.groupErr
	}
	return c.seenByPrimaryLocked(group), nil
}

func (c *fakeChecker) seenByPrimaryLocked(group string) []contract.Replica {
	if c.primarySees != nil {
		return c.primarySees()
	}
	out := []contract.Replica{{Group: group, Server: "SQL01", Local: true, Role: "PRIMARY", Connected: "CONNECTED", Health: "HEALTHY"}}
	for _, r := range c.replicas {
		if r.Local && r.Role != "PRIMARY" && strings.EqualFold(r.Group, group) {
			r.Local = false
			out = append(out, r)
		}
	}
	return out
}

func (c *fakeChecker) LockGroup(ctx context.Context, t contract.SQLTarget, group, replica string) (contract.GroupLock, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lockTargets = append(c.lockTargets, t)
	c.lockGroups = append(c.lockGroups, group)
	c.lockReplicas = append(c.lockReplicas, replica)
	if err := c.lockErrFor[group]; err != nil {
		return nil, err
	}
	if c.lockedBy != "" {
		return nil, &contract.GroupLockedError{Group: group, Replica: c.lockedBy}
	}
	if c.lockErr != nil {
		return nil, c.lockErr
	}
	c.locksHeld++
	return &fakeGroupLock{c: c, group: group}, nil
}

type fakeGroupLock struct {
	c     *fakeChecker
	group string
	done  bool
}

func (l *fakeGroupLock) Health(ctx context.Context) ([]contract.Replica, error) {
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	l.c.healthPolls++
	if l.c.healthErr != nil {
		if err := l.c.healthErr(l.c.healthPolls); err != nil {
			return nil, err
		}
	}
	return l.c.seenByPrimaryLocked(l.group), nil
}

func (l *fakeGroupLock) Release() {
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	if !l.done {
		l.done = true
		l.c.locksHeld--
	}
}
