package converge

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
)

// Session is the engine of one run (a terraform plan, an apply): Terraform
// configures the provider anew for each, and the session keeps what the run's
// operations must know of each other: the instances and cluster roles the run's
// resources claim, what a destroy found before a replace's create, the last read
// of each failover cluster instance, and the advice already given. It offers one
// Plan, Apply, Read and Destroy for every topology: each takes a Request (the
// target, the desired state and the memo) and returns one Result, with a cluster
// part on a failover cluster instance, and the memo to keep. Whether an instance
// takes the cluster path is decided here, not by the caller.
type Session struct {
	Engine *Engine
	// HoldRestarts: this run restarts nothing (outside a maintenance window): every
	// instance is planned and applied as with restart = "never", and the plan says
	// which restart waits (holdRestart).
	HoldRestarts bool

	mu sync.Mutex
	// claims: the instances (and cluster roles) this run's resources manage, each
	// with how its resource spells it.
	claims map[InstanceKey]string
	// destroyed: what the host had before this run destroyed the resource of an
	// instance (the create of a replace predicts from it).
	destroyed map[InstanceKey]*Outcome
	// clusterSeen: the last read of each failover cluster instance in this run (a
	// plan's refresh, which its prediction reuses).
	clusterSeen map[InstanceKey]*ClusterOutcome
	// said: advice given once per run, by key (Once).
	said map[string]string
}

// NewSession is a run's session over e.
func NewSession(e *Engine) *Session { return &Session{Engine: e} }

// InstanceKey names one SQL Server instance whatever its spelling: the normalised
// host address and the upper-cased instance name.
type InstanceKey struct {
	Host     string
	Instance string
}

// NewInstanceKey normalises a host and an instance name: an IPv4-mapped IPv6
// address is its IPv4 address, an IPv6 address its canonical form, a DNS name is
// lower-cased without its trailing dot; instance names compare without case.
func NewInstanceKey(host, instance string) InstanceKey {
	h := strings.TrimSpace(host)
	if ip := net.ParseIP(strings.Trim(h, "[]")); ip != nil {
		if v4 := ip.To4(); v4 != nil {
			h = v4.String()
		} else {
			h = ip.String()
		}
	} else {
		h = strings.TrimSuffix(strings.ToLower(h), ".")
	}
	return InstanceKey{Host: h, Instance: strings.ToUpper(strings.TrimSpace(instance))}
}

// Once reports whether key is new to this run, and records who said it; when it
// is not new, it returns who said it first. Advice given once per run (a failed
// logon's per host, say) is keyed by the caller.
func (s *Session) Once(key, who string) (first string, isNew bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.said[key]; ok {
		return w, false
	}
	if s.said == nil {
		s.said = map[string]string{}
	}
	s.said[key] = who
	return "", true
}

// Request is what one operation on one instance starts from.
type Request struct {
	Target  Target
	Desired ifi.Desired
	// Memo is what the engine kept of the instance (the private state); nil: none.
	Memo *Memo
	// Nodes maps node names to their WinRM addresses (the nodes argument); SQLHost
	// is where a failover cluster instance's SQL Server answers ("": the virtual
	// name the cluster reports).
	Nodes   map[string]string
	SQLHost string
	// Clustered is what the state (or a create's plan) says of the instance; nil:
	// not known, the engine reads the host to know.
	Clustered *bool
}

func (r Request) memo() *Memo {
	if r.Memo == nil {
		return NewMemo(r.Target)
	}
	return r.Memo
}

// clusterTarget is the ClusterTarget of t with the request's nodes and SQL host.
func (r Request) clusterTarget(t Target) ClusterTarget {
	ct := ClusterTarget{Target: t, SQLHost: r.SQLHost}
	ct.Target.Read = nil // the cluster path reads every node itself
	for name := range r.Nodes {
		ct.Named = append(ct.Named, name)
	}
	slices.Sort(ct.Named)
	if len(r.Nodes) > 0 {
		nodes := r.Nodes
		ct.Resolve = func(node string) string {
			for name, a := range nodes {
				if strings.EqualFold(name, node) {
					return a
				}
			}
			return ""
		}
	}
	return ct
}

