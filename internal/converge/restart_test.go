package converge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// statusScriptHost answers restart_status from a script, one step a call (nil
// steps, and every call after the script, ask the fake host).
type statusScriptHost struct {
	*fakeHost
	mu     sync.Mutex
	script []func(h *fakeHost) (*contract.RestartInstanceResult, error)
	calls  int
	// t and max, when set, fail the test at the call after max: the engine asks on
	// where it should have stopped.
	t   *testing.T
	max int
}

func (s *statusScriptHost) RestartStatus(ctx context.Context, p contract.RestartStatusParams) (*contract.RestartInstanceResult, error) {
	s.mu.Lock()
	n := s.calls
	s.calls++
	s.mu.Unlock()
	if s.t != nil && n >= s.max {
		s.t.Fatalf("restart_status asked %d times; want at most %d", n+1, s.max)
	}
	if n < len(s.script) && s.script[n] != nil {
		return s.script[n](s.fakeHost)
	}
	return s.fakeHost.RestartStatus(ctx, p)
}

func lostAnswer(*fakeHost) (*contract.RestartInstanceResult, error) { return nil, transientErr{} }

// inProgress is the host's last restart as still in phase.
func inProgress(phase string) func(h *fakeHost) (*contract.RestartInstanceResult, error) {
	return func(h *fakeHost) (*contract.RestartInstanceResult, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		r := *h.last
		r.Finished, r.Phase, r.Instance = false, phase, nil
		return &r, nil
	}
}

// After the network's failures the engine pauses 1 s, 2 s, 4 s, ... between its
// questions, and once the host answered it starts again from 1 s.
func TestRestartPausesStartAgainAfterAnAnswer(t *testing.T) {
	w := newWorld(newFakeHost())
	w.host.restartErr, w.host.restartErrAfterEffect = transientErr{}, true // the restart runs, its answer is lost
	h := &statusScriptHost{fakeHost: w.host, script: []func(*fakeHost) (*contract.RestartInstanceResult, error){
		lostAnswer, lostAnswer, inProgress("starting"), lostAnswer}}
	clock := &recordingClock{fakeClock: fakeClock{now: time.Now()}}
	e := New(withHost{w.clients, h})
	e.Clock = clock
	out, err := e.Apply(context.Background(), defaultTarget, enable)
	if err != nil || !out.Restarted {
		t.Fatalf("Apply = %v, restarted %v", err, out.Restarted)
	}
	if want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, time.Second}; fmt.Sprint(clock.pauses) != fmt.Sprint(want) {
		t.Errorf("pauses %v; want %v", clock.pauses, want)
	}
}

// A restart not seen to finish names the last phase the host reported.
func TestRestartUnfinishedNamesTheLastPhase(t *testing.T) {
	w := newWorld(newFakeHost())
	w.host.restartResult = &contract.RestartInstanceResult{Found: true, Phase: "stopping", ServiceName: "MSSQLSERVER"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	starting := inProgress("starting")
	h := &statusScriptHost{fakeHost: w.host, t: t, max: 2, script: []func(*fakeHost) (*contract.RestartInstanceResult, error){
		starting, func(h *fakeHost) (*contract.RestartInstanceResult, error) {
			cancel() // the operation's time is up
			return starting(h)
		}}}
	e := New(withHost{w.clients, h})
	e.Clock = fakeClock{now: time.Now()}
	_, err := e.Apply(ctx, defaultTarget, enable)
	var unfinished *RestartUnfinishedError
	if !errors.As(err, &unfinished) || unfinished.Phase != "starting" || !strings.Contains(err.Error(), "last phase reported: starting") {
		t.Fatalf("err = %v; want the restart unfinished in phase starting", err)
	}
}

// When the pause after a network failure is cut short (the operation's time is
// up), the engine stops asking and says why: the network's error.
func TestRestartStopsWhenThePauseIsCutShort(t *testing.T) {
	w := newWorld(newFakeHost())
	w.host.restartErr = transientErr{} // lost on the way: nothing restarts
	w.host.statusErr = transientErr{}
	h := &statusScriptHost{fakeHost: w.host, t: t, max: 3}
	e := New(withHost{w.clients, h})
	e.Clock = &recordingClock{fakeClock: fakeClock{now: time.Now()}, failSleep: true}
	_, err := e.Apply(context.Background(), defaultTarget, enable)
	var unfinished *RestartUnfinishedError
	if !errors.As(err, &unfinished) || !errors.As(unfinished.Err, new(transientErr)) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("err = %v; want the restart unfinished, for the network's error", err)
	}
}

