package remote

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/masterzen/winrm"
	"github.com/masterzen/winrm/soap"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/testhooks"
)

// The WinRS exchange of one operation, written for the fewest round trips on one
// connection (design/winrm-stdin-and-cost-model.md):
//
//	Create (the NTLM or Kerberos handshake rides on it) → Command (WINRS_CONSOLEMODE_STDIN=FALSE)
//	→ Send (all of stdin, End="true") → Receive until Done → Delete
//
// Every request goes out only after the previous answer, so one connection carries
// them all, and ctx bounds each. No Signal follows a command that reported Done: the
// Delete of the shell releases it. masterzen's message builders and parsers are used;
// its RunWithContextWithInput is not, since it sends stdin while it polls (a second
// connection), ends stdin in a separate Send and signals an exited command.

// session is what one operation uses at a time: its own transport (so its own
// connections), with the host's shared TLS session cache.
type session struct {
	t      *transport
	url    string
	params *winrm.Parameters
	// outputLimit, when set, replaces maxOutput (tests).
	outputLimit int
}

func (s *session) maxOutput() int {
	if s.outputLimit > 0 {
		return s.outputLimit
	}
	return maxOutput
}

func newSession(ep *winrm.Endpoint, params *winrm.Parameters, cfg Config, auth string, sessions tls.ClientSessionCache, kl *krbLogon) (*session, error) {
	t := newSecureTransport(cfg, auth)
	t.sessions = sessions
	t.krb = kl
	if err := t.Transport(ep); err != nil {
		return nil, err
	}
	return &session{t: t, url: t.url.String(), params: params}, nil
}

// maxOutput bounds what one operation may print (stdout and stderr together). The
// scripts print a few kilobytes of JSON; more than this is an endpoint that is not
// running them as written (or something on the host writing to the output), and
// reading on would only grow the provider's memory.
const maxOutput = 16 << 20

// outputLimitError ends an operation whose output passed maxOutput.
type outputLimitError struct {
	limit, read int
}

func (e *outputLimitError) Error() string {
	return fmt.Sprintf("the command's output passed %d MiB (%d bytes read)", e.limit>>20, e.read)
}

// cleanupTimeout bounds the Delete that releases a shell after a failed or cancelled
// operation (it runs in the background).
const cleanupTimeout = 30 * time.Second

// run executes command with args in a new shell, sends stdin whole with
// end-of-input, and collects the output until the command is done. consoleStdin
// chooses WINRS_CONSOLEMODE_STDIN (false: a pipe, whose end the command sees).
// done is called once the session is free again (after a background cleanup, if any).
func (s *session) run(ctx context.Context, command string, args []string, stdin []byte, consoleStdin bool, done func()) runOutcome {
	return s.runWith(ctx, command, args, stdin, consoleStdin, nil, done)
}

// firstProgressWithin bounds the wait for a command's first progress line
// (runWith): the prepared line of a gated restart comes once its powershell.exe
// started, its checks ran and its guard started (design/restart.md: the guard's
// start record is waited for at most contract.GuardStartSeconds per launcher, and
// there are two), seconds on any host. (Divided by testhooks.TimeDivisor, which is 1
// outside the provider's acceptance tests.)
var firstProgressWithin = (30*time.Second + 2*contract.GuardStartSeconds*time.Second) / time.Duration(testhooks.TimeDivisor())

// progressFunc is told each progress line (contract.ParseProgress) of the command's
// stdout as it comes; what it returns is sent as the rest of stdin, with
// end-of-input, and its error ends the command (its shell deleted).
type progressFunc func(line string) ([]byte, error)

