// Package krb is the provider's Kerberos initiator for WinRM (MS-WSMV over HTTP
// Negotiate, RFC 4559): it logs on with a password, a keytab or an existing
// credential cache (gokrb5), builds the AP-REQ for the host's service principal
// (SPNEGO-wrapped for "Negotiate", raw for "Kerberos"), verifies the host's AP-REP
// (mutual authentication) and seals and unseals WinRM messages with RFC 4121 wrap
// tokens as MS-WSMV's HTTP message encryption carries them.
//
// The seam for a transport: New(Config) once per host; per connection
// InitSecContext(spn, bindings) for the Authorization header, then VerifyReply with the
// token of the answer's WWW-Authenticate header, then the Context's Sealer for
// multipart/encrypted bodies.
package krb

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/asn1tools"
	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/credentials"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/chksumtype"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/spnego"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/localfile"
)

// Config says how to log on.
type Config struct {
	// Username is user@REALM, REALM\user or user (the default_realm of krb5.conf).
	// With a credential cache it may be empty: the cache's principal is used.
	Username string
	// Password logs on with the password (an AS exchange). It wins over Keytab and
	// the credential cache.
	Password string
	// Keytab is the path of a keytab holding the user's keys. Used when Password
	// is empty.
	Keytab string
	// CCache is the path of a credential cache (kinit's). Used when neither
	// Password nor Keytab is set; default KRB5CCNAME, then /tmp/krb5cc_<uid>.
	CCache string
	// Krb5Conf is the krb5.conf path; default KRB5_CONFIG, then /etc/krb5.conf.
	Krb5Conf string
	// Realm overrides the realm derived from Username.
	Realm string

	// Now is the clock the authenticator and expiry checks use; default time.Now.
	// Tests move it to provoke clock skew and expiry.
	Now func() time.Time
}

// Client holds one logon; it is safe for concurrent use by many connections.
type Client struct {
	cl        *client.Client
	conf      *config.Config
	principal string // user@REALM, or the UPN of an enterprise name
	realm     string
	upn       *upnLogon // an enterprise name's logon; nil for others
	source    string    // "password", "keytab PATH" or "credential cache PATH"
	now       func() time.Time

	mu        sync.Mutex
	loggedOn  bool
	canonical string // an enterprise name's account, user@REALM, once logged on
}

// Krb5ConfPath is the krb5.conf a Config without Krb5Conf uses.
func Krb5ConfPath(explicit string) string {
	if explicit != "" {
		return explicit
	}
	if p := os.Getenv("KRB5_CONFIG"); p != "" {
		// MIT allows a colon-separated list; the first file is the main one.
		first, _, _ := strings.Cut(p, ":")
		return first
	}
	return "/etc/krb5.conf"
}

// CCachePath is the credential cache a Config without CCache uses.
func CCachePath(explicit string) (string, error) {
	p := explicit
	if p == "" {
		p = os.Getenv("KRB5CCNAME")
	}
	if p == "" {
		return fmt.Sprintf("/tmp/krb5cc_%d", os.Getuid()), nil
	}
	typ, rest, ok := strings.Cut(p, ":")
	if !ok {
		return p, nil
	}
	switch strings.ToUpper(typ) {
	case "FILE":
		return rest, nil
	default:
		return "", fmt.Errorf("credential cache %q is of type %s; only FILE caches can be read: run kinit with KRB5CCNAME=FILE:/path, or configure a password or keytab", p, typ)
	}
}

// Name is a user name resolved against krb5.conf: the principal the logon sends
// and the realm whose KDC it goes to.
type Name struct {
	// User is the account name (alice of alice@REALM or REALM\alice), or for an
	// enterprise name the whole user principal name as written (svc@corp.example).
	User string
	// Realm is the realm the logon goes to, upper case; "" when none can be found.
	Realm string
	// Enterprise: User is a user principal name whose suffix is not a realm of
	// krb5.conf; it is sent as an enterprise principal (NT-ENTERPRISE, RFC 6806)
	// with name canonicalization to Realm's KDC, which finds the account by its UPN
	// (anywhere in the forest) and answers with its canonical name, or refers the
	// client to the realm that holds it. This is what Windows and kinit -E do.
	Enterprise bool
	// RealmFrom says where Realm comes from: RealmFromName (the user name, or a
	// NetBIOS domain matched to a realm), RealmFromSetting (the realm setting),
	// RealmFromDomainRealm (krb5.conf's [domain_realm] mapping of the UPN suffix) or
	// RealmFromDefault (krb5.conf's default_realm).
	RealmFrom string
}

