package krb

import (
	"errors"
	"fmt"
	"strings"
)

// Kind says why Kerberos failed, so callers can tell the user what to do next.
type Kind int

const (
	KindUnknown        Kind = iota
	KindConfig              // krb5.conf, keytab or credential cache unusable, or no realm
	KindKDCUnreachable      // no KDC of the realm answered
	KindWrongPassword       // KDC_ERR_PREAUTH_FAILED, or a keytab with stale keys
	KindUnknownUser         // KDC_ERR_C_PRINCIPAL_UNKNOWN
	KindUnknownSPN          // KDC_ERR_S_PRINCIPAL_UNKNOWN: no account has the SPN
	KindClockSkew           // KRB_AP_ERR_SKEW (host) or KRB_AP_ERR_SKEW / KDC clock skew
	KindExpired             // the credential cache's ticket expired, or the account/password did
	KindMutualAuth          // the host's AP-REP is missing or does not prove it knows the key
	KindRefused             // the host refused the ticket (KRB_AP_ERR_MODIFIED and other AP errors)
	KindBindings            // the host refused the logon over TLS for its channel bindings (CBT)
	KindEncType             // the service ticket's session key is RC4 or DES: the account has no AES keys
)

// Sentinels for errors.Is: an *Error matches the sentinel of its Kind.
var (
	ErrConfig         = errors.New("kerberos configuration")
	ErrKDCUnreachable = errors.New("KDC unreachable")
	ErrWrongPassword  = errors.New("kerberos pre-authentication failed")
	ErrUnknownUser    = errors.New("kerberos client principal unknown")
	ErrUnknownSPN     = errors.New("kerberos service principal unknown")
	ErrClockSkew      = errors.New("kerberos clock skew")
	ErrExpired        = errors.New("kerberos credentials expired")
	ErrMutualAuth     = errors.New("kerberos mutual authentication failed")
	ErrRefused        = errors.New("kerberos ticket refused by the host")
	ErrBindings       = errors.New("kerberos channel bindings refused by the host")
	ErrEncType        = errors.New("kerberos encryption type not supported")
)

var kindSentinel = map[Kind]error{
	KindConfig:         ErrConfig,
	KindKDCUnreachable: ErrKDCUnreachable,
	KindWrongPassword:  ErrWrongPassword,
	KindUnknownUser:    ErrUnknownUser,
	KindUnknownSPN:     ErrUnknownSPN,
	KindClockSkew:      ErrClockSkew,
	KindExpired:        ErrExpired,
	KindMutualAuth:     ErrMutualAuth,
	KindRefused:        ErrRefused,
	KindBindings:       ErrBindings,
	KindEncType:        ErrEncType,
}

// Part is the piece of the local configuration a KindConfig error is about.
type Part int

const (
	PartNone     Part = iota
	PartKrb5Conf      // krb5.conf: unreadable, unparsable, or no KDC for the realm
	PartRealm         // no realm for the user
	PartKeytab        // the keytab cannot be read
	PartCCache        // the credential cache is missing, of another user, or expired
)

// Error is every error of this package apart from message protection (ErrWrap).
type Error struct {
	Kind      Kind
	Part      Part   // for KindConfig (and an expired cache): what to fix
	Principal string // the client principal, user@REALM
	SPN       string // the service principal, when known
	Message   string // what failed
	Hint      string // what to do next
	Err       error  // gokrb5's error or the KRB-ERROR, if any
}

