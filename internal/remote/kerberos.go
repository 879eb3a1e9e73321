package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
)

// Kerberos is a mode of our transport (transport.go), not a transport of its own:
// each connection logs on with its own security context (an AP-REQ in "Authorization:
// Negotiate" on an empty POST), checks the host's AP-REP before anything else leaves
// (mutual authentication), and over HTTP seals every message with that context in
// MS-WSMV's framing (encryption.go), as pywinrm does.
//
// Which logon "negotiate" uses, as Windows clients do (docs: "Authentication"):
//   - a keytab: Kerberos;
//   - a password: Kerberos when the user's realm is explicit (user@REALM, DOMAIN\user
//     or Realm; never krb5.conf's default_realm, which Debian sets to ATHENA.MIT.EDU
//     and which would send a local account's name to a stranger's KDC; a UPN whose
//     suffix is not a realm goes to Realm or the realm [domain_realm] maps the
//     suffix to) and krb5.conf (krb5_conf, KRB5_CONFIG or /etc/krb5.conf) is
//     readable and lists a KDC for it, or sets dns_lookup_kdc and DNS has the
//     realm's _kerberos SRV records, else NTLM; and when the KDC
//     then cannot be reached, or knows neither the user nor the host's SPN, NTLM for
//     the rest of the host's operations (the fallback happens before anything is
//     sent to the host);
//   - neither: Kerberos from the credential cache (KRB5CCNAME), which must hold a
//     ticket-granting ticket of the user (NTLM would need a password).
//
// Other Kerberos failures (wrong password, clock skew, expired ticket, a host that
// refuses the ticket or does not prove itself) end the operation with their cause:
// falling back to NTLM after them would hide the cause, or hand an NTLM logon to a
// host that failed mutual authentication.

// krbLogon is a host's Kerberos logon, shared by all its sessions; each connection
// gets its own context from it.
type krbLogon struct {
	client *krb.Client
	spn    string
	// negotiate: auth "negotiate" with a password, which may fall back to NTLM.
	negotiate bool
	// refused: the same, but AllowNTLMFallback is false.
	refused bool

	ntlm atomic.Bool // negotiate fell back to NTLM for this host
	mu   sync.Mutex
	why  string // the Kerberos failure that made it fall back
}

// kerberosWanted says whether cfg (after SetDefaults and Validate) logs on with
// Kerberos at first, and when "negotiate" does not, why (ntlmWhy); an error is a
// Kerberos configuration that cannot work.
func kerberosWanted(cfg Config) (want bool, ntlmWhy string, err error) {
	switch {
	case cfg.Auth == AuthKerberos:
		return true, "", nil
	case cfg.Auth != AuthNegotiate:
		return false, "", nil
	case cfg.Keytab != "" || cfg.Password == "":
		return true, "", nil
	}
	path := krb.Krb5ConfPath(cfg.Krb5Conf)
	conf, err := krb.LoadKrb5Conf(path)
	if err != nil {
		if cfg.Krb5Conf != "" {
			return false, "", err // named explicitly: it must be usable
		}
		return false, fmt.Sprintf("no realm: no readable krb5.conf (%s) names a KDC", path), nil
	}
	n := krb.ResolveName(cfg.Username, cfg.Realm, conf)
	switch {
	case n.Enterprise && (n.RealmFrom == krb.RealmFromDefault || n.RealmFrom == krb.RealmFromName):
		return false, fmt.Sprintf("no realm: %q is a user principal name whose suffix is not a realm of krb5.conf (%s), and neither the realm setting nor krb5.conf's [domain_realm] names the realm to send it to", cfg.Username, path), nil
	case n.RealmFrom == krb.RealmFromDefault:
		return false, fmt.Sprintf("no realm: the user name %q names none (user@REALM or DOMAIN\\user) and no realm is set", cfg.Username), nil
	case n.Realm == "":
		return false, fmt.Sprintf("no realm: krb5.conf (%s) maps the domain of %q to none", path, cfg.Username), nil
	}
	if len(krb.RealmKDCs(conf, n.Realm)) > 0 {
		return true, "", nil
	}
	if !conf.LibDefaults.DNSLookupKDC {
		return false, fmt.Sprintf("no realm: krb5.conf (%s) names no KDC for the realm %s and dns_lookup_kdc is off", path, n.Realm), nil
	}
	if why := kdcsInDNS(n.Realm); why != "" {
		return false, fmt.Sprintf("no realm: krb5.conf (%s) names no KDC for the realm %s, and with dns_lookup_kdc = true %s", path, n.Realm, why), nil
	}
	return true, "", nil
}

// lookupSRV is the DNS lookup of the realm's KDCs (tests replace it).
var lookupSRV = net.DefaultResolver.LookupSRV

// srvTimeout bounds the DNS lookup of a realm's KDCs.
const srvTimeout = 10 * time.Second

