package ntlm

import "errors"

// Session security (MS-NLMP 3.4) is the server side of an ntlmauth.Session (made by
// ntlmauth.NewServerSession once a logon negotiated signing or sealing); these
// methods add what the connection's logon state decides.

// Seal protects a server-to-client message (GSS_WrapEx, MS-NLMP 3.4.6): with SEAL
// negotiated, sealed is plain encrypted with the server sealing handle; signature is
// the 16-byte NTLMSSP_MESSAGE_SIGNATURE over plain. Each call uses the next sequence
// number. With only SIGN negotiated sealed is a copy of plain; before a successful
// Authenticate, or with neither flag, signature is nil and sealed is a copy of plain.
func (s *Session) Seal(plain []byte) (signature []byte, sealed []byte) {
	s.mu.Lock()
	sec := s.sec
	authenticated := s.state == stateAuthenticated
	s.mu.Unlock()
	if !authenticated || sec == nil {
		return nil, append([]byte(nil), plain...)
	}
	// A server session seals without SEAL too (it signs only), so this cannot fail.
	signature, sealed, _ = sec.Seal(plain)
	return signature, sealed
}

// Unseal opens a client-to-server message (GSS_UnwrapEx, MS-NLMP 3.4.7): it decrypts
// sealed with the client sealing handle (when SEAL was negotiated) and checks the
// signature's checksum and sequence number. After a failed Unseal the RC4 streams are
// out of step, so the session refuses every later message: the client must
// authenticate again on a new connection.
func (s *Session) Unseal(signature, sealed []byte) ([]byte, error) {
	s.mu.Lock()
	sec := s.sec
	state := s.state
	s.mu.Unlock()
	switch {
	case state != stateAuthenticated:
		return nil, errors.New("ntlm: cannot unseal a message: the session is not authenticated; complete NTLM authentication first")
	case sec == nil:
		return nil, errors.New("ntlm: cannot unseal a message: the client did not negotiate signing or sealing; it must ask for NTLMSSP_NEGOTIATE_SEAL to encrypt messages")
	}
	return sec.Unseal(signature, sealed)
}
