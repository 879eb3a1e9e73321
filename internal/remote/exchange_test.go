package remote

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/recordings"
)

// startSim runs one simulated host (sql01) and returns the simulator.
func startSim(t *testing.T) *winsim.Sim {
	t.Helper()
	sim, err := winsim.Start(&winsim.Config{Hosts: []host.HostConfig{simConfig()}}, winsim.Options{CertDir: t.TempDir(), Logf: t.Logf})
	if err != nil {
		t.Fatalf("winsim.Start: %v", err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	return sim
}

func stats(t *testing.T, sim *winsim.Sim) winsim.HostStats {
	t.Helper()
	st, err := sim.Stats("sql01")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// simHTTPSHost is an NTLM client of the simulator's first host over HTTPS.
// winrmOf returns the WinRM client behind h, for tests that look at its connections.
func winrmOf(t *testing.T, h Host) *winrmHost {
	t.Helper()
	wh, ok := h.(*winrmHost)
	if !ok {
		t.Fatalf("remote.New returned a %T, want *winrmHost", h)
	}
	return wh
}

func simHTTPSHost(t *testing.T, sim *winsim.Sim) Host {
	t.Helper()
	info := sim.Info().Hosts[0]
	h, err := New(Config{Host: "127.0.0.1", Port: portOf(t, info.WinRMHTTPS), HTTPS: true, CACert: sim.CACertPEM(), TLSServerName: "sql01",
		Auth: "ntlm", Username: testUser, Password: testPassword, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// readCounted runs read_instance of the default instance and returns what the host
// counted for it.
func readCounted(t *testing.T, sim *winsim.Sim, h Host) winsim.HostStats {
	t.Helper()
	before := stats(t, sim)
	if r, err := h.ReadInstance(context.Background(), contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume}); err != nil || !r.Found {
		t.Fatalf("read_instance = %+v, %v", r, err)
	}
	return stats(t, sim).Since(before)
}

// A refresh's read_instance, as a fresh provider process makes it, costs the
// protocol's minimum: one connection with one TLS and one NTLM handshake, and at most
// six HTTP requests (the NTLM leg, Create, Command, one Send with the end of input,
// Receive, Delete; no second connection, no separate end-of-input, no Signal). A
// second operation to the same host on a new connection resumes the TLS session.
func TestRefreshUsesOneConnectionAndAtMostSixRequests(t *testing.T) {
	sim := startSim(t)
	h := simHTTPSHost(t, sim)
	d := readCounted(t, sim, h)
	if d.WinRMConnections != 1 || d.TLSHandshakes != 1 || d.NTLMHandshakes != 1 || d.PowerShellProcesses != 1 {
		t.Errorf("one read_instance: %d connections, %d TLS and %d NTLM handshakes, %d PowerShell processes; want 1 of each",
			d.WinRMConnections, d.TLSHandshakes, d.NTLMHandshakes, d.PowerShellProcesses)
	}
	// The authentication leg, Create, Command, Send and Delete: five requests, plus
	// the Receives. How many Receives a command takes depends on when its output is
	// ready (a Receive returns what is there and the client polls again), so a busy
	// machine may need a second one; the other requests do not vary.
	if other := d.WinRMRequests - d.WinRMReceives; other > 5 || d.WinRMReceives < 1 {
		t.Errorf("one read_instance took %d HTTP requests besides %d Receive(s), want at most 5 and at least one Receive",
			other, d.WinRMReceives)
	}
	if d.WinRMSignals != 0 {
		t.Errorf("the host saw %d Signal requests after a command that had exited, want none", d.WinRMSignals)
	}
	t.Logf("one read_instance: %+v", d)

	// A new connection to the same host (the idle one dropped) resumes TLS.
	for _, s := range winrmOf(t, h).idle {
		s.t.closeIdle()
	}
	d = readCounted(t, sim, h)
	if d.WinRMConnections != 1 || d.TLSResumed != 1 || d.TLSHandshakes != 0 {
		t.Errorf("second read_instance on a new connection: %d connections, %d full and %d resumed TLS handshakes; want 1, 0, 1",
			d.WinRMConnections, d.TLSHandshakes, d.TLSResumed)
	}
}

// On Windows a console-mode stdin (WINRS_CONSOLEMODE_STDIN=TRUE, what masterzen and
// pywinrm send by default) never reports end-of-input. The bootstrap of 0.1.0 read
// stdin to its end, so there it hangs until the operation times out; the framed
// bootstrap does not wait for the end, in either mode. In pipe mode the end arrives,
// so the old bootstrap finished there.
func TestOldBootstrapHangsInConsoleModeAndTheFramedOneDoesNot(t *testing.T) {
	s := newSimHost(t, simConfig())
	h, err := New(Config{Host: "127.0.0.1", Port: s.port, Auth: "ntlm", Username: testUser, Password: testPassword, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	wh := winrmOf(t, h)
	params := contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume}
	framed, err := contract.EncodeInput(contract.OpReadInstance, params)
	if err != nil {
		t.Fatal(err)
	}
	script, _ := contract.Script(contract.OpReadInstance)
	js, _ := json.Marshal(params)
	unframed := []byte(base64.StdEncoding.EncodeToString(js) + "\n" + script)
	oldArgs := slices.Concat(contract.CommandArgs()[:5], []string{contract.EncodeCommand(host.UnframedBootstrap())})

	run := func(args []string, stdin []byte, console bool, timeout time.Duration) runOutcome {
		t.Helper()
		sess, err := wh.borrow()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return sess.run(ctx, contract.Shell, args, stdin, console, func() {})
	}
	found := func(out runOutcome) bool {
		var r contract.ReadInstanceResult
		return out.err == nil && out.exitCode == 0 && json.Unmarshal(out.stdout, &r) == nil && r.Found
	}

	begin := time.Now()
	out := run(oldArgs, unframed, true, 2*time.Second)
	if !errors.Is(out.err, context.DeadlineExceeded) {
		t.Fatalf("old bootstrap, console-mode stdin: %+v (stderr %s); want it to hang until the operation's deadline", out, out.stderr)
	}
	if d := time.Since(begin); d < 2*time.Second {
		t.Fatalf("old bootstrap, console mode: ended after %v, before the deadline", d)
	}
	if out := run(contract.CommandArgs(), framed, true, 20*time.Second); !found(out) {
		t.Fatalf("framed bootstrap, console-mode stdin: %+v (stdout %s, stderr %s)", out, out.stdout, out.stderr)
	}
	if out := run(oldArgs, unframed, false, 20*time.Second); !found(out) {
		t.Fatalf("old bootstrap, pipe-mode stdin: %+v (stdout %s, stderr %s); pipe mode delivers end-of-input", out, out.stdout, out.stderr)
	}
	if out := run(contract.CommandArgs(), framed, false, 20*time.Second); !found(out) {
		t.Fatalf("framed bootstrap, pipe-mode stdin: %+v (stdout %s, stderr %s)", out, out.stdout, out.stderr)
	}
}

// Over HTTP a refresh's body is encrypted (MS-WSMV multipart/encrypted), which needs
// the security context complete first: the NTLM Authenticate leg goes with an empty
// body, as Windows' own client and pywinrm send it, and the five exchange messages
// follow. Seven requests on one connection with one NTLM handshake, no Signal.
func TestEncryptedRefreshOverHTTPUsesOneConnectionAndSevenRequests(t *testing.T) {
	sim := startSim(t)
	info := sim.Info().Hosts[0]
	h, err := New(Config{Host: "127.0.0.1", Port: portOf(t, info.WinRM), HTTPS: false,
		Auth: "ntlm", Username: testUser, Password: testPassword, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	d := readCounted(t, sim, h)
	if d.WinRMConnections != 1 || d.NTLMHandshakes != 1 || d.PowerShellProcesses != 1 || d.WinRMSignals != 0 {
		t.Errorf("one encrypted read_instance: %d connections, %d NTLM handshakes, %d PowerShell processes, %d Signals; want 1, 1, 1, 0",
			d.WinRMConnections, d.NTLMHandshakes, d.PowerShellProcesses, d.WinRMSignals)
	}
	if other := d.WinRMRequests - d.WinRMReceives; other > 6 || d.WinRMReceives < 1 {
		t.Errorf("one encrypted read_instance took %d HTTP requests besides %d Receive(s), want at most 6 (2 NTLM legs, Create, Command, Send, Delete) and at least one Receive",
			other, d.WinRMReceives)
	}
	t.Logf("one encrypted read_instance over HTTP: %+v", d)
}

// quotaOnCreate answers the first refusals shell Creates with fault (HTTP 500, as
// Windows), then lets them through, counting every Create.
func quotaOnCreate(fault string, refusals int32, creates *atomic.Int32) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte("transfer/Create<")) && creates.Add(1) <= refusals {
				w.Header().Set("Content-Type", "application/soap+xml;charset=UTF-8")
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = io.WriteString(w, fault)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// The user's shell quota (WSManFault 2150859173, as a real host answered it:
// cerebrum's recording) clears when one of the user's shells closes, and a refused
// Create ran nothing: every operation, restart_instance included, asks again after
// a backoff and goes on once a shell opens; a quota that does not clear within
// shellQuotaWait fails naming the fault, MaxShellsPerUser and how to raise it or
// close the shells, without being asked again by the operation's retries.
func TestShellQuotaWaitedOut(t *testing.T) {
	fault := recordings.Read(t, "cerebrum/quota_limit_fault.xml")
	wait, backoff := shellQuotaWait, shellQuotaBackoff
	t.Cleanup(func() { shellQuotaWait, shellQuotaBackoff = wait, backoff })
	shellQuotaWait, shellQuotaBackoff = 2*time.Second, func(int) time.Duration { return 50 * time.Millisecond }

	for name, tc := range map[string]struct {
		refusals int32
		ok       bool
	}{
		"clears after two refusals": {refusals: 2, ok: true},
		"does not clear":            {refusals: 1 << 30},
	} {
		t.Run(name, func(t *testing.T) {
			var creates atomic.Int32
			th := newTestHostWith(t, hostOptions{allowUnencrypted: true, handler: quotaOnCreate(fault, tc.refusals, &creates)},
				func(op contract.Operation, _ json.RawMessage) answer {
					if op == contract.OpRestartInstance {
						return answer{stdout: jsonOf(t, contract.RestartInstanceResult{})}
					}
					return answer{stdout: jsonOf(t, sampleReadInstance())}
				})
			h, err := New(th.config(AuthBasic))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for _, op := range []struct {
				name string
				run  func() error
			}{
				{"read_instance", func() error {
					_, err := h.ReadInstance(ctx, contract.ReadInstanceParams{Instance: "MSSQLSERVER"})
					return err
				}},
				{"restart_instance", func() error {
					_, err := h.RestartInstance(ctx, contract.RestartInstanceParams{Instance: "MSSQLSERVER"})
					return err
				}},
			} {
				creates.Store(0)
				start := time.Now()
				err := op.run()
				if tc.ok {
					if err != nil || creates.Load() != tc.refusals+1 {
						t.Fatalf("%s: %v after %d Creates, want success after %d", op.name, err, creates.Load(), tc.refusals+1)
					}
					continue
				}
				var re *Error
				if !errors.As(err, &re) || re.Fault != faultShellQuota || Transient(err) {
					t.Fatalf("%s: error %v, want the quota fault, not transient", op.name, err)
				}
				if took := time.Since(start); took < shellQuotaWait-200*time.Millisecond || took > shellQuotaWait+5*time.Second {
					t.Errorf("%s: failed after %v, want about shellQuotaWait (%v)", op.name, took, shellQuotaWait)
				}
				if n := creates.Load(); n < 3 {
					t.Errorf("%s: %d Creates, want the shell asked for again", op.name, n)
				}
				for _, want := range []string{"127.0.0.1", "maximum number of 5 concurrent shells", "WSManFault 2150859173"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("%s: error %q does not say %q", op.name, err, want)
					}
				}
				for _, want := range []string{"MaxShellsPerUser", `winrm set winrm/config/winrs @{MaxShellsPerUser="50"}`, "Get-WSManInstance -ResourceURI shell -Enumerate", "IdleTimeout"} {
					if !strings.Contains(re.Hint, want) {
						t.Errorf("%s: hint %q does not say %q", op.name, re.Hint, want)
					}
				}
			}
		})
	}
}

// The operation's deadline ending the wait for a shell under the quota is said as
// the deadline, not as a quota that did not clear within shellQuotaWait.
func TestShellQuotaWaitEndsWithTheDeadline(t *testing.T) {
	fault := recordings.Read(t, "cerebrum/quota_limit_fault.xml")
	wait, backoff := shellQuotaWait, shellQuotaBackoff
	t.Cleanup(func() { shellQuotaWait, shellQuotaBackoff = wait, backoff })
	shellQuotaWait, shellQuotaBackoff = time.Minute, func(int) time.Duration { return 10 * time.Second }
	var creates atomic.Int32
	th := newTestHostWith(t, hostOptions{allowUnencrypted: true, handler: quotaOnCreate(fault, 1<<30, &creates)},
		func(contract.Operation, json.RawMessage) answer {
			return answer{stdout: jsonOf(t, sampleReadInstance())}
		})
	h, err := New(th.config(AuthBasic))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once the first Create was refused: the session is then in its backoff.
		for creates.Load() == 0 {
			runtime.Gosched()
		}
		cancel()
	}()
	_, err = h.ReadInstance(ctx, contract.ReadInstanceParams{Instance: "MSSQLSERVER"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("read_instance whose context ended during the quota's backoff: %v, want the context's end", err)
	}
	if strings.Contains(err.Error(), "MaxShellsPerUser") {
		t.Errorf("error %q blames the quota's wait, which the deadline cut short", err)
	}
}
