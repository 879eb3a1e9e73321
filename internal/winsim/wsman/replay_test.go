package wsman

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/xml"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/recordings"
)

// The simulator answers as Windows did: each WinRS recording of a real host
// (internal/winsim/recordings) is sent to the simulator, request by request, with
// the simulator's shell and command ids in place of the recorded ones, and every
// answer must have the recorded answer's Shape (its elements, stream names and End
// attributes, CommandState, exit code, fault code, subcode, FaultDetail, WSManFault
// Code and provider). The executor writes what the recorded command wrote, one
// write per recorded stream element, before the Receive that answered it.
//
// Where the simulator cannot answer as the recording does, the exchange is listed
// in notModelled with the reason FIDELITY.md gives.

// notModelled are recorded exchanges (file and index) the simulator does not
// reproduce, and why (FIDELITY.md, "Recorded WinRS answers").
var notModelled = map[string]string{
	// A Command of powershell.exe with WINRS_SKIP_CMD_SHELL=TRUE on Windows Server
	// 2008 R2: CreateProcess found no such file (the Shell cmd plugin's fault). The
	// simulator's executor runs only the provider's command line, through the cmd
	// shell, which finds powershell.exe on every supported Windows.
	"pypsrp/test_winrs_no_cmd_shell.yml#1": "a program that does not exist is not modelled",
}

// writeGroup is what the recorded command wrote before one Receive answered.
type writeGroup struct {
	writes []chunk
	exit   *int // the command returned with this code after the writes
}

// recordedGroup reads a recorded ReceiveResponse: its writes and exit code.
func recordedGroup(t *testing.T, body string) writeGroup {
	t.Helper()
	var env struct {
		Streams []struct {
			Name string `xml:"Name,attr"`
			Data string `xml:",chardata"`
		} `xml:"Body>ReceiveResponse>Stream"`
		Exit *int `xml:"Body>ReceiveResponse>CommandState>ExitCode"`
	}
	if err := xml.Unmarshal([]byte(body), &env); err != nil {
		t.Fatal(err)
	}
	g := writeGroup{exit: env.Exit}
	for _, s := range env.Streams {
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s.Data))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 0 {
			g.writes = append(g.writes, chunk{stderr: s.Name == "stderr", data: b})
		}
	}
	return g
}

var (
	recordedShellID   = regexp.MustCompile(`<rsp:ShellId>([^<]+)</rsp:ShellId>`)
	recordedCommandID = regexp.MustCompile(`<rsp:CommandId>([^<]+)</rsp:CommandId>`)
	messageIDRe       = regexp.MustCompile(`<(?:\w+:)?MessageID>([^<]*)</`)
)

func TestSimulatorAnswersAsRecorded(t *testing.T) {
	for _, name := range recordings.WinRS {
		t.Run(name, func(t *testing.T) {
			ex := recordings.Load(t, name)
			// The executor takes, per command, the groups the test hands it.
			commands := make(chan chan writeGroup, 4)
			env := newEnv(t, false, func(c *Config) {
				c.MaxOperationTimeout = 200 * time.Millisecond
				c.Executor = ExecutorFunc(func(ctx context.Context, cmd Command, stdout, stderr io.Writer) int {
					groups := <-commands
					for {
						select {
						case g := <-groups:
							for _, w := range g.writes {
								out := stdout
								if w.stderr {
									out = stderr
								}
								_, _ = out.Write(w.data)
							}
							if g.exit != nil {
								return *g.exit
							}
							groups <- writeGroup{} // written
						case <-ctx.Done():
							return 1
						}
					}
				})
			})
			ids := map[string]string{} // recorded id → the simulator's
			var groups chan writeGroup
			var simShell, simCommand string
			for i, e := range ex {
				key := name + "#" + strconv.Itoa(i)
				if why, ok := notModelled[key]; ok {
					t.Logf("%s (%s): not compared: %s", key, e.Action(), why)
					continue
				}
				req := e.Request
				for rec, sim := range ids {
					req = strings.ReplaceAll(req, rec, sim)
				}
				if e.Action() == "Command" {
					groups = make(chan writeGroup)
					commands <- groups
				}
				if e.Action() == "Receive" && e.Status == 200 && groups != nil {
					g := recordedGroup(t, e.Response)
					groups <- g
					if g.exit == nil {
						<-groups
					} else {
						waitFinished(t, env.srv, simShell, simCommand)
					}
				}
				status, reply := post(t, env, req)
				if status != e.Status {
					t.Fatalf("%s %s: the simulator answered HTTP %d, Windows %d:\n%s", key, e.Action(), status, e.Status, reply)
				}
				got, err := recordings.Shape(reply)
				if err != nil {
					t.Fatalf("%s: %v\n%s", key, err, reply)
				}
				want, err := recordings.Shape(e.Response)
				if err != nil {
					t.Fatalf("%s: the recording: %v", key, err)
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s %s: the simulator's answer has another shape than Windows':\nsimulator:\n  %s\nWindows:\n  %s",
						key, e.Action(), strings.Join(got, "\n  "), strings.Join(want, "\n  "))
				}
				switch e.Action() {
				case "Create":
					rec, sim := recordedShellID.FindStringSubmatch(e.Response), recordedShellID.FindStringSubmatch(reply)
					if rec != nil && sim != nil {
						ids[rec[1]], simShell = sim[1], sim[1]
					}
				case "Command":
					rec, sim := recordedCommandID.FindStringSubmatch(e.Response), recordedCommandID.FindStringSubmatch(reply)
					if rec != nil && sim != nil {
						ids[rec[1]], simCommand = sim[1], sim[1]
					}
				}
			}
		})
	}
}