// Result is what one operation leaves behind, on either path.
type Result struct {
	// Outcome is a standalone instance's; nil on a failover cluster instance.
	Outcome *Outcome
	// Cluster is a failover cluster instance's; nil otherwise.
	Cluster *ClusterOutcome
	// Memo is what to keep for the next operation.
	Memo *Memo
	// Warnings for the user, in order.
	Warnings []ifi.Warning
	// Action is the planned_action value the state holds: after an apply, the
	// plan's, else (the plan could not tell) what the apply did; after a read, the
	// last apply's, which a refresh keeps (none after an import).
	Action ifi.Action
	// Enabled: after a read, the `enabled` value the state holds (what was asked,
	// or for an import what the host has).
	Enabled bool
	// LockPages: the lock_pages_in_memory value the state holds: what was asked
	// (as Enabled, imports aside, which leave it unset). nil: not managed.
	LockPages *bool
	// Desired is what the operation assessed against (an import's defaults).
	Desired ifi.Desired
	// Assessment is the running Engine's (the owner's on a failover cluster
	// instance); after a read, never nil.
	Assessment *ifi.Assessment
	// NTLMFallback is why auth "negotiate" reached the host with NTLM, when that is
	// to be said now (news.go); "" otherwise.
	NTLMFallback string
}

// Clustered reports whether the operation took the cluster path.
func (r *Result) Clustered() bool { return r != nil && r.Cluster != nil }

// clustered says whether t's instance is a failover cluster instance: what the
// last read said (t.Read, from the memo), else what the state says, else a read of
// the host now (riding through a refused connection, as every read of an apply),
// which then primes t.
func (s *Session) clustered(ctx context.Context, t *Target, known *bool, d ifi.Desired) (bool, error) {
	switch {
	case t.Read != nil:
		return t.Read.Clustered, nil
	case known != nil:
		return *known, nil
	}
	out, err := s.Engine.ReadRiding(ctx, *t, d)
	if err != nil {
		return false, err
	}
	t.Read, t.ReadAt, t.SQLPortHint = out.Read, out.ReadAt, out.SQLPort
	return out.Read != nil && out.Read.Clustered, nil
}

// ApplyRequest is an apply's Request.
type ApplyRequest struct {
	Request
	// Create: the resource is created (its memo is new); false: an update.
	Create bool
	// Planned is the plan's planned_action; nil: the plan could not tell.
	Planned *ifi.Action
}

// Apply converges the instance to what is asked, on its path, doing what the plan
// said or nothing (a create of a replace was planned before this run's destroy, so
// it is held to what the host has now). The result is never nil.
func (s *Session) Apply(ctx context.Context, r ApplyRequest) (*Result, error) {
	t, d, m := r.Target, s.held(r.Desired), r.memo()
	if r.Planned != nil && (!r.Create || s.destroyedBefore(t) == nil) {
		d.Planned = *r.Planned
	}
	m.Prime(&t, &d)
	res := &Result{Memo: m, Desired: d}
	clustered, err := s.clustered(ctx, &t, r.Clustered, d)
	if err != nil {
		return res, err // nothing was changed
	}
	var act ifi.Action
	if clustered {
		out, cerr := s.Engine.ApplyCluster(ctx, r.clusterTarget(t), d)
		res.Cluster, act, res.Warnings, err = out, out.Action, out.Warnings, cerr
	} else {
		var planned map[ifi.Field]any
		if !r.Create {
			planned = m.plannedAfter(t, d)
		}
		out, aerr := s.Engine.Apply(ctx, t, d)
		if aerr == nil && out.Assessment != nil {
			// An update's plan showed these known (Session.Plan): an apply that reads
			// back otherwise fails here, naming what, rather than as Terraform's
			// inconsistent result.
			if cerr := ifi.ExpectedAfter(planned, out.Assessment); cerr != nil {
				aerr = &Error{Kind: KindAfterDiffers, Target: t, Err: cerr, Changed: out.Changed, Restarted: out.Restarted}
			}
		}
		res.Outcome, act, res.Warnings, err = out, out.Action, out.Warnings, aerr
		m.Remember(out)
	}
	res.Warnings = m.told(res.Warnings, r.Create)
	if r.Create && res.Outcome != nil && !res.Outcome.Changed && !res.Outcome.Restarted {
		// A create that changed nothing brought no restart about: the pending restart
		// stood when its plan read the host, and that plan said it (broughtAbout).
		res.Warnings = slices.DeleteFunc(res.Warnings, func(w ifi.Warning) bool { return w.Code == ifi.WarnRestartPending })
	}
	m.NTLMFallback = s.ntlmFallback(t) // said by the plan this apply carries out
	res.Action = cmp.Or(act, ifi.ActionNone)
	if r.Planned != nil {
		res.Action = *r.Planned
	}
	enabled := r.Desired.Enabled
	m.Enabled = &enabled
	res.LockPages = clonePtr(r.Desired.LockPages)
	return res, err
}

