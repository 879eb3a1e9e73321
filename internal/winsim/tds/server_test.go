package tds

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mssql "github.com/microsoft/go-mssqldb"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/certs"
)

const (
	testUser     = "provider"
	testPassword = "S3cret!pässword"
	// testWindowsUser is the Windows login the test handler has, for integrated logons.
	testWindowsUser = `CONTOSO\alice`
)

// testHandler is a small SQL Server: one login and a few canned queries.
type testHandler struct {
	slowStarted chan struct{} // receives when "WAITFOR slow" begins
	release     chan struct{} // closing it lets "WAITFOR slow" finish

	mu      sync.Mutex
	logins  []Login
	batches []string
	slowErr error // what the slow batch's context reported
}

func newTestHandler() *testHandler {
	return &testHandler{slowStarted: make(chan struct{}, 4), release: make(chan struct{})}
}

func (h *testHandler) ServerName() string { return `SQL01\INST1` }

func (h *testHandler) Version() (uint8, uint8, uint16) { return 16, 0, 4135 }

func (h *testHandler) Login(_ context.Context, l Login) *SQLError {
	h.mu.Lock()
	h.logins = append(h.logins, l)
	h.mu.Unlock()
	if strings.EqualFold(l.User, testUser) && l.Password == testPassword && !l.Integrated {
		return nil
	}
	if l.Integrated && strings.EqualFold(l.User, testWindowsUser) {
		return nil
	}
	return &SQLError{Number: 18456, State: 1, Class: 14, Message: fmt.Sprintf("Login failed for user '%s'.", l.User)}
}

// typedTime is the datetimeoffset(7) value the "types" query returns: 100 ns
// precision and a +05:30 offset.
var typedTime = time.Date(2024, 2, 29, 23, 59, 58, 123456700, time.FixedZone("", 5*3600+30*60))

var typedColumns = []Column{
	{Name: "servicename", Type: TypeNVarChar, Size: 256},
	{Name: "process_id", Type: TypeInt},
	{Name: "big", Type: TypeBigInt},
	{Name: "is_clustered", Type: TypeBit},
	{Name: "last_startup_time", Type: TypeDateTimeOffset, Scale: 7},
	{Name: "note", Type: TypeNVarChar, Size: 50, Nullable: true},
	{Name: "maybe_int", Type: TypeInt, Nullable: true},
	{Name: "maybe_bit", Type: TypeBit, Nullable: true},
	{Name: "maybe_time", Type: TypeDateTimeOffset, Scale: 3, Nullable: true},
	{Name: "body", Type: TypeNVarChar, Size: -1, Nullable: true},
}

func (h *testHandler) Batch(ctx context.Context, _ Login, text string) ([]ResultSet, *SQLError) {
	h.mu.Lock()
	h.batches = append(h.batches, text)
	h.mu.Unlock()
	switch strings.TrimSpace(text) {
	case "select 1;": // what database/sql's Ping sends
		return []ResultSet{{Columns: []Column{{Name: "", Type: TypeInt}}, Rows: [][]any{{int32(1)}}}}, nil
	case "SELECT types":
		return []ResultSet{{Columns: typedColumns, Rows: [][]any{
			{"SQL Server (INST1)", int32(4242), int64(-9000000000), true, typedTime, nil, nil, nil, nil, nil},
			{"SQL Server Agent (INST1) ☃", 17, int64(1) << 40, false, typedTime.UTC(), "note ✓", int32(-5), false,
				time.Date(2001, 1, 1, 0, 0, 0, 0, time.FixedZone("", -8*3600)), "long ∑ text"},
		}}}, nil
	case "SELECT variants":
		return []ResultSet{{Columns: []Column{
			{Name: "v", Type: TypeVariant, Nullable: true},
			{Name: "g", Type: TypeUniqueIdentifier, Nullable: true},
			{Name: "t", Type: TypeTinyInt, Nullable: true},
		}, Rows: [][]any{
			{"16.0.4135.4 ✓", "6F9619FF-8B86-D011-B42D-00C04FC964FF", int32(1)},
			{int32(-7), nil, int32(255)},
			{nil, "00000000-0000-0000-0000-000000000001", nil},
		}}}, nil
	case "SELECT bad":
		return []ResultSet{{Columns: []Column{{Name: "n", Type: TypeInt}}, Rows: [][]any{{"not a number"}}}}, nil
	case "SELECT two":
		return []ResultSet{
			{Columns: []Column{{Name: "a", Type: TypeInt}}, Rows: [][]any{{int32(1)}, {int32(2)}}},
			{Columns: []Column{{Name: "b", Type: TypeNVarChar, Size: 10}}, Rows: [][]any{{"x"}}},
		}, nil
	case "SELECT many":
		rows := make([][]any, 2000)
		for i := range rows {
			rows[i] = []any{int32(i), strings.Repeat("row-", 20) + fmt.Sprint(i)}
		}
		return []ResultSet{{Columns: []Column{{Name: "i", Type: TypeInt}, {Name: "s", Type: TypeNVarChar, Size: 200}}, Rows: rows}}, nil
	case "WAITFOR slow":
		h.slowStarted <- struct{}{}
		select {
		case <-ctx.Done():
			h.mu.Lock()
			h.slowErr = ctx.Err()
			h.mu.Unlock()
			return nil, &SQLError{Number: 3980, Class: 16, Message: "cancelled"}
		case <-h.release:
			return []ResultSet{{Columns: []Column{{Name: "done", Type: TypeBit}}, Rows: [][]any{{true}}}}, nil
		}
	}
	return nil, &SQLError{Number: 208, State: 1, Class: 16, Line: 1, Message: fmt.Sprintf("Invalid object name '%s'.", text)}
}

