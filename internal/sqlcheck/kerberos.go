package sqlcheck

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	// go-mssqldb's Kerberos authenticator, registered as "krb5".
	_ "github.com/microsoft/go-mssqldb/integratedauth/krb5"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
)

// The SQL check over Kerberos (Auth = AuthKerberos) goes through go-mssqldb's
// Kerberos authenticator (integratedauth/krb5, on gokrb5), configured from the
// provider's Kerberos rules in internal/remote/krb, the same WinRM's Kerberos uses:
// one krb5.conf (krb.Krb5ConfPath), one way to find the principal and realm from
// DOMAIN\user or user@REALM (krb.SplitPrincipal), one reading of the credential
// cache (krb.CCachePath) and the same error texts, naming the SPN and the KDC.
//
// go-mssqldb's authenticator does not ask for mutual authentication (it cannot
// verify an AP-REP): SQL Server's identity rests on TLS, encrypt = "true" or
// "strict" with the certificate verified (the defaults).

// authenticatorKrb5 is the name go-mssqldb's krb5 package registers.
const authenticatorKrb5 = "krb5"

// DefaultSPN is the service principal SQL Server registers for a TCP endpoint,
// MSSQLSvc/<host>:<port> (the host as the client names it; the KDC matches the
// FQDN the service account registered, so reach the instance by its FQDN or set
// the SPN).
func DefaultSPN(host string, port int) string {
	if port == 0 {
		port = DefaultPort
	}
	return "MSSQLSvc/" + strings.ToLower(host) + ":" + strconv.Itoa(port)
}

// SPNFor is the service principal a Kerberos login to t asks a ticket for: SPN
// when set, else DefaultSPN.
func (c Config) SPNFor(t Target) string {
	if c.SPN != "" {
		return c.SPN
	}
	return DefaultSPN(t.Host, t.Port)
}

// kerberosLogon is a Kerberos credential, resolved as the provider's WinRM logon
// resolves it.
type kerberosLogon struct {
	krb5Conf  string
	dnsLookup bool
	user      string // without the realm; "" for the credential cache
	realm     string
	principal string // user@REALM
	kdcs      []string
	keytab    string
	ccache    string
	source    string // "password", "keytab PATH", "credential cache PATH"
	client    *krb.Client
	cleanup   func() // removes what canonicalize wrote; nil when nothing
}

// kerberosLogon reads krb5.conf and the keytab or credential cache (no KDC is
// contacted): a *krb.Error of KindConfig or KindExpired when they cannot serve.
func (c Config) kerberosLogon() (*kerberosLogon, error) {
	cl, err := krb.New(krb.Config{Username: c.Username, Password: c.Password, Keytab: c.Keytab, Krb5Conf: c.Krb5Conf})
	if err != nil {
		return nil, err
	}
	path := krb.Krb5ConfPath(c.Krb5Conf)
	conf, err := krb.LoadKrb5Conf(path)
	if err != nil {
		return nil, err
	}
	l := &kerberosLogon{krb5Conf: path, dnsLookup: conf.LibDefaults.DNSLookupKDC, principal: cl.Principal(), source: cl.Source(), client: cl}
	// The principal is user@REALM, or a UPN whose suffix is not the realm (sent
	// to the client's realm).
	l.realm = cl.Realm()
	l.user = strings.TrimSuffix(l.principal, "@"+l.realm)
	l.kdcs = krb.RealmKDCs(conf, l.realm)
	switch {
	case c.Password != "":
	case c.Keytab != "":
		l.keytab = c.Keytab
	default:
		if l.ccache, err = krb.CCachePath(""); err != nil {
			return nil, err
		}
		l.user = "" // the cache's principal; no user keeps go-mssqldb from looking for a keytab
	}
	return l, nil
}

