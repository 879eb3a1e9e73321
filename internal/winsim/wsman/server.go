// Package wsman is a WS-Management (MS-WSMV) endpoint serving the Windows
// Remote Shell (WinRS) the way Windows answers it, for masterzen/winrm and
// pywinrm: Create, Command, Send, Receive, Signal, Delete over HTTP or HTTPS,
// with Basic or NTLM authentication and NTLM message sealing. Commands run
// through an Executor, the simulated host behind the endpoint.
package wsman

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/ntlm"
)

// Config configures a Server.
type Config struct {
	ComputerName string      // NetBIOS name used for NTLM target info and fault Machine attributes
	DomainName   string      // NetBIOS domain of a domain-joined host, the NTLM target; "" for a workgroup host
	DNSDomain    string      // DNS name of that domain (NTLM's MsvAvDnsDomainName); "": DomainName
	Lookup       ntlm.Lookup // users and passwords (Basic and NTLM)
	AllowBasic   bool
	AllowNTLM    bool
	Executor     Executor
	Logf         func(format string, args ...any) // optional

	// AllowUnencrypted is WinRM's AllowUnencrypted (false by default, as on Windows).
	// False: over plain HTTP, Basic credentials are refused (401) and a clear-text
	// body on an NTLM-authenticated connection gets HTTP 500 with no body; clients
	// must seal messages with NTLM. HTTPS is always accepted.
	AllowUnencrypted bool

	// CBTHardening is the CbtHardeningLevel for NTLM and Kerberos logons over HTTPS: "none",
	// "relaxed" (default, as on Windows) or "strict" (ntlm.Server.CBTHardening).
	CBTHardening string
	// TargetNames are the host's SPNs an NTLM logon may name (MsvAvTargetName);
	// a logon naming another host is refused as relayed. Empty: not checked.
	TargetNames []string

	// Kerberos enables Kerberos logons (Negotiate and Kerberos schemes) with the
	// host's keytab; nil leaves Kerberos off. Optional.
	Kerberos *KerberosConfig

	// MaxOperationTimeout caps how long a Receive waits for output before it
	// answers the TimedOut fault, whatever the client asks in OperationTimeout
	// (WinRM's MaxTimeoutms). Optional; 60s when zero.
	MaxOperationTimeout time.Duration

	// Wrap, when set, wraps the endpoint's HTTP handler (the simulator's fault
	// injection, internal/winsim/faults.go). Optional.
	Wrap func(http.Handler) http.Handler
}

// Server is one WS-Management endpoint.
type Server struct {
	cfg    Config
	ntlm   *ntlm.Server
	shells *shells

	ctx    context.Context // ends when the server closes; running Receives return
	cancel context.CancelFunc

	mu      sync.Mutex
	servers []*http.Server
	binding []byte // tls-server-end-point data of the HTTPS certificate (RFC 5929)

	requests       atomic.Int64 // HTTP requests to /wsman
	ntlmNegotiates atomic.Int64 // NTLM NEGOTIATE messages: handshakes begun
	krbLogons      atomic.Int64 // Kerberos logons accepted (AP-REQ verified, AP-REP sent)
	signals        atomic.Int64 // Signal requests
	receives       atomic.Int64 // Receive requests (a client polls again when one returns before the command ends)
}

// Stats counts what an endpoint served, for benchmarks.
type Stats struct {
	Requests       int64 // HTTP requests, authentication legs included
	NTLMHandshakes int64 // NTLM handshakes begun (NEGOTIATE messages)
	KerberosLogons int64 // Kerberos logons accepted
	Signals        int64 // Signal requests
	Receives       int64 // Receive requests
}

// Stats returns the endpoint's counters.
func (s *Server) Stats() Stats {
	return Stats{Requests: s.requests.Load(), NTLMHandshakes: s.ntlmNegotiates.Load(), KerberosLogons: s.krbLogons.Load(), Signals: s.signals.Load(), Receives: s.receives.Load()}
}

// ntlmNegotiatePrefix is "Negotiate " and the base64 of "NTLMSSP\x00" and type 1.
const ntlmNegotiatePrefix = "Negotiate TlRMTVNTUAAB"