type testServer struct {
	srv  *Server
	h    *testHandler
	l    net.Listener
	addr string
	port int
	done chan error
}

func startServer(t *testing.T, opts Options) *testServer {
	t.Helper()
	h := newTestHandler()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen on loopback: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	ts := &testServer{srv: NewServer(h, opts), h: h, l: l, addr: l.Addr().String(),
		port: port, done: make(chan error, 1)}
	go func() { ts.done <- ts.srv.Serve(l) }()
	t.Cleanup(func() {
		_ = l.Close()
		ts.srv.CloseConnections()
		select {
		case <-ts.h.release:
		default:
			close(ts.h.release)
		}
	})
	return ts
}

// dsn logs on as testUser with password.
func (ts *testServer) dsn(password, extra string) string {
	u := url.URL{Scheme: "sqlserver", User: url.UserPassword(testUser, password),
		Host: ts.addr, RawQuery: "database=master&" + extra}
	return u.String()
}

func openDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlserver", dsn)
	if err != nil {
		t.Fatalf("sql.Open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestLoginAndTypedRows(t *testing.T) {
	ts := startServer(t, Options{})
	db := openDB(t, ts.dsn(testPassword, "encrypt=disable&app+name=ifi-test"))
	ctx := ctxT(t)
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("login with the right password failed: %v", err)
	}
	ts.h.mu.Lock()
	l := ts.h.logins[0]
	ts.h.mu.Unlock()
	if l.User != testUser || l.Password != testPassword || l.Database != "master" || l.AppName != "ifi-test" || l.Encrypted {
		t.Errorf("handler saw login %+v; want user %q, the decoded password, database master, app ifi-test", l, testUser)
	}

	rows, err := db.QueryContext(ctx, "SELECT types")
	if err != nil {
		t.Fatalf("query: %v", err)
	}
	defer rows.Close()
	cts, err := rows.ColumnTypes()
	if err != nil {
		t.Fatal(err)
	}
	wantTypes := []string{"NVARCHAR", "INT", "BIGINT", "BIT", "DATETIMEOFFSET", "NVARCHAR", "INT", "BIT", "DATETIMEOFFSET", "NVARCHAR"}
	for i, ct := range cts {
		if ct.DatabaseTypeName() != wantTypes[i] || ct.Name() != typedColumns[i].Name {
			t.Errorf("column %d is %s %s; want %s %s", i, ct.Name(), ct.DatabaseTypeName(), typedColumns[i].Name, wantTypes[i])
		}
	}
	if n, ok := cts[0].Length(); !ok || n != 256 {
		t.Errorf("nvarchar(256) column reports length %d, %v", n, ok)
	}
	type rec struct {
		name      string
		pid       int
		big       int64
		clustered bool
		started   time.Time
		note      sql.NullString
		maybeInt  sql.NullInt32
		maybeBit  sql.NullBool
		maybeTime sql.NullTime
		body      sql.NullString
	}
	var got []rec
	for rows.Next() {
		var r rec
		if err := rows.Scan(&r.name, &r.pid, &r.big, &r.clustered, &r.started, &r.note, &r.maybeInt, &r.maybeBit, &r.maybeTime, &r.body); err != nil {
			t.Fatalf("scan: %v", err)
		}
		got = append(got, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("rows: %v", err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d rows, want 2", len(got))
	}
	r := got[0]
	if r.name != "SQL Server (INST1)" || r.pid != 4242 || r.big != -9000000000 || !r.clustered {
		t.Errorf("row 1 = %+v", r)
	}
	if !r.started.Equal(typedTime) || r.started.Format(time.RFC3339Nano) != "2024-02-29T23:59:58.1234567+05:30" {
		t.Errorf("datetimeoffset(7) came back as %s; want %s with the same offset", r.started.Format(time.RFC3339Nano), typedTime.Format(time.RFC3339Nano))
	}
	if r.note.Valid || r.maybeInt.Valid || r.maybeBit.Valid || r.maybeTime.Valid || r.body.Valid {
		t.Errorf("NULL columns scanned as valid: %+v", r)
	}
	r = got[1]
	if r.name != "SQL Server Agent (INST1) ☃" || r.pid != 17 || r.big != 1<<40 || r.clustered {
		t.Errorf("row 2 = %+v", r)
	}
	if r.started.Format(time.RFC3339Nano) != "2024-02-29T18:29:58.1234567Z" {
		t.Errorf("UTC datetimeoffset came back as %s", r.started.Format(time.RFC3339Nano))
	}
	if r.note.String != "note ✓" || !r.maybeInt.Valid || r.maybeInt.Int32 != -5 || !r.maybeBit.Valid || r.maybeBit.Bool ||
		r.maybeTime.Time.Format(time.RFC3339Nano) != "2001-01-01T00:00:00-08:00" || r.body.String != "long ∑ text" {
		t.Errorf("row 2 nullable values = %+v", r)
	}
}

func TestWrongPasswordIs18456(t *testing.T) {
	ts := startServer(t, Options{})
	db := openDB(t, ts.dsn("wrong", "encrypt=disable"))
	err := db.PingContext(ctxT(t))
	var me mssql.Error
	if !errors.As(err, &me) {
		t.Fatalf("login with a wrong password: got %v (%T); want an mssql.Error", err, err)
	}
	if me.Number != 18456 || me.Class != 14 || !strings.Contains(me.Message, "Login failed for user 'provider'.") {
		t.Errorf("login error = number %d class %d %q; want 18456 class 14 Login failed for user 'provider'.", me.Number, me.Class, me.Message)
	}
	if me.ServerName != `SQL01\INST1` {
		t.Errorf("error names server %q", me.ServerName)
	}
}

func TestErrorsAndSeveralQueriesOnOneConnection(t *testing.T) {
	ts := startServer(t, Options{})
	db := openDB(t, ts.dsn(testPassword, "encrypt=disable"))
	db.SetMaxOpenConns(1)
	ctx := ctxT(t)

	for i := 0; i < 3; i++ {
		_, err := db.ExecContext(ctx, "SELECT nope")
		var me mssql.Error
		if !errors.As(err, &me) || me.Number != 208 || me.Message != "Invalid object name 'SELECT nope'." || me.Class != 16 {
			t.Fatalf("failing query: got %v; want mssql.Error 208 Invalid object name 'SELECT nope'.", err)
		}
		var n int
		if err := db.QueryRowContext(ctx, "SELECT two").Scan(&n); err != nil || n != 1 {
			t.Fatalf("query after an error: n=%d err=%v", n, err)
		}
	}

	// A handler bug (a string in an int column) reaches the client as an error, and
	// the connection stays usable.
	_, err := db.ExecContext(ctx, "SELECT bad")
	if err == nil || !strings.Contains(err.Error(), `column "n": value not a number (string) is not an integer`) {
		t.Errorf("invalid handler result: got %v; want an error naming the column", err)
	}

	// Two result sets, read with NextResultSet.
	rows, err := db.QueryContext(ctx, "SELECT two")
	if err != nil {
		t.Fatal(err)
	}
	var ints []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		ints = append(ints, v)
	}
	if !rows.NextResultSet() {
		t.Fatalf("second result set missing: %v", rows.Err())
	}
	var s string
	if !rows.Next() {
		t.Fatalf("second result set has no row: %v", rows.Err())
	}
	if err := rows.Scan(&s); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if fmt.Sprint(ints) != "[1 2]" || s != "x" {
		t.Errorf("result sets = %v and %q; want [1 2] and x", ints, s)
	}

	// A response larger than many packets.
	rows, err = db.QueryContext(ctx, "SELECT many")
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for rows.Next() {
		var i int
		var s string
		if err := rows.Scan(&i, &s); err != nil {
			t.Fatal(err)
		}
		if i != count || s != strings.Repeat("row-", 20)+fmt.Sprint(i) {
			t.Fatalf("row %d = %d %q", count, i, s)
		}
		count++
	}
	if err := rows.Err(); err != nil || count != 2000 {
		t.Fatalf("read %d of 2000 rows: %v", count, err)
	}
	if n := ts.srv.OpenConnections(); n != 1 {
		t.Errorf("server holds %d connections; the pool of one should have reused one", n)
	}

	// A query with arguments arrives as RPC sp_executesql, which the simulator refuses clearly.
	_, err = db.ExecContext(ctx, "SELECT @p1", 1)
	if err == nil || !strings.Contains(err.Error(), "sp_executesql") {
		t.Errorf("query with arguments: got %v; want an error naming sp_executesql", err)
	}
}

func TestCancelSendsAttention(t *testing.T) {
	ts := startServer(t, Options{})
	db := openDB(t, ts.dsn(testPassword, "encrypt=disable"))
	db.SetMaxOpenConns(1)
	ctx := ctxT(t)
	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	qctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := db.ExecContext(qctx, "WAITFOR slow")
		errc <- err
	}()
	select {
	case <-ts.h.slowStarted:
	case <-ctx.Done():
		t.Fatal("slow batch never reached the handler")
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled query returned %v; want context.Canceled", err)
		}
	case <-time.After(time.Minute): // a hang guard, not a measure of speed
		t.Fatal("cancelled query did not return: hang (no DONE_ATTN?)")
	}
	// The handler saw its context cancelled, and the connection is still usable.
	var n int
	if err := db.QueryRowContext(ctx, "SELECT two").Scan(&n); err != nil || n != 1 {
		t.Fatalf("query after cancel: n=%d err=%v", n, err)
	}
	ts.h.mu.Lock()
	slowErr := ts.h.slowErr
	ts.h.mu.Unlock()
	if !errors.Is(slowErr, context.Canceled) {
		t.Errorf("handler context after ATTENTION: %v; want context.Canceled", slowErr)
	}
	if n := ts.srv.OpenConnections(); n != 1 {
		t.Errorf("server holds %d connections after cancel; want the one reused", n)
	}
}

