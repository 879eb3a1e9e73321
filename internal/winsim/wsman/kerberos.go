package wsman

import (
	"bytes"
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/errorcode"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/krbaccept"
)

// KerberosConfig turns on Kerberos (HTTP "Negotiate" with SPNEGO or a bare
// Kerberos token, and the "Kerberos" scheme), as a domain-joined Windows host
// accepts it: the host's service keys verify the AP-REQ, the client principal
// user@REALM logs on as the domain user DOMAIN\user, and the answer carries a
// mutual-authentication AP-REP. Messages may then be sealed with RFC 4121 wrap
// tokens (MS-WSMV 2.2.9.1.2).
type KerberosConfig struct {
	// Keytab holds the keys of the host's service principals (HTTP/<fqdn>@REALM).
	Keytab *keytab.Keytab
	// Realm is the domain's Kerberos realm; principals of other realms are refused.
	Realm string
	// MaxClockSkew is the skew the host tolerates; default 5 minutes, as Windows.
	MaxClockSkew time.Duration
	// ClockOffset is how far the host's clock is ahead of the real time (behind
	// when negative), as the host checks authenticators' times.
	ClockOffset time.Duration
	// AcceptorSubkey makes the AP-REP carry a subkey of the host's own, which both
	// sides then seal with (RFC 4121 section 2, flag AcceptorSubkey), as an
	// acceptor may.
	AcceptorSubkey bool
	// ExtraCount is the filler (EC) the host seals its answers with, rotated with
	// the trailer by RRC + EC: 16 is what MS-KILE 3.4.5.4.1 says a Windows sender of
	// GSS_WrapEx should use with AES; 0 is RFC 4121's and MIT's choice.
	ExtraCount int
}

// krbConn is the Kerberos state of an authenticated connection.
type krbConn struct {
	sealer *krb.Sealer
}

// isKerberosToken tells an HTTP Negotiate token carrying Kerberos (SPNEGO
// NegTokenInit or a bare RFC 1964 token) from a raw NTLMSSP one.
func isKerberosToken(raw []byte) bool { return krbaccept.IsKerberos(raw) }

// kerberosLeg verifies an AP-REQ (SPNEGO-wrapped or bare) and answers with the
// AP-REP in the response's WWW-Authenticate header, or a 401 carrying the
// KRB-ERROR that says why. The ticket's rules are krbaccept's, shared with the
// TDS endpoint.
func (s *Server) kerberosLeg(w http.ResponseWriter, r *http.Request, cs *connState, scheme string, raw []byte) authResult {
	kc := s.cfg.Kerberos
	refuse := func(format string, args ...any) authResult {
		s.logf("wsman: %s: Kerberos logon refused: "+format, append([]any{r.RemoteAddr}, args...)...)
		s.unauthorized(w, "")
		return authResult{answered: true}
	}
	if kc == nil || kc.Keytab == nil {
		return refuse("Kerberos is not enabled on this host (no keytab)")
	}
	if cs == nil {
		return refuse("Kerberos needs per-connection state: set http.Server.ConnContext to Server.ConnContext")
	}
	tok, err := krbaccept.Decode(raw)
	if err != nil {
		return refuse("%v", err)
	}
	acceptor := krbaccept.Acceptor{Keytab: kc.Keytab, Realm: kc.Realm, MaxClockSkew: kc.MaxClockSkew, ClockOffset: kc.ClockOffset}
	logon, refusal := acceptor.Verify(tok, clientAddress(r.RemoteAddr))
	if refusal != nil {
		s.logf("wsman: %s: Kerberos logon refused: %s", r.RemoteAddr, refusal.Reason)
		return s.krbErrorReply(w, scheme, tok, refusal.KRBError)
	}
	apreq := tok.APReq
	if r.TLS != nil {
		if why := s.checkKerberosBindings(apreq); why != "" {
			ke := messages.NewKRBError(apreq.Ticket.SName, apreq.Ticket.Realm, errorcode.KRB_AP_ERR_BAD_INTEGRITY, why)
			s.logf("wsman: %s: Kerberos logon of %s@%s refused: %s", r.RemoteAddr, logon.User, logon.Realm, why)
			return s.krbErrorReply(w, scheme, tok, ke)
		}
	}
	// The account is the PAC's (Windows builds the logon's token from it), not the
	// ticket's client name: a UPN's name part need not be the account's name.
	user := logon.Name(s.cfg.DomainName)
	if _, found := s.cfg.Lookup("", user); !found {
		return refuse("the principal %s@%s maps to %s, which is not a WinRM user of this host", logon.User, logon.Realm, user)
	}

	// The context key: the initiator's subkey if it sent one, else the session key;
	// with AcceptorSubkey, a new key of the same type that the AP-REP carries.
	key := tok.ContextKey()
	var subkey *types.EncryptionKey
	if kc.AcceptorSubkey {
		sk, err := krbaccept.NewSubkey(key.KeyType)
		if err != nil {
			return refuse("generating the acceptor subkey: %v", err)
		}
		subkey = &sk
	}
	seq := uint64(randomSeq())
	rep, err := tok.APRep(seq, subkey)
	if err != nil {
		return refuse("building the AP-REP: %v", err)
	}
	sealer, err := krb.NewSealer(key, subkey, true, seq, uint64(apreq.Authenticator.SeqNumber)&0xffffffff)
	if err != nil {
		return refuse("%v", err)
	}
	sealer.SealWithFiller(kc.ExtraCount)
	token, err := tok.Answer(krbaccept.AcceptCompleted, rep)
	if err != nil {
		return refuse("encoding the SPNEGO answer: %v", err)
	}
	cs.mu.Lock()
	cs.session, cs.krb, cs.user = nil, &krbConn{sealer: sealer}, user
	cs.mu.Unlock()
	s.krbLogons.Add(1)
	s.logf("wsman: %s: Kerberos logon of %s@%s as %s (service %s)", r.RemoteAddr, logon.User, logon.Realm, user, logon.Service)
	return authResult{user: user, krb: cs.krb, reply: scheme + " " + base64.StdEncoding.EncodeToString(token)}
}

