package ntlm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ntlmauth"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/utf16le"
)

// Wire format of the three NTLMSSP messages (MS-NLMP 2.2.1) and their pieces.

var signature = []byte("NTLMSSP\x00")

// Message types (MS-NLMP 2.2.1.1-2.2.1.3, MessageType field).
const (
	typeNegotiate    = 1
	typeChallenge    = 2
	typeAuthenticate = 3
)

// Negotiate flags (MS-NLMP 2.2.2.5). Only the ones this package looks at.
const (
	flagUnicode          uint32 = 0x00000001 // A
	flagOEM              uint32 = 0x00000002 // B
	flagRequestTarget    uint32 = 0x00000004 // C
	flagSign             uint32 = 0x00000010 // D
	flagSeal             uint32 = 0x00000020 // E
	flagLMKey            uint32 = 0x00000080 // G (NTLMv1 only; never granted)
	flagNTLM             uint32 = 0x00000200 // H
	flagAnonymous        uint32 = 0x00000800 // J
	flagAlwaysSign       uint32 = 0x00008000 // M
	flagTargetTypeDomain uint32 = 0x00010000 // N
	flagTargetTypeServer uint32 = 0x00020000 // O
	flagExtendedSession  uint32 = 0x00080000 // P (NTLMSSP_NEGOTIATE_EXTENDED_SESSIONSECURITY)
	flagTargetInfo       uint32 = 0x00800000 // S
	flagVersion          uint32 = 0x02000000 // T
	flag128              uint32 = 0x20000000 // U
	flagKeyExch          uint32 = 0x40000000 // V
	flag56               uint32 = 0x80000000 // W
)

// AV_PAIR ids (MS-NLMP 2.2.2.1).
const (
	avEOL             = 0
	avNbComputerName  = 1
	avNbDomainName    = 2
	avDNSComputerName = 3
	avDNSDomainName   = 4
	avDNSTreeName     = 5
	avFlags           = 6
	avTimestamp       = 7
	avTargetName      = 9
	avChannelBindings = 10
)

// avFlagMICPresent is bit 0x2 of MsvAvFlags: the AUTHENTICATE_MESSAGE carries a MIC.
const avFlagMICPresent = 0x00000002

// serverVersion is the VERSION structure (MS-NLMP 2.2.2.10) sent when the client asks
// for it: Windows Server 2019 (10.0.17763), NTLMSSP_REVISION_W2K3 (15).
var serverVersion = []byte{10, 0, 0x4B, 0x45, 0, 0, 0, 15}

// checkHeader verifies the 12-byte message header (Signature, MessageType).
func checkHeader(msg []byte, want uint32, name string) error {
	if len(msg) > 0 && msg[0] == 0x60 {
		return fmt.Errorf("ntlm: %s message: got a GSS-API/SPNEGO token, not raw NTLMSSP: this host only speaks NTLM inside Negotiate; configure the client for NTLM, not Kerberos", name)
	}
	if len(msg) < 12 || !bytes.Equal(msg[:8], signature) {
		return fmt.Errorf("ntlm: %s message: missing the NTLMSSP signature (got %d bytes): the client sent something that is not NTLM; check that it authenticates with Negotiate/NTLM", name, len(msg))
	}
	if got := binary.LittleEndian.Uint32(msg[8:12]); got != want {
		return fmt.Errorf("ntlm: %s message: message type %d, want %d: the client sent the NTLM legs out of order; start a new connection", name, got, want)
	}
	return nil
}

// field reads a (Len, MaxLen, Offset) security buffer at off and returns the bytes
// it points at (MS-NLMP 2.2.1.3 "...Fields"), in an AUTHENTICATE message (the only
// one with such fields the server reads). name is used in error messages.
func field(msg []byte, off int, name string) ([]byte, error) {
	b, err := ntlmauth.Field(msg, off)
	if err != nil {
		return nil, fmt.Errorf("ntlm: AUTHENTICATE message: the %s field: %w: the client sent a truncated or malformed NTLM message", name, err)
	}
	return b, nil
}

// putField writes a security buffer header at off for a payload of n bytes at start.
func putField(msg []byte, off, n, start int) {
	binary.LittleEndian.PutUint16(msg[off:], uint16(n))
	binary.LittleEndian.PutUint16(msg[off+2:], uint16(n))
	binary.LittleEndian.PutUint32(msg[off+4:], uint32(start))
}