// held is d as this run may apply it: with restarts held, restart = "never".
func (s *Session) held(d ifi.Desired) ifi.Desired {
	if s != nil && s.HoldRestarts {
		d.Restart = ifi.RestartNever
	}
	return d
}

// ImportDefaults is what an imported resource is assessed against until its
// configuration says otherwise: the arguments' defaults.
var ImportDefaults = ifi.Desired{Enabled: true, Grantee: ifi.GranteeServiceSID, Restart: ifi.RestartIfNeeded}

// Unverified marks an instance whose last create or update failed once its change
// was sent (the caller keeps the mark).
type Unverified struct {
	Op    string // "create" or "update"
	At    string // when, RFC 3339
	Error string
}

// ReadRequest is a refresh's Request.
type ReadRequest struct {
	Request
	// Imported: the resource was just imported (no configuration in the state yet).
	Imported bool
	// Unverified is the mark of a failed operation; nil: none.
	Unverified *Unverified
	// Planned is the state's planned_action ("": none stored).
	Planned ifi.Action
}

// Read refreshes the instance on its path: a standalone instance (so in the state,
// and found so) with Engine.Read, a failover cluster instance with ReadCluster,
// which this run's plan then predicts from. A refresh reads the host; the memo
// keeps what the apply asked (the state's `enabled` may say otherwise).
func (s *Session) Read(ctx context.Context, r ReadRequest) (*Result, error) {
	ctx = runWide(ctx) // a refresh shows the host as the run found it (hostReads)
	t, d, m := r.Target, s.held(r.Desired), r.memo()
	// A refresh is the host's last use in its provider process: the plan after it
	// decides from this read (the memo), and an apply is a process of its own.
	defer s.Engine.releaseIdle(t)
	if r.Imported {
		d = ImportDefaults
	} else if m.Enabled != nil {
		d.Enabled = *m.Enabled
	}
	m.Prime(&t, &d)
	t.Read = nil
	// A refresh keeps the last apply's planned_action: Terraform stores the planned
	// value after an apply, and a refresh that reset it would change whatever
	// references it (an output), making the plan after every apply non-empty.
	res := &Result{Memo: m, Desired: d, Enabled: d.Enabled, Action: cmp.Or(r.Planned, ifi.ActionNone)}
	if r.Imported {
		res.Action = ifi.ActionNone
	}
	if r.Clustered == nil || !*r.Clustered {
		out, err := s.Engine.Read(ctx, t, d)
		if err != nil {
			return res, err
		}
		if out.Read == nil || !out.Read.Clustered {
			res.Outcome, res.Assessment, res.Warnings = out, out.Assessment, out.Warnings
			res.LockPages = clonePtr(d.LockPages)
			m.Remember(out)
			s.adopt(r, res)
			res.Warnings, res.NTLMFallback = m.news(res.Warnings), s.refreshFallback(t, m)
			return res, nil
		}
	}
	out, err := s.Engine.ReadCluster(ctx, r.clusterTarget(t), d)
	if err != nil {
		return res, err
	}
	s.rememberCluster(t, out)
	m.Remember(&Outcome{}) // a cluster's reads are not reused by the next operation
	res.Cluster, res.Warnings, res.Assessment = out, out.Warnings, out.Cluster.OwnerAssessment
	res.LockPages = clonePtr(d.LockPages) // not managed on a cluster: the apply refuses it, the refresh keeps what was asked
	if res.Assessment == nil {
		res.Assessment = &ifi.Assessment{Instance: t.Instance}
	}
	s.adopt(r, res)
	res.Warnings, res.NTLMFallback = m.news(res.Warnings), s.refreshFallback(t, m)
	return res, nil
}

