package remote

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/certs"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/ntlm"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/wsman"
)

const (
	testUser     = "Administrator"
	testPassword = "Pa55w.rd-for-tests"
)

// answer is what the test host prints for one operation.
type answer struct {
	stdout, stderr string
	code           int
	wait           <-chan struct{} // when set, the command blocks until it closes or its context ends
	// endless, when set, makes the command print stdout forever (until its context
	// ends or a write fails): a host that streams output without end.
	endless bool
}

// opHandler answers one decoded operation.
type opHandler func(op contract.Operation, params json.RawMessage) answer

// testHost is a real WS-Management endpoint (internal/winsim/wsman) on loopback whose
// executor accepts only the contract's command line and scripts, like the simulator.
type testHost struct {
	srv   *wsman.Server
	port  int
	caPEM []byte
	tls   bool

	mu    sync.Mutex
	calls []call
}

type call struct {
	user   string
	op     contract.Operation
	params json.RawMessage
}

func newTestHost(t testing.TB, useTLS bool, handle opHandler) *testHost {
	t.Helper()
	return newTestHostWith(t, hostOptions{tls: useTLS}, handle)
}

// hostOptions changes how a test host serves, to watch or disturb the connections.
type hostOptions struct {
	tls bool
	// listener, when set, wraps the loopback listener (to count connections).
	listener func(net.Listener) net.Listener
	// handler, when set, wraps the WS-Management handler (to change answers).
	handler func(http.Handler) http.Handler
	// logf receives the endpoint's log.
	logf func(format string, args ...any)
	// allowUnencrypted: AllowUnencrypted=true, for tests of Basic over plain HTTP;
	// without it the host refuses clear-text bodies, as Windows does by default.
	allowUnencrypted bool
}

func newTestHostWith(t testing.TB, o hostOptions, handle opHandler) *testHost {
	t.Helper()
	h := &testHost{tls: o.tls}
	h.srv = wsman.NewServer(wsman.Config{
		ComputerName: "SQL01",
		Lookup:       ntlm.OneAccount(testUser, testPassword),
		AllowBasic:   true,
		AllowNTLM:    true,
		// Windows' default unless a test of Basic over plain HTTP opts in (and its
		// client too, config("basic")). NTLM seals its bodies either way.
		AllowUnencrypted: o.allowUnencrypted,
		Logf:             o.logf,
		Executor: wsman.ExecutorFunc(func(ctx context.Context, cmd wsman.Command, stdout, stderr io.Writer) int {
			line := strings.TrimSpace(cmd.Command + " " + strings.Join(cmd.Arguments, " "))
			if line != contract.CommandLine() {
				_, _ = io.WriteString(stderr, "unexpected command line: "+line)
				return 1
			}
			in, err := contract.ReadInput(cmd.Stdin)
			if err != nil {
				_, _ = io.WriteString(stderr, err.Error())
				return 1
			}
			op, params, err := contract.DecodeInput(in)
			if err != nil {
				_, _ = io.WriteString(stderr, "#< CLIXML\r\n<Objs Version=\"1.1.0.1\" xmlns=\"http://schemas.microsoft.com/powershell/2004/04\"><S S=\"Error\">"+err.Error()+"_x000D__x000A_</S></Objs>")
				return 1
			}
			h.mu.Lock()
			h.calls = append(h.calls, call{user: cmd.User, op: op, params: params})
			h.mu.Unlock()
			a := handle(op, params)
			if a.wait != nil {
				select {
				case <-a.wait:
				case <-ctx.Done():
					return 1
				}
			}
			if a.endless {
				chunk := []byte(strings.Repeat("output without end ", 3000))
				for ctx.Err() == nil {
					if _, err := stdout.Write(chunk); err != nil {
						break
					}
				}
				return 1
			}
			_, _ = io.WriteString(stdout, a.stdout)
			_, _ = io.WriteString(stderr, a.stderr)
			return a.code
		}),
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen on loopback: %v", err)
	}
	h.port = l.Addr().(*net.TCPAddr).Port
	if o.listener != nil {
		l = o.listener(l)
	}
	served := make(chan error, 1)
	switch {
	case o.handler != nil:
		// Served like wsman.Server.Serve does, with the handler wrapped.
		hs := &http.Server{Handler: o.handler(h.srv.Handler()), ConnContext: h.srv.ConnContext}
		go func() { served <- hs.Serve(l) }()
		t.Cleanup(func() {
			_ = h.srv.Close()
			_ = hs.Close()
			if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
				t.Errorf("WinRM test server: %v", err)
			}
		})
		return h
	case o.tls:
		var cert tls.Certificate
		h.caPEM, cert = certs.ForLoopback(t, "sql01.example.test")
		go func() { served <- h.srv.ServeTLS(l, &tls.Config{Certificates: []tls.Certificate{cert}}) }()
	default:
		go func() { served <- h.srv.Serve(l) }()
	}
	t.Cleanup(func() {
		_ = h.srv.Close()
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("WinRM test server: %v", err)
		}
	})
	return h
}

func (h *testHost) config(auth string) Config {
	return Config{Host: "127.0.0.1", Port: h.port, Auth: auth, Username: testUser, Password: testPassword, Timeout: 20 * time.Second,
		AllowUnencrypted: auth == AuthBasic && !h.tls}
}

func (h *testHost) recorded() []call {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]call(nil), h.calls...)
}

// jsonOf is what a host printing the contract types through Go's json.Marshal sends
// (the simulator does so).
func jsonOf(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
