package host

import (
	"context"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/wsfc"
)

// The cluster operations (internal/contract/cluster.go), answered from the
// cluster model as the scripts read_cluster.ps1, cluster_move.ps1 and
// cluster_restart.ps1 (with cluster_common.ps1) print them.

// clusterNodeNamePattern is cluster_common.ps1's Test-ClusterNodeName.
var clusterNodeNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$`)

// clusterOf is the cluster the host is a node of, nil when none.
func (h *Host) clusterOf() *wsfc.Cluster {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cluster
}

// Cluster is the failover cluster the host is a node of, nil when none.
func (h *Host) Cluster() *wsfc.Cluster { return h.clusterOf() }

// findSQLRole is Find-SqlRole: the role whose SQL Server resource serves the
// instance. When it fails the script error is written and ok is false.
func (h *Host) findSQLRole(instance string, admin bool, stdout io.Writer, entry *AuditEntry) (*wsfc.Cluster, wsfc.ClusterRoleView, int, bool) {
	c := h.clusterOf()
	switch {
	case c == nil:
		return nil, wsfc.ClusterRoleView{}, h.scriptError(stdout, entry, contract.ExitRefused, contract.CodeNotClustered,
			fmt.Sprintf(`root\MSCluster does not answer on %s, so it is not a failover cluster node: Invalid namespace `, h.computer)), false
	case !admin:
		// The cluster's WMI provider admits the cluster's administrators only.
		return nil, wsfc.ClusterRoleView{}, h.scriptError(stdout, entry, contract.ExitRefused, contract.CodeNotClustered,
			fmt.Sprintf(`root\MSCluster does not answer on %s, so it is not a failover cluster node: Access denied `, h.computer)), false
	}
	v, err := c.RoleView(instance)
	if err != nil || !strings.EqualFold(v.Instance, instance) {
		return nil, wsfc.ClusterRoleView{}, h.scriptError(stdout, entry, contract.ExitRefused, contract.CodeNotClustered,
			fmt.Sprintf("No 'SQL Server' cluster resource serves instance %s on %s's cluster: it is not a failover cluster instance.", instance, h.computer)), false
	}
	return c, v, 0, true
}

// scriptInt is cluster_common.ps1's ConvertTo-Int32: a cluster DWORD read as a
// signed number, so 0xFFFFFFFF (FailoverThreshold's default) is -1.
func scriptInt(v int64) int {
	if v > math.MaxInt32 {
		v -= 1 << 32
	}
	return int(v)
}

func contractResources(v wsfc.ClusterRoleView) []contract.ClusterResource {
	out := make([]contract.ClusterResource, 0, len(v.Resources))
	for _, r := range v.Resources {
		out = append(out, contract.ClusterResource{Name: r.Name, Type: r.Type, State: r.State,
			PossibleOwners: slices.Clone(r.PossibleOwners), PendingTimeoutMS: r.PendingTimeoutMS})
	}
	return out
}

func (h *Host) opReadCluster(p *contract.ReadClusterParams, admin bool, stdout io.Writer, entry *AuditEntry) int {
	if code, ok := h.checkInstanceParam(p.Instance, stdout, entry); !ok {
		return code
	}
	c, v, code, ok := h.findSQLRole(p.Instance, admin, stdout, entry)
	if !ok {
		return code
	}
	threshold := scriptInt(v.FailoverThreshold)
	cv := c.View()
	res := contract.ReadClusterResult{
		Cluster: cv.Name, Node: h.computer, Nodes: []contract.ClusterNode{},
		Group: contract.ClusterGroup{
			Name: v.Name, OwnerNode: v.OwnerNode, State: v.State, PreferredOwners: slices.Clone(v.PreferredOwners),
			AutoFailbackType: v.AutoFailbackType, FailbackWindowStart: v.FailbackWindowStart, FailbackWindowEnd: v.FailbackWindowEnd,
			FailoverThreshold: threshold, FailoverPeriodHours: v.FailoverPeriodHours,
		},
		Resources:      contractResources(v),
		PossibleOwners: slices.Clone(v.PossibleOwners),
		VirtualName:    v.VirtualName,
	}
	for _, n := range cv.Nodes {
		res.Nodes = append(res.Nodes, contract.ClusterNode{Name: n.Name, State: n.State})
	}
	// The last cluster guard's record on this node, when it is of this role.
	if g, ok := h.ClusterGuard(p.Instance); ok && g.Role == v.Name {
		res.Guard = &contract.ClusterGuardRecord{Finished: g.Finished, Group: g.Role, BroughtOnline: g.BroughtOnline, State: g.State, Error: g.Error}
	}
	writeJSON(stdout, res)
	return contract.ExitOK
}

// assertClusterRequest is Assert-ClusterRequest (cluster_common.ps1), the common
// start of cluster_move and cluster_restart: the instance's name, then timeout_s.
// The deadline runs from here, as the scripts' $until does.
func (h *Host) assertClusterRequest(instance string, timeoutS int, stdout io.Writer, entry *AuditEntry) (time.Duration, time.Time, int, bool) {
	if code, ok := h.checkInstanceParam(instance, stdout, entry); !ok {
		return 0, time.Time{}, code, false
	}
	if timeoutS < 1 || timeoutS > contract.MaxClusterSeconds {
		return 0, time.Time{}, h.scriptError(stdout, entry, contract.ExitInvalidParams, "invalid_parameters",
			"timeout_s must be a whole number of seconds between 1 and 3600."), false
	}
	timeout := time.Duration(timeoutS) * time.Second
	return timeout, time.Now().Add(timeout), 0, true
}

// errCallPending is the error a cluster method's call answers when its TimeOut
// passes before the cluster finished (ERROR_IO_PENDING; the action goes on).
const errCallPending = "Overlapped I/O operation is in progress. (error 997)"

// waitRoleSettled is Wait-RoleSettled: re-read the role until its group is Online
// with every resource of a type in want Online, or Failed, or until passes.
func (h *Host) waitRoleSettled(ctx context.Context, c *wsfc.Cluster, group, before, callError string, until time.Time, want ...string) (*contract.ClusterActionResult, error) {
	wctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	v, err := c.WaitRole(wctx, group, func(v wsfc.ClusterRoleView) bool {
		if v.State == wsfc.GroupFailed {
			return true
		}
		if v.State != wsfc.GroupOnline || v.Action != "" {
			return false
		}
		for _, r := range v.Resources {
			if slices.Contains(want, r.Type) && r.State != wsfc.ResourceOnline {
				return false
			}
		}
		return true
	})
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		// The deadline passed: the script reports the role as it is.
		if v, err = c.RoleView(group); err != nil {
			return nil, err
		}
	}
	return &contract.ClusterActionResult{Group: group, OwnerBefore: before, OwnerAfter: v.OwnerNode, State: v.State,
		Resources: contractResources(v), Error: callError}, nil
}

func (h *Host) opClusterMove(ctx context.Context, p *contract.ClusterMoveParams, admin bool, stdout io.Writer, entry *AuditEntry) int {
	timeout, until, code, ok := h.assertClusterRequest(p.Instance, p.TimeoutS, stdout, entry)
	if !ok {
		return code
	}
	if !clusterNodeNamePattern.MatchString(p.TargetNode) {
		return h.scriptError(stdout, entry, contract.ExitInvalidParams, "invalid_parameters", fmt.Sprintf("'%s' is not a cluster node name.", p.TargetNode))
	}
	c, v, code, ok := h.findSQLRole(p.Instance, admin, stdout, entry)
	if !ok {
		return code
	}
	before := v.OwnerNode
	refusal := ""
	switch {
	case v.Name != p.Group:
		refusal = fmt.Sprintf("instance %s's role is '%s', not '%s'", p.Instance, v.Name, p.Group)
	case strings.EqualFold(p.TargetNode, before):
		refusal = fmt.Sprintf("the role '%s' is already on %s", p.Group, p.TargetNode)
	case v.State != wsfc.GroupOnline:
		refusal = fmt.Sprintf("the role '%s' is %s, not Online", p.Group, v.State)
	default:
		for _, r := range v.Resources {
			if !slices.ContainsFunc(r.PossibleOwners, func(o string) bool { return strings.EqualFold(o, p.TargetNode) }) {
				refusal = fmt.Sprintf("%s is not a possible owner of every resource of '%s'", p.TargetNode, p.Group)
			}
		}
	}
	if refusal != "" {
		return h.scriptError(stdout, entry, contract.ExitRefused, contract.CodeClusterError,
			fmt.Sprintf("The cluster move was refused on %s: %s. Nothing was moved.", h.computer, refusal))
	}
	// The cluster guard, confirmed before the move (startClusterGuard).
	runnerDone, code, ok := h.startClusterGuard(ctx, c, p.Instance, v.Name, stdout, entry)
	if !ok {
		return code
	}
	defer close(runnerDone)
	// MoveToNewNode: the cluster service runs the move; this call waits at most
	// timeout_s for it, and losing it stops only the wait.
	out, err := c.Move(ctx, v.Name, p.TargetNode, "move", timeout)
	if err != nil {
		return h.scriptError(stdout, entry, contract.ExitFailure, contract.CodeMoveFailed,
			fmt.Sprintf("The move of '%s' to %s could not be followed on %s: %v", p.Group, p.TargetNode, h.computer, err))
	}
	if ctx.Err() != nil {
		return psFailure(io.Discard, entry, "The pipeline has been stopped.", "", "")
	}
	callError := ""
	switch {
	case out.Err != nil:
		callError = out.Err.Error()
	case !out.Finished:
		callError = errCallPending
	}
	res, err := h.waitRoleSettled(ctx, c, v.Name, before, callError, until)
	if err != nil {
		if ctx.Err() != nil {
			return psFailure(io.Discard, entry, "The pipeline has been stopped.", "", "")
		}
		return h.scriptError(stdout, entry, contract.ExitFailure, contract.CodeMoveFailed,
			fmt.Sprintf("The move of '%s' to %s (%s) could not be followed on %s: %v", p.Group, p.TargetNode, callError, h.computer, err))
	}
	if res.Error == "" && !strings.EqualFold(res.OwnerAfter, p.TargetNode) {
		res.Error = fmt.Sprintf("the cluster left the role on %s, not on %s", res.OwnerAfter, p.TargetNode)
	}
	if res.Error == "" && res.State != wsfc.GroupOnline {
		res.Error = fmt.Sprintf("the role is %s on %s after %d s", res.State, res.OwnerAfter, p.TimeoutS)
	}
	if res.Error != "" {
		entry.Error = "cluster_move: " + res.Error
	}
	writeJSON(stdout, res)
	return contract.ExitOK
}

func (h *Host) opClusterRestart(ctx context.Context, p *contract.ClusterRestartParams, admin bool, stdout io.Writer, entry *AuditEntry) int {
	_, until, code, ok := h.assertClusterRequest(p.Instance, p.TimeoutS, stdout, entry)
	if !ok {
		return code
	}
	c, v, code, ok := h.findSQLRole(p.Instance, admin, stdout, entry)
	if !ok {
		return code
	}
	owner := v.OwnerNode
	if v.State != wsfc.GroupOnline {
		return h.scriptError(stdout, entry, contract.ExitRefused, contract.CodeClusterError,
			fmt.Sprintf("The role '%s' is %s on %s, not Online; nothing was taken offline.", v.Name, v.State, owner))
	}
	// The cluster guard, started and confirmed before anything is taken offline: it
	// outlives this process and brings the role online should it be left otherwise.
	runnerDone, code, ok := h.startClusterGuard(ctx, c, p.Instance, v.Name, stdout, entry)
	if !ok {
		return code
	}
	defer close(runnerDone) // this process ends: the guard looks at the role
	var errs []string
	// TakeOffline on the SQL Server resource, waiting at most half the time left:
	// the other half is BringOnline's (cluster_restart.ps1).
	half := time.Duration(int(time.Until(until)/time.Second)/2) * time.Second
	if half < time.Second {
		half = time.Second
	}
	offlineUntil := time.Now().Add(half)
	off, err := c.TakeResourceOffline(ctx, v.Name, wsfc.ResourceTypeSQLServer, half)
	if err == nil && ctx.Err() == nil {
		switch {
		case off.Err != nil:
			errs = append(errs, "TakeOffline: "+off.Err.Error())
		case !off.Finished:
			errs = append(errs, "TakeOffline: "+errCallPending)
		}
		// The offline's end, awaited at most until half time: SQL Server's resource
		// Offline or Failed with no resource pending (a call that failed with SQL
		// Server Online took nothing offline).
		var pending []string
		var now wsfc.ClusterRoleView
		wctx, cancel := context.WithDeadline(ctx, offlineUntil)
		now, err = c.WaitRole(wctx, v.Name, func(rv wsfc.ClusterRoleView) bool {
			pending = pendingResources(rv)
			return len(pending) == 0 && rv.Action == "" && (len(errs) > 0 || sqlResourceState(rv) != wsfc.ResourceOnline)
		})
		cancel()
		if err != nil && ctx.Err() == nil {
			now, err = c.RoleView(v.Name) // half time: the role as it is
			pending = pendingResources(now)
		}
		if err == nil && ctx.Err() == nil {
			if len(pending) > 0 {
				// The cluster runs the offline to its end; BringOnline is not called on
				// it. The guard, once this process ends, waits for the offline's end and
				// brings the role online.
				res := &contract.ClusterActionResult{Group: v.Name, OwnerBefore: owner, OwnerAfter: now.OwnerNode, State: now.State,
					Resources: contractResources(now),
					Error: fmt.Sprintf("the offline of SQL Server did not finish in %d s (%s): BringOnline was not called; the cluster guard brings the role online once the offline ends",
						int(half/time.Second), strings.Join(pending, ", "))}
				if len(errs) > 0 {
					res.Error += ". " + strings.Join(errs, "; ")
				}
				entry.Error = "cluster_restart: " + res.Error
				writeJSON(stdout, res)
				return contract.ExitOK
			}
			if len(errs) > 0 && sqlResourceState(now) == wsfc.ResourceOffline {
				errs = nil // the call's wait ended first (ERROR_IO_PENDING); the offline has ended since
			}
			// Online again whatever the offline did.
			left := time.Until(until)
			if left < time.Second {
				left = time.Second
			}
			var on wsfc.ActionOutcome
			on, err = c.BringGroupOnline(ctx, v.Name, left)
			if err == nil {
				switch {
				case on.Err != nil:
					errs = append(errs, "BringOnline: "+on.Err.Error())
				case !on.Finished:
					errs = append(errs, "BringOnline: "+errCallPending)
				}
			}
		}
	}
	if ctx.Err() != nil {
		return psFailure(io.Discard, entry, "The pipeline has been stopped.", "", "")
	}
	callError := strings.Join(errs, "; ")
	if err != nil {
		return h.scriptError(stdout, entry, contract.ExitFailure, contract.CodeMoveFailed,
			fmt.Sprintf("The restart of '%s' (%s) could not be followed on %s: %v", v.Name, callError, h.computer, err))
	}
	res, err := h.waitRoleSettled(ctx, c, v.Name, owner, callError, until, wsfc.ResourceTypeSQLServer, wsfc.ResourceTypeAgent)
	if err != nil {
		if ctx.Err() != nil {
			return psFailure(io.Discard, entry, "The pipeline has been stopped.", "", "")
		}
		return h.scriptError(stdout, entry, contract.ExitFailure, contract.CodeMoveFailed,
			fmt.Sprintf("The restart of '%s' (%s) could not be followed on %s: %v", v.Name, callError, h.computer, err))
	}
	var down []string
	for _, r := range res.Resources {
		if (r.Type == wsfc.ResourceTypeSQLServer || r.Type == wsfc.ResourceTypeAgent) && r.State != wsfc.ResourceOnline {
			down = append(down, r.Name+" is "+r.State)
		}
	}
	if res.Error == "" && (res.State != wsfc.GroupOnline || len(down) > 0) {
		res.Error = fmt.Sprintf("after %d s the role is %s on %s", p.TimeoutS, res.State, res.OwnerAfter)
		if len(down) > 0 {
			res.Error += ": " + strings.Join(down, ", ")
		}
	}
	if res.Error != "" {
		entry.Error = "cluster_restart: " + res.Error
	}
	writeJSON(stdout, res)
	return contract.ExitOK
}

// startClusterGuard is cluster_restart's and cluster_move's guard (restart_guard.ps1
// in its cluster mode): started by the same launchers, with the same loader, and
// confirmed by its start record before anything is taken offline; a guard that does
// not start refuses the request with nothing taken offline. The guard runs under
// the host's lifetime, not the shell's: once the script's process has ended (it
// finished, or its shell ended: a Ctrl-C, a lost client) it waits until the cluster
// runs no action on the role and, unless the role and its SQL Server and Agent
// resources are Online, brings the group online, again after a pause that doubles,
// at most contract.ClusterGuardAttempts times and for at most the late limit (2 h);
// a role taken offline after the guard saw its SQL Server resource Online is left
// Offline (someone else's action). It records its progress at each turn and its outcome
// (ClusterGuardOutcome).
// The returned channel is closed when the script's process ends.
func (h *Host) startClusterGuard(ctx context.Context, c *wsfc.Cluster, instance, role string, stdout io.Writer, entry *AuditEntry) (chan struct{}, int, bool) {
	guardFile, hash, err := h.prepareGuardFile()
	if err != nil {
		return nil, h.scriptError(stdout, entry, contract.ExitRefused, contract.CodeClusterError,
			fmt.Sprintf("The cluster action's guard cannot be prepared on %s: %v. Nothing was taken offline.", h.computer, err)), false
	}
	launch := h.launchGuard(ctx, "cluster_"+instance, newToken(), guardFile, hash)
	if launch.raw {
		return nil, h.scriptError(stdout, entry, contract.ExitFailure, contract.RestartFailed, launch.why), false
	}
	if !launch.guarded {
		why := launch.why
		if launch.launcher != "" {
			why = "the guard did not start"
		}
		return nil, h.scriptError(stdout, entry, contract.ExitRefused, contract.CodeClusterError,
			fmt.Sprintf("The cluster action's guard process could not be started on %s: %s. Nothing was taken offline.", h.computer, why)), false
	}
	done := make(chan struct{})
	key := strings.ToUpper(instance)
	h.mu.Lock()
	h.clusterGuards[key] = &ClusterGuardOutcome{Role: role}
	h.mu.Unlock()
	go func() {
		select {
		case <-done:
		case <-h.life.Done():
			return
		}
		late, cancel := context.WithTimeout(h.life, restartLateLimit)
		defer cancel()
		out := ClusterGuardOutcome{Role: role}
		record := func() { // the marker's State, written at each turn
			h.mu.Lock()
			o := out
			h.clusterGuards[key] = &o
			h.notifyLocked()
			h.mu.Unlock()
		}
		pause := contract.ClusterGuardFirstPauseSeconds * time.Second
		wasOnline := false
		for late.Err() == nil {
			v, err := c.WaitRole(late, role, func(v wsfc.ClusterRoleView) bool { return v.Action == "" })
			if err != nil {
				out.Error = err.Error()
				break
			}
			out.State = v.State
			if roleUp(v) {
				out.Error = ""
				break
			}
			if v.State == wsfc.GroupOnline {
				out.State = wsfc.GroupPartialOnline // the group, without its SQL Server or Agent
			}
			sql := sqlState(v)
			if sql == wsfc.ResourceOnline {
				wasOnline = true // SQL Server came Online (its Agent, say, did not)
			}
			if wasOnline && sql == wsfc.ResourceOffline {
				// The cluster puts a resource that fails into Failed, never Offline:
				// someone took it offline (a DBA repairing it).
				out.Error = fmt.Sprintf("the role '%s' was taken offline after it had come Online: someone else's action, left Offline", role)
				break
			}
			if out.BroughtOnline >= contract.ClusterGuardAttempts {
				out.Error = fmt.Sprintf("BringOnline did not bring the role '%s' online in %d attempts (it is %s): left as it is. %s",
					role, contract.ClusterGuardAttempts, out.State, out.Error)
				break
			}
			out.BroughtOnline++
			record()
			on, err := c.BringGroupOnline(late, role, time.Minute)
			switch {
			case err != nil:
				out.Error = err.Error()
			case on.Err != nil:
				out.Error = on.Err.Error()
			default:
				out.Error = ""
			}
			if after, err := c.RoleView(role); err == nil && sqlState(after) == wsfc.ResourceOnline {
				wasOnline = true
			}
			record()
			select {
			case <-time.After(pause):
			case <-late.Done():
			}
			pause = min(2*pause, contract.ClusterGuardMaxPauseSeconds*time.Second)
		}
		h.mu.Lock()
		h.removeTaskLocked(launch.task)
		out.Finished = true
		h.clusterGuards[key] = &out
		h.notifyLocked()
		h.mu.Unlock()
	}()
	return done, 0, true
}

// sqlState is the state of the role's SQL Server resource.
func sqlState(v wsfc.ClusterRoleView) string {
	for _, r := range v.Resources {
		if r.Type == wsfc.ResourceTypeSQLServer {
			return r.State
		}
	}
	return ""
}

// roleUp reports whether the role and its SQL Server and Agent resources are Online.
func roleUp(v wsfc.ClusterRoleView) bool {
	if v.State != wsfc.GroupOnline {
		return false
	}
	for _, r := range v.Resources {
		if (r.Type == wsfc.ResourceTypeSQLServer || r.Type == wsfc.ResourceTypeAgent) && r.State != wsfc.ResourceOnline {
			return false
		}
	}
	return true
}

// ClusterGuardOutcome is what a cluster guard recorded: whether it finished, how
// often it brought the group online, the role's state it saw last, an error.
type ClusterGuardOutcome struct {
	Role          string
	Finished      bool
	BroughtOnline int
	State         string
	Error         string
}

// WaitClusterGuard waits until the last cluster guard for instance has finished and
// returns its outcome, or ctx's error.
func (h *Host) WaitClusterGuard(ctx context.Context, instance string) (ClusterGuardOutcome, error) {
	var out ClusterGuardOutcome
	err := h.waitFor(ctx, func() (bool, error) {
		g := h.clusterGuards[strings.ToUpper(instance)]
		if g != nil && g.Finished {
			out = *g
			return true, nil
		}
		return false, nil
	})
	return out, err
}

// ClusterGuard returns the outcome the last cluster guard for instance recorded.
func (h *Host) ClusterGuard(instance string) (ClusterGuardOutcome, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := h.clusterGuards[strings.ToUpper(instance)]
	if g == nil {
		return ClusterGuardOutcome{}, false
	}
	return *g, true
}

// pendingResources names the role's resources in a pending state ("name is state").
func pendingResources(v wsfc.ClusterRoleView) []string {
	var out []string
	for _, r := range v.Resources {
		if r.State == wsfc.ResourceOfflinePending || r.State == wsfc.ResourceOnlinePending {
			out = append(out, r.Name+" is "+r.State)
		}
	}
	return out
}

// sqlResourceState is the state of the role's SQL Server resource.
func sqlResourceState(v wsfc.ClusterRoleView) string {
	for _, r := range v.Resources {
		if r.Type == wsfc.ResourceTypeSQLServer {
			return r.State
		}
	}
	return ""
}