// adopt finishes a read: an import adopts what the host has (enabled is whether
// the right is granted), and a failed create's refresh says what its replace does.
func (s *Session) adopt(r ReadRequest, res *Result) {
	a := res.Assessment
	if r.Imported {
		res.Enabled = a.PrivilegeGranted
		granted := a.PrivilegeGranted
		res.Memo.Enabled = &granted
	}
	if u := r.Unverified; u != nil && u.Op == "create" {
		res.Warnings = append(res.Warnings, ifi.FailedCreateReplace(r.Target.Host, r.Target.Instance, u.At, u.Error, a.RunningIFI, string(a.VerifiedBy), res.Desired.Enabled))
	}
}

// Destroy revokes what the resource granted, on its path (every possible owner of
// a failover cluster instance), and keeps what the host had before for the create
// of a replace in this run.
func (s *Session) Destroy(ctx context.Context, r Request) (*Result, error) {
	t := r.Target
	res := &Result{Memo: r.memo(), Desired: r.Desired}
	if m := res.Memo; m.Read != nil {
		t.Read, t.ReadAt = m.Read, m.ReadAt // the refresh's read, while fresh (Engine.Destroy)
	}
	var err error
	if r.Clustered != nil && *r.Clustered {
		var out *ClusterOutcome
		out, err = s.Engine.DestroyCluster(ctx, r.clusterTarget(t), r.Desired)
		res.Cluster, res.Warnings = out, out.Warnings
	} else {
		var out *Outcome
		out, err = s.Engine.Destroy(ctx, t, r.Desired)
		s.rememberDestroyed(t, out)
		if out != nil {
			res.Outcome, res.Warnings = out, out.Warnings
		}
	}
	res.Warnings = res.Memo.news(res.Warnings) // what the refresh said is not said again
	if err == nil {
		res.NTLMFallback = s.sayFallback(t) // a destroy changes the host
	}
	return res, err
}

// Describe reads the instance for the data source, changing nothing, on its path:
// assessed against SetupReference with grantee.
func (s *Session) Describe(ctx context.Context, r Request, grantee ifi.Grantee) (*Result, error) {
	ctx = runWide(ctx) // as a refresh does (hostReads)
	t := r.Target
	res := &Result{}
	out, err := s.Engine.Describe(ctx, t, grantee)
	if err != nil {
		return res, err
	}
	res.Outcome, res.Assessment, res.Warnings = out, out.Assessment, out.Warnings
	res.NTLMFallback = s.sayFallback(t)
	if out.Read == nil || !out.Read.Clustered {
		return res, nil
	}
	ref := SetupReference
	if grantee != "" {
		ref.Grantee = grantee
	}
	cout, err := s.Engine.ReadCluster(ctx, r.clusterTarget(t), ref)
	if err != nil {
		return res, err
	}
	res.Outcome, res.Cluster, res.Warnings = nil, cout, cout.Warnings
	return res, nil
}

// HostInstance is one instance of a host as DescribeHost found it.
type HostInstance struct {
	Instance string
	Result   *Result
}

