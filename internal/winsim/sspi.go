package winsim

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"

	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/krbaccept"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/ntlm"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/wsman"
)

// hostSSPI is a host's Negotiate security package as SQL Server's integrated
// logons use it (AcceptSecurityContext): Kerberos with the keys of the host's
// service principals when the host is in a realm (its winrm.kerberos block, whose
// keytab stands for the computer account's keys, which SQL Server running as a
// virtual account or LocalSystem uses), and NTLM against the host's accounts. The
// ticket's rules are krbaccept's, the same the WinRM listener applies.
type hostSSPI struct {
	kerberos *krbaccept.Acceptor // nil: not in a realm
	domain   string              // NetBIOS domain a principal user@REALM logs on as
	ntlm     *ntlm.Server
	logons   *atomic.Int64 // Kerberos logons accepted, for Stats
}

// newHostSSPI is the security package of a host; kc is its WinRM Kerberos
// configuration (nil: not in a realm).
func newHostSSPI(kc *wsman.KerberosConfig, domain string, nt *ntlm.Server, logons *atomic.Int64) *hostSSPI {
	s := &hostSSPI{domain: domain, ntlm: nt, logons: logons}
	if kc != nil {
		s.kerberos = &krbaccept.Acceptor{Keytab: kc.Keytab, Realm: kc.Realm, MaxClockSkew: kc.MaxClockSkew, ClockOffset: kc.ClockOffset}
	}
	return s
}

func (s *hostSSPI) NewContext(client net.Addr) tds.SSPIContext {
	return &sspiContext{s: s, client: client}
}

type sspiContext struct {
	s      *hostSSPI
	client net.Addr
	ntlm   *ntlm.Session // after an NTLM NEGOTIATE
}

var ntlmSignature = []byte("NTLMSSP\x00")

func (c *sspiContext) Accept(token []byte) (reply []byte, account, mech string, done bool, err error) {
	switch {
	case c.ntlm != nil:
		id, err := c.ntlm.Authenticate(token)
		if err != nil {
			return nil, "", "", false, fmt.Errorf("NTLM: %w", err)
		}
		d := id.Domain
		if d == "" {
			d = c.s.domain
		}
		return nil, strings.ToUpper(d) + `\` + id.User, "NTLM", true, nil
	case krbaccept.IsKerberos(token):
		return c.kerberos(token)
	case bytes.HasPrefix(token, ntlmSignature):
		if c.s.ntlm == nil {
			return nil, "", "", false, errors.New("NTLM is not accepted on this host")
		}
		c.ntlm = c.s.ntlm.NewSession()
		ch, err := c.ntlm.Challenge(token)
		if err != nil {
			return nil, "", "", false, fmt.Errorf("NTLM: %w", err)
		}
		return ch, "", "", false, nil
	default:
		return nil, "", "", false, errors.New("the SSPI token is neither Kerberos (SPNEGO or RFC 1964) nor NTLMSSP")
	}
}

// kerberos accepts an AP-REQ in one leg, as Windows does: the answer carries the
// AP-REP only when the client asked for mutual authentication.
func (c *sspiContext) kerberos(token []byte) ([]byte, string, string, bool, error) {
	if c.s.kerberos == nil {
		return nil, "", "", false, errors.New("Kerberos: the host is not in a realm (no keys for any service principal): 0x80090311 SEC_E_NO_AUTHENTICATING_AUTHORITY")
	}
	tok, err := krbaccept.Decode(token)
	if err != nil {
		return nil, "", "", false, fmt.Errorf("Kerberos: %v", err)
	}
	var addr types.HostAddress
	if ta, ok := c.client.(*net.TCPAddr); ok {
		addr = types.HostAddressFromNetIP(ta.IP)
	}
	logon, refusal := c.s.kerberos.Verify(tok, addr)
	if refusal != nil {
		// SQL Server logs 17806 "SSPI handshake failed with error code 0x8009030c"
		// (SEC_E_LOGON_DENIED) and the like; the client only gets 18452.
		return nil, "", "", false, fmt.Errorf("Kerberos: %s", refusal.Reason)
	}
	var rep []byte
	if tok.MutualRequired() {
		var seq [4]byte
		_, _ = rand.Read(seq[:])
		if rep, err = tok.APRep(uint64(binary.BigEndian.Uint32(seq[:])&0x3fffffff|1), nil); err != nil {
			return nil, "", "", false, fmt.Errorf("Kerberos: building the AP-REP: %v", err)
		}
	}
	out, err := tok.Answer(krbaccept.AcceptCompleted, rep)
	if err != nil {
		return nil, "", "", false, fmt.Errorf("Kerberos: encoding the answer: %v", err)
	}
	if c.s.logons != nil {
		c.s.logons.Add(1)
	}
	return out, logon.Name(strings.ToUpper(c.s.domain)), "Kerberos", true, nil
}
