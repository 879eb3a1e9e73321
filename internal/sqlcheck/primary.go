package sqlcheck

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// An availability group's health and restart lock, asked of its primary replica
// (contract.GroupChecker).

var _ contract.GroupChecker = (*checker)(nil)

// primaries reads which server instance hosts each group's primary replica.
func (c *checker) primaries(ctx context.Context, t Target, conn *sql.Conn, r *Report) error {
	rows, err := conn.QueryContext(ctx, contract.QueryGroupPrimaries)
	if err != nil {
		return c.classify(ctx, t, err)
	}
	defer rows.Close()
	r.Primaries = map[string]string{}
	for rows.Next() {
		var group, primary sql.NullString
		if err := rows.Scan(&group, &primary); err != nil {
			return c.classify(ctx, t, err)
		}
		r.Primaries[group.String] = strings.TrimSpace(primary.String)
	}
	if err := rows.Err(); err != nil {
		return c.classify(ctx, t, err)
	}
	return nil
}

// groupReplicas reads the replicas of group the instance at conn sees, and checks
// that it hosts the group's primary replica.
func (c *checker) groupReplicas(ctx context.Context, t Target, conn *sql.Conn, group string) ([]Replica, error) {
	rows, err := conn.QueryContext(ctx, contract.QueryReplicaStates)
	if err != nil {
		return nil, c.classify(ctx, t, err)
	}
	defer rows.Close()
	var out []Replica
	primary := false
	for rows.Next() {
		var g, server, role, connected, health sql.NullString
		var local sql.NullBool
		if err := rows.Scan(&g, &server, &local, &role, &connected, &health); err != nil {
			return nil, c.classify(ctx, t, err)
		}
		if !strings.EqualFold(g.String, group) {
			continue
		}
		up := func(s sql.NullString) string { return strings.ToUpper(strings.TrimSpace(s.String)) }
		rp := Replica{Group: g.String, Server: server.String, Local: local.Bool, Role: up(role), Connected: up(connected), Health: up(health)}
		if rp.Local && rp.Role == "PRIMARY" {
			primary = true
		}
		out = append(out, rp)
	}
	if err := rows.Err(); err != nil {
		return nil, c.classify(ctx, t, err)
	}
	if !primary {
		np := &contract.NotPrimaryError{Group: group, Address: fmt.Sprintf("%s:%d", t.Host, t.Port)}
		var now Report
		if c.primaries(ctx, t, conn, &now) == nil {
			for g, p := range now.Primaries {
				if strings.EqualFold(g, group) {
					np.Primary = p
				}
			}
		}
		return nil, &Error{Target: t, Kind: KindQuery, Err: np,
			Message: fmt.Sprintf("%s:%d does not host the primary replica of availability group %s (it reports %d replica rows of the group, none local and PRIMARY; %s)",
				t.Host, t.Port, group, len(out), primaryNow(np.Primary)),
			Hint: "The group may have failed over since the replica named its primary: apply again, or check availability_replica_addresses"}
	}
	return out, nil
}

// primaryNow says which replica an instance names as its group's primary.
func primaryNow(p string) string {
	if p == "" {
		return "it names no primary now"
	}
	return "it names " + p + " as the primary now"
}

// GroupHealth asks the group's primary at t for every replica's state.
func (c *checker) GroupHealth(ctx context.Context, t Target, group string) ([]Replica, error) {
	db, conn, err := c.open(ctx, t)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	defer conn.Close()
	return c.groupReplicas(ctx, t, conn, group)
}

// lockName is the application lock resource of a group's restarts, and of one
// replica's: hashed so any name fits the 255 characters and needs no quoting
// (resource names compare as binary, so the names are upper-cased first).
func lockName(group string, replica ...string) string {
	h := func(s string) string {
		sum := sha256.Sum256([]byte(strings.ToUpper(s)))
		return hex.EncodeToString(sum[:16])
	}
	name := "mssqlifi:restart:ag:" + h(group)
	if len(replica) > 0 {
		name += ":replica:" + h(replica[0])
	}
	return name
}

// lockBatch takes (or, with release, gives back) a session-owned exclusive lock
// on resource in master, not waiting; its result is sp_getapplock's status.
func lockBatch(resource string, release bool) string {
	if release {
		return "DECLARE @r int; EXEC @r = master.sys.sp_releaseapplock @Resource = N'" + resource + "', @LockOwner = N'Session'; SELECT @r AS result"
	}
	return "DECLARE @r int; EXEC @r = master.sys.sp_getapplock @Resource = N'" + resource +
		"', @LockMode = N'Exclusive', @LockOwner = N'Session', @LockTimeout = 0, @DbPrincipal = N'public'; SELECT @r AS result"
}

// applock runs lockBatch and returns the status.
func (c *checker) applock(ctx context.Context, t Target, conn *sql.Conn, resource string, release bool) (int, error) {
	var rc sql.NullInt64
	if err := conn.QueryRowContext(ctx, lockBatch(resource, release)).Scan(&rc); err != nil {
		return 0, c.classify(ctx, t, err)
	}
	if !rc.Valid {
		return 0, &Error{Target: t, Kind: KindQuery, Message: "sp_getapplock returned no status"}
	}
	return int(rc.Int64), nil
}

// LockGroup takes the group's restart lock on its primary at t, then a second lock
// naming replica, so that a run refused the first can tell which replica is being
// restarted (it tries the replica locks of the group's replicas: the one it cannot
// take is held).
func (c *checker) LockGroup(ctx context.Context, t Target, group, replica string) (contract.GroupLock, error) {
	db, conn, err := c.open(ctx, t)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (contract.GroupLock, error) {
		conn.Close()
		db.Close()
		return nil, err
	}
	replicas, err := c.groupReplicas(ctx, t, conn, group)
	if err != nil {
		return fail(err)
	}
	rc, err := c.applock(ctx, t, conn, lockName(group), false)
	if err != nil {
		return fail(err)
	}
	switch {
	case rc == -1:
		held := &contract.GroupLockedError{Group: group}
		for _, r := range replicas {
			if r.Server == "" {
				continue
			}
			n := lockName(group, r.Server)
			got, err := c.applock(ctx, t, conn, n, false)
			if err != nil {
				break
			}
			if got == -1 {
				held.Replica = r.Server
				break
			}
			_, _ = c.applock(ctx, t, conn, n, true)
		}
		return fail(held)
	case rc < 0:
		return fail(&Error{Target: t, Kind: KindQuery, Message: fmt.Sprintf("sp_getapplock for the restart lock of availability group %s returned %d", group, rc)})
	}
	if rc, err := c.applock(ctx, t, conn, lockName(group, replica), false); err != nil || rc < 0 {
		if err == nil {
			err = &Error{Target: t, Kind: KindQuery, Message: fmt.Sprintf("sp_getapplock for replica %s of availability group %s returned %d", replica, group, rc)}
		}
		return fail(err)
	}
	return &groupLock{c: c, t: t, db: db, conn: conn, group: group}, nil
}

// groupLock is a held restart lock: its session is the open connection.
type groupLock struct {
	c     *checker
	t     Target
	db    *sql.DB
	conn  *sql.Conn
	group string
}

func (l *groupLock) Health(ctx context.Context) ([]Replica, error) {
	return l.c.groupReplicas(ctx, l.t, l.conn, l.group)
}

// Release closes the session, which releases both of its locks.
func (l *groupLock) Release() {
	l.conn.Close()
	l.db.Close()
}
