package ntlm

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/rc4"
	"encoding/binary"
	"errors"
	"fmt"
)

// NTLMv2 session security (MS-NLMP 3.4), connection-oriented: one RC4 stream per
// direction for the life of the session, and a sequence number per direction that
// starts at 0 and goes up by one per message.

// Magic constants of SIGNKEY and SEALKEY (MS-NLMP 3.4.5.2, 3.4.5.3), NUL included.
var (
	clientSignMagic = []byte("session key to client-to-server signing key magic constant\x00")
	serverSignMagic = []byte("session key to server-to-client signing key magic constant\x00")
	clientSealMagic = []byte("session key to client-to-server sealing key magic constant\x00")
	serverSealMagic = []byte("session key to server-to-client sealing key magic constant\x00")
)

// SignatureSize is the size of an NTLMSSP_MESSAGE_SIGNATURE (MS-NLMP 2.2.2.9.2).
const SignatureSize = 16

type security struct {
	flags            uint32
	sendSign         []byte      // ServerSigningKey
	recvSign         []byte      // ClientSigningKey
	sendSeal         *rc4.Cipher // ServerHandle
	recvSeal         *rc4.Cipher // ClientHandle
	sendSeq, recvSeq uint32
	broken           bool // an Unseal failed: the RC4 streams are out of step
}

// newSecurity derives the server's keys from the ExportedSessionKey. The server
// signs and seals with the server-to-client keys and checks with the
// client-to-server ones.
func newSecurity(flags uint32, exported []byte) *security {
	return &security{
		flags:    flags,
		sendSign: md5Of(exported, serverSignMagic),
		recvSign: md5Of(exported, clientSignMagic),
		sendSeal: newRC4(sealKey(flags, exported, serverSealMagic)),
		recvSeal: newRC4(sealKey(flags, exported, clientSealMagic)),
	}
}

// sealKey is SEALKEY with extended session security (MS-NLMP 3.4.5.3): the
// ExportedSessionKey cut to 128, 56 or 40 bits as negotiated, hashed with the magic.
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

// mac is MAC() with extended session security (MS-NLMP 3.4.4.2): version 1, the first
// 8 bytes of HMAC_MD5(SigningKey, SeqNum || Message), RC4-encrypted with the
// direction's sealing handle when KEY_EXCH was negotiated, then SeqNum.
func (sec *security) mac(handle *rc4.Cipher, signKey []byte, seq uint32, msg []byte) []byte {
	seqBytes := binary.LittleEndian.AppendUint32(nil, seq)
	checksum := hmacMD5(signKey, seqBytes, msg)[:8]
	if sec.flags&flagKeyExch != 0 {
		handle.XORKeyStream(checksum, checksum)
	}
	sig := binary.LittleEndian.AppendUint32(make([]byte, 0, SignatureSize), 1)
	sig = append(sig, checksum...)
	return append(sig, seqBytes...)
}

// Seal protects a server-to-client message (GSS_WrapEx, MS-NLMP 3.4.6): with SEAL
// negotiated, sealed is plain encrypted with the server sealing handle; signature is
// the 16-byte NTLMSSP_MESSAGE_SIGNATURE over plain. Each call uses the next sequence
// number. With only SIGN negotiated sealed is a copy of plain; before a successful
// Authenticate, or with neither flag, signature is nil and sealed is a copy of plain.
func (s *Session) Seal(plain []byte) (signature []byte, sealed []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sealed = append([]byte(nil), plain...)
	sec := s.sec
	if s.state != stateAuthenticated || sec == nil {
		return nil, sealed
	}
	if sec.flags&flagSeal != 0 {
		sec.sendSeal.XORKeyStream(sealed, sealed)
	}
	// The message is encrypted before the checksum: both use the same RC4 stream.
	signature = sec.mac(sec.sendSeal, sec.sendSign, sec.sendSeq, plain)
	sec.sendSeq++
	return signature, sealed
}

// Unseal opens a client-to-server message (GSS_UnwrapEx, MS-NLMP 3.4.7): it decrypts
// sealed with the client sealing handle (when SEAL was negotiated) and checks the
// signature's checksum and sequence number. After a failed Unseal the RC4 streams are
// out of step, so the session refuses every later message: the client must
// authenticate again on a new connection.
func (s *Session) Unseal(signature, sealed []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sec := s.sec
	switch {
	case s.state != stateAuthenticated:
		return nil, errors.New("ntlm: cannot unseal a message: the session is not authenticated; complete NTLM authentication first")
	case sec == nil:
		return nil, errors.New("ntlm: cannot unseal a message: the client did not negotiate signing or sealing; it must ask for NTLMSSP_NEGOTIATE_SEAL to encrypt messages")
	case sec.broken:
		return nil, errors.New("ntlm: cannot unseal a message: an earlier message on this session failed verification; authenticate again on a new connection")
	case len(signature) != SignatureSize:
		sec.broken = true
		return nil, fmt.Errorf("ntlm: message signature is %d bytes, want %d: the client sent a malformed encrypted message", len(signature), SignatureSize)
	case binary.LittleEndian.Uint32(signature) != 1:
		sec.broken = true
		return nil, fmt.Errorf("ntlm: message signature version %d, want 1: the client sent a malformed encrypted message", binary.LittleEndian.Uint32(signature))
	}
	plain := append([]byte(nil), sealed...)
	if sec.flags&flagSeal != 0 {
		sec.recvSeal.XORKeyStream(plain, plain)
	}
	want := sec.mac(sec.recvSeal, sec.recvSign, sec.recvSeq, plain)
	if got := binary.LittleEndian.Uint32(signature[12:]); got != sec.recvSeq {
		sec.broken = true
		return nil, fmt.Errorf("ntlm: message sequence number %d, want %d: a message was lost, replayed or reordered; authenticate again on a new connection", got, sec.recvSeq)
	}
	if !hmac.Equal(want[4:12], signature[4:12]) {
		sec.broken = true
		return nil, errors.New("ntlm: message signature does not match its content: the encrypted message was altered or sealed with other keys; authenticate again on a new connection")
	}
	sec.recvSeq++
	return plain, nil
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
