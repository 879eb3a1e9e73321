// Package ntlmauth is the client side of NTLMv2 ([MS-NLMP]) as the provider needs it
// against a hardened Windows host: an AUTHENTICATE_MESSAGE that carries the MIC, the
// SPN of the host the client meant to reach (MsvAvTargetName) and, over TLS, the
// channel bindings of the server's certificate (MsvAvChannelBindings), so that a
// logon taken by a fake host cannot be replayed to another one; and the NTLMv2
// session security (sealing) that WinRM message encryption over HTTP uses.
//
//	c := &ntlmauth.Client{User: "Administrator", Password: pw, TargetSPN: "HTTP/sql01"}
//	negotiate := c.Negotiate()
//	authenticate, err := c.Authenticate(challenge)
//	sess := c.Session() // Seal / Unseal
//
// Neither library in the module graph sends MsvAvTargetName (Azure/go-ntlmssp sends
// no MIC and no channel bindings either), hence this package.
package ntlmauth

import (
	"bytes"
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"crypto/rc4"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf16"

	"golang.org/x/crypto/md4" //nolint:staticcheck // NTLM is defined over MD4 (MS-NLMP 3.3.1).
)

// Negotiate flags (MS-NLMP 2.2.2.5).
const (
	flagUnicode         uint32 = 0x00000001
	flagRequestTarget   uint32 = 0x00000004
	flagSign            uint32 = 0x00000010
	flagSeal            uint32 = 0x00000020
	flagNTLM            uint32 = 0x00000200
	flagAlwaysSign      uint32 = 0x00008000
	flagExtendedSession uint32 = 0x00080000
	flagTargetInfo      uint32 = 0x00800000
	flagVersion         uint32 = 0x02000000
	flag128             uint32 = 0x20000000
	flagKeyExch         uint32 = 0x40000000
	flag56              uint32 = 0x80000000

	clientFlags = flagUnicode | flagRequestTarget | flagSign | flagSeal | flagNTLM | flagAlwaysSign |
		flagExtendedSession | flagVersion | flag128 | flagKeyExch | flag56
)

// AV_PAIR ids (MS-NLMP 2.2.2.1).
const (
	avEOL             = 0
	avNbDomainName    = 2
	avFlags           = 6
	avTimestamp       = 7
	avTargetName      = 9
	avChannelBindings = 10

	avFlagMICPresent = 0x00000002
)

var signature = []byte("NTLMSSP\x00")

// clientVersion is the VERSION structure (MS-NLMP 2.2.2.10): 10.0.17763, NTLMSSP
// revision 15, as Windows Server 2019 sends it.
var clientVersion = []byte{10, 0, 0x4B, 0x45, 0, 0, 0, 15}

// Client is one NTLM logon. Use a new Client for every connection.
type Client struct {
	// User is "user", "DOMAIN\user" or "user@domain.fqdn" (sent whole, as Windows does).
	User     string
	Password string
	// TargetSPN is the service principal name of the host the client means to reach,
	// "HTTP/sql01.contoso.com". It goes into MsvAvTargetName; a host that validates
	// it refuses a logon meant for another host. Empty: not sent.
	TargetSPN string
	// ChannelBindings is the application data of the TLS channel ("tls-server-end-point:"
	// followed by the certificate hash, see TLSServerEndPoint); nil over plain HTTP.
	ChannelBindings []byte

	negotiate []byte
	session   *Session
}

// Negotiate returns the NEGOTIATE_MESSAGE (MS-NLMP 2.2.1.1).
func (c *Client) Negotiate() []byte {
	msg := make([]byte, 40)
	copy(msg, signature)
	binary.LittleEndian.PutUint32(msg[8:], 1)
	binary.LittleEndian.PutUint32(msg[12:], clientFlags)
	// DomainNameFields and WorkstationFields stay empty, at offset 40.
	binary.LittleEndian.PutUint32(msg[20:], 40)
	binary.LittleEndian.PutUint32(msg[28:], 40)
	copy(msg[32:], clientVersion)
	c.negotiate = msg
	return append([]byte(nil), msg...)
}

// challenge holds what the client reads from a CHALLENGE_MESSAGE.
type challenge struct {
	flags      uint32
	server     [8]byte
	targetName string
	targetInfo []avPair
}

