package krb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/types"
)

// RFC 4121 section 4.2.6.2 wrap tokens with confidentiality, laid out as MS-WSMV's
// HTTP message encryption carries them (2.2.9.1.2): the "signature" part is the
// 16-byte token header, the bytes rotated to the front (the encrypted filler and
// header copy, and the checksum) and the confounder; the data part is the encrypted
// message, as long as the message itself. MIT's gss_wrap_iov (HEADER, DATA,
// PADDING) produces EC = 0, RRC = 16 + the checksum length (28 for the SHA-1 AES
// types); Windows' GSS_WrapEx may add EC = 16 filler bytes and then rotates by
// RRC + EC (MS-KILE 3.4.5.4.1), which Unseal accepts too.

// Key usages of RFC 4121 section 2.
const (
	usageAcceptorSeal  = 22
	usageInitiatorSeal = 24
)

// Token flags of RFC 4121 section 4.2.2.
const (
	flagSentByAcceptor = 0x01
	flagSealed         = 0x02
	flagAcceptorSubkey = 0x04
)

const wrapHeaderLen = 16

// ErrWrap is wrapped by every failure to unseal a message: a wrong key, a message
// changed on the way, an out-of-order or replayed message.
var ErrWrap = errors.New("kerberos message protection")

// Sealer seals and unseals the messages of one security context (one
// connection): the keys, the direction and the sequence numbers of both sides.
// Messages must be sealed and unsealed in the order they travel; it is safe for
// concurrent use.
type Sealer struct {
	mu       sync.Mutex
	key      types.EncryptionKey  // the initiator's subkey, else the ticket's session key
	subkey   *types.EncryptionKey // the acceptor's subkey, if its AP-REP carried one
	acceptor bool                 // this side is the acceptor (the server)
	ec       int                  // filler bytes this side seals with (EC)
	sendSeq  uint64
	recvSeq  uint64
}

// NewSealer makes the sealer of one side of a context. key is the initiator's
// subkey (or, without one, the ticket's session key); acceptorSubkey is the
// subkey of the acceptor's AP-REP, or nil. Once the acceptor asserted a subkey,
// both sides seal with it and flag it (RFC 4121 section 2 and 4.2.2); a token
// without the flag was sealed with key. sendSeq and recvSeq are the first
// sequence numbers this side sends and expects (the initiator's comes from its
// authenticator, the acceptor's from its AP-REP).
func NewSealer(key types.EncryptionKey, acceptorSubkey *types.EncryptionKey, acceptor bool, sendSeq, recvSeq uint64) (*Sealer, error) {
	keys := []types.EncryptionKey{key}
	if acceptorSubkey != nil {
		keys = append(keys, *acceptorSubkey)
	}
	for _, k := range keys {
		if _, err := crypto.GetEtype(k.KeyType); err != nil {
			return nil, fmt.Errorf("%w: encryption type %d of the context key is not supported: %v", ErrWrap, k.KeyType, err)
		}
		if !rfc4121Etype(k.KeyType) {
			return nil, fmt.Errorf("%w: encryption type %d (RC4 or DES) uses RFC 4757 tokens, which are not supported: enable AES for the accounts (msDS-SupportedEncryptionTypes)", ErrWrap, k.KeyType)
		}
	}
	return &Sealer{key: key, subkey: acceptorSubkey, acceptor: acceptor, sendSeq: sendSeq, recvSeq: recvSeq}, nil
}

// SealWithFiller makes Seal add ec filler bytes (EC) and rotate the trailer by
// RRC + EC, as Windows' GSS_WrapEx does for AES (MS-KILE 3.4.5.4.1: "the sender
// should set extra count (EC) to 1 block - 16 bytes"; "H1 is rotated by RRC+EC
// bytes, which is different from RRC alone"). The simulator's acceptor uses it to
// seal as a Windows host may; the provider seals with EC = 0.
func (s *Sealer) SealWithFiller(ec int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ec = ec
}

// rfc4121Etype: the AES types (17, 18, 19, 20) and Camellia use RFC 4121 tokens.
func rfc4121Etype(et int32) bool {
	switch et {
	case 17, 18, 19, 20, 25, 26:
		return true
	}
	return false
}

// Seal encrypts msg and returns the MS-WSMV signature (token header, rotated
// trailer, confounder) and the encrypted data, the same length as msg.
func (s *Sealer) Seal(msg []byte) (signature, data []byte, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := s.key
	if s.subkey != nil {
		key = *s.subkey
	}
	et, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrWrap, err)
	}
	flags := byte(flagSealed)
	usage := uint32(usageInitiatorSeal)
	if s.acceptor {
		flags |= flagSentByAcceptor
		usage = usageAcceptorSeal
	}
	if s.subkey != nil {
		flags |= flagAcceptorSubkey
	}
	header := make([]byte, wrapHeaderLen)
	header[0], header[1], header[2], header[3] = 0x05, 0x04, flags, 0xFF
	binary.BigEndian.PutUint16(header[4:], uint16(s.ec))
	// RRC = 0 in the encrypted copy.
	binary.BigEndian.PutUint64(header[8:], s.sendSeq)
	plain := make([]byte, 0, len(msg)+s.ec+wrapHeaderLen)
	plain = append(plain, msg...)
	plain = append(plain, make([]byte, s.ec)...)
	plain = append(plain, header...)
	_, cipher, err := et.EncryptMessage(key.KeyValue, plain, usage)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: encrypting: %v", ErrWrap, err)
	}
	rrc := wrapHeaderLen + et.GetHMACBitLength()/8
	binary.BigEndian.PutUint16(header[6:], uint16(rrc))
	token := make([]byte, 0, wrapHeaderLen+len(cipher))
	token = append(token, header...)
	token = append(token, rotateRight(cipher, rrc+s.ec)...)
	s.sendSeq++
	sigLen := wrapHeaderLen + rrc + s.ec + et.GetConfounderByteSize()
	return token[:sigLen], token[sigLen:], nil
}