func TestCloseConnectionsAndListener(t *testing.T) {
	ts := startServer(t, Options{})
	db := openDB(t, ts.dsn(testPassword, "encrypt=disable"))
	db.SetMaxOpenConns(1)
	ctx := ctxT(t)
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var n int
	if err := c.QueryRowContext(ctx, "SELECT two").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if err := ts.l.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ts.done:
		if err != nil {
			t.Errorf("Serve after the listener closed returned %v; want nil", err)
		}
	case <-ctx.Done():
		t.Fatal("Serve did not return after its listener closed")
	}
	// The open connection survives the listener, like SQL Server's would ...
	if err := c.QueryRowContext(ctx, "SELECT two").Scan(&n); err != nil {
		t.Fatalf("open connection after closing the listener: %v", err)
	}
	// ... until the engine stops.
	ts.srv.CloseConnections()
	if err := c.QueryRowContext(ctx, "SELECT two").Scan(&n); err == nil {
		t.Fatal("query on a dropped connection succeeded")
	}
	db2 := openDB(t, ts.dsn(testPassword, "encrypt=disable&dial+timeout=5"))
	err = db2.PingContext(ctx)
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("new connection to a closed listener: %v; want connection refused", err)
	}
}

// testPKI writes a CA and a server certificate for 127.0.0.1 and returns the server's
// TLS config and the CA file.
func testPKI(t *testing.T) (*tls.Config, string) {
	t.Helper()
	caPEM, cert := certs.ForLoopback(t, "sql01", "localhost")
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, caFile
}

