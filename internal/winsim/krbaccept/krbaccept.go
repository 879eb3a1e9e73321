// Package krbaccept is the simulator's Kerberos acceptor, shared by its WinRM
// (wsman) and SQL Server (TDS SSPI) endpoints: it verifies an AP-REQ, bare or inside
// a SPNEGO NegTokenInit, with the keys of the host's service principals, as a
// domain-joined Windows host's SSPI (AcceptSecurityContext) does, and builds the
// answers a Windows acceptor sends: the mutual-authentication AP-REP, or the
// KRB-ERROR that says why a ticket was refused.
//
// What each endpoint does with the outcome (a WinRM 401, a TDS login failure) is
// the endpoint's; the rules of the ticket are here, once.
package krbaccept

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log"
	"strings"
	"time"

	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/asn1tools"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/asnAppTag"
	"github.com/jcmturner/gokrb5/v8/iana/errorcode"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/iana/msgtype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/service"
	"github.com/jcmturner/gokrb5/v8/spnego"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
)

// DefaultMaxClockSkew is the skew Windows tolerates (the domain's Kerberos policy,
// "Maximum tolerance for computer clock synchronization", 5 minutes).
const DefaultMaxClockSkew = 5 * time.Minute

// Acceptor holds what a domain host needs to accept Kerberos logons.
type Acceptor struct {
	// Keytab holds the keys of the service principals the host's service may use
	// (HTTP/<fqdn>, MSSQLSvc/<fqdn>:<port>): a ticket for a principal whose key is
	// not there cannot be decrypted (KRB_AP_ERR_MODIFIED), as on Windows.
	Keytab *keytab.Keytab
	// Realm is the domain's realm; principals of other realms are refused.
	Realm string
	// MaxClockSkew: 0 is DefaultMaxClockSkew.
	MaxClockSkew time.Duration
	// ClockOffset is how far the host's clock is ahead of the real time (behind
	// when negative): an authenticator further from the host's clock than
	// MaxClockSkew is refused with KRB_AP_ERR_SKEW (RFC 4120 3.2.3), stamped with
	// the host's time.
	ClockOffset time.Duration
}

// Token is a client's Kerberos token, decoded.
type Token struct {
	APReq messages.APReq
	// MechOID is the mechanism the client proposed (the standard or Microsoft's
	// Kerberos OID); Wrapped: the AP-REQ came inside SPNEGO, so the answer must too.
	MechOID asn1.ObjectIdentifier
	Wrapped bool
}

// Logon is an accepted AP-REQ: the client principal user@realm, and the account
// the ticket's PAC names.
type Logon struct {
	User, Realm string
	// Service is the ticket's service principal, e.g. MSSQLSvc/sql01.mssqlifi.test:1433.
	Service string
	// PAC is the logon information of the ticket's PAC ([MS-PAC] 2.5,
	// KERB_VALIDATION_INFO), checked with the service key's signature; nil for a
	// ticket without one (an MIT KDC's).
	PAC *PACLogon
}

// PACLogon is the account a PAC names: what Windows builds the logon's token from,
// whatever the ticket's client name says.
type PACLogon struct {
	Account string   // EffectiveName: the sAMAccountName
	Domain  string   // LogonDomainName: the NetBIOS domain
	SID     string   // the domain's SID and the user's RID
	Groups  []string // the group SIDs (GroupIDs and ExtraSids)
}

