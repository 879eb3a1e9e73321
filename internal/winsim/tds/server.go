// Package tds is the TDS 7.4 endpoint of a simulated SQL Server instance: real TCP,
// real packets, for go-mssqldb, FreeTDS and pytds. It speaks the wire protocol;
// a Handler supplies the SQL semantics.
//
// What it does: PRELOGIN; clear text, TDS 7.x encryption negotiated in PRELOGIN
// (TLS 1.2 inside PRELOGIN packets, then TLS on the socket) and TDS 8.0
// (encrypt=strict: TLS 1.2+ from the first byte, ALPN "tds/8.0"), chosen per
// connection by its first byte so one port serves all; LOGIN7 with SQL logins,
// and integrated (SSPI) logons through Options.SSPI: the LOGIN7 SSPI field, SSPI
// tokens (0xED) back and SSPI messages (0x11) on, a refused one answered with error
// 18452; SQLBatch → result sets or an
// error; ATTENTION cancels the running batch's context and is confirmed with
// DONE_ATTN; RPC and transaction manager requests get clear errors.
//
// Note for Handler authors: database/sql's Ping (and go-mssqldb's connection
// check) sends the batch "select 1;", so a Handler should answer it.
//
// Lifecycle: Serve(l) until l is closed; to stop like an Engine, close the listener
// first, then call CloseConnections.
package tds

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/utf16le"
)

// Options configure a Server.
type Options struct {
	// TLSConfig, when set, lets clients encrypt: TDS 8.0 (encrypt=strict, TLS from the
	// first byte, ALPN "tds/8.0") and TDS 7.x encryption negotiated in PRELOGIN
	// (encrypt=true), where the TLS handshake travels inside PRELOGIN packets.
	// Without it the endpoint only speaks clear text.
	TLSConfig *tls.Config
	// Logf receives one line per connection problem; nil discards them.
	Logf func(format string, args ...any)
	// LoginTimeout bounds PRELOGIN, TLS and LOGIN7 on a new connection; 0 means 30s.
	LoginTimeout time.Duration
	// SSPI accepts integrated (Windows) logons; nil refuses them with error 18452,
	// as an instance that cannot validate Windows logons does.
	SSPI SSPI
}

// Server is a TDS 7.4 endpoint in front of a Handler.
type Server struct {
	h    Handler
	opts Options

	mu    sync.Mutex
	conns map[*conn]struct{}
	drops int // the next logins whose connection is dropped after the ack (-1: all)
	spids int // the last session id given
}

// DropAfterLogin makes the next n connections close right after their login
// succeeded (-1: every one until called with 0): the fault "TDS drop after login".
func (s *Server) DropAfterLogin(n int) {
	s.mu.Lock()
	s.drops = n
	s.mu.Unlock()
}

// dropNow reports whether this login's connection is to be dropped.
func (s *Server) dropNow() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.drops < 0:
		return true
	case s.drops > 0:
		s.drops--
		return true
	}
	return false
}

// NewServer returns an endpoint that answers with h.
func NewServer(h Handler, opts Options) *Server {
	if opts.LoginTimeout <= 0 {
		opts.LoginTimeout = 30 * time.Second
	}
	return &Server{h: h, opts: opts, conns: map[*conn]struct{}{}}
}

func (s *Server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}

// Serve accepts connections on l until l is closed; it then returns nil. Open
// connections keep running: CloseConnections drops them.
func (s *Server) Serve(l net.Listener) error {
	var delay time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// Transient (for example too many open files): back off and retry.
				if delay == 0 {
					delay = 5 * time.Millisecond
				} else if delay < time.Second {
					delay *= 2
				}
				s.logf("tds: accept on %s: %v; retrying in %s", l.Addr(), err, delay)
				time.Sleep(delay)
				continue
			}
			return fmt.Errorf("tds: accept on %s: %w", l.Addr(), err)
		}
		delay = 0
		ctx, cancel := context.WithCancel(context.Background())
		cn := &conn{s: s, raw: c, ctx: ctx, cancel: cancel}
		s.mu.Lock()
		s.conns[cn] = struct{}{}
		if s.spids < 50 {
			s.spids = 50 // user sessions start at 51, after the system's
		}
		s.spids++
		cn.session = s.spids
		s.mu.Unlock()
		go cn.serve()
	}
}

