package wsman

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/ntlm"
)

// connState is the authentication state of one TCP connection. NTLM
// authenticates the connection, not a request: after the AUTHENTICATE leg the
// client sends later requests on the same connection without Authorization.
type connState struct {
	mu      sync.Mutex
	session *ntlm.Session // the NTLM handshake in progress or done on this connection
	krb     *krbConn      // the Kerberos context of this connection, if it logged on with Kerberos
	user    string        // the user the connection authenticated as with NTLM or Kerberos, or ""
}

type connKey struct{}

func connStateFrom(ctx context.Context) *connState {
	cs, _ := ctx.Value(connKey{}).(*connState)
	return cs
}

// authResult says who sent a request, or that the handler already answered it.
type authResult struct {
	user     string
	session  *ntlm.Session // set when the connection is NTLM-authenticated (message sealing possible)
	krb      *krbConn      // set when the connection is Kerberos-authenticated (message sealing possible)
	reply    string        // a WWW-Authenticate value for the answer (Kerberos' mutual-auth AP-REP)
	answered bool          // a 401 (NTLM challenge or refusal) was written
}

// authenticate checks the request's credentials. It answers 401 itself when
// they are missing or wrong, or to send an NTLM challenge.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) authResult {
	cs := connStateFrom(r.Context())
	header := r.Header.Get("Authorization")
	scheme, token, _ := strings.Cut(header, " ")
	token = strings.TrimSpace(token)

	switch {
	case header == "":
		if cs != nil {
			cs.mu.Lock()
			user, session, kc := cs.user, cs.session, cs.krb
			cs.mu.Unlock()
			if user != "" {
				return authResult{user: user, session: session, krb: kc}
			}
		}
		s.logf("wsman: %s %s: no credentials; answering 401", r.RemoteAddr, r.URL.Path)
	case strings.EqualFold(scheme, "Basic") && s.cfg.AllowBasic && r.TLS == nil && !s.cfg.AllowUnencrypted:
		s.logf("wsman: %s: Basic over plain HTTP refused (AllowUnencrypted=false); answering 401", r.RemoteAddr)
	case strings.EqualFold(scheme, "Basic") && s.cfg.AllowBasic:
		if user, ok := s.checkBasic(token); ok {
			return authResult{user: user}
		}
	case strings.EqualFold(scheme, "Kerberos") && s.cfg.Kerberos != nil:
		raw, err := base64.StdEncoding.DecodeString(token)
		if err != nil {
			s.logf("wsman: %s: Kerberos token is not valid base64; answering 401", r.RemoteAddr)
			break
		}
		return s.kerberosLeg(w, r, cs, scheme, raw)
	case strings.EqualFold(scheme, "Negotiate") && s.cfg.Kerberos != nil && isKerberosToken(decodeOrNil(token)):
		return s.kerberosLeg(w, r, cs, scheme, decodeOrNil(token))
	case (strings.EqualFold(scheme, "Negotiate") || strings.EqualFold(scheme, "NTLM")) && s.cfg.AllowNTLM:
		return s.ntlmLeg(w, r, cs, scheme, token)
	default:
		s.logf("wsman: %s: authentication scheme %q is not enabled; answering 401", r.RemoteAddr, scheme)
	}
	s.unauthorized(w, "")
	return authResult{answered: true}
}

// decodeOrNil decodes a base64 token, or returns nil.
func decodeOrNil(token string) []byte {
	raw, err := base64.StdEncoding.DecodeString(token)
	if err != nil {
		return nil
	}
	return raw
}

// checkBasic verifies "Basic base64(user:password)". The user may be written
// "user", "HOST\user", "DOMAIN\user" or "user@domain".
func (s *Server) checkBasic(token string) (string, bool) {
	raw, err := base64.StdEncoding.DecodeString(token)
	if err != nil {
		s.logf("wsman: Basic credentials are not valid base64: %v", err)
		return "", false
	}
	login, password, ok := strings.Cut(string(raw), ":")
	if !ok || login == "" {
		s.logf("wsman: Basic credentials have no user name")
		return "", false
	}
	domain, user := splitLogin(login)
	want, found := s.cfg.Lookup(domain, user)
	if !found || want != password {
		s.logf("wsman: Basic authentication failed for %q", login)
		return "", false
	}
	return login, true
}

