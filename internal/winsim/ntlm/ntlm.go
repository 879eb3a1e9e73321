// Package ntlm is the server side of NTLM (NTLMSSP, [MS-NLMP]) for the simulator's
// WS-Management endpoint: it answers a client's NEGOTIATE_MESSAGE with a
// CHALLENGE_MESSAGE, verifies the NTLMv2 AUTHENTICATE_MESSAGE against the host's
// accounts, and then seals and unseals messages with NTLMv2 session security, as
// pywinrm's default HTTP message encryption and masterzen/winrm's
// NewEncryption("ntlm") expect.
//
// A Session is one authentication on one connection:
//
//	sess := srv.NewSession()
//	challenge, err := sess.Challenge(negotiate)  // answer: 401 "Negotiate <challenge>"
//	id, err := sess.Authenticate(authenticate)   // errors.Is(err, ErrAuthFailed) on bad credentials
//	plain, err := sess.Unseal(sig, sealed)        // client -> server
//	sig, sealed := sess.Seal(reply)               // server -> client
//
// Only NTLMv2 is accepted (like a Windows host with LmCompatibilityLevel 5); NTLMv1
// and anonymous logons fail with ErrAuthFailed.
package ntlm

import (
	"crypto/hmac"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ntlmauth"
)

// ErrAuthFailed is wrapped by the error Authenticate returns when the credentials are
// wrong, the user is unknown, or the client used a refused NTLM variant. The HTTP
// layer answers it with 401.
var ErrAuthFailed = errors.New("ntlm: authentication failed")

// Lookup returns the password of a user. The user name compares case-insensitively;
// domain is what the client sent: "", the host's computer name, or a domain name.
type Lookup func(domain, user string) (password string, ok bool)

// OneAccount is the Lookup of a host with a single account, user (compared without
// case) under any domain the client names: a fixture for tests of the layers above.
func OneAccount(user, password string) Lookup {
	return func(_, name string) (string, bool) {
		if strings.EqualFold(name, user) {
			return password, true
		}
		return "", false
	}
}

// Server holds what a Windows host needs to answer NTLM logons.
type Server struct {
	ComputerName string // NetBIOS name of the host, e.g. "SQL01"
	DomainName   string // DNS or NetBIOS domain; "" for a workgroup host
	// DNSDomainName is the domain's DNS name (the host's primary DNS suffix), for
	// a domain given by its NetBIOS name; "": DomainName.
	DNSDomainName string
	Lookup        Lookup // the host's accounts

	// TargetNames are the service principal names a client may name in
	// MsvAvTargetName ("HTTP/sql01", "HTTP/sql01.contoso.com", "HTTP/127.0.0.2"),
	// compared without case and without the service class. A logon naming another
	// host is refused (SPN target name validation): it was meant for someone else
	// and relayed here. Empty: not checked.
	TargetNames []string

	// CBTHardening is WinRM's CbtHardeningLevel for logons over TLS: "none" ignores
	// channel bindings; "relaxed" (Windows' default) refuses bindings of another
	// channel but accepts a client that sends none; "strict" also refuses a logon
	// without bindings or without a MIC. "" is "relaxed".
	CBTHardening string
}

// Identity is the authenticated account, as the client named it.
type Identity struct {
	Domain, User string
	Workstation  string // the client's computer name, if it sent one
}

// Session states.
const (
	stateNew = iota
	stateChallenged
	stateAuthenticated
	stateFailed
)

// Session is the NTLM state of one connection. Its methods are safe for concurrent
// use, though NTLM requires messages to be sealed and unsealed in order.
type Session struct {
	srv *Server

	mu              sync.Mutex
	state           int
	negotiate       []byte // raw messages, for the MIC (MS-NLMP 3.2.5.1.2)
	challenge       []byte
	serverChallenge [8]byte
	flags           uint32 // flags of the CHALLENGE_MESSAGE, then the negotiated NegFlg
	identity        Identity
	sec             *ntlmauth.Session // nil unless signing or sealing was negotiated
}

