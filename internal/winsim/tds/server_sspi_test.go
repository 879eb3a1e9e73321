package tds

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"

	mssql "github.com/microsoft/go-mssqldb"
	"github.com/microsoft/go-mssqldb/integratedauth"
	"github.com/microsoft/go-mssqldb/msdsn"
)

// The integrated-login path of the endpoint, driven by go-mssqldb with a security
// package of the test's own on both ends: what goes over the wire (the LOGIN7 SSPI
// field, SSPI tokens back, SSPI messages on) is the endpoint's, what the tokens mean
// is the package's. Kerberos against a real KDC is tested in internal/winsim
// (sspi_test.go) and by the provider's acceptance tests.

// The client side: it sends "hello", answers "challenge" with "response", and
// records every token the server sent.
type testAuth struct {
	mu   sync.Mutex
	seen [][]byte
}

const testAuthenticator = "tds-test-sspi"

var clientAuth = &testAuth{}

func init() {
	err := integratedauth.SetIntegratedAuthenticationProvider(testAuthenticator, integratedauth.ProviderFunc(
		func(msdsn.Config) (integratedauth.IntegratedAuthenticator, error) { return clientAuth, nil }))
	if err != nil {
		panic(err)
	}
}

func (a *testAuth) InitialBytes() ([]byte, error) { return []byte("hello"), nil }
func (a *testAuth) NextBytes(b []byte) ([]byte, error) {
	a.mu.Lock()
	a.seen = append(a.seen, append([]byte(nil), b...))
	a.mu.Unlock()
	if bytes.Equal(b, []byte("challenge")) {
		return []byte("response"), nil
	}
	return nil, nil
}
func (a *testAuth) Free() {}

func (a *testAuth) reset() [][]byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.seen
	a.seen = nil
	return s
}

// The server side: "hello" → "challenge", "response" → done as account, with "final".
type testSSPI struct {
	account string
	refuse  error // returned for "response"
	mu      sync.Mutex
	tokens  []string
}

func (s *testSSPI) NewContext(net.Addr) SSPIContext { return s }

func (s *testSSPI) Accept(tok []byte) ([]byte, string, string, bool, error) {
	s.mu.Lock()
	s.tokens = append(s.tokens, string(tok))
	s.mu.Unlock()
	switch string(tok) {
	case "hello":
		return []byte("challenge"), "", "", false, nil
	case "response":
		if s.refuse != nil {
			return nil, "", "", false, s.refuse
		}
		return []byte("final"), s.account, "Test", true, nil
	}
	return nil, "", "", false, fmt.Errorf("unexpected token %q", tok)
}

func integratedDSN(ts *testServer) string {
	u := url.URL{Scheme: "sqlserver", User: url.User(testWindowsUser), Host: ts.addr,
		RawQuery: "database=master&encrypt=disable&authenticator=" + testAuthenticator}
	return u.String()
}

func TestIntegratedLogonRunsTheSSPIExchange(t *testing.T) {
	sspi := &testSSPI{account: testWindowsUser}
	ts := startServer(t, Options{SSPI: sspi})
	clientAuth.reset()
	db := openDB(t, integratedDSN(ts))
	var got string
	if err := db.QueryRowContext(ctxT(t), "select 1;").Scan(&got); err != nil {
		t.Fatalf("integrated logon and a query: %v", err)
	}
	if strings.Join(sspi.tokens, ",") != "hello,response" {
		t.Errorf("the security package got tokens %q; want the LOGIN7 token, then the SSPI message", sspi.tokens)
	}
	if seen := clientAuth.reset(); len(seen) != 2 || string(seen[0]) != "challenge" || string(seen[1]) != "final" {
		t.Errorf("the client got SSPI tokens %q; want challenge, then final before the login's answer", seen)
	}
	ts.h.mu.Lock()
	logins := append([]Login(nil), ts.h.logins...)
	ts.h.mu.Unlock()
	if len(logins) != 1 || !logins[0].Integrated || logins[0].User != testWindowsUser || logins[0].Password != "" || logins[0].Mechanism != "Test" {
		t.Errorf("the handler was asked about %+v; want one integrated logon of %s by Test", logins, testWindowsUser)
	}
}

// loginError logs on and returns the server's error.
func loginError(t *testing.T, dsn string) mssql.Error {
	t.Helper()
	err := openDB(t, dsn).PingContext(ctxT(t))
	var me mssql.Error
	if !errors.As(err, &me) {
		t.Fatalf("integrated logon: got %v (%T); want an error from the server", err, err)
	}
	return me
}

func TestIntegratedLogonRefused(t *testing.T) {
	const untrusted = "Login failed. The login is from an untrusted domain and cannot be used with Windows authentication."
	for _, tc := range []struct {
		name   string
		sspi   SSPI
		number int32
		msg    string
	}{
		{"no security package", nil, 18452, untrusted},
		{"package refuses", &testSSPI{account: testWindowsUser, refuse: errors.New("KRB_AP_ERR_MODIFIED")}, 18452, untrusted},
		{"account without a login", &testSSPI{account: `CONTOSO\bob`}, 18456, `Login failed for user 'CONTOSO\bob'.`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, Options{SSPI: tc.sspi})
			me := loginError(t, integratedDSN(ts))
			if me.Number != tc.number || me.Class != 14 || !strings.HasSuffix(me.Message, tc.msg) {
				t.Errorf("error = %d class %d %q; want %d class 14 %q", me.Number, me.Class, me.Message, tc.number, tc.msg)
			}
		})
	}
}

// A client that sends something other than an SSPI message in the middle of the
// exchange is refused, not logged on.
func TestIntegratedLogonNeedsSSPIMessage(t *testing.T) {
	ts := startServer(t, Options{SSPI: &testSSPI{account: testWindowsUser}})
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pw := &packetWriter{w: c, packetSize: defaultPacketSize}
	if err := pw.writeMessage(packPrelogin, buildPrelogin(16, 0, 0, encryptNotSup)); err != nil {
		t.Fatal(err)
	}
	if _, err := readMessage(c); err != nil {
		t.Fatal(err)
	}
	if err := pw.writeMessage(packLogin7, testLogin7([]byte("hello"))); err != nil {
		t.Fatal(err)
	}
	m, err := readMessage(c)
	if err != nil || len(m.data) < 3 || m.data[0] != tokenSSPI || string(m.data[3:]) != "challenge" {
		t.Fatalf("answer to the LOGIN7 = %x, %v; want an SSPI token with the challenge", m.data, err)
	}
	if err := pw.writeMessage(packSQLBatch, []byte("select 1;")); err != nil {
		t.Fatal(err)
	}
	m, err = readMessage(c)
	if err != nil || len(m.data) == 0 || m.data[0] != tokenError || !bytes.Contains(m.data, []byte{0x14, 0x48, 0, 0}) { // 18452, little-endian
		t.Fatalf("answer to a batch instead of the SSPI message = %x, %v; want error 18452", m.data, err)
	}
	if len(ts.h.logins) != 0 {
		t.Errorf("the handler was asked about %+v; want no logon", ts.h.logins)
	}
}

// testLogin7 is a LOGIN7 record with fIntSecurity and sspi in its SSPI field.
func testLogin7(sspi []byte) []byte {
	b := make([]byte, login7FixedSize, login7FixedSize+len(sspi))
	b[optionFlags2Index] = fIntSecurity
	b[offSSPI] = byte(login7FixedSize)
	b[offSSPI+2] = byte(len(sspi))
	b = append(b, sspi...)
	b[0] = byte(len(b))
	return b
}
