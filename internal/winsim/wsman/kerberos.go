package wsman

import (
	"bytes"
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/asn1tools"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/asnAppTag"
	"github.com/jcmturner/gokrb5/v8/iana/errorcode"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/iana/msgtype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/service"
	"github.com/jcmturner/gokrb5/v8/spnego"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
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
func isKerberosToken(raw []byte) bool {
	return len(raw) > 0 && raw[0] == 0x60
}

// kerberosLeg verifies an AP-REQ (SPNEGO-wrapped or bare) and answers with the
// AP-REP in the response's WWW-Authenticate header, or a 401 carrying the
// KRB-ERROR that says why.
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
	mechTok, mechOID, wrapped, err := kerberosMechToken(raw)
	if err != nil {
		return refuse("%v", err)
	}
	var oid asn1.ObjectIdentifier
	rest, err := asn1.UnmarshalWithParams(mechTok, &oid, "application,explicit,tag:0")
	if err != nil || len(rest) < 2 || rest[0] != 0x01 || rest[1] != 0x00 {
		return refuse("the Kerberos token is not an AP-REQ")
	}
	var apreq messages.APReq
	if err := apreq.Unmarshal(rest[2:]); err != nil {
		return refuse("the AP-REQ cannot be decoded: %v", err)
	}
	skew := kc.MaxClockSkew
	if skew <= 0 {
		skew = 5 * time.Minute
	}
	settings := service.NewSettings(kc.Keytab, service.MaxClockSkew(skew), service.DecodePAC(false),
		service.ClientAddress(clientAddress(r.RemoteAddr)))
	ok, creds, err := service.VerifyAPREQ(&apreq, settings)
	if err != nil || !ok {
		ke := apError(apreq, err)
		s.logf("wsman: %s: Kerberos AP-REQ for %s rejected: %v", r.RemoteAddr, strings.Join(apreq.Ticket.SName.NameString, "/"), ke)
		return s.krbErrorReply(w, scheme, wrapped, mechOID, ke)
	}
	if !strings.EqualFold(creds.Domain(), kc.Realm) {
		ke := messages.NewKRBError(apreq.Ticket.SName, apreq.Ticket.Realm, errorcode.KDC_ERR_POLICY, "principal of an untrusted realm")
		s.logf("wsman: %s: Kerberos principal %s@%s is not of the host's realm %s", r.RemoteAddr, creds.UserName(), creds.Domain(), kc.Realm)
		return s.krbErrorReply(w, scheme, wrapped, mechOID, ke)
	}
	if r.TLS != nil {
		if why := s.checkKerberosBindings(apreq); why != "" {
			ke := messages.NewKRBError(apreq.Ticket.SName, apreq.Ticket.Realm, errorcode.KRB_AP_ERR_BAD_INTEGRITY, why)
			s.logf("wsman: %s: Kerberos logon of %s@%s refused: %s", r.RemoteAddr, creds.UserName(), creds.Domain(), why)
			return s.krbErrorReply(w, scheme, wrapped, mechOID, ke)
		}
	}
	user := creds.UserName()
	if s.cfg.DomainName != "" {
		user = s.cfg.DomainName + `\` + user
	}
	if _, found := s.cfg.Lookup("", user); !found {
		return refuse("the principal %s@%s maps to %s, which is not a WinRM user of this host", creds.UserName(), creds.Domain(), user)
	}

	// The context key: the initiator's subkey if it sent one, else the session key;
	// with AcceptorSubkey, a new key of the same type that the AP-REP carries.
	key := apreq.Ticket.DecryptedEncPart.Key
	if apreq.Authenticator.SubKey.KeyType != 0 && len(apreq.Authenticator.SubKey.KeyValue) > 0 {
		key = apreq.Authenticator.SubKey
	}
	var subkey *types.EncryptionKey
	if kc.AcceptorSubkey {
		sk, err := newSubkey(key.KeyType)
		if err != nil {
			return refuse("generating the acceptor subkey: %v", err)
		}
		subkey = &sk
	}
	seq := uint64(randomSeq())
	rep, err := apRep(apreq, seq, subkey)
	if err != nil {
		return refuse("building the AP-REP: %v", err)
	}
	sealer, err := krb.NewSealer(key, subkey, true, seq, uint64(apreq.Authenticator.SeqNumber)&0xffffffff)
	if err != nil {
		return refuse("%v", err)
	}
	sealer.SealWithFiller(kc.ExtraCount)
	token := krb.GSSToken(rep, []byte{0x02, 0x00})
	if wrapped {
		st := spnego.SPNEGOToken{Resp: true, NegTokenResp: spnego.NegTokenResp{
			NegState: 0, SupportedMech: mechOID, ResponseToken: token}}
		if token, err = st.Marshal(); err != nil {
			return refuse("encoding the SPNEGO answer: %v", err)
		}
	}
	cs.mu.Lock()
	cs.session, cs.krb, cs.user = nil, &krbConn{sealer: sealer}, user
	cs.mu.Unlock()
	s.krbLogons.Add(1)
	s.logf("wsman: %s: Kerberos logon of %s@%s as %s (service %s)", r.RemoteAddr, creds.UserName(), creds.Domain(), user, strings.Join(apreq.Ticket.SName.NameString, "/"))
	return authResult{user: user, krb: cs.krb, reply: scheme + " " + base64.StdEncoding.EncodeToString(token)}
}

// kerberosMechToken finds the Kerberos token in a Negotiate token: inside a
// SPNEGO NegTokenInit (wrapped), or bare. mechOID is the mechanism the client
// proposed (the Microsoft or the standard Kerberos OID).
func kerberosMechToken(raw []byte) (tok []byte, mechOID asn1.ObjectIdentifier, wrapped bool, err error) {
	var oid asn1.ObjectIdentifier
	if _, err := asn1.UnmarshalWithParams(raw, &oid, "application,explicit,tag:0"); err != nil {
		return nil, nil, false, fmt.Errorf("the Negotiate token is neither SPNEGO nor Kerberos: %v", err)
	}
	krb5, msKrb5 := gssapi.OIDKRB5.OID(), gssapi.OIDMSLegacyKRB5.OID()
	switch {
	case oid.Equal(krb5):
		return raw, krb5, false, nil
	case oid.Equal(gssapi.OIDSPNEGO.OID()):
		var st spnego.SPNEGOToken
		if err := st.Unmarshal(raw); err != nil || !st.Init {
			return nil, nil, false, fmt.Errorf("the SPNEGO token is not a valid NegTokenInit: %v", err)
		}
		init := st.NegTokenInit
		if len(init.MechTypes) == 0 || (!init.MechTypes[0].Equal(krb5) && !init.MechTypes[0].Equal(msKrb5)) {
			return nil, nil, false, fmt.Errorf("the SPNEGO token proposes %v first; this host accepts Kerberos inside SPNEGO (raw NTLMSSP for NTLM)", init.MechTypes)
		}
		if len(init.MechTokenBytes) == 0 {
			return nil, nil, false, errors.New("the SPNEGO token carries no optimistic Kerberos token")
		}
		return init.MechTokenBytes, init.MechTypes[0], true, nil
	default:
		return nil, nil, false, fmt.Errorf("the Negotiate token names mechanism %v, not SPNEGO or Kerberos", oid)
	}
}

// apError is the KRB-ERROR a Windows host answers for a failed AP-REQ.
func apError(apreq messages.APReq, err error) messages.KRBError {
	var ke messages.KRBError
	if errors.As(err, &ke) {
		return ke
	}
	// gokrb5 reports a ticket it cannot decrypt (a key the host does not have) as a
	// plain error: Windows answers KRB_AP_ERR_MODIFIED.
	msg := "AP-REQ not valid"
	if err != nil {
		msg = err.Error()
	}
	return messages.NewKRBError(apreq.Ticket.SName, apreq.Ticket.Realm, errorcode.KRB_AP_ERR_MODIFIED, msg)
}

// krbErrorReply answers 401 with the KRB-ERROR in the Negotiate header, as
// Windows does, so the client can say why (clock skew, stale key).
func (s *Server) krbErrorReply(w http.ResponseWriter, scheme string, wrapped bool, mechOID asn1.ObjectIdentifier, ke messages.KRBError) authResult {
	b, err := ke.Marshal()
	if err != nil {
		s.logf("wsman: encoding a KRB-ERROR: %v", err)
		s.unauthorized(w, "")
		return authResult{answered: true}
	}
	token := krb.GSSToken(b, []byte{0x03, 0x00})
	if wrapped {
		st := spnego.SPNEGOToken{Resp: true, NegTokenResp: spnego.NegTokenResp{
			NegState: 2, SupportedMech: mechOID, ResponseToken: token}}
		if token, err = st.Marshal(); err != nil {
			s.unauthorized(w, "")
			return authResult{answered: true}
		}
	}
	s.unauthorized(w, scheme+" "+base64.StdEncoding.EncodeToString(token))
	return authResult{answered: true}
}

// apRep builds the mutual-authentication AP-REP: the authenticator's time,
// encrypted with the ticket's session key, the acceptor's first sequence number
// and its subkey, if any.
func apRep(apreq messages.APReq, seq uint64, subkey *types.EncryptionKey) ([]byte, error) {
	part := messages.EncAPRepPart{
		CTime:          apreq.Authenticator.CTime,
		Cusec:          apreq.Authenticator.Cusec,
		SequenceNumber: int64(seq),
	}
	if subkey != nil {
		part.Subkey = *subkey
	}
	b, err := asn1.Marshal(part)
	if err != nil {
		return nil, err
	}
	b = asn1tools.AddASNAppTag(b, asnAppTag.EncAPRepPart)
	enc, err := crypto.GetEncryptedData(b, apreq.Ticket.DecryptedEncPart.Key, keyusage.AP_REP_ENCPART, 0)
	if err != nil {
		return nil, err
	}
	rep := messages.APRep{PVNO: 5, MsgType: msgtype.KRB_AP_REP, EncPart: enc}
	rb, err := asn1.Marshal(rep)
	if err != nil {
		return nil, err
	}
	return asn1tools.AddASNAppTag(rb, asnAppTag.APREP), nil
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

// newSubkey is a random key of encryption type et.
func newSubkey(et int32) (types.EncryptionKey, error) {
	e, err := crypto.GetEtype(et)
	if err != nil {
		return types.EncryptionKey{}, err
	}
	b := make([]byte, e.GetKeyByteSize())
	if _, err := rand.Read(b); err != nil {
		return types.EncryptionKey{}, err
	}
	return types.EncryptionKey{KeyType: et, KeyValue: b}, nil
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
