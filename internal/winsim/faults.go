package winsim

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// WinRM fault injection for the fault matrix (issue 8). A fault applies to the
// WS-Management requests of one host that match it, from the After+1-th match on,
// Count times (-1: every match until cleared):
//
//	{"action":"winrm_fault","fault":"reset","request":"Receive","operation":"restart_instance","count":1}
//	{"action":"winrm_fault","fault":"http_500","request":"Send","count":-1}
//	{"action":"winrm_fault","fault":"http_401","operation":"restart_status","after":1,"count":-1}
//	{"action":"winrm_fault","fault":"slow","delay_ms":2000,"count":-1}
//	{"action":"winrm_fault","fault":"reset","request":"Receive","service":"MSSQLSERVER","state":"Stop Pending","count":1}
//	{"action":"winrm_fault","fault":"refuse","service":"MSSQLSERVER","state":"Stop Pending","duration_ms":8000}
//	{"action":"clear_faults"}
//
// request is the WS-Management action's last part, one of the requests the provider's
// exchange sends (Create, Command, Send, Receive, Delete; "" any; it sends no Signal,
// design/winrm-stdin-and-cost-model.md); operation is the contract operation
// whose script the command runs ("" any), known from its stdin, which the exchange
// sends before its first Receive: so it matches the command's Send, its Receives and
// the Delete of its shell, never a Create or Command; service and state make the
// fault apply only while that service is in that state. Faults need HTTPS or Basic over HTTP
// (the simulator reads the SOAP body; NTLM-sealed bodies match only "" filters).
//
// "refuse" is not a request's fault but the host's: once service is in state (at
// once without a service), every WinRM listener of the host closes for duration_ms,
// so connection attempts are refused (a TCP reset: ECONNREFUSED), and the
// connections open at that moment are reset; then the listeners open again on the
// same ports. It fires once; clear_faults ends a refusal under way. With operation
// instead of service and state, a command of that operation arms it (its
// after+1-th Send): the refusal starts delay_ms after that Send, and with no delay
// the Send itself is lost (its connection reset), as when a host goes away while a
// command is sent:
//
//	{"action":"winrm_fault","fault":"refuse","operation":"read_instance","after":2,"duration_ms":8000}
type WinRMFault struct {
	Fault     string `json:"fault"` // FaultReset, FaultHTTP500, FaultHTTP401, FaultHang, FaultSlow
	Request   string `json:"request,omitempty"`
	Operation string `json:"operation,omitempty"`
	Service   string `json:"service,omitempty"`
	State     string `json:"state,omitempty"`
	After     int    `json:"after,omitempty"`
	Count     int    `json:"count,omitempty"`
	DelayMS   int    `json:"delay_ms,omitempty"`
	// DurationMS is how long a "refuse" fault keeps the listeners closed.
	DurationMS int `json:"duration_ms,omitempty"`

	seen, fired int
}

// Fault kinds.
const (
	FaultReset   = "reset"    // the TCP connection is reset without an answer
	FaultHTTP500 = "http_500" // HTTP 500 with a WS-Management fault
	FaultHTTP401 = "http_401" // HTTP 401, as for credentials no longer accepted
	FaultHang    = "hang"     // no answer until the client gives up
	FaultSlow    = "slow"     // the answer comes delay_ms late
	FaultRefuse  = "refuse"   // the host's WinRM listeners refuse connections for duration_ms
)

// faultRequests are the WS-Management requests the provider's exchange sends
// (internal/remote/exchange.go), in their order.
var faultRequests = []string{"Create", "Command", "Send", "Receive", "Delete"}

// faultSet is one host's injected faults and what it learnt of its commands.
type faultSet struct {
	mu     sync.Mutex
	faults []*WinRMFault
	ops    map[string]string // CommandId or ShellId → operation
	// refusals are "refuse" faults armed by an operation's command, not yet fired.
	refusals []*WinRMFault
	model    *host.Host
	gates    []*gateListener // the host's WinRM listeners, for "refuse"
	stop     chan struct{}   // closed by clear (and the simulator's Close): ends pending and current refusals
}

var (
	reAction    = regexp.MustCompile(`<[a-zA-Z0-9]*:?Action[^>]*>[^<]*/([A-Za-z]+)</`)
	reCommandID = regexp.MustCompile(`CommandId="([^"]+)"`)
	reShellID   = regexp.MustCompile(`Name="ShellId"[^>]*>([^<]+)<`)
	reStdin     = regexp.MustCompile(`<[a-zA-Z0-9]*:?Stream[^>]*Name="stdin"[^>]*>([^<]*)</`)
	reOperation = regexp.MustCompile(`# mssqlifi-operation: ([a-z_]+)`)
)