// Where a Name's realm comes from.
const (
	RealmFromName        = "name"
	RealmFromSetting     = "realm setting"
	RealmFromDomainRealm = "domain_realm"
	RealmFromDefault     = "default_realm"
)

// ResolveName turns user@REALM, REALM\user, user or a user principal name with any
// suffix into the principal and realm of the logon. realmSetting (the provider's
// realm) wins over the realm of the name. A suffix after @ is a realm when krb5.conf
// knows it (its default_realm or a [realms] entry) or it is realmSetting; any other
// suffix is a UPN suffix, not a realm (alternative UPN suffixes are common in
// Active Directory), and the name is an enterprise name sent to realmSetting, else
// the realm [domain_realm] maps the suffix to, else default_realm, else the suffix
// itself upper-cased (a realm found through DNS).
func ResolveName(login, realmSetting string, conf *config.Config) Name {
	realmSetting = strings.ToUpper(realmSetting)
	n := Name{RealmFrom: RealmFromName}
	switch {
	case strings.Contains(login, `\`):
		d, u, _ := strings.Cut(login, `\`)
		n.User, n.Realm = u, strings.ToUpper(d)
	case strings.Contains(login, "@"):
		i := strings.LastIndex(login, "@")
		n.User, n.Realm = login[:i], strings.ToUpper(login[i+1:])
		if conf != nil && n.Realm != realmSetting && !knownRealm(conf, n.Realm) {
			n.User, n.Enterprise = login, true
			switch r := strings.ToUpper(domainRealm(conf, strings.ToLower(login[i+1:]))); {
			case realmSetting != "":
				n.Realm, n.RealmFrom = realmSetting, RealmFromSetting
			case r != "":
				n.Realm, n.RealmFrom = r, RealmFromDomainRealm
			case conf.LibDefaults.DefaultRealm != "":
				n.Realm, n.RealmFrom = strings.ToUpper(conf.LibDefaults.DefaultRealm), RealmFromDefault
			}
			return n
		}
	default:
		n.User = login
	}
	if realmSetting != "" {
		n.Realm, n.RealmFrom = realmSetting, RealmFromSetting
		return n
	}
	if conf == nil {
		return n
	}
	if n.Realm == "" {
		n.Realm, n.RealmFrom = strings.ToUpper(conf.LibDefaults.DefaultRealm), RealmFromDefault
		return n
	}
	if !strings.Contains(n.Realm, ".") {
		candidates := []string{conf.LibDefaults.DefaultRealm}
		for _, r := range conf.Realms {
			candidates = append(candidates, r.Realm)
		}
		for _, c := range candidates {
			first, _, _ := strings.Cut(c, ".")
			if strings.EqualFold(first, n.Realm) {
				n.Realm = strings.ToUpper(c)
				return n
			}
		}
	}
	return n
}

// domainRealm is the realm [domain_realm] maps the DNS domain to: domain itself,
// .domain, then its parents' .entries; "" when none.
func domainRealm(conf *config.Config, domain string) string {
	domain = strings.TrimSuffix(domain, ".")
	for _, k := range []string{domain, "." + domain} {
		if r, ok := conf.DomainRealm[k]; ok {
			return r
		}
	}
	return conf.ResolveRealm(domain)
}

// knownRealm says whether krb5.conf knows realm: its default_realm or a [realms]
// entry.
func knownRealm(conf *config.Config, realm string) bool {
	if strings.EqualFold(conf.LibDefaults.DefaultRealm, realm) {
		return true
	}
	for _, r := range conf.Realms {
		if strings.EqualFold(r.Realm, realm) {
			return true
		}
	}
	return false
}

// SplitPrincipal turns user@REALM, REALM\user or user into user and realm
// (ResolveName without a realm setting). A NetBIOS domain (REALM\user without a
// dot) is matched to a realm of conf whose first label it is; the realm is
// upper-cased. For a UPN whose suffix is not a realm, user is the whole UPN. The
// realm is "" when none can be found.
func SplitPrincipal(login string, conf *config.Config) (user, realm string) {
	n := ResolveName(login, "", conf)
	return n.User, n.Realm
}

// RealmKDCs lists the KDCs krb5.conf names for realm.
func RealmKDCs(conf *config.Config, realm string) []string {
	for _, r := range conf.Realms {
		if strings.EqualFold(r.Realm, realm) {
			return r.KDC
		}
	}
	return nil
}

// New prepares a logon. It reads krb5.conf, the keytab or the credential cache,
// but does not contact the KDC: the first InitSecContext does.
func New(cfg Config) (*Client, error) {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	confPath := Krb5ConfPath(cfg.Krb5Conf)
	conf, err := LoadKrb5Conf(confPath)
	if err != nil {
		return nil, err
	}
	name := ResolveName(cfg.Username, cfg.Realm, conf)
	user, realm := name.User, name.Realm
	c := &Client{conf: conf, now: now}
	settings := []func(*client.Settings){client.DisablePAFXFAST(true)}

	needRealm := func() error {
		if realm == "" {
			return &Error{Kind: KindConfig, Part: PartRealm,
				Message: fmt.Sprintf("no realm for the user %q: the name has no @REALM or REALM\\ and %s sets no default_realm", cfg.Username, confPath),
				Hint:    "Write the user name as user@REALM (the DNS name of the domain, upper case), name the realm, or set default_realm in krb5.conf"}
		}
		if !conf.LibDefaults.DNSLookupKDC && len(RealmKDCs(conf, realm)) == 0 && name.Enterprise && name.RealmFrom == RealmFromName {
			return &Error{Kind: KindConfig, Part: PartRealm,
				Message: fmt.Sprintf("%s names no realm for the user principal name %s: its suffix %s is not a realm of krb5.conf, and neither a realm setting, [domain_realm] nor default_realm names the realm to send it to", confPath, user, realm),
				Hint:    "A UPN suffix is not a realm: an account's UPN may end in any suffix of its forest. Set the realm to the domain's realm (the DNS name of the account's domain, upper case) or set default_realm; the UPN is sent there as an enterprise name and the domain finds the account"}
		}
		if !conf.LibDefaults.DNSLookupKDC && len(RealmKDCs(conf, realm)) == 0 {
			return &Error{Kind: KindConfig, Part: PartRealm,
				Message: fmt.Sprintf("%s names no KDC for the realm %s and dns_lookup_kdc is off", confPath, realm),
				Hint:    fmt.Sprintf("Add [realms] %s = { kdc = <domain controller> } to krb5.conf, or set dns_lookup_kdc = true", realm)}
		}
		return nil
	}

	switch {
	case cfg.Password != "":
		if err := needRealm(); err != nil {
			return nil, err
		}
		if name.Enterprise {
			c.upn = &upnLogon{name: user, password: cfg.Password, settings: settings}
		} else {
			c.cl = client.NewWithPassword(user, realm, cfg.Password, conf, settings...)
		}
		c.source = "password"
	case cfg.Keytab != "":
		kt, err := loadKeytab(cfg.Keytab)
		if err != nil {
			return nil, &Error{Kind: KindConfig, Part: PartKeytab, Err: err,
				Message: fmt.Sprintf("cannot read the keytab %s: %v", cfg.Keytab, err),
				Hint:    "Give a keytab file readable by the user running Terraform (ktutil or ktpass make one)"}
		}
		if user == "" && len(kt.Entries) > 0 {
			p := kt.Entries[0].Principal
			user = strings.Join(p.Components, "/")
			if realm == "" {
				realm = p.Realm
			}
		}
		if err := needRealm(); err != nil {
			return nil, err
		}
		if name.Enterprise {
			c.upn = &upnLogon{name: user, kt: kt, settings: settings}
		} else {
			// AD takes names in any case; a keytab's are matched exactly.
			held := keytabPrincipals(kt)
			i := slices.IndexFunc(held, func(p string) bool { return strings.EqualFold(p, user+"@"+realm) })
			if i < 0 {
				return nil, &Error{Kind: KindConfig, Part: PartKeytab,
					Message: fmt.Sprintf("the keytab %s holds no keys of %s@%s (it holds %s)", cfg.Keytab, user, realm, strings.Join(held, ", ")),
					Hint:    "Log on as the principal the keytab holds, or export the account's keys under its name (ktpass, ktutil or samba-tool domain exportkeytab)"}
			}
			j := strings.LastIndex(held[i], "@")
			user, realm = held[i][:j], held[i][j+1:]
			c.cl = client.NewWithKeytab(user, realm, kt, conf, settings...)
		}
		c.source = "keytab " + cfg.Keytab
	default:
		path, err := CCachePath(cfg.CCache)
		if err != nil {
			return nil, &Error{Kind: KindConfig, Part: PartCCache, Err: err, Message: err.Error(), Hint: ""}
		}
		cc, err := loadCCache(path)
		if err != nil {
			return nil, &Error{Kind: KindConfig, Part: PartCCache, Err: err,
				Message: fmt.Sprintf("no usable credential cache at %s: %v", path, err),
				Hint:    "Run kinit user@REALM first (or set KRB5CCNAME), or log on with a password or a keytab"}
		}
		ccUser := strings.Join(cc.DefaultPrincipal.PrincipalName.NameString, "/")
		if cfg.Username != "" && (!strings.EqualFold(user, ccUser) || (realm != "" && !strings.EqualFold(realm, cc.DefaultPrincipal.Realm))) {
			return nil, &Error{Kind: KindConfig, Part: PartCCache,
				Message: fmt.Sprintf("the credential cache %s holds tickets of %s@%s, not of %s", path, ccUser, cc.DefaultPrincipal.Realm, cfg.Username),
				Hint:    "Run kinit as the configured user, or configure the cache's principal as the user (or no user)"}
		}
		user, realm = ccUser, cc.DefaultPrincipal.Realm
		tgt, ok := cc.GetEntry(types.PrincipalName{NameType: 2, NameString: []string{"krbtgt", realm}})
		if !ok {
			return nil, &Error{Kind: KindConfig, Part: PartCCache,
				Message: fmt.Sprintf("the credential cache %s holds no ticket-granting ticket for %s", path, realm),
				Hint:    "Run kinit " + user + "@" + realm + " again"}
		}
		if !tgt.EndTime.After(now()) {
			return nil, &Error{Kind: KindExpired, Part: PartCCache, Principal: user + "@" + realm,
				Message: fmt.Sprintf("the ticket-granting ticket of %s@%s in %s expired at %s", user, realm, path, tgt.EndTime.UTC().Format(time.RFC3339)),
				Hint:    "Run kinit " + user + "@" + realm + " again (or kinit -R to renew), or log on with a password or a keytab, which need no kinit"}
		}
		cl, err := client.NewFromCCache(cc, conf, settings...)
		if err != nil {
			return nil, &Error{Kind: KindConfig, Part: PartCCache, Err: err,
				Message: fmt.Sprintf("the credential cache %s cannot be used: %v", path, err),
				Hint:    "Run kinit " + user + "@" + realm + " again"}
		}
		c.cl = cl
		c.source = "credential cache " + path
		c.loggedOn = true
	}
	c.principal = user + "@" + realm
	if c.upn != nil {
		c.principal = user // the UPN as written; its realm is c.realm
	}
	c.realm = realm
	return c, nil
}

// loadKeytab reads a keytab through localfile.Read (a regular file under its cap,
// within its deadline), as gokrb5's keytab.Load would read it whatever it is.
func loadKeytab(path string) (*keytab.Keytab, error) {
	b, err := localfile.Read(path)
	if err != nil {
		return nil, err
	}
	kt := keytab.New()
	if err := kt.Unmarshal(b); err != nil {
		return nil, err
	}
	return kt, nil
}

// loadCCache reads a credential cache through localfile.Read, as loadKeytab does.
func loadCCache(path string) (*credentials.CCache, error) {
	b, err := localfile.Read(path)
	if err != nil {
		return nil, err
	}
	cc := new(credentials.CCache)
	if err := cc.Unmarshal(b); err != nil {
		return nil, err
	}
	return cc, nil
}

// upnLogon is a password or keytab logon under a user principal name whose suffix
// is not a realm: the first logon asks the KDC for the account's canonical name
// (canonicalName), then logs on under it.
type upnLogon struct {
	name     string // the UPN
	password string
	kt       *keytab.Keytab
	settings []func(*client.Settings)
}

// Principal is the client principal, user@REALM; for an enterprise name, the UPN
// as written (its realm is Realm's).
func (c *Client) Principal() string { return c.principal }

// Realm is the realm the logon goes to.
func (c *Client) Realm() string { return c.realm }

// Enterprise says whether the user is a user principal name sent as an enterprise
// name (its suffix is not the realm): its account is known only after Canonical.
func (c *Client) Enterprise() bool { return c.upn != nil }

// Canonical logs on (once) and returns the account the KDC logged on, user and
// realm: for an enterprise name, the canonical name the KDC answered for the UPN
// (its sAMAccountName in Active Directory); for any other, the principal as
// configured. A failed logon is the *Error logon returns.
func (c *Client) Canonical() (user, realm string, err error) {
	if c.upn == nil {
		i := strings.LastIndex(c.principal, "@")
		return c.principal[:i], c.principal[i+1:], nil
	}
	if err := c.logon(); err != nil {
		return "", "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	i := strings.LastIndex(c.canonical, "@")
	return c.canonical[:i], c.canonical[i+1:], nil
}

// CanonicalKeytab is, after Canonical, the keytab of an enterprise name's keytab
// logon with the UPN's keys under the canonical name (as the logon itself uses
// them), for a client that looks keys up by the canonical name; nil otherwise.
func (c *Client) CanonicalKeytab() *keytab.Keytab {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.upn == nil || c.upn.kt == nil || c.canonical == "" {
		return nil
	}
	i := strings.LastIndex(c.canonical, "@")
	return renamedKeytab(c.upn.kt, c.upn.name, c.canonical[:i], c.canonical[i+1:])
}

// Source says where the credentials come from ("password", "keytab PATH",
// "credential cache PATH").
func (c *Client) Source() string { return c.source }

// DefaultSPN is the service principal of a WinRM listener: HTTP/<host>. WinRM
// registers no WSMAN SPN for HTTP; it uses the computer's HTTP (HOST) SPN.
func DefaultSPN(host string) string { return "HTTP/" + strings.ToLower(host) }

// Context is one security context, on one connection.
type Context struct {
	spn        string
	principal  string
	sessionKey types.EncryptionKey
	subkey     types.EncryptionKey
	ctime      time.Time
	cusec      int
	seq        uint64
	sealer     *Sealer
}

// Token kinds for InitSecContext.
const (
	SPNEGO = true  // HTTP "Negotiate": SPNEGO NegTokenInit around the AP-REQ
	Raw    = false // HTTP "Kerberos": the bare RFC 1964 token
)

// InitSecContext logs on if needed, gets a service ticket for spn and returns a
// new context and its first token (for "Authorization: Negotiate <base64>").
// bindings is the application data of the channel's bindings over TLS
// ("tls-server-end-point:" and the certificate's hash, RFC 5929), nil for none: its
// hash goes into the authenticator checksum (RFC 4121 4.1.1.2), so that a host with
// CbtHardeningLevel Strict accepts the logon and a relay over another TLS channel
// fails.
func (c *Client) InitSecContext(ctx context.Context, spn string, useSPNEGO bool, bindings []byte) (*Context, []byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if err := c.logon(); err != nil {
		return nil, nil, err
	}
	tkt, key, err := c.cl.GetServiceTicket(spn)
	if err != nil {
		return nil, nil, classifyKDC(err, c.principal, spn, c.realm, RealmKDCs(c.conf, c.realm), "service ticket")
	}
	if !aesKey(key.KeyType) {
		// Checked before the host sees anything: the wrap tokens of MS-WSMV's message
		// encryption and the AP-REP's subkey are AES (RFC 4121) here; Windows hosts get
		// AES tickets unless their account or the domain allows RC4 only.
		return nil, nil, &Error{Kind: KindEncType, Principal: c.principal, SPN: spn,
			Message: fmt.Sprintf("the KDC of %s issued the ticket for %s with a %s session key: the account holding %s has no AES keys (RC4 only), and this provider logs on with AES only", c.realm, spn, etypeName(key.KeyType), spn),
			Hint:    "Enable AES for the account that holds the SPN: msDS-SupportedEncryptionTypes = 24 (AES128 and AES256) on its computer account, or \"This account supports Kerberos AES 128/256 bit encryption\" on a user service account, then reset its password (or rejoin the host) so it gets AES keys"}
	}
	auth, err := types.NewAuthenticator(c.cl.Credentials.Domain(), c.cl.Credentials.CName())
	if err != nil {
		return nil, nil, fmt.Errorf("kerberos: building the authenticator: %w", err)
	}
	et, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		return nil, nil, fmt.Errorf("kerberos: the service ticket for %s uses encryption type %d, which is not supported: %w", spn, key.KeyType, err)
	}
	if err := auth.GenerateSeqNumberAndSubKey(key.KeyType, et.GetKeyByteSize()); err != nil {
		return nil, nil, fmt.Errorf("kerberos: generating the session subkey: %w", err)
	}
	t := c.now().UTC()
	auth.CTime = t.Truncate(time.Second)
	auth.Cusec = t.Nanosecond() / 1000
	auth.Cksum = types.Checksum{CksumType: chksumtype.GSSAPI, Checksum: gssChecksum(bindings,
		gssapi.ContextFlagMutual|gssapi.ContextFlagSequence|gssapi.ContextFlagConf|gssapi.ContextFlagInteg)}
	apreq, err := messages.NewAPReq(tkt, key, auth)
	if err != nil {
		return nil, nil, fmt.Errorf("kerberos: building the AP-REQ for %s: %w", spn, err)
	}
	types.SetFlag(&apreq.APOptions, flags.APOptionMutualRequired)
	raw, err := apreq.Marshal()
	if err != nil {
		return nil, nil, fmt.Errorf("kerberos: encoding the AP-REQ for %s: %w", spn, err)
	}
	token := GSSToken(raw, []byte{0x01, 0x00})
	if useSPNEGO {
		st := spnego.SPNEGOToken{Init: true, NegTokenInit: spnego.NegTokenInit{
			MechTypes:      []asn1.ObjectIdentifier{gssapi.OIDKRB5.OID(), gssapi.OIDMSLegacyKRB5.OID()},
			MechTokenBytes: token,
		}}
		if token, err = st.Marshal(); err != nil {
			return nil, nil, fmt.Errorf("kerberos: encoding the SPNEGO token: %w", err)
		}
	}
	x := &Context{
		spn: spn, principal: c.principal, sessionKey: key, subkey: auth.SubKey,
		ctime: auth.CTime, cusec: auth.Cusec, seq: uint64(auth.SeqNumber),
	}
	return x, token, nil
}

// logon gets a TGT once (password and keytab); a credential cache already has one.
func (c *Client) logon() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.loggedOn {
		return nil
	}
	if c.upn != nil && c.cl == nil {
		user, realm, err := canonicalName(c.conf, c.upn.name, c.realm, c.upn.password, c.upn.kt, c.now)
		if err != nil {
			e := classifyKDC(err, c.principal, "", c.realm, RealmKDCs(c.conf, c.realm), "logon")
			if e.Kind == KindUnknownUser {
				e.Message = fmt.Sprintf("the KDC of %s knows no account with the user principal name %s (KDC_ERR_C_PRINCIPAL_UNKNOWN; sent as an enterprise name)", c.realm, c.principal)
				e.Hint = "Check the account's userPrincipalName, or write the user as DOMAIN\\user or sAMAccountName@REALM; the realm setting (or default_realm) must be a realm of the account's forest"
			}
			return e
		}
		if c.upn.password != "" {
			c.cl = client.NewWithPassword(user, realm, c.upn.password, c.conf, c.upn.settings...)
		} else {
			c.cl = client.NewWithKeytab(user, realm, renamedKeytab(c.upn.kt, c.upn.name, user, realm), c.conf, c.upn.settings...)
		}
		c.canonical = user + "@" + realm
	}
	if err := c.cl.Login(); err != nil {
		return classifyKDC(err, c.principal, "", c.realm, RealmKDCs(c.conf, c.realm), "logon")
	}
	c.loggedOn = true
	return nil
}

// gssChecksum is the RFC 4121 4.1.1 authenticator checksum: the MD5 of the channel
// bindings (zero without), and the context flags.
func gssChecksum(bindings []byte, f int) []byte {
	b := make([]byte, 24)
	binary.LittleEndian.PutUint32(b[:4], 16)
	if bindings != nil {
		copy(b[4:20], BindingsHash(bindings))
	}
	binary.LittleEndian.PutUint32(b[20:24], uint32(f))
	return b
}

// BindingsHash is the MD5 of a gss_channel_bindings_struct with no addresses and
// appData as its application data (RFC 4121 4.1.1.2; the same value NTLM sends as
// MsvAvChannelBindings).
func BindingsHash(appData []byte) []byte {
	b := make([]byte, 16, 20+len(appData)) // address types and lengths of both sides: zero
	b = binary.LittleEndian.AppendUint32(b, uint32(len(appData)))
	b = append(b, appData...)
	sum := md5.Sum(b)
	return sum[:]
}

// GSSToken frames a Kerberos message as an RFC 2743 / RFC 1964 initial context token
// with token ID tokID (01 00 AP-REQ, 02 00 AP-REP, 03 00 KRB-ERROR).
func GSSToken(msg, tokID []byte) []byte {
	oid, _ := asn1.Marshal(gssapi.OIDKRB5.OID())
	return asn1tools.AddASNAppTag(slices.Concat(oid, tokID, msg), 0)
}

// VerifyReply checks the token of the host's "WWW-Authenticate: Negotiate
// <token>" (or Kerberos): an AP-REP that proves the host knows the service key
// completes the context; a KRB-ERROR becomes an *Error naming the cause.
func (x *Context) VerifyReply(token []byte) error {
	krbTok, err := unwrapReply(token)
	if err != nil {
		return &Error{Kind: KindMutualAuth, Principal: x.principal, SPN: x.spn, Err: err,
			Message: fmt.Sprintf("the host's answer for %s is not a Kerberos reply: %v", x.spn, err),
			Hint:    "The host may not be the one the SPN belongs to, or something between rewrote the answer"}
	}
	if krbTok == nil {
		return &Error{Kind: KindRefused, Principal: x.principal, SPN: x.spn,
			Message: fmt.Sprintf("the host rejected the Kerberos ticket for %s (SPNEGO reject)", x.spn),
			Hint:    "Check that the SPN belongs to this host's computer account (setspn -Q " + x.spn + ")"}
	}
	var oid asn1.ObjectIdentifier
	rest, err := asn1.UnmarshalWithParams(krbTok, &oid, "application,explicit,tag:0")
	if err != nil || len(rest) < 2 {
		return &Error{Kind: KindMutualAuth, Principal: x.principal, SPN: x.spn, Err: err,
			Message: fmt.Sprintf("the host's Kerberos reply for %s cannot be decoded", x.spn),
			Hint:    "The host's answer is damaged; check for a proxy rewriting WinRM traffic"}
	}
	switch {
	case rest[0] == 0x03 && rest[1] == 0x00:
		var ke messages.KRBError
		if err := ke.Unmarshal(rest[2:]); err != nil {
			return &Error{Kind: KindRefused, Principal: x.principal, SPN: x.spn, Err: err,
				Message: fmt.Sprintf("the host refused the ticket for %s with a KRB-ERROR that cannot be decoded", x.spn)}
		}
		return x.apError(ke)
	case rest[0] == 0x02 && rest[1] == 0x00:
	default:
		return &Error{Kind: KindMutualAuth, Principal: x.principal, SPN: x.spn,
			Message: fmt.Sprintf("the host's Kerberos reply for %s has token id %x, not an AP-REP", x.spn, rest[:2])}
	}
	var rep messages.APRep
	if err := rep.Unmarshal(rest[2:]); err != nil {
		return &Error{Kind: KindMutualAuth, Principal: x.principal, SPN: x.spn, Err: err,
			Message: fmt.Sprintf("the host's AP-REP for %s cannot be decoded: %v", x.spn, err)}
	}
	plain, err := crypto.DecryptEncPart(rep.EncPart, x.sessionKey, keyusage.AP_REP_ENCPART)
	if err != nil {
		return &Error{Kind: KindMutualAuth, Principal: x.principal, SPN: x.spn, Err: err,
			Message: fmt.Sprintf("the host's AP-REP for %s is not encrypted with the session key: the host does not hold the key of %s", x.spn, x.spn),
			Hint:    "Do not trust this host: it is not the owner of the SPN (a spoofed or misconfigured host)"}
	}
	var part messages.EncAPRepPart
	if err := part.Unmarshal(plain); err != nil {
		return &Error{Kind: KindMutualAuth, Principal: x.principal, SPN: x.spn, Err: err,
			Message: fmt.Sprintf("the host's AP-REP for %s cannot be decoded after decryption: %v", x.spn, err)}
	}
	if !part.CTime.Equal(x.ctime) || part.Cusec != x.cusec {
		return &Error{Kind: KindMutualAuth, Principal: x.principal, SPN: x.spn,
			Message: fmt.Sprintf("the host's AP-REP for %s answers another authenticator (time %s.%06d, ours %s.%06d): a replayed reply", x.spn, part.CTime.UTC().Format(time.RFC3339), part.Cusec, x.ctime.UTC().Format(time.RFC3339), x.cusec),
			Hint:    "Do not trust this connection; try again"}
	}
	key := x.subkey
	if key.KeyType == 0 {
		key = x.sessionKey
	}
	var acceptorSubkey *types.EncryptionKey
	if part.Subkey.KeyType != 0 && len(part.Subkey.KeyValue) > 0 {
		acceptorSubkey = &part.Subkey
	}
	s, err := NewSealer(key, acceptorSubkey, false, x.seq, uint64(part.SequenceNumber)&0xffffffff)
	if err != nil {
		return err
	}
	x.sealer = s
	return nil
}

// apError turns a KRB-ERROR the host answered into an *Error.
func (x *Context) apError(ke messages.KRBError) error {
	e := &Error{Principal: x.principal, SPN: x.spn, Err: ke}
	switch ke.ErrorCode {
	case codeSkew:
		e.Kind = KindClockSkew
		e.Message = fmt.Sprintf("the host holding %s refused the ticket: its clock and this machine's differ by more than the allowed skew (KRB_AP_ERR_SKEW; host time %s)", x.spn, ke.STime.UTC().Format(time.RFC3339))
		e.Hint = "Synchronise the clocks of this machine and the host with the domain (NTP); Kerberos allows 5 minutes by default"
	case codeTktExpired:
		e.Kind = KindExpired
		e.Message = fmt.Sprintf("the host holding %s refused an expired service ticket (KRB_AP_ERR_TKT_EXPIRED)", x.spn)
		e.Hint = "Run kinit again (or configure a password or keytab); check the clocks"
	case codeBadIntegrity:
		e.Kind = KindBindings
		e.Message = fmt.Sprintf("the host holding %s refused the logon for its channel bindings (KRB_AP_ERR_BAD_INTEGRITY): the TLS certificate this machine saw is not the host's", x.spn)
		e.Hint = "A TLS-intercepting proxy or load balancer between here and the host terminates TLS (or a relay is in between): connect to the host directly, or use its HTTP listener (messages are then encrypted by Kerberos)"
	case codeModified:
		e.Kind = KindRefused
		e.Message = fmt.Sprintf("the host cannot decrypt the ticket for %s (KRB_AP_ERR_MODIFIED): its key for the SPN differs from the KDC's", x.spn)
		e.Hint = "The SPN may be registered on another account (setspn -Q " + x.spn + "), or the host's keytab is stale; reach the host by its own name or fix the SPN"
	default:
		e.Kind = KindRefused
		e.Message = fmt.Sprintf("the host refused the ticket for %s: %v", x.spn, ke)
		e.Hint = "Check the host's System event log (Kerberos, Security-Kerberos) for the reason"
	}
	return e
}

// unwrapReply returns the Kerberos token inside the host's reply: from a SPNEGO
// NegTokenResp, or the bare token. nil, nil: SPNEGO reject.
func unwrapReply(token []byte) ([]byte, error) {
	if len(token) == 0 {
		return nil, errors.New("empty token")
	}
	if token[0] != 0xa1 {
		return token, nil
	}
	var st spnego.SPNEGOToken
	if err := st.Unmarshal(token); err != nil {
		return nil, err
	}
	if !st.Resp {
		return nil, errors.New("SPNEGO token is not a NegTokenResp")
	}
	if st.NegTokenResp.NegState == 2 && len(st.NegTokenResp.ResponseToken) == 0 {
		return nil, nil
	}
	if len(st.NegTokenResp.ResponseToken) == 0 {
		return nil, fmt.Errorf("SPNEGO NegTokenResp (state %d) carries no Kerberos token", st.NegTokenResp.NegState)
	}
	return st.NegTokenResp.ResponseToken, nil
}

// Established reports whether VerifyReply accepted the host's AP-REP.
func (x *Context) Established() bool { return x.sealer != nil }

// Sealer seals and unseals this context's messages; nil before VerifyReply succeeded.
func (x *Context) Sealer() *Sealer { return x.sealer }

// Seal and Unseal are the Sealer's, for a context that is established.
func (x *Context) Seal(msg []byte) (signature, data []byte, err error) {
	if x.sealer == nil {
		return nil, nil, fmt.Errorf("%w: the context for %s is not established (no AP-REP verified)", ErrWrap, x.spn)
	}
	return x.sealer.Seal(msg)
}

func (x *Context) Unseal(signature, data []byte) ([]byte, error) {
	if x.sealer == nil {
		return nil, fmt.Errorf("%w: the context for %s is not established (no AP-REP verified)", ErrWrap, x.spn)
	}
	return x.sealer.Unseal(signature, data)
}

// aesKey says whether an encryption type is one of RFC 3962's and RFC 8009's AES
// types, the ones the provider's wrap tokens support.
func aesKey(etype int32) bool {
	switch etype {
	case etypeID.AES128_CTS_HMAC_SHA1_96, etypeID.AES256_CTS_HMAC_SHA1_96, etypeID.AES128_CTS_HMAC_SHA256_128, etypeID.AES256_CTS_HMAC_SHA384_192:
		return true
	}
	return false
}

// etypeName names an encryption type for messages: "RC4 (rc4-hmac, 23)".
func etypeName(etype int32) string {
	switch etype {
	case etypeID.RC4_HMAC:
		return "RC4 (rc4-hmac, 23)"
	case etypeID.DES_CBC_CRC, etypeID.DES_CBC_MD4, etypeID.DES_CBC_MD5:
		return fmt.Sprintf("DES (%d)", etype)
	}
	return fmt.Sprintf("encryption type %d", etype)
}
