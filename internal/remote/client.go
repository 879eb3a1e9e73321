package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/masterzen/winrm"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
)

// winrmHost is a Host reached over WinRM with our own exchange (exchange.go) on our
// own transport (transport.go). It holds the sessions of one configured host;
// nothing is global.
type winrmHost struct {
	cfg  Config
	port int
	// newSession makes a session with its own transport, which keeps each NTLM
	// handshake and exchange on one connection. An operation borrows a session that
	// no other operation uses meanwhile, so operations never wait for each other's
	// connections; idle sessions are kept, so sequential operations reuse their
	// authenticated connections. Every session shares the host's TLS session cache.
	newSession func() (*session, error)
	// krb is the Kerberos logon shared by the sessions, nil for NTLM and Basic.
	krb *krbLogon
	// ntlmWhy: why auth "negotiate" uses NTLM from the start ("" otherwise).
	ntlmWhy string
	// loggedLogon is the mechanism last logged at INFO (once per host, and again
	// if it changes).
	loggedLogon atomic.Value
	mu          sync.Mutex
	idle        []*session
}

// Logon is which mechanism a host's operations log on with, and why.
type Logon struct {
	Mechanism string // AuthKerberos, AuthNTLM or AuthBasic
	// Fallback: auth "negotiate" uses NTLM instead of Kerberos, because of Why.
	Fallback bool
	Why      string
}

// LogonReporter is implemented by the Hosts New returns: which mechanism the
// host's operations use (after a first operation, for a fallback at run time).
type LogonReporter interface {
	Logon() Logon
}

// Logon says which mechanism the host's operations use now, and why.
func (h *winrmHost) Logon() Logon {
	switch {
	case h.krb.use():
		return Logon{Mechanism: AuthKerberos, Why: "auth " + h.cfg.Auth + ": Kerberos for " + h.krb.spn + " (the host proves its identity)"}
	case h.krb.fellBack() != "":
		return Logon{Mechanism: AuthNTLM, Fallback: true, Why: h.krb.fellBack()}
	case h.ntlmWhy != "":
		return Logon{Mechanism: AuthNTLM, Fallback: true, Why: h.ntlmWhy}
	}
	return Logon{Mechanism: h.cfg.Auth, Why: "auth " + h.cfg.Auth}
}

// kerberosClock, when set, is the clock of Kerberos authenticators (tests move it to
// provoke a clock skew); nil is time.Now.
var kerberosClock func() time.Time

// maxIdleClients bounds the sessions kept for reuse per host.
const maxIdleClients = 4

func (h *winrmHost) borrow() (*session, error) {
	h.mu.Lock()
	if n := len(h.idle); n > 0 {
		c := h.idle[n-1]
		h.idle = h.idle[:n-1]
		h.mu.Unlock()
		return c, nil
	}
	h.mu.Unlock()
	return h.newSession()
}

func (h *winrmHost) giveBack(c *session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.idle) < maxIdleClients {
		h.idle = append(h.idle, c)
	}
}

// ReleaseIdle closes the connections the host's idle sessions keep for a next
// operation (as net/http's CloseIdleConnections), for a caller whose work on the host
// is done (converge.IdleReleaser). The sessions and the host's TLS session cache stay:
// a later operation connects anew and resumes the TLS session; a connection in use
// is not closed. A pooled connection with its TLS state, buffers and background read
// costs about 50 KB, held for idleTimeout after each operation: a refresh of a
// 200-host fleet at parallelism 10 kept about 20 of them at any time.
func (h *winrmHost) ReleaseIdle() {
	h.mu.Lock()
	sessions := slices.Clone(h.idle)
	h.mu.Unlock()
	for _, s := range sessions {
		s.t.closeIdle()
	}
}