// canonicalize replaces a user principal name sent as an enterprise name by the
// account the KDC names for it (krb.Client.Canonical: an AS exchange with the
// enterprise name, referrals followed): go-mssqldb's authenticator sends its user
// as an ordinary principal, which Active Directory does not find under a UPN
// whose suffix is not the realm (KDC_ERR_C_PRINCIPAL_UNKNOWN). It contacts the
// KDC, so it runs when the check logs in, not when the configuration is read.
func (l *kerberosLogon) canonicalize() error {
	if l.client == nil || !l.client.Enterprise() || l.ccache != "" {
		return nil
	}
	user, realm, err := l.client.Canonical()
	if err != nil {
		return err
	}
	l.user, l.realm = user, realm
	if kt := l.client.CanonicalKeytab(); kt != nil && l.keytab != "" {
		// go-mssqldb reads its keys from a file: the UPN's keys under the account's
		// name, in a private directory removed once the login is done.
		b, err := kt.Marshal()
		if err != nil {
			return fmt.Errorf("re-encoding the keytab %s under %s@%s: %w", l.keytab, user, realm, err)
		}
		dir, err := os.MkdirTemp("", "mssqlifi-sql-keytab-")
		if err != nil {
			return fmt.Errorf("a private copy of the keytab %s under %s@%s: %w", l.keytab, user, realm, err)
		}
		path := filepath.Join(dir, "login.keytab")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			os.RemoveAll(dir)
			return fmt.Errorf("a private copy of the keytab %s under %s@%s: %w", l.keytab, user, realm, err)
		}
		l.keytab = path
		l.cleanup = func() { os.RemoveAll(dir) }
	}
	return nil
}

// kerberosQuery sets go-mssqldb's krb5 parameters on q and returns the URL user.
func (l *kerberosLogon) kerberosQuery(q url.Values, spn, password string) *url.Userinfo {
	q.Set("authenticator", authenticatorKrb5)
	q.Set("krb5-configfile", l.krb5Conf)
	q.Set("krb5-realm", l.realm)
	// go-mssqldb looks KDCs up in DNS unless told otherwise; krb5.conf decides.
	q.Set("krb5-dnslookupkdc", strconv.FormatBool(l.dnsLookup))
	q.Set("serverspn", spn)
	switch {
	case l.keytab != "":
		q.Set("krb5-keytabfile", l.keytab)
		return url.User(l.user)
	case l.ccache != "":
		q.Set("krb5-credcachefile", l.ccache)
		return nil
	}
	return url.UserPassword(l.user, password)
}

// kerberosError is the *Error of a Kerberos login that failed before SQL Server
// answered: the KDC refused the logon or the service ticket, or the local
// configuration cannot serve. nil when err is not one.
func (c *checker) kerberosError(t Target, err error) *Error {
	spn := c.cfg.SPNFor(t)
	var ke *krb.Error
	if !errors.As(err, &ke) {
		// Without a usable Kerberos configuration err is not a Kerberos login's
		// failure (CheckKerberos reports that configuration on its own).
		if l, lerr := c.cfg.kerberosLogon(); lerr == nil {
			ke = krb.ClassifyInitiator(err, l.principal, spn, l.realm, l.kdcs)
		}
		if ke == nil {
			return nil
		}
	}
	e := &Error{Target: t, Kind: KindAuth, Setting: SettingUsername, Encrypt: c.cfg.Encrypt, Err: err,
		Message: "Kerberos login: " + strings.TrimPrefix(ke.Message, "kerberos: "), Hint: ke.Hint}
	switch ke.Kind {
	case krb.KindWrongPassword, krb.KindUnknownUser, krb.KindUnknownSPN, krb.KindExpired, krb.KindClockSkew, krb.KindRefused:
		e.logon = true // the KDC answered, and refused the account or the ticket
	}
	switch ke.Kind {
	case krb.KindConfig:
		e.Kind = KindConfig
		if ke.Part == krb.PartKeytab {
			e.Setting = SettingKeytab
		}
	case krb.KindWrongPassword:
		e.Setting = SettingPassword
	case krb.KindUnknownSPN:
		e.Setting = SettingSPN
		e.Hint = fmt.Sprintf("Reach the instance by the DNS name its service account registered (setspn -L <account> lists MSSQLSvc/<fqdn>:<port>), "+
			"or name the registered SPN; the SQL Server service registers it at startup only when its account may (otherwise: setspn -S %s <account>)", spn)
	}
	return e
}

// CheckKerberos reads what a Kerberos login (AuthKerberos) will use, without
// contacting the KDC: krb5.conf and a KDC for the realm, the keytab, or the
// credential cache and its ticket-granting ticket. It returns the *krb.Error
// that says what cannot serve, or nil (also for the other login kinds).
func (c Config) CheckKerberos() error {
	c.SetDefaults()
	if c.Auth != AuthKerberos {
		return nil
	}
	_, err := c.kerberosLogon()
	return err
}
