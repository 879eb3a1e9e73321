package converge

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// shelfHost is a fake host of several instances that can read them all at once
// (contract.HostReader); read_instance, set_right and the rest are fakeHost's.
type shelfHost struct {
	*fakeHost
	names []string

	mu        sync.Mutex
	hostReads int
	hostErr   error
	// during runs inside each read_host, before it answers.
	during func()
}

func (h *shelfHost) ReadHost(ctx context.Context, p contract.ReadHostParams) (*contract.ReadHostResult, error) {
	h.mu.Lock()
	h.hostReads++
	err, during := h.hostErr, h.during
	h.mu.Unlock()
	if during != nil {
		during()
	}
	if err != nil {
		return nil, err
	}
	res := &contract.ReadHostResult{ComputerName: "SQL01", InstalledInstances: h.names}
	for _, n := range h.names {
		h.fakeHost.mu.Lock()
		ri := *h.fakeHost.reportLocked(h.fakeHost.ri.Instance)
		h.fakeHost.mu.Unlock()
		ri.Instance, ri.InstalledInstances = n, h.names
		if n != contract.DefaultInstance {
			ri.ServiceName = "MSSQL$" + n // each named instance's own Engine service
		}
		res.Instances = append(res.Instances, ri)
	}
	return res, nil
}

func (h *shelfHost) counts() (hostReads, instanceReads int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fakeHost.mu.Lock()
	defer h.fakeHost.mu.Unlock()
	return h.hostReads, h.fakeHost.reads
}

type shelfClients struct{ h Host }

func (c shelfClients) Host(string, int) (Host, error)           { return c.h, nil }
func (c shelfClients) SQLChecker() (contract.SQLChecker, error) { return nil, nil }

func newShelf(names ...string) (*shelfHost, *Engine, *movingClock) {
	h := &shelfHost{fakeHost: newFakeHost(), names: names}
	clock := &movingClock{now: fakeBoot.Add(time.Hour)}
	return h, &Engine{Clients: shelfClients{h}, Clock: clock}, clock
}

// read is one read of instance through the engine's view of the host.
func read(t *testing.T, e *Engine, instance string) *contract.ReadInstanceResult {
	t.Helper()
	tgt := Target{Host: "sql01.example.com", Instance: instance}
	h, err := e.host(tgt)
	if err != nil {
		t.Fatal(err)
	}
	ri, err := e.readInstance(context.Background(), h, tgt, "")
	if err != nil {
		t.Fatalf("reading %s: %v", instance, err)
	}
	return ri
}

