package converge

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// hostReads is one read per host per run: the first operation of a run that reads an
// instance of a host reads every instance of that host with one read_host, and the
// run's other operations on the host (the refreshes and plans of its other
// instances, running at the same time or later; a create after the final plan's
// read; a destroy after the refresh's) take their instance from that answer instead
// of starting a powershell.exe of their own
// (design/winrm-stdin-and-cost-model.md, "One read per host per run").
//
// A shared read is used only within the run (the Engine is the run's) and never
// across a change. A plan's and a refresh's reads (runWide: Session.Read, Plan,
// Describe, DescribeHost) share it for the whole run however long it is, since what
// they show is the host as the run found it and nothing but the run's own changes is
// known to move it; every other read (an apply's or a destroy's, which decide a
// change from it) shares it only while it is fresh (Engine.ReadFreshness, counted
// from when it was sent). Every change the engine makes on a host (a grant, a revoke, a restart)
// ends the host's shared read before it is sent and again when it has answered, and a
// failover cluster action ends every host's, since it moves a role between nodes.
// While a change is in progress, reads of that host are the operation's own. A
// shared read that failed is not shared: each operation then reads its instance
// itself, and gets its own answer or error.
type hostReads struct {
	mu    sync.Mutex
	hosts map[hostReadKey]*hostReadState
	// epoch and changing are the cluster actions': a change of every host.
	epoch    int
	changing int
}

type hostReadKey struct {
	host string
	port int
}

// hostReadState is one host's: its change epoch (bumped before and after each
// change), the changes in progress, and its last shared read.
type hostReadState struct {
	epoch    int
	changing int
	read     *sharedRead
}

// sharedRead is one read_host of a host: done is closed once res or err is set.
type sharedRead struct {
	epoch int // the host's and the cluster epoch when it was sent
	at    time.Time
	done  chan struct{}
	res   *contract.ReadHostResult
	err   error
	// joined counts the operations that waited for it in flight (hostReads.mu).
	joined int
}

func newHostReadKey(t Target) hostReadKey {
	k := NewInstanceKey(t.Host, "")
	return hostReadKey{host: k.Host, port: t.Port}
}

// state is key's state; r.mu is held.
func (r *hostReads) state(key hostReadKey) *hostReadState {
	if r.hosts == nil {
		r.hosts = map[hostReadKey]*hostReadState{}
	}
	s, ok := r.hosts[key]
	if !ok {
		s = &hostReadState{}
		r.hosts[key] = s
	}
	return s
}

// change marks the start of a change of the host key (all: of every host); the
// returned func marks its end. A read sent before the start, or while the change is
// in progress, is never shared after it.
func (r *hostReads) change(key hostReadKey, all bool) func() {
	bump := func(d int) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if all {
			r.epoch++
			r.changing += d
			return
		}
		s := r.state(key)
		s.epoch++
		s.changing += d
	}
	bump(1)
	var once sync.Once
	return func() { once.Do(func() { bump(-1) }) }
}

// sharedInstance is t's instance from the host's shared read (sending it when there
// is none to share), and when that read was sent. false when there is nothing to
// share (a change in progress, a failed read, ctx ended while waiting): the caller
// then reads the instance itself. One exception: the operation that sent the read
// gets its transport failure (a refused connection, a timeout, a failed logon) as
// its own read's error, since its own read_instance would go the same way; only a
// script's failure (one instance's report ending the script) sends it to read alone.
func (e *Engine) sharedInstance(ctx context.Context, hr contract.HostReader, t Target) (*contract.ReadInstanceResult, time.Time, bool, error) {
	read, ok, err := e.sharedHost(ctx, hr, t)
	if !ok || err != nil {
		return nil, time.Time{}, ok, err
	}
	ri, ok := instanceOf(read.res, t.Instance)
	if !ok {
		return nil, time.Time{}, false, nil
	}
	return ri, read.at, true, nil
}

// sharedHost is the run's shared read of t's host, sent by this call when there is
// none to share, with sharedInstance's answers: false when there is nothing to
// share; true with an error when this call sent it and it failed on the way.
func (e *Engine) sharedHost(ctx context.Context, hr contract.HostReader, t Target) (*sharedRead, bool, error) {
	r := &e.reads
	key := newHostReadKey(t)
	now := e.clock().Now()
	r.mu.Lock()
	s := r.state(key)
	if s.changing > 0 || r.changing > 0 {
		r.mu.Unlock()
		return nil, false, nil
	}
	epoch := s.epoch + r.epoch
	read := s.read
	sent := false
	if read == nil || read.epoch != epoch || !e.stillFresh(read, now, isRunWide(ctx)) {
		read = &sharedRead{epoch: epoch, at: now, done: make(chan struct{})}
		s.read = read
		r.mu.Unlock()
		e.debug(ctx, "read_host", map[string]any{"host": t.Host, "for_instance": t.Instance})
		read.res, read.err = hr.ReadHost(ctx, contract.ReadHostParams{Right: contract.RightManageVolume})
		r.mu.Lock()
		close(read.done)
		joined := read.joined
		r.mu.Unlock()
		sent = true
		e.debug(ctx, "read_host answered", map[string]any{"host": t.Host, "joined_in_flight": joined, "failed": read.err != nil})
	} else {
		if !isDone(read) {
			read.joined++
		}
		r.mu.Unlock()
		select {
		case <-read.done:
		case <-ctx.Done():
			return nil, false, nil
		}
	}
	if read.err != nil {
		if sent && !hostAnswered(read.err) {
			return nil, true, read.err
		}
		return nil, false, nil
	}
	if read.res == nil {
		return nil, false, nil
	}
	return read, true, nil
}