// CloseConnections drops every open connection, as a stopping Engine does. A query
// running on one of them sees its context cancelled.
func (s *Server) CloseConnections() {
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// OpenConnections is the number of connections the endpoint is serving.
func (s *Server) OpenConnections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// conn is one client connection.
type conn struct {
	s      *Server
	raw    net.Conn
	ctx    context.Context
	cancel context.CancelFunc

	r       io.Reader // where messages come from (raw, buffered, or TLS)
	pw      *packetWriter
	login   Login
	tls     bool
	session int
}

func (c *conn) close() {
	c.cancel()
	_ = c.raw.Close()
}

func (c *conn) serve() {
	defer func() {
		c.close()
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.mu.Unlock()
		if se, ok := c.s.h.(SessionEnder); ok {
			se.SessionEnded(c.session)
		}
	}()
	defer func() {
		if p := recover(); p != nil {
			c.s.logf("tds: connection from %s: internal error: %v", c.raw.RemoteAddr(), p)
		}
	}()
	if err := c.raw.SetDeadline(time.Now().Add(c.s.opts.LoginTimeout)); err != nil {
		return
	}
	if err := c.handshake(); err != nil {
		if c.ctx.Err() == nil && !errors.Is(err, io.EOF) {
			c.s.logf("tds: connection from %s: %v", c.raw.RemoteAddr(), err)
		}
		return
	}
	if err := c.raw.SetDeadline(time.Time{}); err != nil {
		return
	}
	if err := c.serveRequests(); err != nil && c.ctx.Err() == nil && !errors.Is(err, io.EOF) {
		c.s.logf("tds: connection from %s (user %q): %v", c.raw.RemoteAddr(), c.login.User, err)
	}
}

// bufConn reads through a bufio.Reader that was used to peek at the first byte.
type bufConn struct {
	net.Conn
	br *bufio.Reader
}

func (b *bufConn) Read(p []byte) (int, error) { return b.br.Read(p) }

// handshake runs PRELOGIN, the optional TLS handshake and LOGIN7.
func (c *conn) handshake() error {
	br := bufio.NewReader(c.raw)
	first, err := br.Peek(1)
	if err != nil {
		return err
	}
	var transport net.Conn = &bufConn{Conn: c.raw, br: br}
	if first[0] == 0x16 { // TLS handshake record: TDS 8.0 (encrypt=strict)
		if c.s.opts.TLSConfig == nil {
			return errors.New("client started TLS (encrypt=strict) but this endpoint has no certificate (Options.TLSConfig); connect with encrypt=disable or configure TLS")
		}
		cfg := c.s.opts.TLSConfig.Clone()
		cfg.NextProtos = appendMissing(cfg.NextProtos, "tds/8.0")
		tc := tls.Server(transport, cfg)
		if err := tc.HandshakeContext(c.ctx); err != nil {
			return fmt.Errorf("TLS handshake (encrypt=strict) failed: %w", err)
		}
		transport = tc
		c.tls = true
	}
	c.r = transport
	c.pw = &packetWriter{w: transport, packetSize: defaultPacketSize}

	m, err := readMessage(c.r)
	if err != nil {
		return err
	}
	if m.typ != packPrelogin {
		return fmt.Errorf("expected PRELOGIN (0x12) as the first message, got packet type 0x%02X; only TDS 7.x/8.0 clients are supported", m.typ)
	}
	opts, err := parsePrelogin(m.data)
	if err != nil {
		return err
	}
	clientEnc := encryptNotSup
	if v := opts[preloginEncryption]; len(v) > 0 {
		clientEnc = v[0]
	}
	answer := encryptNotSup
	startTLS := false
	switch {
	case c.tls:
		answer = encryptOn // already encrypted; clients ignore the value under TDS 8.0
	case (clientEnc == encryptOn || clientEnc == encryptReq) && c.s.opts.TLSConfig != nil:
		answer = encryptOn
		startTLS = true
	}
	major, minor, build := c.s.h.Version()
	if err := c.pw.writeMessage(packReply, buildPrelogin(major, minor, build, answer)); err != nil {
		return err
	}
	if !c.tls && answer == encryptNotSup && clientEnc != encryptOff && clientEnc != encryptNotSup {
		// The client insists on encryption and has just been told it is not
		// available: it will hang up.
		c.s.logf("tds: client %s requires encryption but the endpoint has no TLS configuration; it was told encryption is not supported", c.raw.RemoteAddr())
	}
	if startTLS {
		if err := c.startTLSInTDS(transport); err != nil {
			return err
		}
	}

	m, err = readMessage(c.r)
	if err != nil {
		return err
	}
	if m.typ != packLogin7 {
		return fmt.Errorf("expected LOGIN7 (0x10) after PRELOGIN, got packet type 0x%02X", m.typ)
	}
	return c.doLogin(m.data)
}

func appendMissing(list []string, v string) []string {
	for _, s := range list {
		if s == v {
			return list
		}
	}
	return append(append([]string(nil), list...), v)
}

func (c *conn) doLogin(data []byte) error {
	l, err := parseLogin7(data)
	if err != nil {
		return err
	}
	l.Encrypted = c.tls
	l.Session = c.session
	c.login = l.Login
	server := c.s.h.ServerName()
	if l.SSPI {
		account, mech, reply, err := c.integratedLogon(l.SSPIData, server)
		if err != nil {
			return err
		}
		l.User, l.Password, l.Integrated, l.Mechanism = account, "", true, mech
		c.login = l.Login
		if len(reply) > 0 {
			// The context's last token (SPNEGO accept-completed, with the AP-REP
			// when the client asked for mutual authentication) travels in a
			// message of its own, ahead of the login's answer: go-mssqldb ends
			// a response at an SSPI token, and sends nothing back when its
			// security package has no more to say (FIDELITY.md).
			var t tokenBuf
			t.sspi(reply)
			if err := c.pw.writeMessage(packReply, t.b); err != nil {
				return err
			}
		}
	}
	if e := c.s.h.Login(c.ctx, l.Login); e != nil {
		e = withDefaults(e, 18456, 14)
		if err := c.pw.writeMessage(packReply, errorStream(e, server)); err != nil {
			return err
		}
		c.s.logf("tds: login of %q from %s refused: %s", l.User, c.raw.RemoteAddr(), e.Message)
		return io.EOF // the connection closes after a failed login, as SQL Server does
	}
	packetSize := int(l.PacketSize)
	if packetSize == 0 {
		packetSize = defaultPacketSize
	}
	packetSize = min(max(packetSize, minPacketSize), maxPacketSize)
	db := l.Database
	if db == "" {
		db = "master"
	}
	major, minor, build := c.s.h.Version()
	var t tokenBuf
	t.envChangeString(envDatabase, db, "master")
	t.envChangeCollation()
	t.envChangeString(envLanguage, "us_english", "")
	t.loginAck("Microsoft SQL Server", major, minor, build)
	t.envChangeString(envPacketSize, fmt.Sprint(packetSize), fmt.Sprint(packetSize))
	t.done(doneFinal, 0, 0)
	if err := c.pw.writeMessage(packReply, t.b); err != nil {
		return err
	}
	c.pw.packetSize = packetSize
	if c.s.dropNow() {
		c.s.logf("tds: dropping the connection of %q from %s after its login (injected fault)", l.User, c.raw.RemoteAddr())
		return io.EOF
	}
	return nil
}

// untrustedDomain is what SQL Server answers a Windows logon that its security
// package refused (error 18452, class 14): the client learns nothing more; the
// reason goes to the error log (17806, "SSPI handshake failed ...").
func untrustedDomain() *SQLError {
	return &SQLError{Number: 18452, State: 1, Class: 14,
		Message: "Login failed. The login is from an untrusted domain and cannot be used with Windows authentication."}
}

// integratedLogon runs the SSPI exchange of an integrated login: first the LOGIN7
// token, then one SSPI message per token the context answers with, until the
// context is complete. It returns the Windows account, the mechanism and the last
// token to send with the login's answer. A refused logon has been answered with
// 18452 when it returns an error.
func (c *conn) integratedLogon(first []byte, server string) (account, mech string, reply []byte, err error) {
	refuse := func(why string) error {
		_ = c.pw.writeMessage(packReply, errorStream(untrustedDomain(), server))
		c.s.logf("tds: integrated login from %s refused (error 18452): %s", c.raw.RemoteAddr(), why)
		return io.EOF // the connection closes after a failed login, as SQL Server does
	}
	if c.s.opts.SSPI == nil {
		return "", "", nil, refuse("this instance accepts no Windows logons (no security package configured)")
	}
	if len(first) == 0 {
		return "", "", nil, refuse("LOGIN7 asks for integrated authentication but carries no SSPI token")
	}
	sc := c.s.opts.SSPI.NewContext(c.raw.RemoteAddr())
	token := first
	const maxLegs = 4 // Kerberos takes one, NTLM two
	for leg := 1; ; leg++ {
		out, acct, m, done, err := sc.Accept(token)
		if err != nil {
			return "", "", nil, refuse(err.Error())
		}
		if done {
			return acct, m, out, nil
		}
		if leg == maxLegs {
			return "", "", nil, refuse(fmt.Sprintf("the security context is not complete after %d tokens", leg))
		}
		var t tokenBuf
		t.sspi(out)
		if err := c.pw.writeMessage(packReply, t.b); err != nil {
			return "", "", nil, err
		}
		msg, err := readMessage(c.r)
		if err != nil {
			return "", "", nil, err
		}
		if msg.typ != packSSPI {
			return "", "", nil, refuse(fmt.Sprintf("expected an SSPI message (0x11) to continue the logon, got packet type 0x%02X", msg.typ))
		}
		token = msg.data
	}
}

// withDefaults fills an error's zero number/class/state the way SQL Server would.
func withDefaults(e *SQLError, number int32, class uint8) *SQLError {
	cp := *e
	if cp.Number == 0 {
		cp.Number = number
	}
	if cp.Class == 0 {
		cp.Class = class
	}
	if cp.State == 0 {
		cp.State = 1
	}
	return &cp
}

type readResult struct {
	m   message
	err error
}

// serveRequests answers requests until the client leaves or the connection is dropped.
func (c *conn) serveRequests() error {
	msgs := make(chan readResult)
	go func() {
		for {
			m, err := readMessage(c.r)
			select {
			case msgs <- readResult{m, err}:
			case <-c.ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	for {
		var r readResult
		select {
		case r = <-msgs:
		case <-c.ctx.Done():
			return nil
		}
		if r.err != nil {
			return r.err
		}
		switch r.m.typ {
		case packSQLBatch:
			if err := c.runBatch(r.m, msgs); err != nil {
				return err
			}
		case packAttention:
			// The batch it was meant for already finished: confirm anyway, the client
			// waits for DONE with the attention bit.
			if err := c.sendAttnAck(); err != nil {
				return err
			}
		case packRPC:
			if err := c.pw.writeMessage(packReply, errorStream(rpcError(r.m.data), c.s.h.ServerName())); err != nil {
				return err
			}
		case packTransMgrReq:
			e := &SQLError{Number: 50000, State: 1, Class: 16,
				Message: "The simulated SQL Server does not support transactions (transaction manager request); run the queries without BEGIN TRANSACTION."}
			if err := c.pw.writeMessage(packReply, errorStream(e, c.s.h.ServerName())); err != nil {
				return err
			}
		default:
			e := &SQLError{Number: 50000, State: 1, Class: 20,
				Message: fmt.Sprintf("The simulated SQL Server does not support TDS packet type 0x%02X; the connection is closed.", r.m.typ)}
			_ = c.pw.writeMessage(packReply, errorStream(e, c.s.h.ServerName()))
			return fmt.Errorf("unsupported TDS packet type 0x%02X; connection closed", r.m.typ)
		}
	}
}

func (c *conn) sendAttnAck() error {
	var t tokenBuf
	t.done(doneAttn, 0, 0)
	return c.pw.writeMessage(packReply, t.b)
}

type batchResult struct {
	sets []ResultSet
	err  *SQLError
}

// runBatch runs one SQL batch, watching for ATTENTION while the handler works.
func (c *conn) runBatch(m message, msgs <-chan readResult) error {
	server := c.s.h.ServerName()
	sql, err := batchText(m.data)
	if err != nil {
		e := &SQLError{Number: 50000, State: 1, Class: 16, Message: "The SQL batch could not be decoded: " + err.Error()}
		return c.pw.writeMessage(packReply, errorStream(e, server))
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	res := make(chan batchResult, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				res <- batchResult{err: &SQLError{Number: 50000, State: 1, Class: 16,
					Message: fmt.Sprintf("The simulated SQL Server failed while running the batch: %v", p)}}
			}
		}()
		sets, e := c.s.h.Batch(ctx, c.login, sql)
		res <- batchResult{sets, e}
	}()
	select {
	case r := <-res:
		var out []byte
		if r.err != nil {
			out = errorStream(withDefaults(r.err, 50000, 16), server)
		} else if out, err = resultStream(r.sets); err != nil {
			c.s.logf("tds: batch %q: the handler returned rows the endpoint cannot encode: %v", sql, err)
			out = errorStream(&SQLError{Number: 50000, State: 1, Class: 16,
				Message: "The simulated SQL Server produced an invalid result: " + err.Error()}, server)
		}
		if m.status&statusReset != 0 {
			// The client reused a pooled connection and asked for a session reset:
			// acknowledge it first, as SQL Server does (the session holds no state here).
			out = append([]byte{tokenEnvChange, 3, 0, envResetConnAck, 0, 0}, out...)
		}
		return c.pw.writeMessage(packReply, out)
	case r := <-msgs:
		cancel()
		if r.err != nil {
			return r.err
		}
		if r.m.typ != packAttention {
			return fmt.Errorf("client sent packet type 0x%02X while a batch was running (MARS is not supported)", r.m.typ)
		}
		return c.sendAttnAck()
	case <-c.ctx.Done():
		return nil
	}
}

// batchText decodes an SQLBatch: ALL_HEADERS (TDS 7.2+) then UTF-16LE text.
func batchText(data []byte) (string, error) {
	data, err := skipAllHeaders(data)
	if err != nil {
		return "", err
	}
	text, err := utf16le.Decode(data)
	if err != nil {
		return "", fmt.Errorf("batch text: %w", err)
	}
	return text, nil
}

func skipAllHeaders(data []byte) ([]byte, error) {
	if len(data) < 4 {
		return nil, errors.New("request is shorter than its ALL_HEADERS length")
	}
	total := int(binary.LittleEndian.Uint32(data))
	if total < 4 || total > len(data) {
		return nil, fmt.Errorf("ALL_HEADERS length %d does not fit the %d-byte request", total, len(data))
	}
	return data[total:], nil
}

// Well-known procedure ids an RPC request may name instead of a name.
var procNames = map[uint16]string{
	1: "sp_cursor", 2: "sp_cursoropen", 3: "sp_cursorprepare", 4: "sp_cursorexecute",
	5: "sp_cursorprepexec", 6: "sp_cursorunprepare", 7: "sp_cursorfetch", 8: "sp_cursoroption",
	9: "sp_cursorclose", 10: "sp_executesql", 11: "sp_prepare", 12: "sp_execute",
	13: "sp_prepexec", 14: "sp_prepexecrpc", 15: "sp_unprepare",
}

// rpcError answers an RPC request: the simulator runs parameterless batches only.
func rpcError(data []byte) *SQLError {
	name := "?"
	if rest, err := skipAllHeaders(data); err == nil && len(rest) >= 2 {
		n := binary.LittleEndian.Uint16(rest)
		rest = rest[2:]
		if n == 0xFFFF && len(rest) >= 2 {
			id := binary.LittleEndian.Uint16(rest)
			name = procNames[id]
			if name == "" {
				name = fmt.Sprintf("procedure id %d", id)
			}
		} else if int(n)*2 <= len(rest) {
			name, _ = utf16le.Decode(rest[:int(n)*2]) // an even length: cannot fail
		}
	}
	if name == "sp_executesql" || name == "sp_prepexec" || name == "sp_prepare" {
		return &SQLError{Number: 50000, State: 1, Class: 16,
			Message: fmt.Sprintf("The simulated SQL Server runs parameterless SQL batches only; %s (a query with arguments) is not supported. Send the query text without arguments.", name)}
	}
	return &SQLError{Number: 2812, State: 62, Class: 16,
		Message: fmt.Sprintf("Could not find stored procedure '%s'.", name)}
}
