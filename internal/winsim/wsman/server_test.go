package wsman

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/masterzen/winrm"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/certs"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/ntlm"
)

const (
	testUser     = "Administrator"
	testPassword = "S3cret!pass"
	testHost     = "SQL01"
)

// testEnv is one endpoint on loopback with a small executor:
//
//	whoami          prints the authenticated user
//	exit N          prints "out" and "err", exits N
//	cat             copies stdin to stdout
//	late            waits until a Receive timed out, then prints "late output"
//	block           waits for its context to end, reports it, exits 130
type testEnv struct {
	srv      *Server
	host     string
	port     int
	https    bool
	caPEM    []byte
	timedOut chan struct{} // closed after the first Receive timed out
	started  chan string   // the command line of every command the executor starts
	canceled chan string   // commands whose context ended

	logMu   sync.Mutex
	logDone bool
	once    sync.Once
}

func newEnv(t *testing.T, useTLS bool, tweak func(*Config)) *testEnv {
	t.Helper()
	env := &testEnv{
		host:     "127.0.0.1",
		https:    useTLS,
		timedOut: make(chan struct{}),
		started:  make(chan string, 16),
		canceled: make(chan string, 16),
	}
	cfg := Config{
		ComputerName: testHost,
		Lookup:       ntlm.OneAccount(testUser, testPassword),
		AllowBasic:   true,
		AllowNTLM:    true,
		// These tests exercise the protocol with Basic and unsealed NTLM over HTTP
		// too: they opt in to clear text. Windows' default (false) is tested below.
		AllowUnencrypted: true,
		Executor:         ExecutorFunc(env.execute),
		Logf:             func(format string, args ...any) { env.logf(t, format, args...) },
	}
	if tweak != nil {
		tweak(&cfg)
	}
	env.srv = NewServer(cfg)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen on loopback: %v", err)
	}
	env.port = l.Addr().(*net.TCPAddr).Port
	served := make(chan error, 1)
	if useTLS {
		caPEM, cert := certs.ForLoopback(t, "localhost")
		env.caPEM = caPEM
		go func() { served <- env.srv.ServeTLS(l, &tls.Config{Certificates: []tls.Certificate{cert}}) }()
	} else {
		go func() { served <- env.srv.Serve(l) }()
	}
	t.Cleanup(func() {
		if err := env.srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve returned %v, want nil after Close", err)
		}
		env.logMu.Lock()
		env.logDone = true
		env.logMu.Unlock()
	})
	return env
}

func (env *testEnv) logf(t *testing.T, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if strings.Contains(msg, "timed out") {
		env.once.Do(func() { close(env.timedOut) })
	}
	env.logMu.Lock()
	defer env.logMu.Unlock()
	if !env.logDone {
		t.Log(msg)
	}
}

func (env *testEnv) execute(ctx context.Context, cmd Command, stdout, stderr io.Writer) int {
	line := strings.TrimSpace(cmd.Command + " " + strings.Join(cmd.Arguments, " "))
	env.started <- line
	fields := strings.Fields(line)
	switch fields[0] {
	case "whoami":
		fmt.Fprint(stdout, cmd.User)
		return 0
	case "exit":
		code, _ := strconv.Atoi(fields[1])
		fmt.Fprint(stdout, "out")
		fmt.Fprint(stderr, "err")
		return code
	case "cat":
		// "cat N" copies N bytes of stdin; "cat" copies to the end of input, which a
		// console-mode stdin never reaches.
		var err error
		if len(fields) > 1 {
			n, _ := strconv.Atoi(fields[1])
			_, err = io.CopyN(stdout, cmd.Stdin, int64(n))
		} else {
			_, err = io.Copy(stdout, cmd.Stdin)
		}
		if err != nil {
			fmt.Fprint(stderr, err)
			return 1
		}
		return 0
	case "late":
		select {
		case <-env.timedOut:
			fmt.Fprint(stdout, "late output")
			return 0
		case <-ctx.Done():
			return 1
		}
	case "block":
		<-ctx.Done()
		env.canceled <- line
		return 130
	}
	fmt.Fprintf(stderr, "'%s' is not recognized as an internal or external command", fields[0])
	return 1
}

// client is a masterzen/winrm client for env.
func (env *testEnv) client(t *testing.T, user, password string, params *winrm.Parameters) *winrm.Client {
	t.Helper()
	if params == nil {
		params = winrm.NewParameters("PT60S", "en-US", 153600)
	}
	endpoint := winrm.NewEndpoint(env.host, env.port, env.https, false, env.caPEM, nil, nil, 30*time.Second)
	c, err := winrm.NewClientWithParameters(endpoint, user, password, params)
	if err != nil {
		t.Fatalf("winrm.NewClientWithParameters: %v", err)
	}
	return c
}

func ntlmParams() *winrm.Parameters {
	p := winrm.NewParameters("PT60S", "en-US", 153600)
	p.TransportDecorator = func() winrm.Transporter { return &winrm.ClientNTLM{} }
	return p
}