// NewSession starts the NTLM state of a new connection.
func (s *Server) NewSession() *Session {
	return &Session{srv: s}
}

// Challenge reads the client's NEGOTIATE_MESSAGE and returns the CHALLENGE_MESSAGE
// (MS-NLMP 3.2.5.1.1): a random server challenge, the flags the client asked for
// and this server supports, and target info naming the host.
func (s *Session) Challenge(negotiate []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateNew {
		return nil, errors.New("ntlm: NEGOTIATE message received twice on one session: the client restarted NTLM on the same connection; use a new session")
	}
	asked, err := parseNegotiate(negotiate)
	if err != nil {
		return nil, err
	}
	if _, err := rand.Read(s.serverChallenge[:]); err != nil {
		return nil, fmt.Errorf("ntlm: generating the server challenge: %w", err)
	}
	s.flags = challengeFlags(asked)
	names := namesFor(s.srv.ComputerName, s.srv.DomainName, s.srv.DNSDomainName)
	// The target name is the NetBIOS domain (or the computer, for a workgroup host).
	// It is sent even when not requested, like Windows: Azure/go-ntlmssp reads it
	// regardless of NTLMSSP_REQUEST_TARGET and uses it as the user's domain.
	s.challenge = buildChallenge(s.flags, s.serverChallenge, names.nbDomain, names.targetInfo(ntlmauth.Filetime(time.Now())))
	s.negotiate = append([]byte(nil), negotiate...)
	s.state = stateChallenged
	return append([]byte(nil), s.challenge...), nil
}

// Authenticate verifies the client's AUTHENTICATE_MESSAGE (MS-NLMP 3.2.5.1.2) and
// derives the session keys. Wrong or unknown credentials, NTLMv1 and anonymous
// logons return an error wrapping ErrAuthFailed; a malformed message returns another
// error. Either way the session cannot be used any more.
func (s *Session) Authenticate(authenticate []byte) (Identity, error) {
	return s.AuthenticateChannel(authenticate, nil)
}

// AuthenticateChannel is Authenticate for a logon over TLS: binding is the channel's
// "tls-server-end-point:" application data (RFC 5929) the client must have bound its
// logon to, nil over plain HTTP.
func (s *Session) AuthenticateChannel(authenticate, binding []byte) (Identity, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateChallenged {
		return Identity{}, fmt.Errorf("ntlm: AUTHENTICATE message received in the wrong state (%s): send NEGOTIATE first, on the same connection, and authenticate only once", stateName(s.state))
	}
	s.state = stateFailed // until verified
	id, err := s.verify(authenticate, binding)
	if err != nil {
		return Identity{}, err
	}
	s.identity = id
	s.state = stateAuthenticated
	return id, nil
}

func stateName(state int) string {
	return [...]string{"no NEGOTIATE yet", "challenged", "already authenticated", "failed"}[state]
}

