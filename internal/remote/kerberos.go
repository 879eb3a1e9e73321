package remote

import (
	"errors"
	"net"
	"strconv"

	"github.com/masterzen/winrm"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
)

// kerberosDecorator prepares the Kerberos logon for cfg (auth = "kerberos"):
// krb5.conf, then the password, the keytab or the credential cache, in that order
// of preference. Every connection of the host then logs on with its own context
// and seals its messages over HTTP (krb.Transport).
func kerberosDecorator(cfg Config) (func() winrm.Transporter, error) {
	kc, err := krb.New(krb.Config{
		Username: cfg.Username,
		Password: cfg.Password,
		Keytab:   cfg.Keytab,
		Krb5Conf: cfg.Krb5Conf,
		Realm:    cfg.Realm,
	})
	if err != nil {
		var ke *krb.Error
		if errors.As(err, &ke) {
			e := configError(cfg, ke.Message, ke.Hint)
			e.Kind = KindAuth
			e.Err = err
			return nil, e
		}
		return nil, configError(cfg, err.Error(), "Check krb5_conf, keytab and the credential cache (KRB5CCNAME)")
	}
	spn := cfg.SPN
	if spn == "" {
		spn = krb.DefaultSPN(cfg.Host)
	}
	return func() winrm.Transporter { return krb.NewTransport(kc, spn) }, nil
}

// classifyKerberos turns a Kerberos failure into an *Error that keeps its cause
// (KDC unreachable, clock skew, unknown SPN, expired ticket, wrong password, no
// mutual authentication) instead of a generic authentication failure; nil when
// err is not one.
func (h *winrmHost) classifyKerberos(err error) *Error {
	var ke *krb.Error
	if !errors.As(err, &ke) {
		if errors.Is(err, krb.ErrWrap) {
			return &Error{Host: h.cfg.Host, Kind: KindProtocol, Err: err,
				Message: "a Kerberos-sealed WinRM message from " + net.JoinHostPort(h.cfg.Host, strconv.Itoa(h.port)) + " could not be unsealed: " + err.Error(),
				Hint:    "Something between this machine and the host changed or replayed the message, or the host lost the connection's context; try again"}
		}
		return nil
	}
	e := &Error{Host: h.cfg.Host, Kind: KindAuth, Err: err, Message: ke.Message, Hint: ke.Hint}
	if ke.Kind == krb.KindKDCUnreachable {
		e.Kind = KindUnreachable
	}
	return e
}