// New checks cfg and returns a Host for it. It does not connect: the first operation
// does.
func New(cfg Config) (Host, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, configError(cfg, err)
	}
	port, auth, timeout := cfg.Port, cfg.Auth, cfg.Timeout
	kl, ntlmWhy, err := newKrbLogon(cfg, kerberosClock)
	if err != nil {
		return nil, configError(cfg, err)
	}
	// The operation timeout bounds each Receive's long poll; the HTTP response header
	// timeout must outlast it or every idle poll would look like a dead server.
	endpoint := &winrm.Endpoint{
		Host:          cfg.Host,
		Port:          port,
		HTTPS:         cfg.HTTPS,
		Insecure:      cfg.Insecure,
		TLSServerName: cfg.TLSServerName,
		CACert:        cfg.CACert,
		Timeout:       timeout + 30*time.Second,
	}
	params := winrm.NewParameters(isoSeconds(timeout), "en-US", 153600)
	// Our own exchange and transport for every scheme: one connection per operation,
	// TLS sessions resumed across operations (exchange.go). It ignores HTTP proxies.
	tlsSessions := newSessionCache()
	newSession := func() (*session, error) {
		return newSession(endpoint, params, cfg, auth, tlsSessions, kl)
	}
	client, err := newSession()
	if err != nil {
		return nil, configError(cfg, &ConfigError{Setting: SettingCACert, Err: fmt.Errorf("cannot set up the WinRM client: %w", err)})
	}
	return &winrmHost{cfg: cfg, port: port, newSession: newSession, krb: kl, ntlmWhy: ntlmWhy, idle: []*session{client}}, nil
}

// NewTransporter is a masterzen/winrm Transporter on this package's transport with
// cfg's authentication (Kerberos, NTLM or Basic; messages encrypted over HTTP), for
// programs that drive masterzen's client themselves; masterzen's Endpoint gives the
// address and TLS settings. The error is a *ConfigError.
func NewTransporter(cfg Config) (winrm.Transporter, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	kl, _, err := newKrbLogon(cfg, kerberosClock)
	if err != nil {
		return nil, err
	}
	t := newSecureTransport(cfg, cfg.Auth)
	t.krb = kl
	return t, nil
}

// configError reports what Validate (or the client's set-up) refused; the Setting is
// the first problem's.
func configError(cfg Config, err error) *Error {
	e := &Error{Host: cfg.Host, Kind: KindConfig, Message: "invalid WinRM configuration: " + strings.ReplaceAll(err.Error(), "\n", "; "),
		Err: err, Port: cfg.Port, HTTPS: cfg.HTTPS, Auth: cfg.Auth, User: cfg.Username}
	var ce *ConfigError
	if errors.As(err, &ce) {
		e.Setting = ce.Setting
	}
	return e
}

// newError starts an *Error with the host's connection facts.
func (h *winrmHost) newError(op contract.Operation, kind ErrorKind) *Error {
	return &Error{Host: h.cfg.Host, Op: op, Kind: kind, Port: h.port, HTTPS: h.cfg.HTTPS, Auth: h.cfg.Auth, User: h.user()}
}

func isoSeconds(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	if s < 1 {
		s = 1
	}
	return "PT" + strconv.FormatInt(s, 10) + "S"
}