// encodeString encodes s as UTF-16LE when unicode is negotiated, else as OEM bytes.
func encodeString(s string, unicode bool) []byte {
	if !unicode {
		return []byte(s)
	}
	return utf16le.Encode(s)
}

// decodeString is the inverse of encodeString; an odd UTF-16 length is an error.
func decodeString(b []byte, unicode bool, msgName, name string) (string, error) {
	if !unicode {
		return string(b), nil
	}
	s, err := utf16le.Decode(b)
	if err != nil {
		return "", fmt.Errorf("ntlm: %s message: the %s field: %w: the client sent a malformed NTLM message", msgName, name, err)
	}
	return s, nil
}

// parseNegotiate reads the NegotiateFlags of a NEGOTIATE_MESSAGE (MS-NLMP 2.2.1.1).
// The domain and workstation the client may supply are informational and ignored.
func parseNegotiate(msg []byte) (flags uint32, err error) {
	if err := checkHeader(msg, typeNegotiate, "NEGOTIATE"); err != nil {
		return 0, err
	}
	if len(msg) < 16 {
		return 0, fmt.Errorf("ntlm: NEGOTIATE message: too short (%d bytes) to hold NegotiateFlags: the client sent a truncated NTLM message", len(msg))
	}
	return binary.LittleEndian.Uint32(msg[12:16]), nil
}

// challengeFlags chooses the CHALLENGE_MESSAGE flags (MS-NLMP 3.2.5.1.1): only what
// the client asked for and this server supports, plus the flags that describe the
// server's own answer (TARGET_INFO, and TARGET_TYPE_* with a requested target name).
// Clients reject unrequested capabilities: Azure/go-ntlmssp fails on an unasked
// KEY_EXCH. Signing and sealing are supported only with extended session security
// (the NTLMv2 session security of MS-NLMP 3.4.4.2), so without it they are refused.
func challengeFlags(asked uint32) uint32 {
	f := flagTargetInfo
	switch {
	case asked&flagUnicode != 0:
		f |= flagUnicode
	case asked&flagOEM != 0:
		f |= flagOEM
	}
	if asked&flagRequestTarget != 0 {
		f |= flagRequestTarget | flagTargetTypeServer
	}
	f |= asked & (flagNTLM | flagAlwaysSign | flagVersion)
	if asked&flagExtendedSession != 0 {
		f |= flagExtendedSession
		f |= asked & (flagSign | flagSeal | flag128 | flag56)
		if f&(flagSign|flagSeal) != 0 {
			f |= asked & flagKeyExch
		}
	}
	return f
}

// buildChallenge builds a CHALLENGE_MESSAGE (MS-NLMP 2.2.1.2).
func buildChallenge(flags uint32, serverChallenge [8]byte, targetName string, targetInfo []byte) []byte {
	const header = 56 // fixed fields (48) + Version (8)
	name := encodeString(targetName, flags&flagUnicode != 0)
	msg := make([]byte, header, header+len(name)+len(targetInfo))
	copy(msg, signature)
	binary.LittleEndian.PutUint32(msg[8:], typeChallenge)
	putField(msg, 12, len(name), header)
	binary.LittleEndian.PutUint32(msg[20:], flags)
	copy(msg[24:32], serverChallenge[:])
	putField(msg, 40, len(targetInfo), header+len(name))
	if flags&flagVersion != 0 {
		copy(msg[48:56], serverVersion)
	}
	msg = append(msg, name...)
	return append(msg, targetInfo...)
}

// authenticateMessage holds the fields of an AUTHENTICATE_MESSAGE (MS-NLMP 2.2.1.3).
type authenticateMessage struct {
	flags                     uint32
	lmResponse, ntResponse    []byte
	domain, user, workstation string
	encryptedRandomSessionKey []byte
}