// change grants through the engine's view of the host, as an apply's step does.
func change(t *testing.T, e *Engine) {
	t.Helper()
	h, err := e.host(Target{Host: "SQL01.example.com.", Instance: "I01"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.SetRight(context.Background(), contract.SetRightParams{Right: contract.RightManageVolume, SID: svcSID, Grant: true}); err != nil {
		t.Fatal(err)
	}
}

// Four operations of a run on four instances of one host, at once: one read_host
// answers all four, each with its own instance, and no read_instance is sent.
func TestHostReadSharedByTheInstancesOfAHost(t *testing.T) {
	t.Parallel()
	names := []string{"I01", "I02", "I03", "I04"}
	h, e, _ := newShelf(names...)
	var wg sync.WaitGroup
	got := make([]*contract.ReadInstanceResult, len(names))
	for i, n := range names {
		wg.Go(func() { got[i] = read(t, e, n) })
	}
	wg.Wait()
	for i, n := range names {
		if got[i] == nil || !got[i].Found || got[i].Instance != n {
			t.Errorf("the read of %s answered %+v", n, got[i])
		}
	}
	if hr, ir := h.counts(); hr != 1 || ir != 0 {
		t.Errorf("four reads on one host sent %d read_host and %d read_instance; want 1 and 0", hr, ir)
	}
	// Each gets a copy of its own: what one operation changes, the next does not see.
	got[0].RightHolders = append(got[0].RightHolders, contract.Principal{SID: "S-1-5-32-544"})
	if again := read(t, e, "i01"); len(again.RightHolders) != len(got[1].RightHolders) {
		t.Errorf("a change to one operation's read reached the next: %v", again.RightHolders)
	}
}

// A change the run makes on the host (here a grant) ends the shared read: the next
// read is the host's again, and shows the change.
func TestHostReadNotSharedAcrossAChange(t *testing.T) {
	t.Parallel()
	h, e, _ := newShelf("I01", "I02")
	if ri := read(t, e, "I02"); len(ri.RightHolders) != 0 {
		t.Fatalf("holders before the grant: %v", ri.RightHolders)
	}
	change(t, e)
	ri := read(t, e, "I02")
	if hr, _ := h.counts(); hr != 2 {
		t.Errorf("after a grant the next read used the earlier read_host (%d sent); want a new one", hr)
	}
	if len(ri.RightHolders) != 1 || ri.RightHolders[0].SID != svcSID {
		t.Errorf("the read after the grant shows holders %v; want the grant", ri.RightHolders)
	}
}

// A read sent before a change ended (here: a grant made while read_host runs) is
// not shared after the change.
func TestHostReadSentDuringAChangeIsNotShared(t *testing.T) {
	t.Parallel()
	h, e, _ := newShelf("I01", "I02")
	var once sync.Once
	h.during = func() { once.Do(func() { change(t, e) }) }
	read(t, e, "I01")
	read(t, e, "I02")
	if hr, _ := h.counts(); hr != 2 {
		t.Errorf("a read_host sent before a grant ended was shared after it (%d sent); want a new one", hr)
	}
}

// While a change of the host is in progress, a read is the operation's own
// (read_instance), never a shared one.
func TestHostReadWhileAChangeIsInProgress(t *testing.T) {
	t.Parallel()
	h, e, _ := newShelf("I01", "I02")
	read(t, e, "I01")
	release := e.reads.change(newHostReadKey(Target{Host: "sql01.example.com"}), false)
	read(t, e, "I02")
	release()
	if hr, ir := h.counts(); hr != 1 || ir != 1 {
		t.Errorf("during a change: %d read_host, %d read_instance; want the read_instance of its own", hr, ir)
	}
	// A failover cluster action changes every host.
	release = e.reads.change(hostReadKey{host: "node2"}, true)
	read(t, e, "I02")
	release()
	if _, ir := h.counts(); ir != 2 {
		t.Errorf("during a cluster action the read was shared (%d read_instance); want one of its own", ir)
	}
}

// A shared read is used while it is fresh (Engine.ReadFreshness from when it was
// sent); then the host is read again. A negative ReadFreshness shares none.
func TestHostReadFreshness(t *testing.T) {
	t.Parallel()
	h, e, clock := newShelf("I01", "I02")
	read(t, e, "I01")
	clock.advance(DefaultReadFreshness)
	read(t, e, "I02")
	if hr, _ := h.counts(); hr != 1 {
		t.Fatalf("a read of exactly ReadFreshness ago was not shared (%d read_host)", hr)
	}
	clock.advance(time.Second)
	read(t, e, "I02")
	if hr, _ := h.counts(); hr != 2 {
		t.Errorf("a read older than ReadFreshness was shared (%d read_host); want a new one", hr)
	}

	h, e, _ = newShelf("I01", "I02")
	e.ReadFreshness = -1
	read(t, e, "I01")
	read(t, e, "I02")
	if hr, _ := h.counts(); hr != 2 {
		t.Errorf("with ReadFreshness < 0 a finished read was shared (%d read_host)", hr)
	}
}

// scriptFailed is a host's answer that its script ran and failed.
type scriptFailed struct{}

func (scriptFailed) Error() string      { return "read_host: the script failed" }
func (scriptFailed) ScriptFailed() bool { return true }

// A read_host whose script failed (one instance's report ended it) is not shared:
// each operation then reads its instance alone and gets its own answer.
func TestHostReadScriptFailureFallsBackToReadInstance(t *testing.T) {
	t.Parallel()
	h, e, _ := newShelf("MSSQLSERVER")
	h.hostErr = scriptFailed{}
	if ri := read(t, e, "MSSQLSERVER"); !ri.Found {
		t.Errorf("the fallback read answered %+v", ri)
	}
	read(t, e, "MSSQLSERVER")
	if hr, ir := h.counts(); hr != 2 || ir != 2 {
		t.Errorf("after failed read_host: %d read_host, %d read_instance; want each operation to try and then read its own", hr, ir)
	}
}

// A read_host that failed on the way (here a reset connection) is the error of the
// operation that sent it, which does not try again with read_instance (it would go
// the same way, doubling the wait); an operation that waited for it in flight reads
// its instance itself, under its own deadline.
func TestHostReadTransportFailure(t *testing.T) {
	t.Parallel()
	h, e, _ := newShelf("I01", "MSSQLSERVER")
	h.hostErr = errors.New("read_host: the connection was reset")
	joined := make(chan *contract.ReadInstanceResult, 1)
	h.during = func() {
		go func() { joined <- read(t, e, "MSSQLSERVER") }()
		// Answer only once the second operation waits for this read.
		for {
			e.reads.mu.Lock()
			n := 0
			for _, s := range e.reads.hosts {
				if s.read != nil {
					n += s.read.joined
				}
			}
			e.reads.mu.Unlock()
			if n > 0 {
				return
			}
			runtime.Gosched()
		}
	}
	tgt := Target{Host: "sql01.example.com", Instance: "I01"}
	th, err := e.host(tgt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.readInstance(context.Background(), th, tgt, ""); err == nil || !strings.Contains(err.Error(), "reset") {
		t.Fatalf("the sender's read answered %v; want read_host's error", err)
	}
	if ri := <-joined; !ri.Found {
		t.Errorf("the joiner's own read answered %+v", ri)
	}
	if hr, ir := h.counts(); hr != 1 || ir != 1 {
		t.Errorf("%d read_host, %d read_instance; want the sender's read_host and the joiner's read_instance", hr, ir)
	}
}

// An instance the host does not have is answered as read_instance answers it
// (Found false, the installed instances), from the shared read.
func TestHostReadOfAMissingInstance(t *testing.T) {
	t.Parallel()
	h, e, _ := newShelf("I01", "I02")
	ri := read(t, e, "NOPE")
	if ri.Found || len(ri.InstalledInstances) != 2 || ri.ComputerName != "SQL01" {
		t.Errorf("a missing instance read as %+v; want Found false with the installed instances", ri)
	}
	if _, ir := h.counts(); ir != 0 {
		t.Errorf("a missing instance sent %d read_instance", ir)
	}
}

// The instances of a host come from the run's shared read (no command of their
// own for the operations that read an instance next), without the names that are no
// instance name; a host that cannot read itself at once lists them through
// read_instance.
func TestInstancesOfAHost(t *testing.T) {
	t.Parallel()
	h, e, _ := newShelf("MSSQLSERVER", "REPORTING", "bad name")
	computer, names, err := e.Instances(context.Background(), Target{Host: "sql01.example.com"})
	if err != nil || computer != "SQL01" || strings.Join(names, ",") != "MSSQLSERVER,REPORTING" {
		t.Fatalf("Instances: %q %v %v; want SQL01 [MSSQLSERVER REPORTING]", computer, names, err)
	}
	read(t, e, "REPORTING")
	if hr, ir := h.counts(); hr != 1 || ir != 0 {
		t.Errorf("listing then reading an instance sent %d read_host and %d read_instance; want 1 and 0", hr, ir)
	}

	plain := newFakeHost()
	plain.ri.InstalledInstances = []string{"MSSQLSERVER", "X Y", "SALES"}
	pe := &Engine{Clients: shelfClients{plain}, Clock: &movingClock{now: fakeBoot}}
	if _, names, err := pe.Instances(context.Background(), Target{Host: "sql02"}); err != nil || strings.Join(names, ",") != "MSSQLSERVER,SALES" {
		t.Errorf("Instances without read_host: %v %v; want [MSSQLSERVER SALES]", names, err)
	}
}

// A plan's refreshes share the host's read for the whole run, however long it is
// (here the four instances of one host are refreshed 20 s apart, 60 s in all, as
// Terraform spreads them over a long plan): one read_host, no read_instance. The
// run's own grant on the host ends it, so the next refresh reads the host again
// and shows the grant; and a read that decides a change (not a refresh's) still
// takes the shared read only while it is at most ReadFreshness old.
func TestHostReadOfARefreshLastsTheRun(t *testing.T) {
	t.Parallel()
	names := []string{"I01", "I02", "I03", "I04"}
	h, e, clock := newShelf(names...)
	s := NewSession(e)
	refresh := func(instance string) *Result {
		t.Helper()
		res, err := s.Read(context.Background(), ReadRequest{Request: Request{
			Target: Target{Host: "sql01.example.com", Instance: instance}, Desired: enable}})
		if err != nil {
			t.Fatalf("refreshing %s: %v", instance, err)
		}
		return res
	}
	for i, n := range names {
		if i > 0 {
			clock.advance(20 * time.Second)
		}
		if res := refresh(n); res.Outcome == nil || res.Outcome.Read == nil || res.Outcome.Read.Instance != n {
			t.Fatalf("the refresh of %s answered %+v", n, res.Outcome)
		}
	}
	if hr, ir := h.counts(); hr != 1 || ir != 0 {
		t.Errorf("four refreshes on one host over 60 s sent %d read_host and %d read_instance; want 1 and 0", hr, ir)
	}

	change(t, e)
	res := refresh("I02")
	if hr, _ := h.counts(); hr != 2 {
		t.Errorf("after the run's grant the next refresh used the earlier read_host (%d sent); want a new one", hr)
	}
	if got := res.Outcome.Read.RightHolders; len(got) != 1 || got[0].SID != svcSID {
		t.Errorf("the refresh after the grant shows holders %v; want the grant", got)
	}

	clock.advance(DefaultReadFreshness + time.Second)
	read(t, e, "I03") // an apply's or a destroy's read
	if hr, _ := h.counts(); hr != 3 {
		t.Errorf("a read that decides a change took a shared read older than ReadFreshness (%d read_host); want a new one", hr)
	}
}