// splitLogin separates DOMAIN\user or user@domain.
func splitLogin(login string) (domain, user string) {
	if d, u, ok := strings.Cut(login, `\`); ok {
		return d, u
	}
	if u, d, ok := strings.Cut(login, "@"); ok {
		return d, u
	}
	return "", login
}

// sameUser compares two logins as Windows would: by account name, ignoring
// case and how the domain was written.
func sameUser(a, b string) bool {
	_, ua := splitLogin(a)
	_, ub := splitLogin(b)
	return strings.EqualFold(ua, ub)
}

// ntlmLeg handles one leg of the NTLM handshake carried in
// "Authorization: Negotiate <base64 NTLMSSP message>".
func (s *Server) ntlmLeg(w http.ResponseWriter, r *http.Request, cs *connState, scheme, token string) authResult {
	msg, err := base64.StdEncoding.DecodeString(token)
	if err != nil || len(msg) < 12 || string(msg[:8]) != "NTLMSSP\x00" {
		s.logf("wsman: %s: %s token is not a raw NTLMSSP message (SPNEGO and Kerberos are not supported); answering 401", r.RemoteAddr, scheme)
		s.unauthorized(w, "")
		return authResult{answered: true}
	}
	if cs == nil {
		s.logf("wsman: %s: NTLM needs per-connection state: set http.Server.ConnContext to Server.ConnContext", r.RemoteAddr)
		s.unauthorized(w, "")
		return authResult{answered: true}
	}
	switch msg[8] {
	case 1: // NEGOTIATE: start a new handshake on this connection
		session := s.ntlm.NewSession()
		challenge, err := session.Challenge(msg)
		if err != nil {
			s.logf("wsman: %s: NTLM NEGOTIATE refused: %v", r.RemoteAddr, err)
			s.unauthorized(w, "")
			return authResult{answered: true}
		}
		cs.mu.Lock()
		cs.session, cs.krb, cs.user = session, nil, ""
		cs.mu.Unlock()
		s.unauthorized(w, scheme+" "+base64.StdEncoding.EncodeToString(challenge))
		return authResult{answered: true}
	case 3: // AUTHENTICATE: finish the handshake started on this connection
		cs.mu.Lock()
		session := cs.session
		cs.mu.Unlock()
		if session == nil {
			s.logf("wsman: %s: NTLM AUTHENTICATE without a NEGOTIATE on this connection; answering 401", r.RemoteAddr)
			s.unauthorized(w, "")
			return authResult{answered: true}
		}
		var binding []byte
		if r.TLS != nil {
			s.mu.Lock()
			binding = s.binding
			s.mu.Unlock()
		}
		id, err := session.AuthenticateChannel(msg, binding)
		if err != nil {
			if !errors.Is(err, ntlm.ErrAuthFailed) {
				s.logf("wsman: %s: NTLM AUTHENTICATE rejected: %v", r.RemoteAddr, err)
			} else {
				s.logf("wsman: %s: NTLM authentication failed: %v", r.RemoteAddr, err)
			}
			cs.mu.Lock()
			cs.session, cs.user = nil, ""
			cs.mu.Unlock()
			s.unauthorized(w, "")
			return authResult{answered: true}
		}
		user := id.User
		if id.Domain != "" {
			user = id.Domain + `\` + id.User
		}
		cs.mu.Lock()
		cs.user = user
		cs.mu.Unlock()
		return authResult{user: user, session: session}
	default:
		s.logf("wsman: %s: unexpected NTLM message type %d; answering 401", r.RemoteAddr, msg[8])
		s.unauthorized(w, "")
		return authResult{answered: true}
	}
}

// unauthorized answers 401 with no body, as Windows does. With challenge it
// carries one NTLM challenge; otherwise it offers every enabled scheme.
func (s *Server) unauthorized(w http.ResponseWriter, challenge string) {
	h := w.Header()
	switch {
	case challenge != "":
		h.Add("WWW-Authenticate", challenge)
	default:
		if s.cfg.AllowNTLM || s.cfg.Kerberos != nil {
			h.Add("WWW-Authenticate", "Negotiate")
		}
		if s.cfg.Kerberos != nil {
			h.Add("WWW-Authenticate", "Kerberos")
		}
		if s.cfg.AllowBasic {
			h.Add("WWW-Authenticate", `Basic realm="WSMAN"`)
		}
	}
	h.Set("Server", "Microsoft-HTTPAPI/2.0")
	h.Set("Content-Length", "0")
	w.WriteHeader(http.StatusUnauthorized)
}

// ConnContext gives each TCP connection its own authentication state. Set it
// as http.Server.ConnContext when serving Handler yourself; Serve and ServeTLS
// do so.
func (s *Server) ConnContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, &connState{})
}