// An OperationTimeout that is not a positive duration is refused with Windows'
// fault (pypsrp's test_psrp_is_alive_other_wsman_error: PT-1S), not served with the
// maximum; the simulator answers the cmd shell's Receive as Windows answered the
// PowerShell shell's Get.
func TestSimulatorRefusesATimeoutThatIsNotPositive(t *testing.T) {
	var want []string
	for _, e := range recordings.Load(t, "pypsrp/test_psrp_is_alive_other_wsman_error.yml") {
		if e.Status == 500 {
			want, _ = recordings.Shape(e.Response)
		}
	}
	if want == nil {
		t.Fatal("the recording holds no fault")
	}
	env := newEnv(t, false, nil)
	ex := recordings.Load(t, "pypsrp/test_winrs_fail_poll_process.yml")
	_, reply := post(t, env, ex[0].Request)
	shell := recordedShellID.FindStringSubmatch(reply)
	for _, timeout := range []string{"PT-1S", "PT0S", "soon"} {
		req := strings.ReplaceAll(ex[1].Request, "<wsman:OperationTimeout>PT20S<", "<wsman:OperationTimeout>"+timeout+"<")
		req = regexp.MustCompile(`(Name="ShellId">)[^<]+`).ReplaceAllString(req, "${1}"+shell[1])
		status, reply := post(t, env, req)
		got, _ := recordings.Shape(reply)
		if status != 500 || !slices.Equal(got, want) || !strings.Contains(reply, "invalid timeout field in the SOAP header: "+timeout+". ") {
			t.Errorf("OperationTimeout %s: HTTP %d\n  %s\nwant Windows' fault:\n  %s", timeout, status, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
	}
}

// post sends a recorded request to env with Basic authentication (the recordings
// are clear text).
func post(t *testing.T, env *testEnv, body string) (int, string) {
	t.Helper()
	body = messageIDRe.ReplaceAllString(body, "<wsa:MessageID>"+newMessageID()+"</")
	r, err := http.NewRequest(http.MethodPost, "http://"+env.host+":"+strconv.Itoa(env.port)+"/wsman", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.SetBasicAuth(testUser, testPassword)
	r.Header.Set("Content-Type", "application/soap+xml;charset=UTF-8")
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(bytes.TrimSpace(b))
}

// waitFinished waits until the command has returned (its exit code recorded).
func waitFinished(t *testing.T, srv *Server, shellID, commandID string) {
	t.Helper()
	sh, ok := srv.shells.lookup(shellID, testUser)
	if !ok {
		t.Fatalf("no shell %s", shellID)
	}
	c, ok := srv.shells.command(sh, commandID)
	if !ok {
		t.Fatalf("no command %s", commandID)
	}
	deadline := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		finished, changed := c.finished, c.changed
		c.mu.Unlock()
		if finished {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("command %s did not return within 10 s", commandID)
		}
	}
}