func (e *Error) Error() string {
	msg := "kerberos: " + e.Message
	if e.Hint != "" {
		msg += ". " + e.Hint
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrClockSkew) and friends work.
func (e *Error) Is(target error) bool { return kindSentinel[e.Kind] == target && target != nil }

// KRB-ERROR codes (RFC 4120 7.5.9) this package tells apart.
const (
	codeCPrincipalUnknown = 6
	codeSPrincipalUnknown = 7
	codeClientRevoked     = 18
	codeKeyExpired        = 23
	codePreauthFailed     = 24
	codeTktExpired        = 32
	codeSkew              = 37
	codeModified          = 41
	codeBadIntegrity      = 31
)

var codeNames = map[int]string{
	codeCPrincipalUnknown: "KDC_ERR_C_PRINCIPAL_UNKNOWN",
	codeSPrincipalUnknown: "KDC_ERR_S_PRINCIPAL_UNKNOWN",
	codeClientRevoked:     "KDC_ERR_CLIENT_REVOKED",
	codeKeyExpired:        "KDC_ERR_KEY_EXPIRED",
	codePreauthFailed:     "KDC_ERR_PREAUTH_FAILED",
	codeTktExpired:        "KRB_AP_ERR_TKT_EXPIRED",
	codeSkew:              "KRB_AP_ERR_SKEW",
	codeModified:          "KRB_AP_ERR_MODIFIED",
	codeBadIntegrity:      "KRB_AP_ERR_BAD_INTEGRITY",
}

// krbCode finds the KRB-ERROR code in a gokrb5 error: gokrb5 flattens the
// KRB-ERROR into text ("KRB Error: (24) KDC_ERR_PREAUTH_FAILED ...").
func krbCode(err error) int {
	if err == nil {
		return 0
	}
	msg := err.Error()
	for code, name := range codeNames {
		if strings.Contains(msg, name) {
			return code
		}
	}
	return 0
}

// classifyKDC turns a failure to get a TGT or a service ticket into an *Error.
// realm and kdcs say where the client looked; step is "logon" or "service ticket".
func classifyKDC(err error, principal, spn, realm string, kdcs []string, step string) *Error {
	e := &Error{Principal: principal, SPN: spn, Err: err}
	switch krbCode(err) {
	case codePreauthFailed:
		e.Kind = KindWrongPassword
		e.Message = fmt.Sprintf("the KDC of %s refused the logon of %s: wrong password or stale keytab (KDC_ERR_PREAUTH_FAILED)", realm, principal)
		e.Hint = "Check the password, or re-export the keytab after the password changed (ktpass or ktutil), and that the account is not locked out"
	case codeCPrincipalUnknown:
		e.Kind = KindUnknownUser
		e.Message = fmt.Sprintf("the KDC of %s does not know the user %s (KDC_ERR_C_PRINCIPAL_UNKNOWN)", realm, principal)
		e.Hint = "Write the user name as user@REALM with the DNS name of the domain, or REALM\\user"
	case codeSPrincipalUnknown:
		e.Kind = KindUnknownSPN
		e.Message = fmt.Sprintf("the KDC of %s knows no account with the service principal name %s (KDC_ERR_S_PRINCIPAL_UNKNOWN)", realm, spn)
		e.Hint = "Reach the host by the DNS name its computer account registered (HTTP/<fqdn>), or name an SPN the host has (setspn -L <computer>); a host reached by IP address or an alias needs its SPN given explicitly"
	case codeSkew:
		e.Kind = KindClockSkew
		e.Message = fmt.Sprintf("the clock of this machine and the KDC of %s differ by more than the allowed skew (KRB_AP_ERR_SKEW)", realm)
		e.Hint = "Synchronise this machine's clock with the domain (NTP); Kerberos allows 5 minutes by default"
	case codeKeyExpired, codeClientRevoked:
		e.Kind = KindExpired
		e.Message = fmt.Sprintf("the KDC of %s refused %s: the password expired or the account is disabled or locked (%s)", realm, principal, codeNames[krbCode(err)])
		e.Hint = "Change the account's password or unlock it in Active Directory, then try again"
	case codeTktExpired:
		e.Kind = KindExpired
		e.Message = fmt.Sprintf("the ticket-granting ticket of %s expired (KRB_AP_ERR_TKT_EXPIRED)", principal)
		e.Hint = "Run kinit again, or configure a password or keytab so the provider can renew it"
	default:
		msg := err.Error()
		if strings.Contains(msg, krbNetworking) || strings.Contains(strings.ToLower(msg), "connection refused") || strings.Contains(strings.ToLower(msg), "no kdcs defined") || strings.Contains(strings.ToLower(msg), "i/o timeout") {
			e.Kind = KindKDCUnreachable
			where := "the KDCs of " + realm
			if len(kdcs) > 0 {
				where += " (" + strings.Join(kdcs, ", ") + ")"
			}
			e.Message = fmt.Sprintf("no answer from %s for the %s of %s", where, step, principal)
			e.Hint = "Check that this machine reaches the domain controllers on port 88 (TCP and UDP) and that krb5.conf names them under [realms] (or set dns_lookup_kdc = true)"
		} else {
			e.Kind = KindUnknown
			e.Message = fmt.Sprintf("%s for %s failed: %v", step, principal, err)
			e.Hint = "Check krb5.conf and the account; run kinit with the same user to compare"
		}
	}
	return e
}

const krbNetworking = "Networking_Error"

// ClassifyInitiator turns the error of another Kerberos initiator built on gokrb5
// (go-mssqldb's krb5 authenticator, for SQL Server) into an *Error naming the
// principal, the SPN and the realm's KDCs, with this package's texts: the KDC's
// refusal of the logon (AS exchange) or of the service ticket (TGS exchange).
// It returns nil for an error that does not come from a KDC exchange.
func ClassifyInitiator(err error, principal, spn, realm string, kdcs []string) *Error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	step := "logon"
	switch {
	case strings.Contains(msg, "TGS Exchange Error") || strings.Contains(msg, "TGS_REQ") || strings.Contains(msg, "requesting for"):
		step = "service ticket"
	case strings.Contains(msg, "AS Exchange Error") || strings.Contains(msg, "AS_REQ"):
	default:
		if krbCode(err) == 0 && !strings.Contains(msg, krbNetworking) && !strings.Contains(msg, "KDC_Error") {
			return nil
		}
	}
	e := classifyKDC(err, principal, spn, realm, kdcs, step)
	if e.Kind == KindUnknown {
		e.Message = fmt.Sprintf("the %s of %s for %s failed: %v", step, principal, spn, err)
	}
	return e
}