// The first request is lost on the way and the host has no record of it; the
// request sent again is refused (another instance of the host restarts): that
// refusal is the error, at once, and nothing was changed.
func TestRestartResentRequestRefused(t *testing.T) {
	w := newWorld(newFakeHost())
	w.host.otherRestarting = true // what the host answers to the request that arrives
	h := &firstSendHost{fakeHost: w.host, first: func(contract.RestartInstanceParams) (*contract.RestartInstanceResult, error) {
		return nil, transientErr{}
	}}
	e := New(withHost{w.clients, h})
	e.Clock = fakeClock{now: time.Now()}
	out, err := e.Apply(context.Background(), defaultTarget, enable)
	ce := wantError(t, err, KindRestartInProgress)
	if h.sends != 2 || w.host.restarts != 0 || ce.Changed || out.Changed {
		t.Errorf("sent %d times, %d restarts, changed %v/%v; want two sends, the refusal, nothing changed", h.sends, w.host.restarts, ce.Changed, out.Changed)
	}
}

// otherTransient is another failure of the network.
type otherTransient struct{}

func (otherTransient) Error() string   { return "read tcp: i/o timeout" }
func (otherTransient) Transient() bool { return true }

// Every request is lost on the way: the error that nothing was received quotes the
// last send's failure.
func TestRestartNotReceivedQuotesTheLastSend(t *testing.T) {
	w := newWorld(newFakeHost())
	h := &lostSendsHost{fakeHost: w.host}
	e := New(withHost{w.clients, h})
	e.Clock = fakeClock{now: time.Now()}
	_, err := e.Apply(context.Background(), defaultTarget, enable)
	var unfinished *RestartUnfinishedError
	if !errors.As(err, &unfinished) || !unfinished.NotReceived || !strings.Contains(err.Error(), "i/o timeout") || h.sends != maxRestartSends {
		t.Fatalf("err = %v after %d sends; want nothing received after %d, quoting the last send's error", err, h.sends, maxRestartSends)
	}
}

// lostSendsHost loses every restart_instance request: the first to a refused
// connection, the others to a timeout.
type lostSendsHost struct {
	*fakeHost
	sends int
}

func (h *lostSendsHost) RestartInstance(context.Context, contract.RestartInstanceParams) (*contract.RestartInstanceResult, error) {
	h.sends++
	if h.sends == 1 {
		return nil, transientErr{}
	}
	return nil, otherTransient{}
}

// The restart request carries the plan's changes, and nothing else.
func TestRestartSendsThePlansChanges(t *testing.T) {
	w := newWorld(newFakeHost())
	w.engine.Clock = fakeClock{now: time.Now()}
	if _, err := w.engine.Apply(context.Background(), defaultTarget, enable); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	want := []contract.RightChange{{SID: svcSID, Grant: true}}
	if len(w.host.restartParams) != 1 || fmt.Sprint(w.host.restartParams[0].Changes) != fmt.Sprint(want) {
		t.Fatalf("restart requests %+v; want one, with the changes %+v", w.host.restartParams, want)
	}
}

// scriptedHost answers restart_instance and restart_status from scripts, one step
// a call (a nil step, and every call after the script, asks the fake host). At the
// status question after max it fails the test and ends the operation's context
// (cancel, when set), so that an engine that would ask on forever stops.
type scriptedHost struct {
	*fakeHost
	t        *testing.T
	max      int
	cancel   context.CancelFunc
	sends    []contract.RestartInstanceParams
	send     []func(p contract.RestartInstanceParams) (*contract.RestartInstanceResult, error)
	status   []func() (*contract.RestartInstanceResult, error)
	statuses int
}

