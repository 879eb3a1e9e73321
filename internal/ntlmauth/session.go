package ntlmauth

import (
	"crypto/hmac"
	"crypto/rc4"
	"encoding/binary"
	"fmt"
	"sync"
)

// NTLMv2 session security (MS-NLMP 3.4), connection-oriented: one RC4 stream per
// direction for the life of the session, and a sequence number per direction that
// starts at 0 and goes up by one per message. The client and the server derive the
// same four keys and use them mirrored, so one Session type serves both sides.

// Magic constants of SIGNKEY and SEALKEY (MS-NLMP 3.4.5.2, 3.4.5.3), NUL included.
var (
	clientSignMagic = []byte("session key to client-to-server signing key magic constant\x00")
	serverSignMagic = []byte("session key to server-to-client signing key magic constant\x00")
	clientSealMagic = []byte("session key to client-to-server sealing key magic constant\x00")
	serverSealMagic = []byte("session key to server-to-client sealing key magic constant\x00")
)

// SignatureSize is the size of an NTLMSSP_MESSAGE_SIGNATURE (MS-NLMP 2.2.2.9.2).
const SignatureSize = 16

// Session signs and seals the messages one side sends and verifies and unseals the
// ones it receives. Messages must be sealed and unsealed in the order they travel;
// it is safe for concurrent use. After a message fails verification the RC4 streams
// are out of step, so the session refuses every later message.
type Session struct {
	mu          sync.Mutex
	flags       uint32 // the negotiated NegFlg
	peer        string // who sends what Unseal reads, for error messages
	requireSeal bool
	sendSign    []byte
	recvSign    []byte
	sendSeal    *rc4.Cipher
	recvSeal    *rc4.Cipher
	sendSeq     uint32
	recvSeq     uint32
	broken      bool
}

// NewClientSession is the client's side of the session negotiated with flags and
// the ExportedSessionKey: it sends with the client-to-server keys. A client session
// seals only: without NTLMSSP_NEGOTIATE_SEAL Seal and Unseal fail, so that a message
// meant to be encrypted never travels in clear text.
func NewClientSession(flags uint32, exportedSessionKey []byte) *Session {
	s := newSession(flags, exportedSessionKey, clientSignMagic, clientSealMagic, serverSignMagic, serverSealMagic)
	s.peer, s.requireSeal = "the host", true
	return s
}

// NewServerSession is the server's side: it sends with the server-to-client keys.
// Like GSS_WrapEx, a server session whose client asked only to sign sends and
// accepts signed messages in clear text.
func NewServerSession(flags uint32, exportedSessionKey []byte) *Session {
	s := newSession(flags, exportedSessionKey, serverSignMagic, serverSealMagic, clientSignMagic, clientSealMagic)
	s.peer = "the client"
	return s
}

func newSession(flags uint32, exported, sendSignMagic, sendSealMagic, recvSignMagic, recvSealMagic []byte) *Session {
	return &Session{
		flags:    flags,
		sendSign: md5Of(exported, sendSignMagic),
		recvSign: md5Of(exported, recvSignMagic),
		sendSeal: newRC4(sealKey(flags, exported, sendSealMagic)),
		recvSeal: newRC4(sealKey(flags, exported, recvSealMagic)),
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
func (s *Session) mac(handle *rc4.Cipher, signKey []byte, seq uint32, msg []byte) []byte {
	seqBytes := binary.LittleEndian.AppendUint32(nil, seq)
	checksum := HMACMD5(signKey, seqBytes, msg)[:8]
	if s.flags&flagKeyExch != 0 {
		handle.XORKeyStream(checksum, checksum)
	}
	sig := binary.LittleEndian.AppendUint32(make([]byte, 0, SignatureSize), 1)
	sig = append(sig, checksum...)
	return append(sig, seqBytes...)
}

// Sealing reports whether confidentiality was negotiated (NTLMSSP_NEGOTIATE_SEAL).
func (s *Session) Sealing() bool { return s != nil && s.flags&flagSeal != 0 }

func (s *Session) noSealing() error {
	return fmt.Errorf("ntlm: the session has no sealing: %s did not agree to NTLMSSP_NEGOTIATE_SEAL, so messages cannot be encrypted", s.peer)
}

// Seal protects a message for the peer (GSS_WrapEx, MS-NLMP 3.4.6): sealed is plain
// encrypted with this side's sealing handle (a copy of plain when only signing was
// negotiated, on a server session), sig the 16-byte NTLMSSP_MESSAGE_SIGNATURE over
// plain. Each call uses the next sequence number.
func (s *Session) Seal(plain []byte) (sig, sealed []byte, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.requireSeal && !s.Sealing() {
		return nil, nil, s.noSealing()
	}
	sealed = append([]byte(nil), plain...)
	if s.Sealing() {
		s.sendSeal.XORKeyStream(sealed, sealed)
	}
	// The message is encrypted before the checksum: both use the same RC4 stream.
	sig = s.mac(s.sendSeal, s.sendSign, s.sendSeq, plain)
	s.sendSeq++
	return sig, sealed, nil
}

// Unseal opens a message from the peer (GSS_UnwrapEx, MS-NLMP 3.4.7): it decrypts
// sealed with the peer's sealing handle and checks the signature's version, checksum
// and sequence number.
func (s *Session) Unseal(sig, sealed []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.requireSeal && !s.Sealing():
		return nil, s.noSealing()
	case s.broken:
		return nil, fmt.Errorf("ntlm: an earlier encrypted message from %s failed verification, so this session refuses every later one: authenticate again on a new connection", s.peer)
	case len(sig) != SignatureSize:
		s.broken = true
		return nil, fmt.Errorf("ntlm: %s sent a message signature of %d bytes, want %d: a malformed encrypted message; authenticate again on a new connection", s.peer, len(sig), SignatureSize)
	case binary.LittleEndian.Uint32(sig) != 1:
		s.broken = true
		return nil, fmt.Errorf("ntlm: %s sent a message signature of version %d, want 1: a malformed encrypted message; authenticate again on a new connection", s.peer, binary.LittleEndian.Uint32(sig))
	}
	plain := append([]byte(nil), sealed...)
	if s.Sealing() {
		s.recvSeal.XORKeyStream(plain, plain)
	}
	want := s.mac(s.recvSeal, s.recvSign, s.recvSeq, plain)
	if got := binary.LittleEndian.Uint32(sig[12:]); got != s.recvSeq {
		s.broken = true
		return nil, fmt.Errorf("ntlm: %s sent message sequence number %d, want %d: a message was lost, replayed or reordered; authenticate again on a new connection", s.peer, got, s.recvSeq)
	}
	if !hmac.Equal(want[4:12], sig[4:12]) {
		s.broken = true
		return nil, fmt.Errorf("ntlm: the signature of an encrypted message from %s does not match its content: it was altered or sealed with other keys; authenticate again on a new connection", s.peer)
	}
	s.recvSeq++
	return plain, nil
}