func parseChallenge(msg []byte) (*challenge, error) {
	if len(msg) < 48 || !bytes.Equal(msg[:8], signature) || binary.LittleEndian.Uint32(msg[8:]) != 2 {
		return nil, errors.New("the server's answer is not an NTLM CHALLENGE message: the host may not offer NTLM (Negotiate) authentication")
	}
	ch := &challenge{flags: binary.LittleEndian.Uint32(msg[20:])}
	copy(ch.server[:], msg[24:32])
	name, err := field(msg, 12)
	if err != nil {
		return nil, err
	}
	if ch.flags&flagUnicode != 0 {
		ch.targetName = fromUTF16(name)
	} else {
		ch.targetName = string(name)
	}
	info, err := field(msg, 40)
	if err != nil {
		return nil, err
	}
	if ch.targetInfo, err = parseAVPairs(info); err != nil {
		return nil, err
	}
	return ch, nil
}

// Authenticate answers the server's CHALLENGE_MESSAGE with an NTLMv2
// AUTHENTICATE_MESSAGE (MS-NLMP 3.1.5.1.2) holding the MIC, MsvAvTargetName and,
// when set, MsvAvChannelBindings, and prepares the session keys for Session.
func (c *Client) Authenticate(challengeMsg []byte) ([]byte, error) {
	if c.negotiate == nil {
		return nil, errors.New("ntlm: Authenticate called before Negotiate")
	}
	ch, err := parseChallenge(challengeMsg)
	if err != nil {
		return nil, err
	}
	if ch.flags&flagExtendedSession == 0 {
		return nil, errors.New("the host refused NTLMv2 session security (extended session security): it allows only NTLMv1, which this provider does not use; set LmCompatibilityLevel to 5 on the host")
	}
	flags := ch.flags & (clientFlags | flagTargetInfo)

	user, domain := splitUser(c.User)
	if domain == "" && !strings.Contains(c.User, "@") {
		domain = ch.targetName
	}

	// The server's AV pairs, plus ours (MS-NLMP 3.1.5.1.2).
	var timestamp []byte
	var pairs []avPair
	var avFlagValue uint32
	for _, p := range ch.targetInfo {
		switch p.id {
		case avTimestamp:
			timestamp = p.value
		case avFlags:
			if len(p.value) == 4 {
				avFlagValue = binary.LittleEndian.Uint32(p.value)
			}
			continue
		case avTargetName, avChannelBindings:
			continue // the client's own, added below
		}
		pairs = append(pairs, p)
	}
	if timestamp == nil {
		timestamp = binary.LittleEndian.AppendUint64(nil, filetime(time.Now()))
	}
	pairs = append(pairs, avPair{avFlags, binary.LittleEndian.AppendUint32(nil, avFlagValue|avFlagMICPresent)})
	if c.TargetSPN != "" {
		pairs = append(pairs, avPair{avTargetName, toUTF16(c.TargetSPN)})
	}
	pairs = append(pairs, avPair{avChannelBindings, ChannelBindingsHash(c.ChannelBindings)})

	var clientChallenge [8]byte
	if _, err := rand.Read(clientChallenge[:]); err != nil {
		return nil, err
	}
	// NTLMv2 (MS-NLMP 3.3.2).
	h := md4.New()
	h.Write(toUTF16(c.Password))
	responseKey := hmacMD5(h.Sum(nil), toUTF16(strings.ToUpper(user)+domain))
	blob := []byte{1, 1, 0, 0, 0, 0, 0, 0}
	blob = append(blob, timestamp...)
	blob = append(blob, clientChallenge[:]...)
	blob = append(blob, 0, 0, 0, 0)
	blob = append(blob, marshalAVPairs(pairs)...)
	blob = append(blob, 0, 0, 0, 0)
	proof := hmacMD5(responseKey, ch.server[:], blob)
	ntResponse := append(append([]byte(nil), proof...), blob...)
	lmResponse := make([]byte, 24) // Z(24) when the server sent a timestamp

	keyExchangeKey := hmacMD5(responseKey, proof)
	exported := keyExchangeKey
	var encryptedKey []byte
	if flags&flagKeyExch != 0 {
		exported = make([]byte, 16)
		if _, err := rand.Read(exported); err != nil {
			return nil, err
		}
		encryptedKey = make([]byte, 16)
		newRC4(keyExchangeKey).XORKeyStream(encryptedKey, exported)
	}

	const header = 88 // fixed fields (64), Version (8), MIC (16)
	payload := [][]byte{lmResponse, ntResponse, toUTF16(domain), toUTF16(user), nil, encryptedKey}
	msg := make([]byte, header)
	copy(msg, signature)
	binary.LittleEndian.PutUint32(msg[8:], 3)
	off := header
	for i, p := range payload {
		pos := 12 + 8*i
		binary.LittleEndian.PutUint16(msg[pos:], uint16(len(p)))
		binary.LittleEndian.PutUint16(msg[pos+2:], uint16(len(p)))
		binary.LittleEndian.PutUint32(msg[pos+4:], uint32(off))
		off += len(p)
	}
	binary.LittleEndian.PutUint32(msg[60:], flags)
	copy(msg[64:], clientVersion)
	for _, p := range payload {
		msg = append(msg, p...)
	}
	copy(msg[72:88], hmacMD5(exported, c.negotiate, challengeMsg, msg))

	if flags&(flagSign|flagSeal) != 0 {
		c.session = newSession(flags, exported)
	}
	return msg, nil
}