func parseAuthenticate(msg []byte) (*authenticateMessage, error) {
	const name = "AUTHENTICATE"
	if err := checkHeader(msg, typeAuthenticate, name); err != nil {
		return nil, err
	}
	if len(msg) < 64 {
		return nil, fmt.Errorf("ntlm: AUTHENTICATE message: too short (%d bytes, need at least 64): the client sent a truncated NTLM message", len(msg))
	}
	m := &authenticateMessage{flags: binary.LittleEndian.Uint32(msg[60:64])}
	unicode := m.flags&flagUnicode != 0
	var err error
	if m.lmResponse, err = field(msg, 12, "LmChallengeResponse"); err != nil {
		return nil, err
	}
	if m.ntResponse, err = field(msg, 20, "NtChallengeResponse"); err != nil {
		return nil, err
	}
	strs := []struct {
		off  int
		name string
		dst  *string
	}{{28, "DomainName", &m.domain}, {36, "UserName", &m.user}, {44, "Workstation", &m.workstation}}
	for _, s := range strs {
		b, err := field(msg, s.off, s.name)
		if err != nil {
			return nil, err
		}
		if *s.dst, err = decodeString(b, unicode, name, s.name); err != nil {
			return nil, err
		}
	}
	if m.encryptedRandomSessionKey, err = field(msg, 52, "EncryptedRandomSessionKey"); err != nil {
		return nil, err
	}
	return m, nil
}

// micOffset is where the MIC sits in an AUTHENTICATE_MESSAGE: after the fixed fields
// (64 bytes) and the Version (8 bytes), MS-NLMP 2.2.1.3.
const micOffset = 72

// ntlmv2AVPairs reads the AV pairs of an NTLMv2_CLIENT_CHALLENGE blob
// (MS-NLMP 2.2.2.7): they follow its 28-byte fixed part.
func ntlmv2AVPairs(blob []byte) ([]ntlmauth.AVPair, error) {
	if len(blob) < 28 {
		return nil, fmt.Errorf("ntlm: AUTHENTICATE message: NTLMv2 response blob is %d bytes, need at least 28: the client sent a malformed NTLM message", len(blob))
	}
	pairs, err := ntlmauth.ParseAVPairs(blob[28:])
	if err != nil {
		return nil, fmt.Errorf("ntlm: AUTHENTICATE message: the NTLMv2 response: %w: the client sent a malformed NTLM message", err)
	}
	return pairs, nil
}

// hostNames are the names a CHALLENGE_MESSAGE announces (MS-NLMP 2.2.2.1). A
// workgroup computer (no domain) is its own domain, as on Windows, and announces
// no forest (MsvAvDnsTreeName). A domain member announces its domain's DNS name,
// its own FQDN (its computer name with the domain as its primary DNS suffix) and
// the forest's DNS name, as a real DC's CHALLENGE does (DOMAIN, DC01,
// domain.local, DC01.domain.local, domain.local).
type hostNames struct {
	nbComputer, nbDomain, dnsComputer, dnsDomain, dnsTree string
}

// namesFor is the names of computer in domain (NetBIOS, or a DNS name) whose DNS
// name is dnsDomain ("": the domain's name as given).
func namesFor(computer, domain, dnsDomain string) hostNames {
	var n hostNames
	n.nbComputer = strings.ToUpper(computer)
	if domain == "" {
		n.dnsDomain = strings.ToLower(computer)
		n.nbDomain = n.nbComputer
		n.dnsComputer = strings.ToLower(computer)
		return n
	}
	n.dnsDomain = strings.ToLower(dnsDomain)
	if n.dnsDomain == "" {
		n.dnsDomain = strings.ToLower(domain)
	}
	n.nbDomain = strings.ToUpper(domain)
	if strings.Contains(domain, ".") {
		n.nbDomain, _, _ = strings.Cut(n.nbDomain, ".")
	}
	n.dnsComputer = n.nbComputer + "." + n.dnsDomain
	n.dnsTree = n.dnsDomain // a forest of one domain
	return n
}

// targetInfo builds the CHALLENGE_MESSAGE target info (MS-NLMP 2.2.2.1): the names
// and the server's time as a FILETIME (NTLMv2 clients echo it in their response).
func (n hostNames) targetInfo(filetime uint64) []byte {
	pairs := []ntlmauth.AVPair{
		{ID: avNbDomainName, Value: utf16le.Encode(n.nbDomain)},
		{ID: avNbComputerName, Value: utf16le.Encode(n.nbComputer)},
		{ID: avDNSDomainName, Value: utf16le.Encode(n.dnsDomain)},
		{ID: avDNSComputerName, Value: utf16le.Encode(n.dnsComputer)},
	}
	if n.dnsTree != "" {
		pairs = append(pairs, ntlmauth.AVPair{ID: avDNSTreeName, Value: utf16le.Encode(n.dnsTree)})
	}
	return ntlmauth.MarshalAVPairs(append(pairs, ntlmauth.AVPair{ID: avTimestamp, Value: binary.LittleEndian.AppendUint64(nil, filetime)}))
}