func (s *scriptedHost) RestartInstance(ctx context.Context, p contract.RestartInstanceParams) (*contract.RestartInstanceResult, error) {
	n := len(s.sends)
	s.sends = append(s.sends, p)
	if n < len(s.send) && s.send[n] != nil {
		return s.send[n](p)
	}
	return s.fakeHost.RestartInstance(ctx, p)
}

func (s *scriptedHost) RestartStatus(ctx context.Context, p contract.RestartStatusParams) (*contract.RestartInstanceResult, error) {
	n := s.statuses
	s.statuses++
	if n >= s.max {
		if n == s.max {
			s.t.Errorf("restart_status asked %d times; want at most %d", n+1, s.max)
		}
		if s.cancel != nil {
			s.cancel()
		}
		return nil, transientErr{}
	}
	if n < len(s.status) && s.status[n] != nil {
		return s.status[n]()
	}
	return s.fakeHost.RestartStatus(ctx, p)
}

func lostSend(contract.RestartInstanceParams) (*contract.RestartInstanceResult, error) {
	return nil, transientErr{}
}

// otherRestartDone is restart_status reporting a restart of another request (not
// this one's), finished.
func otherRestartDone() (*contract.RestartInstanceResult, error) {
	return &contract.RestartInstanceResult{Found: true, RestartID: "another request", Phase: contract.PhaseDone, Finished: true,
		ServiceName: "MSSQLSERVER"}, nil
}

// The host reports a restart of another request, that this one did not join: the
// engine neither takes it for its own nor takes its id; sent again (the host lost
// the request), the request keeps its own id.
func TestRestartKeepsItsIDBesideAnotherRestart(t *testing.T) {
	w := newWorld(newFakeHost())
	h := &scriptedHost{fakeHost: w.host, t: t, max: 2,
		send: []func(contract.RestartInstanceParams) (*contract.RestartInstanceResult, error){
			func(p contract.RestartInstanceParams) (*contract.RestartInstanceResult, error) {
				return &contract.RestartInstanceResult{Found: true, RestartID: p.RestartID, Phase: "stopping", ServiceName: "MSSQLSERVER"}, nil
			}},
		status: []func() (*contract.RestartInstanceResult, error){
			func() (*contract.RestartInstanceResult, error) {
				return &contract.RestartInstanceResult{Found: true, RestartID: "another request", Phase: "starting", ServiceName: "MSSQLSERVER"}, nil
			},
			func() (*contract.RestartInstanceResult, error) { // the host lost the record
				return &contract.RestartInstanceResult{ServiceName: "MSSQLSERVER"}, nil
			}}}
	e := New(withHost{w.clients, h})
	e.Clock = fakeClock{now: time.Now()}
	out, err := e.Apply(context.Background(), defaultTarget, enable)
	if err != nil || !out.Restarted {
		t.Fatalf("Apply = %v, restarted %v", err, out.Restarted)
	}
	if len(h.sends) != 2 || h.sends[1].RestartID != h.sends[0].RestartID || w.host.restarts != 1 {
		t.Errorf("sent %d times (ids %v), %d restarts; want the request sent again with its own id, one restart", len(h.sends), ids(h.sends), w.host.restarts)
	}
}

func ids(ps []contract.RestartInstanceParams) []string {
	var s []string
	for _, p := range ps {
		s = append(s, p.RestartID)
	}
	return s
}

