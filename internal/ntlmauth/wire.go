package ntlmauth

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/rc4"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/utf16le"
	"golang.org/x/crypto/md4" //nolint:staticcheck // NTLM is defined over MD4 (MS-NLMP 3.3.1).
)

// The pieces of NTLMv2 that a client and a server compute alike. The simulator's
// NTLM server (internal/winsim/ntlm) uses them too; it is checked against other
// clients (pywinrm, Azure/go-ntlmssp, bodgit/ntlmssp) so that a bug here cannot hide.

// HMACMD5 is HMAC_MD5(key, data[0] || data[1] || ...) (MS-NLMP 6).
func HMACMD5(key []byte, data ...[]byte) []byte {
	m := hmac.New(md5.New, key)
	for _, d := range data {
		m.Write(d)
	}
	return m.Sum(nil)
}

// NTOWFv2 is ResponseKeyNT (MS-NLMP 3.3.2): HMAC_MD5(MD4(UNICODE(password)),
// UNICODE(Uppercase(user) || domain)).
func NTOWFv2(password, user, domain string) []byte {
	h := md4.New()
	h.Write(utf16le.Encode(password))
	return HMACMD5(h.Sum(nil), utf16le.Encode(strings.ToUpper(user)+domain))
}

// RC4K is a one-shot RC4 of data with a fresh key (MS-NLMP 6), as the
// EncryptedRandomSessionKey is made and read.
func RC4K(key, data []byte) []byte {
	out := make([]byte, len(data))
	newRC4(key).XORKeyStream(out, data)
	return out
}

// Filetime is t as a Windows FILETIME: 100 ns intervals since 1601-01-01.
func Filetime(t time.Time) uint64 {
	const epochDiff = 116444736000000000 // 1601-01-01 to 1970-01-01 in 100 ns
	return uint64(t.UnixNano()/100) + epochDiff
}

// AVPair is one AV_PAIR of a target info list (MS-NLMP 2.2.2.1).
type AVPair struct {
	ID    uint16
	Value []byte
}

// MarshalAVPairs encodes pairs and the closing MsvAvEOL.
func MarshalAVPairs(pairs []AVPair) []byte {
	var b []byte
	for _, p := range append(pairs, AVPair{ID: avEOL}) {
		b = binary.LittleEndian.AppendUint16(b, p.ID)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(p.Value)))
		b = append(b, p.Value...)
	}
	return b
}

// ParseAVPairs reads AV pairs up to MsvAvEOL. Bytes after EOL (NTLMv2 clients append
// padding) are ignored; a list without EOL is accepted if it ends on a pair boundary.
// The error says what is malformed; the caller says in which message.
func ParseAVPairs(b []byte) ([]AVPair, error) {
	var pairs []AVPair
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, fmt.Errorf("an AV_PAIR is cut off after %d of its 4 header bytes", len(b))
		}
		id := binary.LittleEndian.Uint16(b)
		n := int(binary.LittleEndian.Uint16(b[2:]))
		if id == avEOL {
			break
		}
		if 4+n > len(b) {
			return nil, fmt.Errorf("AV_PAIR %d of length %d runs past the end of the list", id, n)
		}
		pairs = append(pairs, AVPair{ID: id, Value: b[4 : 4+n]})
		b = b[4+n:]
	}
	return pairs, nil
}

// Field reads the (Len, MaxLen, Offset) security buffer at off in an NTLM message
// and returns the bytes it points at (MS-NLMP 2.2.1, the "...Fields"). The error
// says what is out of range; the caller names the message and the field.
func Field(msg []byte, off int) ([]byte, error) {
	if off+8 > len(msg) {
		return nil, fmt.Errorf("the %d-byte message is too short to hold the field's header at offset %d", len(msg), off)
	}
	n := int(binary.LittleEndian.Uint16(msg[off:]))
	start := int(binary.LittleEndian.Uint32(msg[off+4:]))
	if n == 0 {
		return nil, nil
	}
	if start < 0 || start > len(msg) || n > len(msg)-start {
		return nil, fmt.Errorf("the field (offset %d, length %d) lies outside the %d-byte message", start, n, len(msg))
	}
	return msg[start : start+n], nil
}

func md5Of(parts ...[]byte) []byte {
	h := md5.New()
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}

func newRC4(key []byte) *rc4.Cipher {
	c, err := rc4.NewCipher(key)
	if err != nil { // only for key lengths outside 1..256; ours are 16
		panic(fmt.Sprintf("ntlm: RC4 key of %d bytes: %v", len(key), err))
	}
	return c
}