// runWith is run; with onProgress, stdin stays open after it is sent, until
// onProgress returns the rest (contract/restart_gate.go: the go line).
func (s *session) runWith(ctx context.Context, command string, args []string, stdin []byte, consoleStdin bool, onProgress progressFunc, done func()) runOutcome {
	var stdout, stderr bytes.Buffer
	fail := func(err error) runOutcome {
		return runOutcome{exitCode: -1, err: err, stdout: stdout.Bytes(), stderr: stderr.Bytes()}
	}
	resp, err := s.openShell(ctx)
	if err != nil {
		done()
		return fail(err)
	}
	shellID, err := winrm.ParseOpenShellResponse(resp)
	if err != nil {
		done()
		return fail(err)
	}
	// From here a failure leaves a shell on the host: delete it in the background,
	// within its own deadline, and answer at once.
	abort := func(err error) runOutcome {
		go func() {
			cctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
			defer cancel()
			_, _ = s.post(cctx, winrm.NewDeleteShellRequest(s.url, shellID, s.params))
			done()
		}()
		return fail(err)
	}
	resp, err = s.post(ctx, s.commandRequest(shellID, command, args, consoleStdin))
	if err != nil {
		return abort(err)
	}
	commandID, err := winrm.ParseExecuteCommandResponse(resp)
	if err != nil {
		return abort(err)
	}
	for _, chunk := range s.stdinChunks(stdin) {
		last := chunk.last && onProgress == nil
		if _, err := s.post(ctx, winrm.NewSendInputRequest(s.url, shellID, commandID, chunk.data, last, s.params)); err != nil {
			return abort(err)
		}
	}
	exitCode := 0
	scanned, stdinOpen := 0, onProgress != nil
	// With onProgress, the first progress line must come within firstProgressWithin
	// (a gated restart's prepared line: its powershell.exe start and its checks);
	// a host or a network that holds it back longer ends the command.
	recvCtx, recvCancel := ctx, context.CancelFunc(func() {})
	if onProgress != nil {
		recvCtx, recvCancel = context.WithTimeout(ctx, firstProgressWithin)
	}
	defer recvCancel()
	for {
		resp, err := s.post(recvCtx, winrm.NewGetOutputRequest(s.url, shellID, commandID, "stdout stderr", s.params))
		if err != nil {
			if isOperationTimeout(err) {
				continue // no output within the long poll: ask again
			}
			if recvCtx.Err() != nil && ctx.Err() == nil {
				err = fmt.Errorf("no progress line within %s: %w", firstProgressWithin, err)
			}
			return abort(err)
		}
		finished, code, err := winrm.ParseSlurpOutputErrResponse(resp, &stdout, &stderr)
		if err != nil {
			return abort(err)
		}
		if n := stdout.Len() + stderr.Len(); n > s.maxOutput() {
			// The Delete of the shell in abort stops the command on the host.
			return abort(&outputLimitError{limit: s.maxOutput(), read: n})
		}
		for onProgress != nil {
			rest := stdout.Bytes()[scanned:]
			i := bytes.IndexByte(rest, '\n')
			if i < 0 {
				break
			}
			line := string(rest[:i+1])
			scanned += i + 1
			if _, _, ok := contract.ParseProgress(line); !ok {
				continue
			}
			recvCancel()
			recvCtx, recvCancel = ctx, func() {} // a progress line came: the command's own deadline from here
			more, err := onProgress(line)
			if err != nil {
				return abort(err)
			}
			if more != nil && stdinOpen {
				if _, err := s.post(ctx, winrm.NewSendInputRequest(s.url, shellID, commandID, more, true, s.params)); err != nil {
					return abort(err)
				}
				stdinOpen = false
			}
		}
		if finished {
			exitCode = code
			break
		}
	}
	// The command is done: deleting the shell is the last request. Its failure
	// does not change the outcome, but the connection is not trusted again.
	if _, err := s.post(ctx, winrm.NewDeleteShellRequest(s.url, shellID, s.params)); err != nil && ctx.Err() == nil {
		s.t.closeIdle()
	}
	done()
	return runOutcome{exitCode: exitCode, stdout: stdout.Bytes(), stderr: stderr.Bytes()}
}

// commandRequest is masterzen's Command message with the stdin mode chosen:
// WINRS_CONSOLEMODE_STDIN=FALSE gives the command a pipe as stdin, whose end it sees
// (Ansible's winrm connection does the same when it sends stdin).
func (s *session) commandRequest(shellID, command string, args []string, consoleStdin bool) *soap.SoapMessage {
	mode := "FALSE"
	if consoleStdin {
		mode = "TRUE"
	}
	message := soap.NewMessage()
	message.Header().
		To(s.url).
		ReplyTo("http://schemas.xmlsoap.org/ws/2004/08/addressing/role/anonymous").
		MaxEnvelopeSize(s.params.EnvelopeSize).
		Id(newMessageID()).
		Locale(s.params.Locale).
		Timeout(s.params.Timeout).
		Action("http://schemas.microsoft.com/wbem/wsman/1/windows/shell/Command").
		ResourceURI("http://schemas.microsoft.com/wbem/wsman/1/windows/shell/cmd").
		ShellId(shellID).
		AddOption(soap.NewHeaderOption("WINRS_CONSOLEMODE_STDIN", mode)).
		AddOption(soap.NewHeaderOption("WINRS_SKIP_CMD_SHELL", "FALSE")).
		Build()
	body := message.CreateBodyElement("CommandLine", soap.DOM_NS_WIN_SHELL)
	message.CreateElement(body, "Command", soap.DOM_NS_WIN_SHELL).SetContent("<![CDATA[" + command + "]]>")
	for _, arg := range args {
		message.CreateElement(body, "Arguments", soap.DOM_NS_WIN_SHELL).SetContent("<![CDATA[" + arg + "]]>")
	}
	return message
}

