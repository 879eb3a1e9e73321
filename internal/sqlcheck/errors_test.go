package sqlcheck

import (
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds"
)

// acceptAll is a security package that takes the client's first token as a
// complete logon of account: what SQL Server does next (its login lookup) is the
// test's subject, not the handshake (internal/winsim tests that).
type acceptAll struct{ account string }

func (a acceptAll) NewContext(net.Addr) tds.SSPIContext { return a }
func (a acceptAll) Accept([]byte) ([]byte, string, string, bool, error) {
	return nil, a.account, "NTLM", true, nil
}

// A failed login is a logon failure and says what to check for its kind: a SQL
// login, mixed mode; an NTLM account, its DOMAIN\user form and its Windows login; a
// Windows logon refused by the server's security package, the domain and NTLM
// restrictions.
func TestLoginFailedHintPerKind(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		opts    tds.Options
		number  int32
		setting Setting
		want    []string
	}{
		{"sql login", Config{Username: testLogin, Password: "wrong", Encrypt: "disable"}, tds.Options{}, 18456, SettingPassword,
			[]string{"login failed for " + testLogin, "SQL Server login exists", "mixed mode"}},
		{"ntlm account without a Windows login", Config{Username: `CONTOSO\nobody`, Password: "p", Auth: AuthNTLM, Encrypt: "disable"},
			tds.Options{SSPI: acceptAll{account: `CONTOSO\nobody`}}, 18456, SettingUsername,
			[]string{`DOMAIN\user`, `CREATE LOGIN [CONTOSO\nobody] FROM WINDOWS`}},
		{"ntlm logon refused", Config{Username: `CONTOSO\nobody`, Password: "p", Auth: AuthNTLM, Encrypt: "disable"}, tds.Options{}, 18452, SettingUsername,
			[]string{"refused the NTLM logon of CONTOSO\\nobody", "Restrict NTLM", "17806"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := serve(t, &sqlServer{engineIFI: "Y"}, tc.opts, nil)
			_, err := New(tc.cfg).Check(ctxFor(t, 20*time.Second), ep.target())
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Check: %v (%T), want an *Error", err, err)
			}
			if e.Kind != KindAuth || e.Number != tc.number || e.Setting != tc.setting || !e.LogonFailed() {
				t.Errorf("kind %d number %d setting %d, want KindAuth %d setting %d: %v", e.Kind, e.Number, e.Setting, tc.number, tc.setting, e)
			}
			for _, w := range tc.want {
				if !strings.Contains(e.Error(), w) {
					t.Errorf("error %q does not say %q", e, w)
				}
			}
			if strings.Contains(e.Error(), "Windows logins are not supported") {
				t.Errorf("error %q denies what sql.auth offers", e)
			}
		})
	}
}

// A Kerberos login whose krb5.conf cannot be read fails before any connection,
// naming the file.
func TestKerberosConfigErrorNamesTheFile(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "missing-krb5.conf")
	cfg := Config{Auth: AuthKerberos, Username: "dba@MSSQLIFI.TEST", Password: "p", Krb5Conf: conf}
	if err := cfg.CheckKerberos(); err == nil || !strings.Contains(err.Error(), conf) {
		t.Errorf("CheckKerberos = %v, want an error naming %s", err, conf)
	}
	_, err := New(cfg).Check(ctxFor(t, 10*time.Second), Target{Host: "127.0.0.1", Port: 1, Instance: "MSSQLSERVER"})
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindConfig || !strings.Contains(e.Error(), conf) {
		t.Errorf("Check = %v, want a KindConfig error naming %s", err, conf)
	}
}

func TestDefaultSPN(t *testing.T) {
	if got := DefaultSPN("SQL01.contoso.com", 0); got != "MSSQLSvc/sql01.contoso.com:1433" {
		t.Errorf("DefaultSPN = %q", got)
	}
	c := Config{SPN: "MSSQLSvc/sql01.contoso.com:INST1"}
	if got := c.SPNFor(Target{Host: "10.0.0.1", Port: 50000}); got != c.SPN {
		t.Errorf("SPNFor with an SPN = %q", got)
	}
	if got := (Config{}).SPNFor(Target{Host: "sql01", Port: 50000}); got != "MSSQLSvc/sql01:50000" {
		t.Errorf("SPNFor = %q", got)
	}
}

// A Kerberos login fails to log on when the KDC refused the account or the ticket;
// a KDC that does not answer says nothing of the login.
func TestKerberosLogonFailed(t *testing.T) {
	c := &checker{cfg: Config{Auth: AuthKerberos, Username: "dba@MSSQLIFI.TEST", Password: "p"}}
	for k, want := range map[krb.Kind]bool{
		krb.KindWrongPassword: true, krb.KindUnknownUser: true, krb.KindUnknownSPN: true, krb.KindExpired: true,
		krb.KindClockSkew: true, krb.KindRefused: true,
		krb.KindKDCUnreachable: false, krb.KindUnknown: false, krb.KindConfig: false,
	} {
		e := c.kerberosError(Target{Host: "sql01.mssqlifi.test", Port: 1433}, &krb.Error{Kind: k, Message: "kerberos: failed"})
		if e == nil || e.LogonFailed() != want {
			t.Errorf("Kerberos failure of kind %d: %v, LogonFailed want %v", k, e, want)
		}
	}
}

// SQL Server's message is the server's text: it reaches the error escaped.
func TestSQLServersMessageIsEscaped(t *testing.T) {
	h := &sqlServer{servicesErr: &tds.SQLError{Number: 300, State: 1, Class: 14, Line: 1,
		Message: "VIEW SERVER STATE permission was denied\x1b[2K\r\nError: forged\x07"}}
	ep := serve(t, h, tds.Options{}, nil)
	_, err := New(plainConfig()).Check(ctxFor(t, 20*time.Second), ep.target())
	if err == nil || strings.ContainsAny(err.Error(), "\x1b\r\n\x07") || !strings.Contains(err.Error(), `denied\x1B[2K\r\nError: forged\x07`) {
		t.Fatalf("error %q: want SQL Server's message escaped", err)
	}
}
