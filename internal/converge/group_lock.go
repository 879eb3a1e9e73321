package converge

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

// The restart gate's questions about an availability group, asked of whoever can
// know: a secondary sees only its own row of sys.dm_hadr_availability_replica_states,
// so its group's health is read from the primary (over the same sql login); and
// across runs and states one replica of a group restarts at a time, under a
// session-owned application lock on the primary, taken before the stop and held
// until the replica is back and HEALTHY as the primary sees it. The session's end
// releases it when the run dies.

// WarnGroupNotHealthy: after the restart the replica was not HEALTHY, as its
// primary sees it, by the time the apply had to go on.
const WarnGroupNotHealthy = "group_not_healthy"

// groupHealthPoll is how often the primary is asked whether the restarted replica
// is HEALTHY again.
const groupHealthPoll = time.Second

// groupHealthyTimeout bounds that wait when the operation has no deadline.
const groupHealthyTimeout = 10 * time.Minute

// replicaGroup is one availability group of the observed instance: who is its
// primary and where it is asked.
type replicaGroup struct {
	group   string
	primary string              // server instance hosting the primary replica
	target  *contract.SQLTarget // where the primary is asked; nil when unknown
	self    bool                // the instance is that primary
}

// ParseReplicaAddress reads one value of availability_replica_addresses: host or
// host:port (an IPv6 address in brackets with a port). The port is 0 when not given.
func ParseReplicaAddress(s string) (host string, port int, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", 0, errors.New("the address is empty")
	}
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, perr := strconv.Atoi(p)
		if perr != nil || n < 1 || n > 65535 {
			return "", 0, fmt.Errorf("%q: the port must be a number from 1 to 65535", s)
		}
		if h == "" {
			return "", 0, fmt.Errorf("%q: the host is empty", s)
		}
		return h, n, nil
	}
	if strings.ContainsAny(s, " /\\@") || strings.Count(s, ":") == 1 {
		return "", 0, fmt.Errorf("%q is not host or host:port", s)
	}
	return strings.Trim(s, "[]"), 0, nil
}