// Unseal checks and decrypts a message sealed by the other side: signature and
// data as MS-WSMV carries them. Any EC and RRC are accepted: with EC != 0 the
// trailer is rotated by RRC + EC as Windows does (MS-KILE 3.4.5.4.1), else by RRC
// alone as RFC 4121 says; the checksum decides which.
func (s *Sealer) Unseal(signature, data []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	token := make([]byte, 0, len(signature)+len(data))
	token = append(token, signature...)
	token = append(token, data...)
	if len(token) < wrapHeaderLen || token[0] != 0x05 || token[1] != 0x04 || token[3] != 0xFF {
		return nil, fmt.Errorf("%w: not an RFC 4121 wrap token (%d bytes)", ErrWrap, len(token))
	}
	flags := token[2]
	if flags&flagSealed == 0 {
		return nil, fmt.Errorf("%w: the message is signed but not encrypted", ErrWrap)
	}
	fromAcceptor := flags&flagSentByAcceptor != 0
	if fromAcceptor == s.acceptor {
		return nil, fmt.Errorf("%w: the message was sealed by this side of the context (reflected)", ErrWrap)
	}
	key := s.key
	if flags&flagAcceptorSubkey != 0 {
		if s.subkey == nil {
			return nil, fmt.Errorf("%w: the message is sealed with an acceptor subkey, but the acceptor's AP-REP carried none", ErrWrap)
		}
		key = *s.subkey
	}
	ec := int(binary.BigEndian.Uint16(token[4:6]))
	rrc := int(binary.BigEndian.Uint16(token[6:8]))
	seq := binary.BigEndian.Uint64(token[8:16])
	cipher := token[wrapHeaderLen:]
	et, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrWrap, err)
	}
	// At least the confounder, the encrypted header copy and the checksum: gokrb5
	// panics on a shorter ciphertext.
	if minLen := et.GetConfounderByteSize() + wrapHeaderLen + et.GetHMACBitLength()/8; len(cipher) < minLen {
		return nil, fmt.Errorf("%w: the token's encrypted part is %d bytes, shorter than the %d of a confounder, a header and a checksum", ErrWrap, len(cipher), minLen)
	}
	usage := uint32(usageAcceptorSeal)
	if !fromAcceptor {
		usage = usageInitiatorSeal
	}
	rotations := []int{rrc}
	if ec != 0 {
		rotations = []int{rrc + ec, rrc}
	}
	var plain []byte
	for _, r := range rotations {
		if plain, err = decrypt(rotateLeft(cipher, r%len(cipher)), key, usage); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: decrypting failed (wrong key or a message changed in transit): %v", ErrWrap, err)
	}
	if len(plain) < ec+wrapHeaderLen {
		return nil, fmt.Errorf("%w: decrypted token of %d bytes is shorter than its filler (%d) and header", ErrWrap, len(plain), ec)
	}
	inner := plain[len(plain)-wrapHeaderLen:]
	want := append([]byte(nil), token[:wrapHeaderLen]...)
	want[6], want[7] = 0, 0
	if !bytes.Equal(inner, want) {
		return nil, fmt.Errorf("%w: the encrypted header copy does not match the token header", ErrWrap)
	}
	if seq != s.recvSeq {
		return nil, fmt.Errorf("%w: sequence number %d, expected %d (a message was lost, replayed or reordered)", ErrWrap, seq, s.recvSeq)
	}
	s.recvSeq++
	return plain[:len(plain)-wrapHeaderLen-ec], nil
}

// decrypt is gokrb5's DecryptMessage with a panic turned into an error.
func decrypt(cipher []byte, key types.EncryptionKey, usage uint32) (plain []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			plain, err = nil, fmt.Errorf("the Kerberos library failed on the token (%v)", r)
		}
	}()
	return crypto.DecryptMessage(cipher, key, usage)
}

func rotateRight(b []byte, n int) []byte {
	if len(b) == 0 {
		return b
	}
	n %= len(b)
	out := make([]byte, 0, len(b))
	out = append(out, b[len(b)-n:]...)
	return append(out, b[:len(b)-n]...)
}

func rotateLeft(b []byte, n int) []byte {
	out := make([]byte, 0, len(b))
	out = append(out, b[n:]...)
	return append(out, b[:n]...)
}