// Session returns the session security negotiated by Authenticate, or nil when the
// server granted neither signing nor sealing.
func (c *Client) Session() *Session { return c.session }

// TLSServerEndPoint is the channel binding application data of RFC 5929
// "tls-server-end-point" for the server certificate cert: the prefix and the hash of
// the certificate with its signature's hash, SHA-256 in place of MD5 and SHA-1.
func TLSServerEndPoint(cert *x509.Certificate) []byte {
	var sum []byte
	switch cert.SignatureAlgorithm {
	case x509.SHA384WithRSA, x509.ECDSAWithSHA384, x509.SHA384WithRSAPSS:
		s := sha512.Sum384(cert.Raw)
		sum = s[:]
	case x509.SHA512WithRSA, x509.ECDSAWithSHA512, x509.SHA512WithRSAPSS:
		s := sha512.Sum512(cert.Raw)
		sum = s[:]
	default:
		s := sha256.Sum256(cert.Raw)
		sum = s[:]
	}
	return append([]byte("tls-server-end-point:"), sum...)
}

// ChannelBindingsHash is the MsvAvChannelBindings value for application data: the
// MD5 of a gss_channel_bindings_struct with no addresses (RFC 2744, MS-NLMP 2.2.2.1);
// sixteen zero bytes when there is no channel (plain HTTP), as Windows sends.
func ChannelBindingsHash(appData []byte) []byte {
	if appData == nil {
		return make([]byte, 16)
	}
	b := make([]byte, 16, 20+len(appData))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(appData)))
	b = append(b, appData...)
	sum := md5.Sum(b)
	return sum[:]
}

func splitUser(login string) (user, domain string) {
	if d, u, ok := strings.Cut(login, `\`); ok {
		return u, d
	}
	return login, ""
}

func filetime(t time.Time) uint64 {
	const epochDiff = 116444736000000000
	return uint64(t.UnixNano()/100) + epochDiff
}

type avPair struct {
	id    uint16
	value []byte
}

func marshalAVPairs(pairs []avPair) []byte {
	var b []byte
	for _, p := range append(pairs, avPair{id: avEOL}) {
		b = binary.LittleEndian.AppendUint16(b, p.id)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(p.value)))
		b = append(b, p.value...)
	}
	return b
}

func parseAVPairs(b []byte) ([]avPair, error) {
	var pairs []avPair
	for len(b) >= 4 {
		id := binary.LittleEndian.Uint16(b)
		n := int(binary.LittleEndian.Uint16(b[2:]))
		if id == avEOL {
			return pairs, nil
		}
		if 4+n > len(b) {
			return nil, errors.New("the server's NTLM CHALLENGE has a malformed target info list")
		}
		pairs = append(pairs, avPair{id, b[4 : 4+n]})
		b = b[4+n:]
	}
	return pairs, nil
}

func field(msg []byte, off int) ([]byte, error) {
	n := int(binary.LittleEndian.Uint16(msg[off:]))
	start := int(binary.LittleEndian.Uint32(msg[off+4:]))
	if n == 0 {
		return nil, nil
	}
	if start > len(msg) || n > len(msg)-start {
		return nil, fmt.Errorf("the server's NTLM CHALLENGE has a field (offset %d, length %d) outside its %d bytes", start, n, len(msg))
	}
	return msg[start : start+n], nil
}

func toUTF16(s string) []byte {
	u := utf16.Encode([]rune(s))
	b := make([]byte, 2*len(u))
	for i, c := range u {
		binary.LittleEndian.PutUint16(b[2*i:], c)
	}
	return b
}

func fromUTF16(b []byte) string {
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return string(utf16.Decode(u))
}

func hmacMD5(key []byte, data ...[]byte) []byte {
	m := hmac.New(md5.New, key)
	for _, d := range data {
		m.Write(d)
	}
	return m.Sum(nil)
}

func newRC4(key []byte) *rc4.Cipher {
	c, err := rc4.NewCipher(key)
	if err != nil { // only for key lengths outside 1..256; ours are 16
		panic(fmt.Sprintf("ntlm: RC4 key of %d bytes: %v", len(key), err))
	}
	return c
}