// Name is the Windows account the logon is: DOMAIN\account from the PAC; without a
// PAC, the client name in defaultDomain (the host's domain), as the simulator
// mapped every ticket before it read PACs (FIDELITY.md says where this differs).
func (l *Logon) Name(defaultDomain string) string {
	if l.PAC != nil {
		return l.PAC.Domain + `\` + l.PAC.Account
	}
	if defaultDomain == "" {
		return l.User
	}
	return defaultDomain + `\` + l.User
}

// IsKerberos tells a token carrying Kerberos (SPNEGO NegTokenInit or a bare RFC
// 1964 token, both [APPLICATION 0]) from a raw NTLMSSP one.
func IsKerberos(raw []byte) bool { return len(raw) > 0 && raw[0] == 0x60 }

// Decode finds and decodes the AP-REQ in a client token: inside a SPNEGO
// NegTokenInit whose first mechanism is Kerberos, or bare. An error means the token
// is not a Kerberos logon at all.
func Decode(raw []byte) (*Token, error) {
	mechTok, mechOID, wrapped, err := mechToken(raw)
	if err != nil {
		return nil, err
	}
	var oid asn1.ObjectIdentifier
	rest, err := asn1.UnmarshalWithParams(mechTok, &oid, "application,explicit,tag:0")
	if err != nil || len(rest) < 2 || rest[0] != 0x01 || rest[1] != 0x00 {
		return nil, errors.New("the Kerberos token is not an AP-REQ")
	}
	t := &Token{MechOID: mechOID, Wrapped: wrapped}
	if err := t.APReq.Unmarshal(rest[2:]); err != nil {
		return nil, fmt.Errorf("the AP-REQ cannot be decoded: %v", err)
	}
	return t, nil
}

// mechToken finds the Kerberos token in a Negotiate token: inside a SPNEGO
// NegTokenInit (wrapped), or bare.
func mechToken(raw []byte) (tok []byte, mechOID asn1.ObjectIdentifier, wrapped bool, err error) {
	var oid asn1.ObjectIdentifier
	if _, err := asn1.UnmarshalWithParams(raw, &oid, "application,explicit,tag:0"); err != nil {
		return nil, nil, false, fmt.Errorf("the token is neither SPNEGO nor Kerberos: %v", err)
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
		return nil, nil, false, fmt.Errorf("the token names mechanism %v, not SPNEGO or Kerberos", oid)
	}
}

// Verify checks the ticket and authenticator of t (decrypted with the keytab's key
// for the ticket's service principal, the clock skew, the client's address) and the
// client's realm. A refusal is the KRB-ERROR a Windows acceptor answers, with a
// reason for the host's log.
func (a *Acceptor) Verify(t *Token, client types.HostAddress) (*Logon, *Refusal) {
	skew := a.MaxClockSkew
	if skew <= 0 {
		skew = DefaultMaxClockSkew
	}
	if a.Keytab == nil {
		return nil, &Refusal{KRBError: messages.NewKRBError(t.APReq.Ticket.SName, t.APReq.Ticket.Realm, errorcode.KRB_AP_ERR_NOKEY, "no service keys"),
			Reason: "the host has no keys for any service principal (no keytab)"}
	}
	settings := service.NewSettings(a.Keytab, service.MaxClockSkew(skew), service.DecodePAC(false), service.ClientAddress(client))
	spn := strings.Join(t.APReq.Ticket.SName.NameString, "/")
	ok, creds, err := service.VerifyAPREQ(&t.APReq, settings)
	if err != nil || !ok {
		ke := apError(t.APReq, err)
		return nil, &Refusal{KRBError: ke, Reason: fmt.Sprintf("the AP-REQ for %s was rejected: %v", spn, ke)}
	}
	if !strings.EqualFold(creds.Domain(), a.Realm) {
		return nil, &Refusal{KRBError: messages.NewKRBError(t.APReq.Ticket.SName, t.APReq.Ticket.Realm, errorcode.KDC_ERR_POLICY, "principal of an untrusted realm"),
			Reason: fmt.Sprintf("the principal %s@%s is not of the host's realm %s", creds.UserName(), creds.Domain(), a.Realm)}
	}
	if a.ClockOffset != 0 {
		now := time.Now().Add(a.ClockOffset).UTC()
		if d := now.Sub(t.APReq.Authenticator.CTime); d > skew || d < -skew {
			ke := messages.NewKRBError(t.APReq.Ticket.SName, t.APReq.Ticket.Realm, errorcode.KRB_AP_ERR_SKEW, "clock skew too great")
			ke.STime = now
			return nil, &Refusal{KRBError: ke, Reason: fmt.Sprintf("the authenticator of %s@%s for %s is %s from the host's clock (%s), more than the %s tolerated: KRB_AP_ERR_SKEW",
				creds.UserName(), creds.Domain(), spn, d.Round(time.Second), now.Format(time.RFC3339), skew)}
		}
	}
	logon := &Logon{User: creds.UserName(), Realm: creds.Domain(), Service: spn}
	// The PAC, as Windows reads it: signed with the service key (the server
	// signature); a PAC whose logon information does not verify refuses the logon.
	isPAC, p, err := t.APReq.Ticket.GetPACType(a.Keytab, &t.APReq.Ticket.SName, log.New(io.Discard, "", 0))
	switch {
	case isPAC && p.KerbValidationInfo != nil && err != nil:
		return nil, &Refusal{KRBError: messages.NewKRBError(t.APReq.Ticket.SName, t.APReq.Ticket.Realm, errorcode.KRB_AP_ERR_MODIFIED, "PAC not valid"),
			Reason: fmt.Sprintf("the PAC of the ticket of %s@%s for %s does not verify: %v", logon.User, logon.Realm, spn, err)}
	case isPAC && p.KerbValidationInfo != nil:
		v := p.KerbValidationInfo
		logon.PAC = &PACLogon{Account: v.EffectiveName.Value, Domain: v.LogonDomainName.Value,
			SID: fmt.Sprintf("%s-%d", v.LogonDomainID.String(), v.UserID), Groups: v.GetGroupMembershipSIDs()}
	}
	return logon, nil
}

// Refusal is a refused AP-REQ.
type Refusal struct {
	KRBError messages.KRBError
	Reason   string
}

func (r *Refusal) Error() string { return r.Reason }

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

// ContextKey is the key of the context an AP-REQ establishes: the initiator's
// subkey if it sent one, else the ticket's session key.
func (t *Token) ContextKey() types.EncryptionKey {
	if sk := t.APReq.Authenticator.SubKey; sk.KeyType != 0 && len(sk.KeyValue) > 0 {
		return sk
	}
	return t.APReq.Ticket.DecryptedEncPart.Key
}

// MutualRequired reports whether the client asked for mutual authentication (AP
// option mutual-required): only then does the acceptor answer with an AP-REP
// (RFC 4120 3.2.4; RFC 4121 4.1 GSS_C_MUTUAL_FLAG).
func (t *Token) MutualRequired() bool {
	return types.IsFlagSet(&t.APReq.APOptions, flags.APOptionMutualRequired)
}

// APRep builds the mutual-authentication AP-REP as a GSS token (token ID 02 00):
// the authenticator's time, encrypted with the ticket's session key, the acceptor's
// first sequence number and its subkey, if any.
func (t *Token) APRep(seq uint64, subkey *types.EncryptionKey) ([]byte, error) {
	part := messages.EncAPRepPart{
		CTime:          t.APReq.Authenticator.CTime,
		Cusec:          t.APReq.Authenticator.Cusec,
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
	enc, err := crypto.GetEncryptedData(b, t.APReq.Ticket.DecryptedEncPart.Key, keyusage.AP_REP_ENCPART, 0)
	if err != nil {
		return nil, err
	}
	rep := messages.APRep{PVNO: 5, MsgType: msgtype.KRB_AP_REP, EncPart: enc}
	rb, err := asn1.Marshal(rep)
	if err != nil {
		return nil, err
	}
	return krb.GSSToken(asn1tools.AddASNAppTag(rb, asnAppTag.APREP), []byte{0x02, 0x00}), nil
}

// SPNEGO negotiation states (RFC 4178 4.2.2).
const (
	AcceptCompleted  = 0
	AcceptIncomplete = 1
	Reject           = 2
)

// Answer wraps a reply token (an AP-REP, a KRB-ERROR token, or none) for the client:
// in a SPNEGO NegTokenResp with state when the logon came in SPNEGO, bare otherwise.
func (t *Token) Answer(state int, token []byte) ([]byte, error) {
	if !t.Wrapped {
		return token, nil
	}
	st := spnego.SPNEGOToken{Resp: true, NegTokenResp: spnego.NegTokenResp{
		NegState: asn1.Enumerated(state), SupportedMech: t.MechOID, ResponseToken: token}}
	return st.Marshal()
}

// ErrorToken frames a KRB-ERROR as a GSS token (token ID 03 00).
func ErrorToken(ke messages.KRBError) ([]byte, error) {
	b, err := ke.Marshal()
	if err != nil {
		return nil, err
	}
	return krb.GSSToken(b, []byte{0x03, 0x00}), nil
}

// NewSubkey is a random key of encryption type et (an acceptor subkey).
func NewSubkey(et int32) (types.EncryptionKey, error) {
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