// Instances is the SQL Server instances installed on t's host (t.Instance is not
// used), in the registry's order, and the host's computer name: from the run's
// shared read of the host, else from one read_instance (which lists them too).
// Names without an instance name's syntax are left out, as read_host leaves them.
func (e *Engine) Instances(ctx context.Context, t Target) (string, []string, error) {
	h, err := e.host(t)
	if err != nil {
		return "", nil, err
	}
	if th, ok := h.(*trackedHost); ok && th.reader() != nil {
		read, ok, err := e.sharedHost(ctx, th.reader(), t)
		if err != nil {
			return "", nil, &Error{Kind: KindObserveFailed, Target: t, Err: err}
		}
		if ok {
			return read.res.ComputerName, validInstanceNames(read.res.InstalledInstances), nil
		}
	}
	probe := t
	probe.Instance = contract.DefaultInstance
	ri, err := h.ReadInstance(ctx, contract.ReadInstanceParams{Instance: probe.Instance, Right: contract.RightManageVolume})
	if err != nil {
		return "", nil, &Error{Kind: KindObserveFailed, Target: probe, Err: err}
	}
	return ri.ComputerName, validInstanceNames(ri.InstalledInstances), nil
}

// validInstanceNames is names without those that have no instance name's syntax.
func validInstanceNames(names []string) []string {
	out := []string{}
	for _, n := range names {
		if contract.InstanceNameSyntaxValid(n) {
			out = append(out, n)
		}
	}
	return out
}

// stillFresh reports whether a finished read may still be shared at now: for a
// plan's or a refresh's read (runWide), any read of the run that answered; else one
// sent at most ReadFreshness ago (a read in flight is always joined). A negative
// ReadFreshness (Apply always reads) shares nothing but the reads in flight with the
// reads that are not runWide.
func (e *Engine) stillFresh(read *sharedRead, now time.Time, runWide bool) bool {
	if !isDone(read) {
		return true
	}
	if read.err != nil {
		return false
	}
	if runWide {
		return true // the run's changes end it (hostReads.change), not its age
	}
	limit := e.ReadFreshness
	if limit == 0 {
		limit = DefaultReadFreshness
	}
	age := now.Sub(read.at)
	return age >= 0 && age <= limit
}

// runWideKey marks the context of a plan's or a refresh's operation (runWide).
type runWideKey struct{}

// runWide is ctx for an operation that only shows the host (a refresh, a plan, a
// data source): its reads share the host's read of the run whatever its age
// (hostReads). An apply's and a destroy's reads are never marked: they decide a
// change, and share a read only while it is fresh.
func runWide(ctx context.Context) context.Context {
	return context.WithValue(ctx, runWideKey{}, true)
}

// isRunWide reports whether ctx is runWide's.
func isRunWide(ctx context.Context) bool {
	v, _ := ctx.Value(runWideKey{}).(bool)
	return v
}

// isDone reports whether read has answered.
func isDone(read *sharedRead) bool {
	select {
	case <-read.done:
		return true
	default:
		return false
	}
}

// instanceOf is the read of instance in res, a copy of its own (the operations may
// change what they are given), or what read_instance answers for an instance that
// is not installed. false when res cannot say (an answer that does not decode).
func instanceOf(res *contract.ReadHostResult, instance string) (*contract.ReadInstanceResult, bool) {
	for i := range res.Instances {
		ri := &res.Instances[i]
		if !ri.Found || !strings.EqualFold(ri.Instance, instance) {
			continue
		}
		b, err := json.Marshal(ri)
		if err != nil {
			return nil, false
		}
		var c contract.ReadInstanceResult
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, false
		}
		return &c, true
	}
	for _, name := range res.InstalledInstances {
		if strings.EqualFold(name, instance) {
			return nil, false // installed but not in the answer: read it alone
		}
	}
	ps := ""
	if len(res.Instances) > 0 {
		ps = res.Instances[0].PowerShellVersion
	}
	return &contract.ReadInstanceResult{ComputerName: res.ComputerName, Found: false,
		InstalledInstances: append([]string(nil), res.InstalledInstances...), PowerShellVersion: ps}, true
}

// trackedHost is the engine's view of a host's client: every change sent through
// it ends the host's shared read (hostReads.change).
type trackedHost struct {
	Host
	reads *hostReads
	key   hostReadKey
}

func (h *trackedHost) SetRight(ctx context.Context, p contract.SetRightParams) (*contract.SetRightResult, error) {
	defer h.reads.change(h.key, false)()
	return h.Host.SetRight(ctx, p)
}

func (h *trackedHost) RestartInstance(ctx context.Context, p contract.RestartInstanceParams) (*contract.RestartInstanceResult, error) {
	defer h.reads.change(h.key, false)()
	return h.Host.RestartInstance(ctx, p)
}

// RestartStatus follows a restart the engine asked for (its outcome may still be
// changing the host), so it counts as part of that change.
func (h *trackedHost) RestartStatus(ctx context.Context, p contract.RestartStatusParams) (*contract.RestartInstanceResult, error) {
	defer h.reads.change(h.key, false)()
	return h.Host.RestartStatus(ctx, p)
}

func (h *trackedHost) ClusterMove(ctx context.Context, p contract.ClusterMoveParams) (*contract.ClusterActionResult, error) {
	defer h.reads.change(h.key, true)()
	return h.Host.ClusterMove(ctx, p)
}

func (h *trackedHost) ClusterRestart(ctx context.Context, p contract.ClusterRestartParams) (*contract.ClusterActionResult, error) {
	defer h.reads.change(h.key, true)()
	return h.Host.ClusterRestart(ctx, p)
}

// reader is the host's client as a HostReader; nil when it reads instance by
// instance only.
func (h *trackedHost) reader() contract.HostReader {
	r, _ := h.Host.(contract.HostReader)
	return r
}