// run runs command with masterzen's client. Without stdin it sends none: with
// stdin, even empty, masterzen closes the command's input (a Send with End) while
// its Receive runs, two requests at once, and Azure/go-ntlmssp, which masterzen's
// ClientNTLM uses, may then send an NTLM handshake's NEGOTIATE on one connection
// and its AUTHENTICATE on another (Azure/go-ntlmssp#43, masterzen/winrm#142): a 401
// from Windows as from the simulator, one run in a few hundred.
func run(t *testing.T, c *winrm.Client, command, stdin string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut strings.Builder
	var err error
	if stdin == "" {
		code, err = c.RunWithContext(ctx, command, &out, &errOut)
	} else {
		code, err = c.RunWithContextWithInput(ctx, command, &out, &errOut, strings.NewReader(stdin))
	}
	if err != nil {
		t.Fatalf("run %q: %v", command, err)
	}
	return out.String(), errOut.String(), code
}

func TestMasterzenBasicHTTP(t *testing.T) {
	env := newEnv(t, false, nil)
	c := env.client(t, testUser, testPassword, nil)

	if out, _, code := run(t, c, "whoami", ""); out != testUser || code != 0 {
		t.Errorf("whoami = %q, exit %d; want %q, exit 0", out, code, testUser)
	}
	out, errOut, code := run(t, c, "exit 3", "")
	if out != "out" || errOut != "err" || code != 3 {
		t.Errorf("exit 3 = stdout %q, stderr %q, exit %d; want out, err, 3", out, errOut, code)
	}
}