// krbErrorReply answers 401 with the KRB-ERROR in the Negotiate header, as
// Windows does, so the client can say why (clock skew, stale key).
func (s *Server) krbErrorReply(w http.ResponseWriter, scheme string, tok *krbaccept.Token, ke messages.KRBError) authResult {
	token, err := krbaccept.ErrorToken(ke)
	if err == nil {
		token, err = tok.Answer(krbaccept.Reject, token)
	}
	if err != nil {
		s.logf("wsman: encoding a KRB-ERROR: %v", err)
		s.unauthorized(w, "")
		return authResult{answered: true}
	}
	s.unauthorized(w, scheme+" "+base64.StdEncoding.EncodeToString(token))
	return authResult{answered: true}
}

// checkKerberosBindings applies the CBT hardening level to a Kerberos logon over
// TLS: the authenticator's checksum carries the MD5 of the channel bindings (RFC
// 4121 4.1.1.2). "relaxed" (Windows' default) refuses bindings of another
// certificate, "strict" also refuses a logon without bindings. It returns why it
// refuses, or "". (Which KRB-ERROR Windows puts in its 401 here is not documented;
// the simulator answers KRB_AP_ERR_BAD_INTEGRITY, FIDELITY.md.)
func (s *Server) checkKerberosBindings(apreq messages.APReq) string {
	level := strings.ToLower(s.cfg.CBTHardening)
	if level == "none" || s.binding == nil {
		return ""
	}
	var got []byte
	if ck := apreq.Authenticator.Cksum; ck.CksumType == 0x8003 && len(ck.Checksum) >= 20 {
		got = ck.Checksum[4:20]
	}
	if got == nil || bytes.Equal(got, make([]byte, 16)) {
		if level == "strict" {
			return "the logon over TLS carries no channel bindings, which this host requires (CbtHardeningLevel Strict)"
		}
		return ""
	}
	if !bytes.Equal(got, kerberosBindingsHash(s.binding)) {
		return "the logon's channel bindings are those of another TLS certificate than this host's (a relay, or a TLS-intercepting proxy)"
	}
	return ""
}

// kerberosBindingsHash is the MD5 of a gss_channel_bindings_struct without addresses
// whose application data is appData.
func kerberosBindingsHash(appData []byte) []byte {
	b := make([]byte, 16)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(appData)))
	sum := md5.Sum(append(b, appData...))
	return sum[:]
}

func randomSeq() uint32 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return binary.BigEndian.Uint32(b[:])&0x3fffffff | 1
}

func clientAddress(remote string) types.HostAddress {
	h := hostOnly(remote)
	if ip := net.ParseIP(h); ip != nil {
		return types.HostAddressFromNetIP(ip)
	}
	return types.HostAddress{}
}

// Kerberos message encryption (MS-WSMV 2.2.9.1.2) uses the same MIME framing as
// NTLM's; the signature is the wrap token's header part.

func unwrapEncryptedKerberos(k *krbConn, body []byte) ([]byte, error) {
	return unwrapWith(body, "Kerberos", func(sigLen int) bool { return sigLen >= 16 }, k.sealer.Unseal)
}

func wrapEncryptedKerberos(k *krbConn, plain []byte) ([]byte, error) {
	sig, data, err := k.sealer.Seal(plain)
	if err != nil {
		return nil, err
	}
	return frameEncrypted(len(plain), sig, data), nil
}