func TestEncryption(t *testing.T) {
	cfg, caFile := testPKI(t)
	ts := startServer(t, Options{TLSConfig: cfg})
	ctx := ctxT(t)
	for _, mode := range []string{"strict", "true"} {
		t.Run("encrypt="+mode, func(t *testing.T) {
			db := openDB(t, ts.dsn(testPassword, "encrypt="+mode+"&certificate="+caFile))
			var n int
			if err := db.QueryRowContext(ctx, "SELECT two").Scan(&n); err != nil || n != 1 {
				t.Fatalf("query over encrypt=%s: n=%d err=%v", mode, n, err)
			}
			rows, err := db.QueryContext(ctx, "SELECT many")
			if err != nil {
				t.Fatal(err)
			}
			count := 0
			for rows.Next() {
				count++
			}
			if rows.Err() != nil || count != 2000 {
				t.Fatalf("read %d of 2000 rows over TLS: %v", count, rows.Err())
			}
			ts.h.mu.Lock()
			last := ts.h.logins[len(ts.h.logins)-1]
			ts.h.mu.Unlock()
			if !last.Encrypted {
				t.Errorf("encrypt=%s login reached the handler over a clear-text connection", mode)
			}
		})
	}
	// Plain clients still work on the same port.
	db := openDB(t, ts.dsn(testPassword, "encrypt=disable"))
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("clear-text login next to TLS: %v", err)
	}
	// A client that does not trust the CA fails the handshake.
	db = openDB(t, ts.dsn(testPassword, "encrypt=strict"))
	if err := db.PingContext(ctx); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("strict without the CA: %v; want a certificate verification error", err)
	}
}