// Two requests are lost on the way, and restart_status meanwhile reports another
// request's restart, finished: that is not this request's, so the engine sends it
// a third time and follows the restart it starts.
func TestRestartLostSendsDoNotTakeAnotherRestart(t *testing.T) {
	w := newWorld(newFakeHost())
	h := &scriptedHost{fakeHost: w.host, t: t, max: 2,
		send:   []func(contract.RestartInstanceParams) (*contract.RestartInstanceResult, error){lostSend, lostSend},
		status: []func() (*contract.RestartInstanceResult, error){otherRestartDone, otherRestartDone}}
	e := New(withHost{w.clients, h})
	e.Clock = fakeClock{now: time.Now()}
	out, err := e.Apply(context.Background(), defaultTarget, enable)
	if err != nil || !out.Restarted {
		t.Fatalf("Apply = %v, restarted %v", err, out.Restarted)
	}
	if len(h.sends) != maxRestartSends || w.host.restarts != 1 || !w.host.holds(svcSID) {
		t.Errorf("sent %d times, %d restarts; want %d sends, the last one restarting", len(h.sends), w.host.restarts, maxRestartSends)
	}
}

// The host's own answer to restart_status (a script's error, a refused login) ends
// the asking at once: waiting does not heal it.
func TestRestartStatusRefusedEndsTheAsking(t *testing.T) {
	w := newWorld(newFakeHost())
	w.host.restartErr, w.host.restartErrAfterEffect = transientErr{}, true // the restart runs, its answer is lost
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	refused := &fakeScriptError{code: "access_denied", err: errors.New("restart_status refused")}
	h := &scriptedHost{fakeHost: w.host, t: t, max: 1, cancel: cancel,
		status: []func() (*contract.RestartInstanceResult, error){func() (*contract.RestartInstanceResult, error) { return nil, refused }}}
	e := New(withHost{w.clients, h})
	e.Clock = fakeClock{now: time.Now()}
	_, _ = e.Apply(ctx, defaultTarget, enable)
	if h.statuses != 1 {
		t.Errorf("restart_status asked %d times; want once", h.statuses)
	}
}

// The host has no record of a request it accepted: the engine sends it again,
// once, instead of asking restart_status on.
func TestRestartSendsAgainWhatTheHostHasNoRecordOf(t *testing.T) {
	w := newWorld(newFakeHost())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := &scriptedHost{fakeHost: w.host, t: t, max: 1, cancel: cancel,
		send: []func(contract.RestartInstanceParams) (*contract.RestartInstanceResult, error){
			func(p contract.RestartInstanceParams) (*contract.RestartInstanceResult, error) {
				return &contract.RestartInstanceResult{Found: true, RestartID: p.RestartID, Phase: "stopping", ServiceName: "MSSQLSERVER"}, nil
			}}}
	e := New(withHost{w.clients, h})
	e.Clock = fakeClock{now: time.Now()}
	out, err := e.Apply(ctx, defaultTarget, enable)
	if err != nil || !out.Restarted {
		t.Fatalf("Apply = %v, restarted %v", err, out.Restarted)
	}
	if len(h.sends) != 2 || h.statuses != 1 || w.host.restarts != 1 {
		t.Errorf("sent %d times, asked restart_status %d times, %d restarts; want 2 sends, 1 question, 1 restart", len(h.sends), h.statuses, w.host.restarts)
	}
}

// After the network's failure, the host's next answer is read: a restart it
// reports finished ends the following.
func TestRestartReadsTheAnswerAfterANetworkFailure(t *testing.T) {
	w := newWorld(newFakeHost())
	w.host.restartErr, w.host.restartErrAfterEffect = transientErr{}, true // the restart runs, its answer is lost
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := &scriptedHost{fakeHost: w.host, t: t, max: 2, cancel: cancel,
		status: []func() (*contract.RestartInstanceResult, error){func() (*contract.RestartInstanceResult, error) { return nil, transientErr{} }}}
	e := New(withHost{w.clients, h})
	e.Clock = fakeClock{now: time.Now()}
	out, err := e.Apply(ctx, defaultTarget, enable)
	if err != nil || !out.Restarted {
		t.Fatalf("Apply = %v, restarted %v", err, out.Restarted)
	}
	if len(h.sends) != 1 || h.statuses != 2 || w.host.restarts != 1 {
		t.Errorf("sent %d times, asked restart_status %d times, %d restarts; want 1 send, 2 questions, 1 restart", len(h.sends), h.statuses, w.host.restarts)
	}
}