func (s *Session) verify(msg, binding []byte) (Identity, error) {
	am, err := parseAuthenticate(msg)
	if err != nil {
		return Identity{}, err
	}
	id := Identity{Domain: am.domain, User: am.user, Workstation: am.workstation}
	who := am.user
	if am.domain != "" {
		who = am.domain + `\` + am.user
	}
	// NegFlg: what both sides agreed to. The client computes its keys from the flags it
	// echoes, which can only narrow the server's offer.
	flags := am.flags & s.flags

	switch n := len(am.ntResponse); {
	case am.user == "" && n == 0:
		return Identity{}, fmt.Errorf("%w: anonymous logon refused: give a user name and password", ErrAuthFailed)
	case n == 24:
		return Identity{}, fmt.Errorf("%w: user %s sent an NTLMv1 response, which this host refuses (LmCompatibilityLevel 5): configure the client for NTLMv2", ErrAuthFailed, who)
	case n < 16+28:
		return Identity{}, fmt.Errorf("ntlm: AUTHENTICATE message: NtChallengeResponse of %d bytes is neither NTLMv1 nor NTLMv2: the client sent a malformed NTLM message", n)
	}
	if s.srv.Lookup == nil {
		return Identity{}, fmt.Errorf("%w: user %s: the host has no accounts configured (ntlm.Server.Lookup is nil)", ErrAuthFailed, who)
	}
	password, ok := s.srv.Lookup(am.domain, am.user)
	if !ok {
		return Identity{}, fmt.Errorf("%w: user %s is not an account on %s: check the user name and domain", ErrAuthFailed, who, s.srv.ComputerName)
	}

	// NTLMv2 (MS-NLMP 3.3.2): NTProofStr = HMAC_MD5(ResponseKeyNT, ServerChallenge||blob)
	// with ResponseKeyNT = NTOWFv2 = HMAC_MD5(MD4(UTF16LE(password)), UTF16LE(UPPER(user)+domain)).
	// Servers SHOULD also accept clients that left the domain out (3.2.5.1.2).
	proof, blob := am.ntResponse[:16], am.ntResponse[16:]
	var responseKey []byte
	for _, dom := range uniq(am.domain, "") {
		key := ntlmauth.NTOWFv2(password, am.user, dom)
		if hmac.Equal(ntlmauth.HMACMD5(key, s.serverChallenge[:], blob), proof) {
			responseKey = key
			break
		}
	}
	if responseKey == nil {
		return Identity{}, fmt.Errorf("%w: wrong password for user %s on %s", ErrAuthFailed, who, s.srv.ComputerName)
	}

	// Keys (MS-NLMP 3.3.2, 3.4.5.1): SessionBaseKey = HMAC_MD5(ResponseKeyNT, NTProofStr);
	// for NTLMv2 KeyExchangeKey = SessionBaseKey. With KEY_EXCH the client chose a random
	// ExportedSessionKey and sent it RC4-encrypted with KeyExchangeKey.
	keyExchangeKey := ntlmauth.HMACMD5(responseKey, proof)
	exported := keyExchangeKey
	if flags&flagKeyExch != 0 && flags&(flagSign|flagSeal) != 0 {
		if len(am.encryptedRandomSessionKey) != 16 {
			return Identity{}, fmt.Errorf("ntlm: AUTHENTICATE message: key exchange negotiated but EncryptedRandomSessionKey is %d bytes, want 16: the client sent a malformed NTLM message", len(am.encryptedRandomSessionKey))
		}
		exported = ntlmauth.RC4K(keyExchangeKey, am.encryptedRandomSessionKey)
	}

	if err := s.checkMIC(msg, blob, exported); err != nil {
		return Identity{}, fmt.Errorf("%w: user %s: %w", ErrAuthFailed, who, err)
	}
	if err := s.checkBindings(blob, binding); err != nil {
		return Identity{}, fmt.Errorf("%w: user %s: %w", ErrAuthFailed, who, err)
	}

	s.flags = flags
	if flags&(flagSign|flagSeal) != 0 {
		s.sec = ntlmauth.NewServerSession(flags, exported)
	}
	return id, nil
}

// checkMIC verifies the AUTHENTICATE_MESSAGE's MIC when the client's NTLMv2 blob says
// it sent one (MsvAvFlags bit 0x2): HMAC_MD5(ExportedSessionKey, NEGOTIATE ||
// CHALLENGE || AUTHENTICATE with the MIC zeroed), MS-NLMP 3.2.5.1.2.
func (s *Session) checkMIC(msg, blob, exported []byte) error {
	pairs, err := ntlmv2AVPairs(blob)
	if err != nil {
		return err
	}
	hasMIC := false
	for _, p := range pairs {
		if p.ID == avFlags && len(p.Value) == 4 && p.Value[0]&avFlagMICPresent != 0 {
			hasMIC = true
		}
	}
	if !hasMIC {
		if strings.EqualFold(s.srv.CBTHardening, "strict") {
			return fmt.Errorf("%w: the AUTHENTICATE message has no MIC, which this host requires (CbtHardeningLevel Strict): the logon may have been tampered with or relayed", ErrRelayRefused)
		}
		return nil
	}
	if len(msg) < micOffset+16 {
		return errors.New("the client announced a MIC but the AUTHENTICATE message is too short to hold one")
	}
	zeroed := append([]byte(nil), msg...)
	clear(zeroed[micOffset : micOffset+16])
	want := ntlmauth.HMACMD5(exported, s.negotiate, s.challenge, zeroed)
	if !hmac.Equal(want, msg[micOffset:micOffset+16]) {
		return fmt.Errorf("%w: message integrity check (MIC) failed: the NTLM messages were altered in transit (or relayed from another connection), or the client computed its session key differently", ErrRelayRefused)
	}
	return nil
}

// ErrRelayRefused is wrapped (with ErrAuthFailed) by the error of a logon refused
// because it was bound to another channel or meant for another host: a MIC that does
// not verify or is missing under Strict, channel bindings of another TLS certificate,
// or an MsvAvTargetName naming another host.
var ErrRelayRefused = errors.New("ntlm: logon bound to another channel or host")

// checkBindings applies SPN target name validation and the CBT hardening level to
// the AV pairs of the client's NTLMv2 blob.
func (s *Session) checkBindings(blob, binding []byte) error {
	pairs, err := ntlmv2AVPairs(blob)
	if err != nil {
		return err
	}
	var target string
	var cbt []byte
	for _, p := range pairs {
		switch p.ID {
		case avTargetName:
			target, _ = decodeString(p.Value, true, "AUTHENTICATE", "MsvAvTargetName")
		case avChannelBindings:
			cbt = p.Value
		}
	}
	if target != "" && len(s.srv.TargetNames) > 0 && !targetMatches(target, s.srv.TargetNames) {
		return fmt.Errorf("%w: the logon names the service %q, which is not this host (%s): it was meant for another host and relayed here", ErrRelayRefused, target, strings.Join(s.srv.TargetNames, ", "))
	}
	level := strings.ToLower(s.srv.CBTHardening)
	if binding == nil || level == "none" {
		return nil
	}
	absent := len(cbt) == 0 || allZero(cbt)
	switch {
	case absent && level == "strict":
		return fmt.Errorf("%w: the logon over TLS carries no channel bindings, which this host requires (CbtHardeningLevel Strict)", ErrRelayRefused)
	case absent:
		return nil
	}
	if !hmac.Equal(cbt, ntlmauth.ChannelBindingsHash(binding)) {
		return fmt.Errorf("%w: the logon's channel bindings are those of another TLS certificate than this host's: the client talked TLS to someone else (a relay, or a TLS-intercepting proxy)", ErrRelayRefused)
	}
	return nil
}

// targetMatches compares an SPN "CLASS/host[:port]" with the host's names.
func targetMatches(spn string, names []string) bool {
	host := spn
	if _, h, ok := strings.Cut(spn, "/"); ok {
		host = h
	}
	if h, _, ok := strings.Cut(host, ":"); ok && !strings.Contains(h, "]") && strings.Count(host, ":") == 1 {
		host = h
	}
	for _, n := range names {
		if _, h, ok := strings.Cut(n, "/"); ok {
			n = h
		}
		if strings.EqualFold(host, n) {
			return true
		}
	}
	return false
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// Identity returns the authenticated account; ok is false before Authenticate
// succeeded.
func (s *Session) Identity() (id Identity, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.identity, s.state == stateAuthenticated
}

// Sealing reports whether the session negotiated message confidentiality
// (NTLMSSP_NEGOTIATE_SEAL), which HTTP message encryption needs.
func (s *Session) Sealing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == stateAuthenticated && s.sec.Sealing()
}

func uniq(a, b string) []string {
	if a == b {
		return []string{a}
	}
	return []string{a, b}
}