func TestEncryptionRequiredWithoutCertificate(t *testing.T) {
	ts := startServer(t, Options{})
	ctx := ctxT(t)
	db := openDB(t, ts.dsn(testPassword, "encrypt=true"))
	if err := db.PingContext(ctx); err == nil || !strings.Contains(err.Error(), "server does not support encryption") {
		t.Fatalf("encrypt=true against a clear-text endpoint: %v; want 'server does not support encryption'", err)
	}
	db = openDB(t, ts.dsn(testPassword, "encrypt=strict&trustservercertificate=true"))
	if err := db.PingContext(ctx); err == nil {
		t.Fatal("encrypt=strict against a clear-text endpoint succeeded")
	}
	// encrypt=false (encryption offered, not required) stays in clear text.
	db = openDB(t, ts.dsn(testPassword, "encrypt=false"))
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("encrypt=false: %v", err)
	}
}

func TestStrictNegotiatesALPN(t *testing.T) {
	cfg, caFile := testPKI(t)
	ts := startServer(t, Options{TLSConfig: cfg})
	pemBytes, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemBytes)
	c, err := tls.Dial("tcp", ts.addr, &tls.Config{RootCAs: pool, ServerName: "sql01", NextProtos: []string{"tds/8.0"}})
	if err != nil {
		t.Fatalf("TLS dial: %v", err)
	}
	defer c.Close()
	st := c.ConnectionState()
	if st.NegotiatedProtocol != "tds/8.0" || st.Version < tls.VersionTLS12 {
		t.Errorf("negotiated ALPN %q, TLS version %x; want tds/8.0 and TLS 1.2+", st.NegotiatedProtocol, st.Version)
	}
}

func TestNonTDSClientIsDisconnected(t *testing.T) {
	ts := startServer(t, Options{})
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	// An SQLBatch before PRELOGIN: the endpoint hangs up without answering.
	if _, err := c.Write([]byte{packSQLBatch, statusEOM, 0, 10, 0, 0, 1, 0, 'h', 0}); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if n, err := c.Read(buf); err == nil {
		t.Fatalf("endpoint answered %d bytes to a batch sent before PRELOGIN; want the connection closed", n)
	}
}

// sql_variant (what SERVERPROPERTY returns), uniqueidentifier and tinyint decode in
// go-mssqldb as SQL Server's do.
func TestVariantGUIDAndTinyInt(t *testing.T) {
	ts := startServer(t, Options{})
	db := openDB(t, ts.dsn(testPassword, "encrypt=disable"))
	rows, err := db.QueryContext(ctxT(t), "SELECT variants")
	if err != nil {
		t.Fatalf("query: %v", err)
	}
	defer rows.Close()
	cts, _ := rows.ColumnTypes()
	var types []string
	for _, ct := range cts {
		types = append(types, ct.DatabaseTypeName())
	}
	if strings.Join(types, ",") != "SQL_VARIANT,UNIQUEIDENTIFIER,TINYINT" {
		t.Errorf("column types %v; want SQL_VARIANT, UNIQUEIDENTIFIER, TINYINT", types)
	}
	var got []string
	for rows.Next() {
		var v any
		var g mssql.NullUniqueIdentifier
		var n sql.NullInt64
		if err := rows.Scan(&v, &g, &n); err != nil {
			t.Fatalf("scan: %v", err)
		}
		gs := "NULL"
		if g.Valid {
			gs = g.UUID.String()
		}
		got = append(got, fmt.Sprintf("%v|%s|%v", v, gs, n))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"16.0.4135.4 ✓|6F9619FF-8B86-D011-B42D-00C04FC964FF|{1 true}",
		"-7|NULL|{255 true}",
		"<nil>|00000000-0000-0000-0000-000000000001|{0 false}",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