// CheckReplicaName checks a key of availability_replica_addresses: a replica name
// as SQL Server reports it, COMPUTER or COMPUTER\INSTANCE.
func CheckReplicaName(name string) error {
	computer, inst, _ := strings.Cut(name, `\`)
	if strings.TrimSpace(name) != name || computer == "" || strings.ContainsAny(computer, " /:@") || strings.Contains(inst, `\`) {
		return fmt.Errorf("%q is not a replica name as SQL Server reports it (COMPUTER, or COMPUTER\\INSTANCE for a named instance)", name)
	}
	return nil
}

// ReplicaAddresses maps availability replica names to addresses (Target).
type ReplicaAddresses struct{ byName map[string]string }

// NewReplicaAddresses keeps m (replica name → host or host:port); nil when empty.
func NewReplicaAddresses(m map[string]string) *ReplicaAddresses {
	if len(m) == 0 {
		return nil
	}
	return &ReplicaAddresses{byName: maps.Clone(m)}
}

// lookup is the address of the replica name (case-insensitive).
func (r *ReplicaAddresses) lookup(name string) (string, bool) {
	if r == nil {
		return "", false
	}
	for n, a := range r.byName {
		if strings.EqualFold(n, name) {
			return a, true
		}
	}
	return "", false
}

// primaryTarget is where the primary replica named primary is asked: the address
// the configuration maps its name to (availability_replica_addresses), else the
// computer part of its name at the port this replica listens on.
func primaryTarget(t Target, own *contract.SQLTarget, primary string) *contract.SQLTarget {
	if addr, ok := t.ReplicaAddresses.lookup(primary); ok {
		h, p, err := ParseReplicaAddress(addr)
		if err != nil {
			return nil // validated at plan time
		}
		if p == 0 {
			p = own.Port
		}
		return &contract.SQLTarget{Host: h, Port: p, Instance: primary, AnsweredTDS: true}
	}
	computer, _, _ := strings.Cut(primary, `\`)
	if computer == "" {
		return nil
	}
	return &contract.SQLTarget{Host: computer, Port: own.Port, Instance: primary, AnsweredTDS: true}
}

// askPrimaries fills m.FromPrimary: for a secondary, each group's health as its
// primary sees it, or why the primary could not be asked.
func (e *Engine) askPrimaries(ctx context.Context, o *Observation, checker contract.SQLChecker, rep *contract.SQLReport, m *ifi.AGMembership) {
	o.groups = nil
	for _, r := range rep.Replicas {
		if r.Local {
			o.replica = r.Server
		}
	}
	for _, g := range m.Groups {
		primary := rep.Primaries[g]
		rg := replicaGroup{group: g, primary: primary}
		for _, r := range rep.Replicas {
			if r.Local && strings.EqualFold(r.Group, g) && r.Role == "PRIMARY" {
				rg.self, rg.primary, rg.target = true, r.Server, o.SQLTarget
			}
		}
		if !rg.self && primary != "" {
			rg.target = primaryTarget(o.Target, o.SQLTarget, primary)
		}
		o.groups = append(o.groups, rg)
		if rg.self || m.Role == ifi.RolePrimary {
			continue // a primary sees every replica itself
		}
		view := ifi.GroupView{Group: g, Primary: primary}
		gc, ok := checker.(contract.GroupChecker)
		switch {
		case primary == "":
			view.Err = "this replica does not name its primary (sys.dm_hadr_availability_group_states.primary_replica is NULL: the cluster cannot tell)"
		case rg.target == nil:
			view.Err = fmt.Sprintf("the primary's name %q gives no address", primary)
		case !ok:
			view.Err = "this SQL client cannot ask a primary"
		default:
			view.Address = net.JoinHostPort(rg.target.Host, strconv.Itoa(rg.target.Port))
			e.debug(ctx, "asking the availability group's primary", map[string]any{"host": o.Target.Host, "instance": o.Target.Instance,
				"group": g, "primary": primary, "address": view.Address})
			replicas, err := gc.GroupHealth(ctx, *rg.target, g)
			if err != nil {
				view.Err = fmt.Sprintf("asking %s at %s failed: %v", primary, view.Address, err)
			} else {
				view.Unhealthy = unhealthyReplicas(replicas)
			}
		}
		m.FromPrimary = append(m.FromPrimary, view)
	}
}

// unhealthyReplicas describes each replica that is not CONNECTED and HEALTHY.
func unhealthyReplicas(rs []contract.Replica) []string {
	var out []string
	for _, r := range rs {
		if r.Healthy() {
			continue
		}
		who := r.Server
		if who == "" {
			who = "a replica"
		}
		if r.Local {
			who += " (this replica)"
		}
		if r.Group != "" {
			who += " of " + r.Group
		}
		out = append(out, fmt.Sprintf("%s: %s, %s", who, orUnknown(r.Health), orUnknown(r.Connected)))
	}
	return out
}

// heldGroups are the restart locks an apply holds.
type heldGroups struct {
	locks   []contract.GroupLock
	groups  []replicaGroup
	replica string
}

// lockGroups (obs nil: no group) takes the restart lock of each group of the observed instance on its
// primary, before anything is stopped. Another run's lock, or a lock that cannot be
// asked for, refuses the restart (a KindRefused error; nothing was changed by it).
// With no group, or without SQL credentials (the gate then knows nothing of groups
// either), there is nothing to take.
func (e *Engine) lockGroups(ctx context.Context, t Target, obs *Observation, reason string) (*heldGroups, error) {
	if obs == nil || len(obs.groups) == 0 {
		return &heldGroups{}, nil
	}
	held := &heldGroups{replica: obs.replica}
	checker, _ := e.Clients.SQLChecker()
	gc, _ := checker.(contract.GroupChecker)
	groups := slices.Clone(obs.groups)
	slices.SortFunc(groups, func(a, b replicaGroup) int {
		return strings.Compare(strings.ToUpper(a.group), strings.ToUpper(b.group))
	})
	for _, g := range groups {
		var err error
		var lock contract.GroupLock
		switch {
		case g.target == nil:
			err = errors.New("the primary's address is unknown")
		case gc == nil:
			err = errors.New("this SQL client cannot ask a primary")
		default:
			lock, err = gc.LockGroup(ctx, *g.target, g.group, obs.replica)
		}
		if err != nil {
			held.release()
			var locked *contract.GroupLockedError
			if errors.As(err, &locked) {
				e.info(ctx, "another run is restarting a replica of the availability group", map[string]any{"host": t.Host, "instance": t.Instance,
					"group": g.group, "replica": locked.Replica})
				return nil, &Error{Kind: KindRefused, Target: t, Err: err, Refusal: ifi.GroupLocked(t.Host, t.Instance, reason, g.group, locked.Replica)}
			}
			return nil, &Error{Kind: KindRefused, Target: t, Err: err,
				Refusal: ifi.GroupLockUnavailable(t.Host, t.Instance, reason, g.group, g.primary, err.Error())}
		}
		e.info(ctx, "took the availability group's restart lock", map[string]any{"host": t.Host, "instance": t.Instance,
			"group": g.group, "primary": g.primary, "replica": obs.replica})
		held.locks = append(held.locks, lock)
		held.groups = append(held.groups, g)
	}
	return held, nil
}

// awaitHealthy waits, after the restart, until the primary sees the replica
// CONNECTED and HEALTHY in each locked group, within the time the operation leaves
// for it (keeping a margin for the read-back); a replica not yet HEALTHY then is a
// warning. A primary that restarted itself lost its lock's session with its stop:
// there is nothing to wait on.
func (e *Engine) awaitHealthy(ctx context.Context, t Target, held *heldGroups, out ledger) {
	// The wait's budget, in polls: until the operation's deadline less half the
	// read-back margin, or groupHealthyTimeout without one.
	budget := groupHealthyTimeout
	if dl, ok := ctx.Deadline(); ok {
		budget = dl.Add(-readBackMargin / 2).Sub(e.clock().Now())
	}
	wctx := ctx
	polls := max(int(budget/groupHealthPoll), 1)
	for n, lock := range held.locks {
		g := held.groups[n]
		if g.self {
			continue
		}
		var last string
		for {
			rs, err := lock.Health(wctx)
			if err == nil {
				last = "not reported by the primary"
				ok := false
				for _, r := range rs {
					if strings.EqualFold(r.Server, held.replica) {
						ok, last = r.Healthy(), fmt.Sprintf("%s, %s", orUnknown(r.Health), orUnknown(r.Connected))
					}
				}
				if ok {
					e.info(ctx, "the restarted replica is HEALTHY as its primary sees it", map[string]any{"host": t.Host, "instance": t.Instance, "group": g.group})
					break
				}
			} else {
				last = err.Error()
				var moved *contract.NotPrimaryError
				if errors.As(err, &moved) {
					// The group failed over while the replica restarted: the instance the
					// lock is on is no primary, and will never see the replica HEALTHY.
					// Waiting out the deadline would hold the host's restart slot for
					// nothing; the apply goes on at once and says so.
					e.info(ctx, "the availability group failed over during the restart", map[string]any{"host": t.Host, "instance": t.Instance,
						"group": g.group, "old_primary": g.primary, "primary": moved.Primary})
					out.warn(groupMovedWarning(t, g, moved))
					break
				}
			}
			if polls--; polls <= 0 || e.clock().Sleep(wctx, groupHealthPoll) != nil {
				out.warn(ifi.Warning{Code: WarnGroupNotHealthy,
					Summary: "Availability group replica not yet HEALTHY after the restart",
					Detail: fmt.Sprintf("%s restarted, but its primary %s did not see it CONNECTED and HEALTHY in %s before the apply had to go on (last: %s). "+
						"The group's restart lock is released now; another run's restart of a replica of %s refuses until the group is HEALTHY again.",
						t, g.primary, g.group, last, g.group)})
				break
			}
		}
	}
}

// groupMovedWarning says that the replica restarted while its group failed over
// (moved: what the old primary said), so its health was not waited for.
func groupMovedWarning(t Target, g replicaGroup, moved *contract.NotPrimaryError) ifi.Warning {
	now, ask := "it names no primary now (a failover still under way, or the cluster cannot tell)", "the new primary"
	if moved.Primary != "" {
		now, ask = "it names "+moved.Primary+" as the primary now", moved.Primary
	}
	return ifi.Warning{Code: WarnGroupNotHealthy,
		Summary: "Availability group failed over during the restart",
		Detail: fmt.Sprintf("%s restarted, but availability group %s failed over meanwhile: %s, where its restart lock was taken, no longer hosts the primary replica (%s). "+
			"The apply did not wait for the replica to be CONNECTED and HEALTHY: check it on %s (sys.dm_hadr_availability_replica_states) before restarting another replica of %s.",
			t, g.group, g.primary, now, ask, g.group)}
}

// release gives back every lock (closing their sessions).
func (h *heldGroups) release() {
	if h == nil {
		return
	}
	for _, l := range h.locks {
		l.Release()
	}
	h.locks = nil
}