const (
	defaultOperationTimeout = 60 * time.Second
	defaultMaxEnvelopeSize  = 153600
	maxRequestBody          = 16 << 20
)

// NewServer creates an endpoint. It serves nothing until Serve, ServeTLS, or
// Handler mounted on an http.Server whose ConnContext is s.ConnContext.
func NewServer(cfg Config) *Server {
	if cfg.MaxOperationTimeout <= 0 {
		cfg.MaxOperationTimeout = defaultOperationTimeout
	}
	if cfg.Lookup == nil {
		cfg.Lookup = func(string, string) (string, bool) { return "", false }
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		cfg: cfg,
		ntlm: &ntlm.Server{ComputerName: cfg.ComputerName, DomainName: cfg.DomainName, DNSDomainName: cfg.DNSDomain, Lookup: cfg.Lookup,
			TargetNames: cfg.TargetNames, CBTHardening: cfg.CBTHardening},
		shells: newShells(),
		ctx:    ctx,
		cancel: cancel,
	}
}

func (s *Server) logf(format string, args ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, args...)
	}
}

// Handler serves POST /wsman.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// Serve answers plain HTTP on l until Close.
func (s *Server) Serve(l net.Listener) error {
	err := s.newHTTPServer().Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// ServeTLS answers HTTPS on l with cfg (which must hold a certificate) until Close.
func (s *Server) ServeTLS(l net.Listener, cfg *tls.Config) error {
	if len(cfg.Certificates) > 0 && len(cfg.Certificates[0].Certificate) > 0 {
		if cert, err := x509.ParseCertificate(cfg.Certificates[0].Certificate[0]); err == nil {
			s.mu.Lock()
			s.binding = tlsServerEndPoint(cert)
			s.mu.Unlock()
		}
	}
	hs := s.newHTTPServer()
	hs.TLSConfig = cfg
	err := hs.ServeTLS(l, "", "")
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func (s *Server) newHTTPServer() *http.Server {
	handler := s.Handler()
	if s.cfg.Wrap != nil {
		handler = s.cfg.Wrap(handler)
	}
	hs := &http.Server{
		Handler:           handler,
		ConnContext:       s.ConnContext,
		ReadHeaderTimeout: 30 * time.Second,
		// Windows' HTTP.sys speaks HTTP/1.1 only, and NTLM needs one connection.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
		ErrorLog:     log.New(logWriter{s}, "wsman: ", 0),
	}
	s.mu.Lock()
	s.servers = append(s.servers, hs)
	s.mu.Unlock()
	return hs
}

// logWriter routes net/http's own messages (TLS handshake errors) to Logf.
type logWriter struct{ s *Server }

func (w logWriter) Write(p []byte) (int, error) {
	w.s.logf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Close stops every listener started with Serve or ServeTLS, terminates every
// running command and ends waiting Receives.
func (s *Server) Close() error {
	s.cancel()
	s.shells.closeAll()
	s.mu.Lock()
	servers := s.servers
	s.servers = nil
	s.mu.Unlock()
	var errs []error
	for _, hs := range servers {
		if err := hs.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// DropShells ends every shell and its commands, as stopping the WinRM service
// does on Windows (the shells' processes end with their winrshost.exe job), and
// returns how many there were. The endpoint keeps serving: a later Create opens a
// new shell, and a request naming a dropped shell gets the unknown-shell fault.
// The connections are the listener's to reset (internal/winsim's restart_winrm).
func (s *Server) DropShells() int { return s.shells.dropAll(false) }

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if strings.HasPrefix(r.Header.Get("Authorization"), ntlmNegotiatePrefix) {
		s.ntlmNegotiates.Add(1)
	}
	// Read the whole body first, whatever happens next: Go closes the
	// connection after a response if much of the body went unread, and NTLM
	// needs the connection to survive the 401 legs.
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
	if err != nil {
		s.logf("wsman: %s: reading the request body failed: %v", r.RemoteAddr, err)
		http.Error(w, "reading the request body failed", http.StatusBadRequest)
		return
	}
	if len(body) > maxRequestBody {
		_, _ = io.Copy(io.Discard, r.Body)
		http.Error(w, "request body larger than 16 MiB", http.StatusRequestEntityTooLarge)
		return
	}
	if !strings.EqualFold(strings.TrimSuffix(r.URL.Path, "/"), "/wsman") {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "WS-Management accepts POST only", http.StatusMethodNotAllowed)
		return
	}

	auth := s.authenticate(w, r)
	if auth.answered {
		return
	}

	if auth.reply != "" {
		w.Header().Add("WWW-Authenticate", auth.reply)
	}
	encrypted := isEncrypted(r.Header.Get("Content-Type"))
	if encrypted {
		if auth.session == nil && auth.krb == nil {
			s.logf("wsman: %s: encrypted message on a connection not authenticated with NTLM or Kerberos", r.RemoteAddr)
			s.unauthorized(w, "")
			return
		}
		var plain []byte
		var err error
		if auth.krb != nil {
			plain, err = unwrapEncryptedKerberos(auth.krb, body)
		} else {
			plain, err = unwrapEncrypted(auth.session, body)
		}
		if err != nil {
			s.logf("wsman: %s: %v", r.RemoteAddr, err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = plain
	}

	if !encrypted && r.TLS == nil && !s.cfg.AllowUnencrypted && len(body) > 0 {
		// Windows answers HTTP 500 without a SOAP fault (FIDELITY.md).
		s.logf("wsman: %s: unencrypted message over HTTP refused (AllowUnencrypted=false): use HTTPS or NTLM message encryption", r.RemoteAddr)
		w.Header().Set("Server", "Microsoft-HTTPAPI/2.0")
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusInternalServerError)
		return
	}

	if len(body) == 0 {
		// pywinrm's empty POST that sets up the security context for sealing.
		w.Header().Set("Server", "Microsoft-HTTPAPI/2.0")
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
		return
	}

	status, reply := s.dispatch(r, auth.user, body)
	w.Header().Set("Server", "Microsoft-HTTPAPI/2.0")
	if encrypted {
		var framed []byte
		if auth.krb != nil {
			var err error
			if framed, err = wrapEncryptedKerberos(auth.krb, reply); err != nil {
				s.logf("wsman: %s: sealing the answer with Kerberos failed: %v", r.RemoteAddr, err)
				http.Error(w, "sealing the answer failed", http.StatusInternalServerError)
				return
			}
		} else {
			framed = wrapEncrypted(auth.session, reply)
		}
		w.Header().Set("Content-Type", encryptedContentType)
		w.Header().Set("Content-Length", strconv.Itoa(len(framed)))
		w.WriteHeader(status)
		_, _ = w.Write(framed)
		return
	}
	w.Header().Set("Content-Type", "application/soap+xml;charset=UTF-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(reply)))
	w.WriteHeader(status)
	_, _ = w.Write(reply)
}

// dispatch runs one SOAP request and returns the HTTP status and envelope.
func (s *Server) dispatch(r *http.Request, user string, body []byte) (int, []byte) {
	machine := s.machineName(r)
	req, err := parseRequest(body)
	if err != nil {
		s.logf("wsman: %s: %v", r.RemoteAddr, err)
		return http.StatusBadRequest, badRequestFault("The request is not a SOAP 1.2 envelope: "+err.Error()).xml("", machine)
	}
	relates := req.Header.MessageID
	faulted := func(f fault) (int, []byte) { return http.StatusInternalServerError, f.xml(relates, machine) }
	if t := strings.TrimSpace(req.Header.OperationTimeout); t != "" {
		if d, err := parseDuration(t); err != nil || d <= 0 {
			return faulted(invalidTimeoutFault(t))
		}
	}

	switch req.Header.Action {
	case actionCreate:
		if req.Header.ResourceURI != resourceURICmd {
			return faulted(badRequestFault("The WS-Management service cannot process the request. The resource URI " +
				req.Header.ResourceURI + " is not served by this endpoint; use " + resourceURICmd + ". "))
		}
		sh, err := s.shells.create(user)
		if err != nil {
			return faulted(badRequestFault(err.Error()))
		}
		s.logf("wsman: %s: user %s created shell %s", r.RemoteAddr, user, sh.id)
		return http.StatusOK, createResponse(relates, s.address(r), sh.id, user, hostOnly(r.RemoteAddr))

	case actionDelete:
		id := req.shellID()
		if !s.shells.delete(id, user) {
			return faulted(shellNotFoundFault(id))
		}
		s.logf("wsman: %s: shell %s deleted", r.RemoteAddr, id)
		return http.StatusOK, deleteResponse(relates)

	case actionCommand, actionSend, actionReceive, actionSignal:
		id := req.shellID()
		sh, ok := s.shells.lookup(id, user)
		if !ok {
			return faulted(shellNotFoundFault(id))
		}
		switch req.Header.Action {
		case actionCommand:
			return s.startCommand(r, req, sh, user, faulted)
		case actionSend:
			return s.send(req, sh, faulted)
		case actionReceive:
			s.receives.Add(1)
			return s.receive(r, req, sh, faulted)
		default:
			return s.signal(r, req, sh, faulted)
		}

	default:
		s.logf("wsman: %s: action %q is not supported", r.RemoteAddr, req.Header.Action)
		return faulted(actionNotSupportedFault(req.Header.Action))
	}
}

type faultFunc func(fault) (int, []byte)

func (s *Server) startCommand(r *http.Request, req *request, sh *shell, user string, faulted faultFunc) (int, []byte) {
	line := req.Body.CommandLine
	if line == nil || strings.TrimSpace(line.Command) == "" {
		return faulted(badRequestFault("The Command request has no rsp:CommandLine/rsp:Command. "))
	}
	if s.cfg.Executor == nil {
		return faulted(badRequestFault("This WS-Management endpoint has no Executor configured. "))
	}
	// WINRS_CONSOLEMODE_STDIN: TRUE (the default) gives the command a console as
	// stdin, FALSE a pipe (MS-WSMV 3.1.4.11).
	console := !strings.EqualFold(strings.TrimSpace(req.option("WINRS_CONSOLEMODE_STDIN")), "FALSE")
	ctx, cancel := context.WithCancel(s.ctx)
	c := newCommand(cancel, console)
	if !s.shells.addCommand(sh, c) {
		cancel()
		return faulted(shellNotFoundFault(sh.id))
	}
	cmd := Command{
		User:      user,
		ShellID:   sh.id,
		Command:   strings.TrimSpace(line.Command),
		Arguments: append([]string(nil), line.Arguments...),
		UserAgent: r.UserAgent(),
		Stdin:     c.stdin,

		ConsoleModeStdin: console,
	}
	s.logf("wsman: %s: user %s started command %s in shell %s: %s (%d arguments, console-mode stdin %t)", r.RemoteAddr, user, c.id, sh.id, cmd.Command, len(cmd.Arguments), console)
	go s.execute(ctx, c, cmd)
	return http.StatusOK, commandResponse(req.Header.MessageID, c.id)
}

// execute runs the command on the Executor and records its exit code. A
// panicking Executor fails the command instead of the whole endpoint.
func (s *Server) execute(ctx context.Context, c *command, cmd Command) {
	code := 1
	defer func() {
		if p := recover(); p != nil {
			s.logf("wsman: command %s (%s) panicked in the Executor: %v", c.id, cmd.Command, p)
			_, _ = streamWriter{c: c, stderr: true}.Write([]byte(fmt.Sprintf("wsman simulator: the Executor panicked: %v\r\n", p)))
			code = 1
		}
		c.finish(code)
	}()
	code = s.cfg.Executor.Execute(ctx, cmd, streamWriter{c: c}, streamWriter{c: c, stderr: true})
}

func (s *Server) send(req *request, sh *shell, faulted faultFunc) (int, []byte) {
	if req.Body.Send == nil {
		return faulted(badRequestFault("The Send request has no rsp:Send body. "))
	}
	for _, st := range req.Body.Send.Streams {
		if st.Name != "stdin" {
			return faulted(badRequestFault("Send names stream " + st.Name + "; this shell's only input stream is stdin. "))
		}
		c, ok := s.shells.command(sh, st.CommandID)
		if !ok {
			return faulted(commandNotFoundFault())
		}
		data, err := decodeB64(st.Data)
		if err != nil {
			return faulted(badRequestFault("The stdin chunk is not valid base64: " + err.Error() + ". "))
		}
		if err := c.stdin.write(data, strings.EqualFold(st.End, "true")); err != nil {
			return faulted(badRequestFault(err.Error() + ". "))
		}
	}
	return http.StatusOK, sendResponse(req.Header.MessageID)
}

func (s *Server) receive(r *http.Request, req *request, sh *shell, faulted faultFunc) (int, []byte) {
	if req.Body.Receive == nil {
		return faulted(badRequestFault("The Receive request has no rsp:Receive body. "))
	}
	id := req.Body.Receive.DesiredStream.CommandID
	if strings.TrimSpace(id) == "" {
		return faulted(shellPluginParameterFault())
	}
	c, ok := s.shells.command(sh, id)
	if !ok {
		return faulted(commandNotFoundFault())
	}
	timeout := s.operationTimeout(req)
	ctx, cancel := mergeDone(r.Context(), s.ctx)
	defer cancel()
	out, ok := c.receive(ctx, timeout, s.outputBudget(req))
	if !ok {
		s.logf("wsman: %s: Receive for command %s timed out after %s with no output (the client polls again)", r.RemoteAddr, id, timeout)
		return faulted(timedOutFault())
	}
	return http.StatusOK, receiveResponse(req.Header.MessageID, id, out)
}

func (s *Server) signal(r *http.Request, req *request, sh *shell, faulted faultFunc) (int, []byte) {
	s.signals.Add(1)
	if req.Body.Signal == nil {
		return faulted(badRequestFault("The Signal request has no rsp:Signal body. "))
	}
	id := req.Body.Signal.CommandID
	code := strings.TrimSpace(req.Body.Signal.Code)
	switch code {
	case signalTerminate:
		// terminate ends the command and releases it, finished or not.
		if !s.shells.removeCommand(sh, id) {
			return faulted(commandNotFoundFault())
		}
	case signalCtrlC, signalCtrlBreak:
		c, ok := s.shells.command(sh, id)
		if !ok {
			return faulted(commandNotFoundFault())
		}
		c.terminate()
	default:
		return faulted(badRequestFault("Signal code " + code + " is not supported; use " + signalTerminate + " or " + signalCtrlC + ". "))
	}
	s.logf("wsman: %s: signal %s to command %s", r.RemoteAddr, code[strings.LastIndex(code, "/")+1:], id)
	return http.StatusOK, signalResponse(req.Header.MessageID)
}

// operationTimeout is the request's OperationTimeout capped at
// MaxOperationTimeout; MaxOperationTimeout when the request has none (dispatch
// refused one that is not a positive duration).
func (s *Server) operationTimeout(req *request) time.Duration {
	d, err := parseDuration(req.Header.OperationTimeout)
	if err != nil || d <= 0 || d > s.cfg.MaxOperationTimeout {
		return s.cfg.MaxOperationTimeout
	}
	return d
}

// outputBudget is how many output bytes one ReceiveResponse may carry so that
// the base64 envelope stays under the client's MaxEnvelopeSize.
func (s *Server) outputBudget(req *request) int {
	size, err := strconv.Atoi(strings.TrimSpace(req.Header.MaxEnvelopeSize))
	if err != nil || size <= 0 {
		size = defaultMaxEnvelopeSize
	}
	return max((size-4096)*3/4, 1024)
}

// machineName is what faults report as Machine: the host the client addressed.
func (s *Server) machineName(r *http.Request) string {
	if h := hostOnly(r.Host); h != "" {
		return h
	}
	return s.cfg.ComputerName
}

// address is the endpoint URL as the client reached it.
func (s *Server) address(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/wsman"
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

// mergeDone returns a context that ends when either a or b ends.
func mergeDone(a, b context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(a)
	stop := context.AfterFunc(b, cancel)
	return ctx, func() { stop(); cancel() }
}

// tlsServerEndPoint is RFC 5929's channel binding data for cert (SHA-256 for the
// certificates the simulator issues).
func tlsServerEndPoint(cert *x509.Certificate) []byte {
	sum := sha256.Sum256(cert.Raw)
	return append([]byte("tls-server-end-point:"), sum[:]...)
}
