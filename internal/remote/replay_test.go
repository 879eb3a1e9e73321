package remote

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/xml"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/recordings"
)

// Windows' own answers, as other clients' test suites recorded them from real hosts
// (internal/winsim/recordings), replayed to the client: masterzen/winrm on this
// package's transport and exchange reads each as Windows meant it.

// replayHost answers each request with the recording's next answer to a request of
// the same action (Create, Command, Send, Receive, Delete), its RelatesTo set to the
// request's MessageID. A Send the recording lacks (the client always sends its
// stdin) gets the SendResponse a host answered in pypsrp's test_winrs_send.
type replayHost struct {
	t       *testing.T
	mu      sync.Mutex
	next    map[string][]recordings.Exchange
	creates atomic.Int32
	port    int
}

var messageIDRe = regexp.MustCompile(`<(?:\w+:)?MessageID>([^<]*)</`)
var relatesToRe = regexp.MustCompile(`(<(?:\w+:)?RelatesTo>)[^<]*(</)`)

func startReplay(t *testing.T, name string) *replayHost {
	t.Helper()
	h := &replayHost{t: t, next: map[string][]recordings.Exchange{}}
	for _, e := range recordings.Load(t, name) {
		h.next[e.Action()] = append(h.next[e.Action()], e)
	}
	if len(h.next["Send"]) == 0 {
		for _, e := range recordings.Load(t, "pypsrp/test_winrs_send.yml") {
			if e.Action() == "Send" {
				h.next["Send"] = append(h.next["Send"], e, e, e, e)
				break
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.port = l.Addr().(*net.TCPAddr).Port
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return h
}

func (h *replayHost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	act := recordings.Exchange{Request: string(body)}.Action()
	if act == "Create" {
		h.creates.Add(1)
	}
	h.mu.Lock()
	q := h.next[act]
	var e recordings.Exchange
	ok := len(q) > 0
	if ok {
		e, h.next[act] = q[0], q[1:]
	}
	h.mu.Unlock()
	if !ok {
		h.t.Errorf("the client sent a %s the recording has no answer to", act)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	reply := e.Response
	if m := messageIDRe.FindSubmatch(body); m != nil {
		reply = relatesToRe.ReplaceAllString(reply, "${1}"+string(m[1])+"${2}")
	}
	w.Header().Set("Content-Type", "application/soap+xml;charset=UTF-8")
	w.WriteHeader(e.Status)
	_, _ = io.WriteString(w, reply)
}

// replayClient is a host of this package on h (Basic over HTTP, as the
// recordings' clear-text bodies need) and one session of it.
func replayClient(t *testing.T, h *replayHost) (*winrmHost, *session) {
	t.Helper()
	host, err := New(Config{Host: "127.0.0.1", Port: h.port, Auth: AuthBasic, Username: testUser, Password: testPassword,
		AllowUnencrypted: true, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	wh := winrmOf(t, host)
	s, err := wh.newSession()
	if err != nil {
		t.Fatal(err)
	}
	return wh, s
}

// recordedOutput is what the recording's ReceiveResponses carry for its first
// command (up to its Done): stdout, stderr and the exit code.
func recordedOutput(t *testing.T, ex []recordings.Exchange) (stdout, stderr string, code int) {
	t.Helper()
	type stream struct {
		Name string `xml:"Name,attr"`
		Data string `xml:",chardata"`
	}
	var env struct {
		Streams []stream `xml:"Body>ReceiveResponse>Stream"`
		Exit    *int     `xml:"Body>ReceiveResponse>CommandState>ExitCode"`
	}
	var out, errb bytes.Buffer
	for _, e := range ex {
		if e.Action() != "Receive" || e.Status != 200 {
			continue
		}
		env.Streams, env.Exit = nil, nil
		if err := xml.Unmarshal([]byte(e.Response), &env); err != nil {
			t.Fatal(err)
		}
		for _, s := range env.Streams {
			b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s.Data))
			if err != nil {
				t.Fatal(err)
			}
			if s.Name == "stderr" {
				errb.Write(b)
			} else {
				out.Write(b)
			}
		}
		if env.Exit != nil {
			return out.String(), errb.String(), *env.Exit
		}
	}
	t.Fatal("the recording's command never reports Done")
	return "", "", 0
}

// A command's output as Windows answered it (one stream element per write, empty
// End="true" elements, TimedOut faults while a command prints nothing) is read
// whole, with its exit code.
func TestReplayRecordedCommands(t *testing.T) {
	for _, name := range []string{
		"pypsrp/test_winrs_standard.yml", "pypsrp/test_winrs_stderr_rc.yml", "pypsrp/test_winrs_unicode.yml",
		"pypsrp/test_winrs_send.yml", "pypsrp/test_winrs_operation_timeout.yml", "pypsrp/test_client_execute_cmd.yml",
	} {
		t.Run(name, func(t *testing.T) {
			h := startReplay(t, name)
			_, s := replayClient(t, h)
			wantOut, wantErr, wantCode := recordedOutput(t, recordings.Load(t, name))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			released := make(chan struct{})
			out := s.run(ctx, "cmd.exe", nil, []byte("x"), false, func() { close(released) })
			<-released
			if out.err != nil || string(out.stdout) != wantOut || string(out.stderr) != wantErr || out.exitCode != wantCode {
				t.Fatalf("replayed: stdout %q, stderr %q, exit %d, err %v\nrecorded: stdout %q, stderr %q, exit %d",
					out.stdout, out.stderr, out.exitCode, out.err, wantOut, wantErr, wantCode)
			}
		})
	}
}

// Windows' "The system cannot find the file specified" from the Shell cmd plugin
// (pypsrp's test_winrs_no_cmd_shell: a Command of powershell.exe without the cmd
// shell) is the host's answer: a read opens one shell and fails at once, naming
// the host, the fault and the plugin.
func TestReplayPluginFaultOpensOneShell(t *testing.T) {
	h := startReplay(t, "pypsrp/test_winrs_no_cmd_shell.yml")
	wh, _ := replayClient(t, h)
	h.creates.Store(0) // replayClient's own session opened none; only the read counts
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := wh.ReadInstance(ctx, contract.ReadInstanceParams{Instance: "MSSQLSERVER"})
	if err == nil || Transient(err) {
		t.Fatalf("read on the plugin's fault: %v (Transient %v), want the host's answer", err, Transient(err))
	}
	if n := h.creates.Load(); n != 1 {
		t.Errorf("%d shells opened, want 1", n)
	}
	for _, want := range []string{"127.0.0.1", "The system cannot find the file specified.", "WSManFault 2147942402 from the Shell cmd plugin"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// Every fault the recordings hold is classified by its WSManFault code: an
// operation timeout is polled again, a command or shell that is gone is transient,
// the rest (the plugin's, the service's) is the host's answer.
func TestReplayRecordedFaultsClassified(t *testing.T) {
	type recorded struct{ name, body string }
	var faults []recorded
	for _, name := range append(recordings.WinRS, "pypsrp/test_psrp_is_alive_invalid_selectors.yml", "pypsrp/test_psrp_is_alive_other_wsman_error.yml") {
		for _, e := range recordings.Load(t, name) {
			if e.Status == 500 {
				faults = append(faults, recorded{name + " " + e.Action(), e.Response})
			}
		}
	}
	faults = append(faults, recorded{"cerebrum quota", recordings.Read(t, "cerebrum/quota_limit_fault.xml")},
		recorded{"masterzen operation timeout", recordings.Read(t, "masterzen-winrm/operationTimeoutResponse.xml")})
	codeRe := regexp.MustCompile(`WSManFault[^>]*Code="(\d+)"`)
	wh := &winrmHost{cfg: Config{Host: "sql01.example.test", Username: "deploy", Auth: AuthNTLM}, port: 5985}
	for _, f := range faults {
		m := codeRe.FindStringSubmatch(f.body)
		if m == nil {
			t.Fatalf("%s: no WSManFault code in the recorded fault", f.name)
		}
		err := &httpStatusError{Status: 500, SOAP: true, Body: f.body}
		e := wh.classify(err)
		wantTransient := m[1] == faultOperationTimeout || m[1] == faultShellGone
		if e.Fault != m[1] || Transient(e) != wantTransient || isOperationTimeout(err) != (m[1] == faultOperationTimeout) {
			t.Errorf("%s (WSManFault %s): Fault %q, Transient %v, operation timeout %v", f.name, m[1], e.Fault, Transient(e), isOperationTimeout(err))
		}
		if !strings.Contains(e.Message, "WSManFault "+m[1]) || strings.Contains(e.Message, "<") {
			t.Errorf("%s: message %q does not name WSManFault %s (or leaks XML)", f.name, e.Message, m[1])
		}
	}
}

// The stderr powershell.exe wrote for "fake cmdlet" (pywinrm's recording, with the
// "Preparing modules for first use." progress records Windows PowerShell emits)
// decodes to the error record's lines, pywinrm's expected text, without progress.
func TestReplayRecordedCLIXMLStderr(t *testing.T) {
	got := DecodeCLIXML(recordings.Read(t, "pywinrm/clixml_stderr_fake_cmdlet.txt"))
	want := recordings.Read(t, "pywinrm/clixml_stderr_fake_cmdlet.expected.txt")
	// tidyLines trims each line's end (pywinrm keeps the space after "Check").
	var lines []string
	for _, l := range strings.Split(strings.ReplaceAll(want, "\r\n", "\n"), "\n") {
		lines = append(lines, strings.TrimRight(l, " "))
	}
	if w := strings.TrimSpace(strings.Join(lines, "\n")); got != w {
		t.Fatalf("decoded:\n%q\nrecorded:\n%q", got, w)
	}
}
