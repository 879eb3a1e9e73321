package ntlmauth

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/rc4"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
)

// NTLMv2 session security (MS-NLMP 3.4), connection-oriented, seen from the client:
// one RC4 stream per direction for the whole session and a sequence number per
// direction.

var (
	clientSignMagic = []byte("session key to client-to-server signing key magic constant\x00")
	serverSignMagic = []byte("session key to server-to-client signing key magic constant\x00")
	clientSealMagic = []byte("session key to client-to-server sealing key magic constant\x00")
	serverSealMagic = []byte("session key to server-to-client sealing key magic constant\x00")
)

// SignatureSize is the size of an NTLMSSP_MESSAGE_SIGNATURE (MS-NLMP 2.2.2.9.2).
const SignatureSize = 16

// Session seals the client's messages and unseals the server's. Messages must be
// sealed and unsealed in the order they travel; it is safe for concurrent use.
type Session struct {
	mu               sync.Mutex
	flags            uint32
	sendSign         []byte
	recvSign         []byte
	sendSeal         *rc4.Cipher
	recvSeal         *rc4.Cipher
	sendSeq, recvSeq uint32
	broken           bool
}

func newSession(flags uint32, exported []byte) *Session {
	return &Session{
		flags:    flags,
		sendSign: md5Of(exported, clientSignMagic),
		recvSign: md5Of(exported, serverSignMagic),
		sendSeal: newRC4(sealKey(flags, exported, clientSealMagic)),
		recvSeal: newRC4(sealKey(flags, exported, serverSealMagic)),
	}
}

func sealKey(flags uint32, exported, magic []byte) []byte {
	switch {
	case flags&flag128 != 0:
		return md5Of(exported, magic)
	case flags&flag56 != 0:
		return md5Of(exported[:7], magic)
	default:
		return md5Of(exported[:5], magic)
	}
}

func (s *Session) mac(handle *rc4.Cipher, signKey []byte, seq uint32, msg []byte) []byte {
	seqBytes := binary.LittleEndian.AppendUint32(nil, seq)
	checksum := hmacMD5(signKey, seqBytes, msg)[:8]
	if s.flags&flagKeyExch != 0 {
		handle.XORKeyStream(checksum, checksum)
	}
	sig := binary.LittleEndian.AppendUint32(make([]byte, 0, SignatureSize), 1)
	sig = append(sig, checksum...)
	return append(sig, seqBytes...)
}

// Sealing reports whether the server granted confidentiality (NTLMSSP_NEGOTIATE_SEAL).
func (s *Session) Sealing() bool { return s != nil && s.flags&flagSeal != 0 }

// Seal encrypts plain for the server (GSS_WrapEx) and returns the 16-byte signature
// and the ciphertext.
func (s *Session) Seal(plain []byte) (sig, sealed []byte, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.flags&flagSeal == 0 {
		return nil, nil, errors.New("the NTLM session has no sealing: the host did not grant NTLMSSP_NEGOTIATE_SEAL")
	}
	sealed = append([]byte(nil), plain...)
	s.sendSeal.XORKeyStream(sealed, sealed)
	sig = s.mac(s.sendSeal, s.sendSign, s.sendSeq, plain)
	s.sendSeq++
	return sig, sealed, nil
}

// Unseal decrypts a server message and verifies its signature and sequence number.
// After a failure the session refuses every later message.
func (s *Session) Unseal(sig, sealed []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.flags&flagSeal == 0:
		return nil, errors.New("the NTLM session has no sealing: the host did not grant NTLMSSP_NEGOTIATE_SEAL")
	case s.broken:
		return nil, errors.New("an earlier encrypted message from the host failed verification; the connection must authenticate again")
	case len(sig) != SignatureSize:
		s.broken = true
		return nil, fmt.Errorf("the host's message signature is %d bytes, want %d", len(sig), SignatureSize)
	}
	plain := append([]byte(nil), sealed...)
	s.recvSeal.XORKeyStream(plain, plain)
	want := s.mac(s.recvSeal, s.recvSign, s.recvSeq, plain)
	if !hmac.Equal(want, sig) {
		s.broken = true
		return nil, fmt.Errorf("the host's encrypted message (sequence %d) does not verify: it was altered, replayed, or sealed with other keys", s.recvSeq)
	}
	s.recvSeq++
	return plain, nil
}

func md5Of(parts ...[]byte) []byte {
	h := md5.New()
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}