func TestMasterzenBasicDomainUser(t *testing.T) {
	env := newEnv(t, false, nil)
	c := env.client(t, testHost+`\`+testUser, testPassword, nil)
	if out, _, _ := run(t, c, "whoami", ""); out != testHost+`\`+testUser {
		t.Errorf("whoami = %q, want the login as the client sent it, %q", out, testHost+`\`+testUser)
	}
}

func TestMasterzenBasicHTTPS(t *testing.T) {
	env := newEnv(t, true, nil)
	c := env.client(t, testUser, testPassword, nil)
	if out, _, code := run(t, c, "exit 0", ""); out != "out" || code != 0 {
		t.Errorf("exit 0 over HTTPS = %q, exit %d; want out, exit 0", out, code)
	}
}

func TestMasterzenHTTPSRejectsUnknownCA(t *testing.T) {
	env := newEnv(t, true, nil)
	env.caPEM = nil // trust only the system roots
	c := env.client(t, testUser, testPassword, nil)
	_, _, _, err := c.RunWithContextWithString(context.Background(), "whoami", "")
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("run with an untrusted certificate: err = %v, want a certificate error", err)
	}
}

func TestMasterzenNTLM(t *testing.T) {
	env := newEnv(t, false, nil)
	c := env.client(t, testUser, testPassword, ntlmParams())
	// Azure/go-ntlmssp fills in the domain from the server's challenge.
	if out, _, code := run(t, c, "whoami", ""); !sameUser(out, testUser) || code != 0 {
		t.Errorf("whoami over NTLM = %q, exit %d; want %q (with or without a domain), exit 0", out, code, testUser)
	}
	if _, _, code := run(t, c, "exit 7", ""); code != 7 {
		t.Errorf("exit 7 over NTLM: exit %d", code)
	}
}

// With AllowUnencrypted=false (Windows' default) plain-HTTP clients that do not
// seal are refused: Basic credentials with 401, an unsealed body on an NTLM
// connection with HTTP 500 and no body (masterzen's ClientNTLM).
func TestMasterzenUnencryptedRefused(t *testing.T) {
	env := newEnv(t, false, func(c *Config) { c.AllowUnencrypted = false })
	for name, tc := range map[string]struct {
		params *winrm.Parameters
		want   string
	}{"basic": {nil, "401"}, "ntlm": {ntlmParams(), "500"}} {
		_, _, _, err := env.client(t, testUser, testPassword, tc.params).RunWithContextWithString(context.Background(), "whoami", "")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s without sealing over HTTP, encryption required: err = %v, want HTTP %s", name, err, tc.want)
		}
	}
	select {
	case cmd := <-env.started:
		t.Errorf("an unencrypted request ran a command: %q", cmd)
	default:
	}
}

func TestMasterzenNTLMOnly(t *testing.T) {
	env := newEnv(t, false, func(c *Config) { c.AllowBasic = false })
	if _, _, _, err := env.client(t, testUser, testPassword, nil).RunWithContextWithString(context.Background(), "whoami", ""); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("Basic against an NTLM-only endpoint: err = %v, want a 401", err)
	}
	if out, _, _ := run(t, env.client(t, testUser, testPassword, ntlmParams()), "whoami", ""); !sameUser(out, testUser) {
		t.Errorf("whoami over NTLM = %q", out)
	}
}

func TestMasterzenWrongPassword(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params *winrm.Parameters
	}{{"basic", nil}, {"ntlm", ntlmParams()}} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t, false, nil)
			c := env.client(t, testUser, "wrong", tc.params)
			_, _, _, err := c.RunWithContextWithString(context.Background(), "whoami", "")
			if err == nil || !strings.Contains(err.Error(), "401") {
				t.Fatalf("wrong password: err = %v, want an error with 401", err)
			}
			select {
			case cmd := <-env.started:
				t.Errorf("a command ran without valid credentials: %q", cmd)
			default:
			}
		})
	}
}

func TestMasterzenLargeStdin(t *testing.T) {
	env := newEnv(t, false, nil)
	c := env.client(t, testUser, testPassword, nil)
	// Three Send chunks at the default envelope size (152600 bytes each).
	var b strings.Builder
	for i := 0; b.Len() < 400_000; i++ {
		fmt.Fprintf(&b, "line %d of the script\n", i)
	}
	out, errOut, code := run(t, c, fmt.Sprintf("cat %d", b.Len()), b.String())
	if out != b.String() || code != 0 {
		t.Errorf("cat returned %d bytes (stderr %q, exit %d), want the %d bytes sent", len(out), errOut, code, b.Len())
	}
}

// masterzen sends WINRS_CONSOLEMODE_STDIN=TRUE: as on Windows, its End="true" never
// reaches a reader, so a command that reads stdin to its end runs until the client
// gives up and terminates it.
func TestConsoleModeStdinNeverEnds(t *testing.T) {
	env := newEnv(t, false, nil)
	c := env.client(t, testUser, testPassword, winrm.NewParameters("PT1S", "en-US", 153600))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, _, _, err := c.RunWithContextWithString(ctx, "cat", "all of stdin\n")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cat to the end of a console-mode stdin = %v; want it to run until the deadline", err)
	}
}

func TestMasterzenOutputAfterOperationTimeout(t *testing.T) {
	env := newEnv(t, false, nil)
	c := env.client(t, testUser, testPassword, winrm.NewParameters("PT1S", "en-US", 153600))
	out, _, code := run(t, c, "late", "")
	if out != "late output" || code != 0 {
		t.Errorf("late = %q, exit %d; want the output that came after a Receive timed out", out, code)
	}
	select {
	case <-env.timedOut:
	default:
		t.Error("no Receive timed out, the test proves nothing")
	}
}

func TestMasterzenContextCancelSignalsCommand(t *testing.T) {
	env := newEnv(t, false, nil)
	c := env.client(t, testUser, testPassword, winrm.NewParameters("PT2S", "en-US", 153600))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, _, _, err := c.RunWithContextWithString(ctx, "block", "")
		done <- err
	}()
	waitFor(t, env.started, "block")
	cancel()
	waitFor(t, env.canceled, "block")
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled run returned %v, want context.Canceled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the cancelled run did not return")
	}
}

func TestMasterzenUnknownShell(t *testing.T) {
	env := newEnv(t, false, nil)
	c := env.client(t, testUser, testPassword, nil)
	_, err := c.NewShell("0A1B2C3D-0000-0000-0000-000000000000").ExecuteWithContext(context.Background(), "whoami")
	// masterzen drops the HTTP status of a SOAP fault and reports the fault body.
	var cmdErr *winrm.ExecuteCommandError
	if !errors.As(err, &cmdErr) {
		t.Fatalf("Command in an unknown shell: err = %v, want a winrm.ExecuteCommandError", err)
	}
	for _, want := range []string{"w:InvalidSelectors", `Code="2150858843"`, "ShellId 0A1B2C3D-0000-0000-0000-000000000000 failed because the shell was not found"} {
		if !strings.Contains(cmdErr.Body, want) {
			t.Errorf("fault %q lacks %q", cmdErr.Body, want)
		}
	}
}

func TestUnauthorizedShape(t *testing.T) {
	env := newEnv(t, false, nil)
	req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/wsman", env.port), strings.NewReader("<x/>"))
	req.Header.Set("Content-Type", "application/soap+xml;charset=UTF-8")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	got := resp.Header.Values("WWW-Authenticate")
	if resp.StatusCode != 401 || len(body) != 0 || len(got) != 2 || got[0] != "Negotiate" || got[1] != `Basic realm="WSMAN"` {
		t.Errorf("anonymous POST: %d, WWW-Authenticate %q, body %q; want 401, [Negotiate, Basic realm=\"WSMAN\"], empty", resp.StatusCode, got, body)
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"PT60S": time.Minute, "PT1.5S": 1500 * time.Millisecond, "PT5M0S": 5 * time.Minute, "P0DT0H1M0S": time.Minute,
	} {
		if got, err := parseDuration(in); err != nil || got != want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "60", "PT", "PTxS", "P1Y"} {
		if _, err := parseDuration(in); err == nil && in != "PT" {
			t.Errorf("parseDuration(%q) accepted a bad duration", in)
		}
	}
}

func waitFor(t *testing.T, ch <-chan string, want string) {
	t.Helper()
	select {
	case got := <-ch:
		if got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %q", want)
	}
}