// kdcsInDNS looks the realm's KDCs up as the Kerberos library will (the SRV records
// _kerberos._tcp.REALM and _kerberos._udp.REALM, RFC 4120 7.2.3.2): "" when there
// are some, else what the lookup found.
func kdcsInDNS(realm string) string {
	ctx, cancel := context.WithTimeout(context.Background(), srvTimeout)
	defer cancel()
	var errs []string
	for _, proto := range []string{"tcp", "udp"} {
		_, addrs, err := lookupSRV(ctx, "kerberos", proto, realm)
		if err == nil && len(addrs) > 0 {
			return ""
		}
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	why := fmt.Sprintf("the DNS lookup of _kerberos._tcp.%[1]s and _kerberos._udp.%[1]s found no KDC", realm)
	if len(errs) > 0 {
		why += " (" + strings.Join(errs, "; ") + ")"
	}
	return why
}

// NegotiateUsesNTLM says why auth "negotiate" would use NTLM from the start with
// cfg (no realm), or "" when it tries Kerberos first (or cfg is not "negotiate"). It
// reads krb5.conf but contacts no KDC.
func NegotiateUsesNTLM(cfg Config) string {
	cfg.SetDefaults()
	if cfg.Auth != AuthNegotiate {
		return ""
	}
	_, why, _ := kerberosWanted(cfg)
	return why
}

// newKrbLogon prepares cfg's Kerberos logon (reading krb5.conf, the keytab or the
// credential cache; no KDC is contacted yet), or returns nil when cfg uses NTLM or
// Basic, with why "negotiate" uses NTLM (ntlmWhy). The error is a *ConfigError
// naming the setting; with AllowNTLMFallback false, a "negotiate" that would use
// NTLM is one (ErrNTLMFallback).
func newKrbLogon(cfg Config, now func() time.Time) (_ *krbLogon, ntlmWhy string, _ error) {
	want, ntlmWhy, err := kerberosWanted(cfg)
	if err == nil && want {
		var c *krb.Client
		c, err = krb.New(krb.Config{Username: cfg.Username, Password: cfg.Password, Keytab: cfg.Keytab,
			Krb5Conf: cfg.Krb5Conf, Realm: cfg.Realm, Now: now})
		if err == nil {
			spn := cfg.SPN
			if spn == "" {
				spn = DefaultSPN(cfg.Host)
			}
			negotiate := cfg.Auth == AuthNegotiate && cfg.Password != ""
			return &krbLogon{client: c, spn: spn, negotiate: negotiate && cfg.ntlmFallbackAllowed(),
				refused: negotiate && !cfg.ntlmFallbackAllowed()}, "", nil
		}
	}
	if err == nil {
		if ntlmWhy != "" && !cfg.ntlmFallbackAllowed() {
			return nil, "", &ConfigError{Setting: SettingAllowNTLMFallback, Err: fmt.Errorf("%w: %s", ErrNTLMFallback, ntlmWhy)}
		}
		return nil, ntlmWhy, nil
	}
	return nil, "", &ConfigError{Setting: kerberosSetting(cfg, err), Err: fmt.Errorf("%w: %w", ErrKerberosConfig, err)}
}

// kerberosSetting is the setting a Kerberos configuration error is about.
func kerberosSetting(cfg Config, err error) Setting {
	var ke *krb.Error
	if !errors.As(err, &ke) {
		return SettingKrb5Conf
	}
	switch ke.Part {
	case krb.PartKeytab:
		return SettingKeytab
	case krb.PartCCache:
		return SettingPassword
	case krb.PartRealm:
		if cfg.Realm != "" {
			return SettingRealm
		}
		return SettingUsername
	}
	return SettingKrb5Conf
}

// use says whether connections log on with Kerberos (not after a fallback).
func (k *krbLogon) use() bool { return k != nil && !k.ntlm.Load() }

// fallBack records that no ticket can be had and NTLM takes over, if err allows it
// (auth "negotiate" with a password, AllowNTLMFallback, and a KDC that cannot be
// reached or knows neither the user nor the SPN).
func (k *krbLogon) fallBack(err error) bool {
	why := fallbackCause(err)
	if !k.negotiate || why == "" {
		return false
	}
	k.mu.Lock()
	k.why = why + ": " + strings.TrimPrefix(err.Error(), "kerberos: ")
	k.mu.Unlock()
	k.ntlm.Store(true)
	return true
}

// fallbackCause names why err lets "negotiate" fall back to NTLM, or "" when it does not.
func fallbackCause(err error) string {
	switch {
	case errors.Is(err, krb.ErrKDCUnreachable):
		return "the KDC did not answer"
	case errors.Is(err, krb.ErrUnknownSPN):
		return "no ticket for the SPN"
	case errors.Is(err, krb.ErrUnknownUser):
		return "the KDC does not know the user"
	}
	return ""
}

// fellBack is why negotiate uses NTLM for this host, or "".
func (k *krbLogon) fellBack() string {
	if k == nil || !k.ntlm.Load() {
		return ""
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.why
}

// krbHandshake logs c on with a new Kerberos context: the AP-REQ (with the TLS
// channel's bindings over HTTPS) on an empty POST, then the host's AP-REP, which must
// verify before any message is sent. Over HTTP the context then seals every message.
func (t *transport) krbHandshake(c *conn) error {
	k := t.krb
	x, token, err := k.client.InitSecContext(context.Background(), k.spn, krb.SPNEGO, c.binding)
	if err != nil {
		return err
	}
	resp, err := t.roundTrip(c, nil, "", negotiateHeader(token))
	if err != nil {
		return err
	}
	reply, _ := negotiateToken(resp.header.Values("WWW-Authenticate"))
	if reply != nil {
		if err := x.VerifyReply(reply); err != nil {
			return err
		}
	}
	switch {
	case resp.status == http.StatusUnauthorized:
		return &krb.Error{Kind: krb.KindRefused, Principal: k.client.Principal(), SPN: k.spn,
			Message: fmt.Sprintf("%s refused the Kerberos logon of %s for %s (HTTP 401, it offers %s)",
				t.addr, k.client.Principal(), k.spn, strings.Join(resp.header.Values("WWW-Authenticate"), ", ")),
			Hint: "Check that Kerberos is enabled on the WinRM service (winrm get winrm/config/service/auth), that the user is a local Administrator of the host, and that the SPN is the host's"}
	case resp.status != http.StatusOK:
		return &httpStatusError{Status: resp.status, SOAP: false} // not a result: its body is not read
	case reply == nil || !x.Established():
		return &krb.Error{Kind: krb.KindMutualAuth, Principal: k.client.Principal(), SPN: k.spn,
			Message: fmt.Sprintf("%s accepted the Kerberos logon without proving it holds the key of %s (no AP-REP), so nothing was sent to it", t.addr, k.spn),
			Hint:    "Do not trust this host: a genuine Windows host always answers with an AP-REP"}
	case resp.close:
		return errors.New("the server closed the connection right after the Kerberos logon, before the first message could be sent")
	}
	c.authed = true
	if t.encrypt {
		c.seal = krbSealer{x}
	}
	return nil
}

// krbSealer seals with a Kerberos context: RFC 4121 wrap tokens in MS-WSMV's framing,
// with the protocol pywinrm and Windows use for Kerberos inside Negotiate.
type krbSealer struct{ x *krb.Context }

func (k krbSealer) Protocol() string                          { return protocolSPNEGO }
func (k krbSealer) Wrap(plain []byte) ([]byte, []byte, error) { return k.x.Seal(plain) }
func (k krbSealer) Unwrap(header, sealed []byte) ([]byte, error) {
	return k.x.Unseal(header, sealed)
}

// classifyKerberos turns a Kerberos failure into an *Error that keeps its cause (KDC
// unreachable, clock skew, unknown SPN, expired ticket, channel bindings, no mutual
// authentication) instead of a generic authentication failure; nil when err is not
// one. The krb sentinels stay reachable with errors.Is.
func (h *winrmHost) classifyKerberos(err error) *Error {
	var ke *krb.Error
	if !errors.As(err, &ke) {
		if errors.Is(err, krb.ErrWrap) {
			e := h.newError("", KindProtocol)
			e.Err = err
			e.Message = "a Kerberos-sealed WinRM message from " + net.JoinHostPort(h.cfg.Host, strconv.Itoa(h.port)) + " could not be unsealed: " + rootCause(err)
			e.Hint = "Something between this machine and the host changed or replayed the message, or the host lost the connection's context; try again"
			return e
		}
		return nil
	}
	e := h.newError("", KindAuth)
	e.Err, e.Message, e.Hint = err, "Kerberos: "+ke.Message, ke.Hint
	if h.krb != nil && h.krb.refused && fallbackCause(err) != "" {
		e.Message += " (negotiate did not fall back to NTLM: the fallback is not allowed)"
	}
	switch ke.Kind {
	case krb.KindKDCUnreachable:
		e.Kind, e.Setting = KindUnreachable, SettingKrb5Conf
	case krb.KindConfig:
		e.Kind, e.Setting = KindConfig, kerberosSetting(h.cfg, err)
	case krb.KindWrongPassword, krb.KindExpired:
		e.Setting = SettingPassword
	case krb.KindUnknownUser:
		e.Setting = SettingUsername
	case krb.KindUnknownSPN, krb.KindRefused:
		e.Setting = SettingSPN
	case krb.KindBindings:
		e.Setting = SettingHTTPS
	case krb.KindEncType:
		e.Kind = KindConfig // the domain's, not the provider's: no setting fixes it
	}
	return e
}