func (h *winrmHost) ReadInstance(ctx context.Context, p contract.ReadInstanceParams) (*contract.ReadInstanceResult, error) {
	var r contract.ReadInstanceResult
	if err := h.runIdempotent(ctx, contract.OpReadInstance, p, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// ReadHost reads several instances in one process (read_host); it only reads, so a
// transient failure is sent again as read_instance's is.
func (h *winrmHost) ReadHost(ctx context.Context, p contract.ReadHostParams) (*contract.ReadHostResult, error) {
	var r contract.ReadHostResult
	if err := h.runIdempotent(ctx, contract.OpReadHost, p, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// userAgent is the User-Agent of the host's requests, which the change's entry in
// the host's event log names too.
func (h *winrmHost) userAgent() string {
	if h.cfg.UserAgent != "" {
		return h.cfg.UserAgent
	}
	return contract.UserAgent("")
}

func (h *winrmHost) SetRight(ctx context.Context, p contract.SetRightParams) (*contract.SetRightResult, error) {
	p.Agent = h.userAgent()
	var r contract.SetRightResult
	if err := h.runIdempotent(ctx, contract.OpSetRight, p, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func (h *winrmHost) RestartInstance(ctx context.Context, p contract.RestartInstanceParams) (*contract.RestartInstanceResult, error) {
	p.Agent = h.userAgent()
	var r contract.RestartInstanceResult
	if err := h.run(ctx, contract.OpRestartInstance, p, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// RestartInstanceGated is a gated restart_instance (contract/restart_gate.go): gate
// is asked once the host says it is prepared, and the go line sent when it allows;
// told when the Engine runs again. The gate's refusal is the error as it gave it
// (the host then changes nothing: the shell is deleted before any go line).
func (h *winrmHost) RestartInstanceGated(ctx context.Context, p contract.RestartInstanceParams, gate contract.RestartGate) (*contract.RestartInstanceResult, error) {
	p.Agent, p.AwaitGo = h.userAgent(), true
	var refused error
	goSent := false
	onProgress := func(line string) ([]byte, error) {
		event, id, _ := contract.ParseProgress(line)
		if id != p.RestartID {
			return nil, nil // not this request's
		}
		switch event {
		case contract.ProgressPrepared:
			if err := gate.Prepared(ctx); err != nil {
				refused = err
				return nil, err
			}
			goSent = true // from here the host may have it
			return []byte(contract.GoLine(id)), nil
		case contract.ProgressStarted:
			gate.Started()
		}
		return nil, nil
	}
	var r contract.RestartInstanceResult
	err := h.runProgress(ctx, contract.OpRestartInstance, p, &r, onProgress)
	if refused != nil {
		return nil, refused
	}
	var re *Error
	if err != nil && !goSent && !(errors.As(err, &re) && re.Kind == KindScript) {
		return nil, &contract.GateNotPassedError{Err: err}
	}
	if err != nil {
		return nil, err
	}
	return &r, nil
}

type runOutcome struct {
	exitCode       int
	err            error
	stdout, stderr []byte
}

// run sends one operation and decodes its answer into result.
func (h *winrmHost) run(ctx context.Context, op contract.Operation, params, result any) error {
	return h.runProgress(ctx, op, params, result, nil)
}

// runProgress is run, telling onProgress (when not nil) each progress line as it
// comes (session.runWith).
func (h *winrmHost) runProgress(ctx context.Context, op contract.Operation, params, result any, onProgress progressFunc) error {
	stdin, err := contract.EncodeInput(op, params)
	if err != nil {
		return &Error{Host: h.cfg.Host, Op: op, Kind: KindUnknown, Message: err.Error(), Err: err}
	}
	client, err := h.borrow()
	if err != nil {
		e := h.newError(op, KindConfig)
		e.Setting, e.Message, e.Err = SettingCACert, "cannot set up the WinRM client: "+err.Error(), err
		return e
	}
	start := time.Now()
	// Only when done is the session free: after a failure its shell is deleted in
	// the background first. stdin is a pipe (not a console), whose end the bootstrap
	// does not need either.
	out := client.runWith(ctx, contract.Shell, contract.CommandArgs(), stdin, false, onProgress, func() { h.giveBack(client) })
	fields := map[string]any{
		"operation":   string(op),
		"host":        h.cfg.Host,
		"port":        h.port,
		"auth":        h.cfg.Auth,
		"https":       h.cfg.HTTPS,
		"duration_ms": time.Since(start).Milliseconds(),
		"exit_code":   out.exitCode,
		"params":      params,
	}
	if out.err != nil {
		fields["error"] = out.err.Error()
	} else if h.cfg.Answer != nil {
		h.cfg.Answer(op, params, out.exitCode, out.stdout, out.stderr)
	}
	lg := h.Logon()
	fields["logon"] = lg.Mechanism
	if lg.Fallback {
		fields["kerberos_not_used"] = lg.Why
	}
	log := contract.LoggerOrDiscard(h.cfg.Log)
	log.Debug(ctx, "WinRM operation finished", fields)
	if prev, _ := h.loggedLogon.Swap(lg.Mechanism).(string); prev != lg.Mechanism {
		log.Info(ctx, "WinRM logon mechanism of the host", map[string]any{"host": h.cfg.Host, "port": h.port, "logon": lg.Mechanism,
			"why": lg.Why, "ntlm_fallback": lg.Fallback})
	}
	return h.interpret(ctx, op, out, result)
}

func (h *winrmHost) interpret(ctx context.Context, op contract.Operation, out runOutcome, result any) error {
	// The error first: a context deadline ends a run with an error and exit code 0.
	if out.err != nil {
		e := h.classify(out.err)
		e.Op = op
		return e
	}
	if err := ctx.Err(); err != nil {
		e := h.classify(err)
		e.Op = op
		return e
	}
	stdout := bytes.TrimSpace(contract.StripProgress(bytes.TrimPrefix(out.stdout, []byte("\xef\xbb\xbf"))))
	if out.exitCode == contract.ExitOK {
		if len(stdout) == 0 {
			return h.protocolError(op, out, "the script exited 0 but printed nothing")
		}
		if err := json.Unmarshal(stdout, result); err != nil {
			return h.protocolError(op, out, fmt.Sprintf("the script's output is not the expected JSON (%v): %s", err, excerpt(string(stdout))))
		}
		return nil
	}
	var se contract.ScriptError
	if len(stdout) > 0 && json.Unmarshal(stdout, &se) == nil && se.Error != "" {
		msg := hostText(se.Message)
		if msg == "" {
			msg = "the script failed with " + hostText(se.Error)
		}
		return &Error{Host: h.cfg.Host, Op: op, Kind: KindScript, Code: se.Error, ExitCode: out.exitCode, Message: msg, Hint: scriptHint(se.Error)}
	}
	text := hostText(DecodeCLIXML(string(out.stderr))) // PowerShell's error records
	if text == "" && len(stdout) > 0 {
		text = excerpt(string(stdout))
	}
	if text == "" {
		text = "no error output"
	}
	return &Error{
		Host: h.cfg.Host, Op: op, Kind: KindScript, ExitCode: out.exitCode,
		Message: fmt.Sprintf("PowerShell failed with exit code %d: %s", out.exitCode, text),
		Hint:    "This is an error the script did not foresee; the text above is PowerShell's. The WinRM user must be a local Administrator, and Windows PowerShell 5.1 must be installed",
	}
}

func (h *winrmHost) protocolError(op contract.Operation, out runOutcome, msg string) *Error {
	if text := DecodeCLIXML(string(out.stderr)); text != "" {
		msg += "; stderr: " + excerpt(text)
	}
	return &Error{
		Host: h.cfg.Host, Op: op, Kind: KindProtocol, ExitCode: out.exitCode,
		Message: msg,
		Hint:    "Check that the endpoint is a Windows host running Windows PowerShell 5.1 (powershell.exe), not another service on this port",
	}
}

// excerpt is the start of s, a host's or a server's text, as hostText shows it.
func excerpt(s string) string {
	s = strings.TrimSpace(s)
	const max = 400
	if len(s) > max {
		s = s[:max] + "..."
	}
	return hostText(s)
}

// lineBreaks are the line breaks of a host's multi-line text (PowerShell's error
// records are several lines).
var lineBreaks = strings.NewReplacer("\r\n", " ", "\n", " ")

// hostText is text the host wrote, fit for a diagnostic: its lines joined by
// spaces, and every other control character escaped (safetext), so that it can
// neither rewrite the terminal nor forge a line of the message.
func hostText(s string) string { return safetext.Escape(lineBreaks.Replace(s)) }

func scriptHint(code string) string {
	switch code {
	case "invalid_parameters":
		return "The provider validates its input before sending it, so this is likely a bug: please report it"
	case "clustered":
		return "Restart the instance through the cluster (Failover Cluster Manager), and grant the right on every node"
	case "timeout":
		return "The service did not reach the wanted state in time: look at the Windows event log and the SQL Server error log on the host for why"
	case "not_found":
		return "Check the instance name (MSSQLSERVER for the default instance) and that SQL Server is installed on this host"
	case "lsa_error":
		return "Changing user rights needs a local Administrator; check the WinRM user's group membership"
	case contract.CodeConstrainedLanguage:
		return "Nothing was changed. The operations need FullLanguage; check with " +
			"powershell -NoProfile -Command '$ExecutionContext.SessionState.LanguageMode' run as the WinRM user on the host"
	}
	return ""
}

// NTLMFallback is why auth "negotiate" uses NTLM instead of Kerberos on the host,
// "" when it does not (Kerberos, or NTLM chosen knowingly).
func (h *winrmHost) NTLMFallback() string {
	if lg := h.Logon(); lg.Fallback {
		return lg.Why
	}
	return ""
}

// user is the user the host's operations log on as: the configured name, else the
// principal of the Kerberos credential cache a logon without a name uses.
func (h *winrmHost) user() string {
	if h.cfg.Username == "" && h.krb != nil && h.krb.client != nil {
		return h.krb.client.Principal()
	}
	return h.cfg.Username
}