type stdinChunk struct {
	data []byte
	last bool
}

// stdinChunks splits stdin into Sends whose base64 fits the envelope size; the last
// carries End="true". An operation's input (about 30 KB) is one Send.
func (s *session) stdinChunks(stdin []byte) []stdinChunk {
	limit := max((s.params.EnvelopeSize-4096)*3/4, 1024)
	var chunks []stdinChunk
	for len(stdin) > limit {
		chunks = append(chunks, stdinChunk{data: stdin[:limit]})
		stdin = stdin[limit:]
	}
	return append(chunks, stdinChunk{data: stdin, last: true})
}

// The user's shell quota (WSManFault 2150859173, w:QuotaLimit: "This user is
// allowed a maximum number of N concurrent shells, which has been exceeded. Close
// existing shells or raise the quota for this user"): the host refuses to open a
// shell while the user holds winrm/config/winrs MaxShellsPerUser shells, whoever
// opened them (this run's operations on other instances of the host, another run or
// tool, a killed client's shells until WinRM's IdleTimeout closes them). It clears
// when one of them is deleted, and the refused Create ran nothing, so it is asked
// again after a backoff, every operation alike, until shellQuotaWait has passed;
// then the fault is the error, saying which quota and what to do (errors.go).
var (
	// shellQuotaWait bounds the wait for a shell under the quota.
	shellQuotaWait = 60 * time.Second / time.Duration(testhooks.TimeDivisor())
	// shellQuotaBackoff is the pause after the nth refused Create (n from 1).
	shellQuotaBackoff = func(n int) time.Duration { return min(time.Duration(n)*time.Second, 5*time.Second) }
)

// openShell sends the shell's Create and answers its response, asking again while
// the host refuses it for the user's shell quota, within shellQuotaWait and ctx.
func (s *session) openShell(ctx context.Context) (string, error) {
	deadline := time.Now().Add(shellQuotaWait)
	for n := 1; ; n++ {
		resp, err := s.post(ctx, winrm.NewOpenShellRequest(s.url, s.params))
		if err == nil || !isShellQuota(err) {
			return resp, err
		}
		wait := shellQuotaBackoff(n)
		if time.Now().Add(wait).After(deadline) {
			return "", err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			// The operation's deadline, not the quota's wait, ended it: said as
			// the deadline, as every other wait of the session does.
			t.Stop()
			return "", ctx.Err()
		}
	}
}

// isShellQuota reports the user's shell quota fault (faultShellQuota).
func isShellQuota(err error) bool {
	f, ok := faultOf(err)
	return ok && f.Code == faultShellQuota
}

// post sends one message on the session's transport within ctx: a deadline or a
// cancellation closes the connection at once and answers ctx's error.
func (s *session) post(ctx context.Context, msg *soap.SoapMessage) (string, error) {
	body := []byte(msg.String())
	msg.Free()
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if err := s.t.mayPost(); err != nil {
		return "", err
	}
	c, err := s.t.get()
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", s.t.fail(err)
	}
	stop := context.AfterFunc(ctx, c.close)
	resp, err := s.t.exchange(c, body)
	if !stop() {
		// ctx ended during the exchange and closed the connection.
		return "", ctx.Err()
	}
	if err != nil {
		c.close()
		return "", s.t.fail(err)
	}
	if resp.close {
		c.close()
	} else {
		s.t.put(c)
	}
	return s.t.answer(resp)
}

// isOperationTimeout reports the WS-Management TimedOut fault a Receive answers when
// the command wrote nothing within the OperationTimeout (MS-WSMV 3.1.4.14): the
// client polls again. It is told by its WSManFault Code (fault.go), not by words
// anywhere in the body: another fault naming a timeout (an OperationTimeout the
// service refused, WSManFault 2150858767) is the host's answer.
func isOperationTimeout(err error) bool {
	f, ok := faultOf(err)
	return ok && (f.Code == faultOperationTimeout || f.Code == "" && f.Subcode == "w:TimedOut")
}

// newMessageID is a WS-Addressing MessageID: "uuid:" and a random (version 4) UUID.
func newMessageID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return "uuid:" + strings.ToUpper(h[0:8]+"-"+h[8:12]+"-"+h[12:16]+"-"+h[16:20]+"-"+h[20:])
}

// closeIdle closes the transport's pooled connections.
func (t *transport) closeIdle() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, c := range idle {
		c.close()
	}
}