func (f *faultSet) add(w WinRMFault) error {
	switch w.Fault {
	case FaultReset, FaultHTTP500, FaultHTTP401, FaultHang, FaultSlow:
	case FaultRefuse:
		return f.addRefusal(w)
	default:
		return fmt.Errorf("%w: winrm_fault: unknown fault %q; use %s, %s, %s, %s, %s or %s", ErrBadAction, w.Fault,
			FaultReset, FaultHTTP500, FaultHTTP401, FaultHang, FaultSlow, FaultRefuse)
	}
	if w.Request != "" && !slices.ContainsFunc(faultRequests, func(r string) bool { return strings.EqualFold(r, w.Request) }) {
		return fmt.Errorf("%w: winrm_fault: request %q is not one the provider sends; use %s", ErrBadAction, w.Request, strings.Join(faultRequests, ", "))
	}
	if w.Operation != "" && (strings.EqualFold(w.Request, "Create") || strings.EqualFold(w.Request, "Command")) {
		return fmt.Errorf("%w: winrm_fault: a %s request comes before the command's stdin, so its operation is unknown: it can never match operation %q", ErrBadAction, w.Request, w.Operation)
	}
	if w.Count == 0 {
		w.Count = 1
	}
	f.mu.Lock()
	f.faults = append(f.faults, &w)
	f.mu.Unlock()
	return nil
}

func (f *faultSet) clear() {
	f.mu.Lock()
	f.faults, f.refusals = nil, nil
	if f.stop != nil {
		close(f.stop)
		f.stop = nil
	}
	f.mu.Unlock()
}

// addRefusal arms a "refuse" fault: it waits for its service's state, then closes
// the host's WinRM listeners for its duration.
func (f *faultSet) addRefusal(w WinRMFault) error {
	if w.DurationMS <= 0 {
		return fmt.Errorf("%w: winrm_fault: %q needs duration_ms > 0", ErrBadAction, FaultRefuse)
	}
	if w.Request != "" || (w.Service == "") != (w.State == "") || w.Operation != "" && w.Service != "" {
		return fmt.Errorf("%w: winrm_fault: %q is the host's, not a request's: give no request, and service with state, or an operation, or neither",
			ErrBadAction, FaultRefuse)
	}
	if w.Operation != "" {
		// Armed by a command of the operation (its After+1-th Send): the refusal
		// starts delay_ms later, at once with the command's own connection reset.
		f.mu.Lock()
		f.refusals = append(f.refusals, &w)
		f.mu.Unlock()
		return nil
	}
	if w.Service != "" {
		if _, err := f.model.ServiceState(w.Service); err != nil {
			return fmt.Errorf("%w: winrm_fault: %v", ErrBadAction, err)
		}
		if !slices.Contains([]string{contract.StateRunning, contract.StateStopped, contract.StateStartPending, contract.StateStopPending}, w.State) {
			return fmt.Errorf("%w: winrm_fault: %q is not a service state", ErrBadAction, w.State)
		}
	}
	f.mu.Lock()
	if f.stop == nil {
		f.stop = make(chan struct{})
	}
	stop, gates := f.stop, slices.Clone(f.gates)
	f.mu.Unlock()
	go func() {
		if w.Service != "" {
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				select {
				case <-stop:
					cancel()
				case <-ctx.Done():
				}
			}()
			err := f.model.WaitServiceState(ctx, w.Service, w.State)
			cancel()
			if err != nil {
				return // cleared, or the simulator stopped
			}
		}
		refuseAll(gates, time.Duration(w.DurationMS)*time.Millisecond, stop)
	}()
	return nil
}

// refuseAll closes every listener of gates for d (or until stop is closed).
func refuseAll(gates []*gateListener, d time.Duration, stop chan struct{}) {
	var wg sync.WaitGroup
	for _, g := range gates {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.refuse(d, stop)
		}()
	}
	wg.Wait()
}

// armedRefusal fires the "refuse" fault a Send of operation op arms, if any: the
// refusal starts DelayMS later. It reports whether the Send itself is lost (no
// delay: its connection is reset as the listeners close).
func (f *faultSet) armedRefusal(op string) (lost bool) {
	f.mu.Lock()
	var w *WinRMFault
	for i, r := range f.refusals {
		if r.Operation != op {
			continue
		}
		if r.seen++; r.seen <= r.After {
			continue
		}
		w = r
		f.refusals = slices.Delete(f.refusals, i, i+1)
		break
	}
	if w == nil {
		f.mu.Unlock()
		return false
	}
	if f.stop == nil {
		f.stop = make(chan struct{})
	}
	stop, gates := f.stop, slices.Clone(f.gates)
	f.mu.Unlock()
	go func() {
		if w.DelayMS > 0 {
			select {
			case <-time.After(time.Duration(w.DelayMS) * time.Millisecond):
			case <-stop:
				return
			}
		}
		refuseAll(gates, time.Duration(w.DurationMS)*time.Millisecond, stop)
	}()
	return w.DelayMS == 0
}