// DescribeHost describes every SQL Server instance installed on r.Target's host
// (its Instance is not used), in the registry's order, each as Engine.Describe
// describes one on this host: the discovery of a host's instances. All of them come
// from the run's one read of the host (one powershell.exe); each instance's SQL
// check is its own. A failover cluster instance is described as this node has it
// (its other nodes are not read: the instance's own data source, with its nodes,
// reads them). The first instance that cannot be described ends it with that
// instance's error. It says no NTLM fallback: a list read on every plan has no
// memory of having said it (the resources of the host say it when it is news, and
// whatever changes the host says it).
func (s *Session) DescribeHost(ctx context.Context, r Request, grantee ifi.Grantee) (string, []HostInstance, error) {
	ctx = runWide(ctx) // as a refresh does (hostReads)
	computer, names, err := s.Engine.Instances(ctx, r.Target)
	if err != nil {
		return "", nil, err
	}
	out := make([]HostInstance, 0, len(names))
	for _, name := range names {
		t := r.Target
		t.Instance, t.SQLPort = name, 0
		o, err := s.Engine.Describe(ctx, t, grantee)
		if err != nil {
			return computer, out, err
		}
		out = append(out, HostInstance{Instance: name, Result: &Result{Outcome: o, Assessment: o.Assessment, Warnings: o.Warnings}})
	}
	return computer, out, nil
}

func (s *Session) rememberDestroyed(t Target, out *Outcome) {
	if out == nil || out.Read == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	keep(&s.destroyed, t, out)
}

// destroyedBefore is what the host had before this run destroyed the resource of
// t's instance; nil when it did not.
func (s *Session) destroyedBefore(t Target) *Outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.destroyed[NewInstanceKey(t.Host, t.Instance)]
}

func (s *Session) rememberCluster(t Target, out *ClusterOutcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keep(&s.clusterSeen, t, out)
}

func (s *Session) seenCluster(t Target) *ClusterOutcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clusterSeen[NewInstanceKey(t.Host, t.Instance)]
}

// keep records v for t's instance in the run-wide registry m (made on first use);
// the caller holds s.mu.
func keep[V any](m *map[InstanceKey]V, t Target, v V) {
	if *m == nil {
		*m = map[InstanceKey]V{}
	}
	(*m)[NewInstanceKey(t.Host, t.Instance)] = v
}

// claim records that a resource spelled by manages k in this run; when another
// resource claimed it first, it returns that one's spelling and false.
func (s *Session) claim(k InstanceKey, by string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if other, taken := s.claims[k]; taken {
		return other, false
	}
	if s.claims == nil {
		s.claims = map[InstanceKey]string{}
	}
	s.claims[k] = by
	return "", true
}

// spelling is how a resource names its instance in the claims' refusals.
func spelling(host, instance string, enabled *bool) string {
	by := fmt.Sprintf("host = %q, instance = %q", safetext.Escape(host), safetext.Escape(instance))
	if enabled != nil {
		by += fmt.Sprintf(", enabled = %t", *enabled)
	}
	return by
}

// Claim records that a resource of this run manages host/instance (enabled: its
// argument, nil when not known yet). A second resource for one instance is refused
// (KindRefused, Error.Argument "instance"): the two would undo each other's changes
// (one grants, one revokes, and SQL Server restarts on every apply) or restart it
// twice at once. Hosts and instance names compare normalised (NewInstanceKey).
func (s *Session) Claim(host, instance string, enabled *bool) error {
	k := NewInstanceKey(host, instance)
	by := spelling(host, instance, enabled)
	if other, ok := s.claim(k, by); !ok {
		return &Error{Kind: KindRefused, Target: Target{Host: host, Instance: instance}, Argument: "instance",
			Refusal: ifi.TwoResources(by, other, ifi.ManagedInstance(k.Host, k.Instance))}
	}
	return nil
}

// claimRole refuses a second resource for one cluster role in this run (one on
// each node of a failover cluster instance, say), as Claim does for one instance.
func (s *Session) claimRole(t Target, ca *ifi.ClusterAssessment) error {
	by := spelling(t.Host, t.Instance, nil)
	if other, ok := s.claim(InstanceKey{Host: "cluster " + ca.Cluster, Instance: "role " + ca.Group}, by); !ok && other != by {
		return &Error{Kind: KindRefused, Target: t, Argument: "host",
			Refusal: ifi.TwoResources(by, other, ifi.ManagedRole(ca.Cluster, ca.Group, ca.Instance, ca.VirtualName))}
	}
	return nil
}

// clonePtr is a copy of *p (nil for nil), so that a memo never shares a caller's value.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