// requestInfo is what a request says of itself: its action and the key its
// operation is known by (the CommandId; for a Delete, which names only its shell,
// the ShellId). A Send teaches the operation of its command and shell.
func (f *faultSet) requestInfo(body []byte) (action, key string) {
	if m := reAction.FindSubmatch(body); m != nil {
		action = string(m[1])
	}
	var shellID string
	if m := reShellID.FindSubmatch(body); m != nil {
		shellID = strings.TrimSpace(string(m[1]))
	}
	if m := reCommandID.FindSubmatch(body); m != nil {
		key = string(m[1])
	} else if action == "Delete" {
		key = shellID
	}
	if action == "Send" && key != "" {
		if m := reStdin.FindSubmatch(body); m != nil {
			if raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(m[1]))); err == nil {
				if op := reOperation.FindSubmatch(raw); op != nil {
					f.mu.Lock()
					f.ops[key] = string(op[1])
					if shellID != "" {
						f.ops[shellID] = string(op[1])
					}
					f.mu.Unlock()
				}
			}
		}
	}
	return action, key
}

// match returns the fault to apply to a request, if any.
func (f *faultSet) match(action, cmdID string) *WinRMFault {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.faults {
		if w.Count >= 0 && w.fired >= w.Count {
			continue
		}
		if w.Request != "" && !strings.EqualFold(w.Request, action) {
			continue
		}
		if w.Operation != "" && f.ops[cmdID] != w.Operation {
			continue
		}
		if w.Service != "" {
			if st, err := f.model.ServiceState(w.Service); err != nil || !strings.EqualFold(st, w.State) {
				continue
			}
		}
		w.seen++
		if w.seen <= w.After {
			continue
		}
		w.fired++
		return w
	}
	return nil
}

// wrap is the WinRM endpoint's handler with the faults applied.
func (f *faultSet) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		action, cmdID := f.requestInfo(body)
		if action == "Send" {
			f.mu.Lock()
			op := f.ops[cmdID]
			f.mu.Unlock()
			if op != "" && f.armedRefusal(op) {
				f.inject(w, r, &WinRMFault{Fault: FaultReset}, nil)
				return
			}
		}
		if action == "Receive" {
			// A Receive's fault replaces its answer, which is lost as a dropped
			// connection loses it: the command has run (the exchange sent its stdin
			// first) and its output is gone. The fault is chosen when the answer is
			// ready, so a state filter sees the service as the command left it.
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			fault := f.match(action, cmdID)
			if fault == nil || fault.Fault == FaultSlow {
				if fault != nil {
					select {
					case <-time.After(time.Duration(fault.DelayMS) * time.Millisecond):
					case <-r.Context().Done():
						return
					}
				}
				for k, v := range rec.Header() {
					w.Header()[k] = v
				}
				w.WriteHeader(rec.Code)
				_, _ = w.Write(rec.Body.Bytes())
				return
			}
			f.inject(w, r, fault, nil)
			return
		}
		fault := f.match(action, cmdID)
		if fault == nil {
			next.ServeHTTP(w, r)
			return
		}
		f.inject(w, r, fault, next)
	})
}

// inject answers a request with its fault; next serves it after a slow fault.
func (f *faultSet) inject(w http.ResponseWriter, r *http.Request, fault *WinRMFault, next http.Handler) {
	{
		switch fault.Fault {
		case FaultReset:
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					resetConn(conn)
					return
				}
			}
			panic(http.ErrAbortHandler)
		case FaultHTTP500:
			w.Header().Set("Content-Type", "application/soap+xml;charset=UTF-8")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, `<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><s:Fault><s:Code><s:Value>s:Receiver</s:Value></s:Code>`+
				`<s:Reason><s:Text xml:lang="en-US">The WS-Management service cannot process the request (winsim: injected HTTP 500).</s:Text></s:Reason></s:Fault></s:Body></s:Envelope>`)
		case FaultHTTP401:
			w.Header().Set("WWW-Authenticate", "Negotiate")
			w.WriteHeader(http.StatusUnauthorized)
		case FaultHang:
			<-r.Context().Done()
		case FaultSlow:
			select {
			case <-time.After(time.Duration(fault.DelayMS) * time.Millisecond):
			case <-r.Context().Done():
				return
			}
			if next != nil {
				next.ServeHTTP(w, r)
			}
		}
	}
}

// resetConn closes the connection with a TCP reset (linger 0) where it can.
func resetConn(c net.Conn) {
	type netConner interface{ NetConn() net.Conn }
	raw := c
	for {
		nc, ok := raw.(netConner)
		if !ok {
			break
		}
		raw = nc.NetConn()
	}
	if tc, ok := raw.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
		_ = tc.Close()
		return
	}
	_ = c.Close()
}
