package sqlcheck

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/certs"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds"
)

const (
	testLogin = "ifi_check"
	// Every character url.UserPassword must escape, and some that ODBC strings choke on.
	testPassword = "p@ss:w/o?r#d%20;{x}=ü"
)

var lastStart = time.Date(2026, 4, 1, 8, 30, 1, 123456700, time.FixedZone("", 2*3600))

// sqlServer is a test tds.Handler: one login, the contract's three queries.
type sqlServer struct {
	servicesErr *tds.SQLError // answer the services query with this error
	engineIFI   any           // "Y", "N" or nil
	clustered   string
	hadr        any     // SERVERPROPERTY('IsHadrEnabled'): nil (before 2012), int32(0) or int32(1)
	replicas    [][]any // rows of the replica-state query: group, server, is_local, role, connected, health
	requests    [][]any // rows of sys.dm_exec_requests: session_id, command
	replicaErr  *tds.SQLError
	primaries   [][]any // rows of the group-primaries query: group, primary_replica
	noMemoryCol bool    // a build before 2016 SP1: sql_memory_model_desc is an invalid column
	memoryDeny  bool    // the memory query refused (error 300, as without VIEW SERVER STATE)
	memoryModel any     // sql_memory_model_desc: "LOCK_PAGES", "CONVENTIONAL", ...
	maxMemoryMB any     // value_in_use of max server memory (MB): int64, or nil
	instance    any     // SERVERPROPERTY('InstanceName'): nil (the default instance) or a name

	mu      sync.Mutex
	batches []string
}

func (s *sqlServer) ServerName() string              { return "SQL01" }
func (s *sqlServer) Version() (uint8, uint8, uint16) { return 16, 0, 4135 }
func (s *sqlServer) Login(_ context.Context, l tds.Login) *tds.SQLError {
	if strings.EqualFold(l.User, testLogin) && l.Password == testPassword {
		return nil
	}
	return &tds.SQLError{Number: 18456, State: 1, Class: 14, Message: fmt.Sprintf("Login failed for user '%s'.", l.User)}
}

func (s *sqlServer) Batch(_ context.Context, _ tds.Login, text string) ([]tds.ResultSet, *tds.SQLError) {
	s.mu.Lock()
	s.batches = append(s.batches, text)
	s.mu.Unlock()
	nv := func(name string, size int, nullable bool) tds.Column {
		return tds.Column{Name: name, Type: tds.TypeNVarChar, Size: size, Nullable: nullable}
	}
	switch text {
	case contract.QueryServerProperties:
		return []tds.ResultSet{{
			Columns: []tds.Column{nv("product_version", 128, true), nv("product_level", 128, true), nv("edition", 128, true),
				{Name: "is_clustered", Type: tds.TypeInt, Nullable: true}, nv("instance_name", 128, true),
				{Name: "process_id", Type: tds.TypeInt, Nullable: true}},
			Rows: [][]any{{"16.0.4135.4", "RTM", "Developer Edition (64-bit)", int32(0), s.instance, int32(4242)}},
		}}, nil
	case contract.QueryServerServices:
		if s.servicesErr != nil {
			return nil, s.servicesErr
		}
		cols := []tds.Column{nv("servicename", 256, false), {Name: "process_id", Type: tds.TypeInt, Nullable: true},
			{Name: "last_startup_time", Type: tds.TypeDateTimeOffset, Scale: 7, Nullable: true}, nv("service_account", 256, false),
			nv("is_clustered", 1, false), nv("instant_file_initialization_enabled", 1, true)}
		clustered := s.clustered
		if clustered == "" {
			clustered = "N"
		}
		return []tds.ResultSet{{Columns: cols, Rows: [][]any{
			// The Agent first, with a value the Engine's must not be confused with.
			{"SQL Server Agent (MSSQLSERVER)", int32(5150), lastStart, `NT Service\SQLSERVERAGENT`, clustered, "N"},
			{"SQL Server (MSSQLSERVER)", int32(4242), lastStart, `NT Service\MSSQLSERVER`, clustered, s.engineIFI},
			// A row naming another instance's Engine is not this Engine's.
			{"SQL Server (INST02)", int32(6160), lastStart.Add(time.Hour), `NT Service\MSSQL$INST02`, clustered, "Y"},
			{"SQL Full-text Filter Daemon Launcher (MSSQLSERVER)", nil, nil, `NT Service\MSSQLFDLauncher`, clustered, nil},
		}}}, nil
	case contract.QueryEncryptedDatabases:
		return []tds.ResultSet{{
			Columns: []tds.Column{{Name: "database_id", Type: tds.TypeInt}, nv("database_name", 128, true), {Name: "encryption_state", Type: tds.TypeInt}},
			Rows: [][]any{
				{int32(2), "tempdb", int32(3)},
				{int32(5), "Sales", int32(3)},
				{int32(6), "Staging", int32(2)},
				{int32(7), "Archive", int32(1)}, // unencrypted, key present
				{int32(8), nil, int32(3)},       // DB_NAME not visible
			},
		}}, nil
	case contract.QueryHADREnabled:
		return []tds.ResultSet{{Columns: []tds.Column{{Name: "is_hadr_enabled", Type: tds.TypeInt, Nullable: true}},
			Rows: [][]any{{s.hadr}}}}, nil
	case contract.QueryReplicaStates:
		if s.replicaErr != nil {
			return nil, s.replicaErr
		}
		return []tds.ResultSet{{Columns: []tds.Column{nv("availability_group", 256, true), nv("replica_server_name", 256, true),
			{Name: "is_local", Type: tds.TypeBit}, nv("role_desc", 60, true), nv("connected_state_desc", 60, true),
			nv("synchronization_health_desc", 60, true)}, Rows: s.replicas}}, nil
	case contract.QueryGroupPrimaries:
		return []tds.ResultSet{{Columns: []tds.Column{nv("availability_group", 256, true), nv("primary_replica", 128, true)},
			Rows: s.primaries}}, nil
	case contract.QueryMemory:
		if s.memoryDeny {
			return nil, &tds.SQLError{Number: 300, State: 1, Class: 14, Line: 1, Message: "VIEW SERVER STATE permission was denied on object 'server', database 'master'."}
		}
		if s.noMemoryCol {
			return nil, &tds.SQLError{Number: 207, State: 1, Class: 16, Line: 1, Message: "Invalid column name 'sql_memory_model_desc'."}
		}
		return []tds.ResultSet{{Columns: []tds.Column{nv("sql_memory_model_desc", 60, true), {Name: "max_server_memory_mb", Type: tds.TypeBigInt, Nullable: true}},
			Rows: [][]any{{s.memoryModel, s.maxMemoryMB}}}}, nil
	case contract.QueryMaxServerMemory:
		return []tds.ResultSet{{Columns: []tds.Column{{Name: "max_server_memory_mb", Type: tds.TypeBigInt, Nullable: true}},
			Rows: [][]any{{s.maxMemoryMB}}}}, nil
	case contract.QueryRequests:
		return []tds.ResultSet{{Columns: []tds.Column{{Name: "session_id", Type: tds.TypeSmallInt}, nv("command", 32, false)},
			Rows: s.requests}}, nil
	}
	return nil, &tds.SQLError{Number: 208, State: 1, Class: 16, Line: 1, Message: "Invalid object name."}
}

type endpoint struct {
	srv  *tds.Server
	l    net.Listener
	port int
}

// serve starts a TDS endpoint for h on a free loopback port; l wraps the listener.
func serve(t testing.TB, h tds.Handler, opts tds.Options, wrap func(net.Listener) net.Listener) *endpoint {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen on loopback: %v", err)
	}
	ep := &endpoint{srv: tds.NewServer(h, opts), l: l, port: l.Addr().(*net.TCPAddr).Port}
	served := l
	if wrap != nil {
		served = wrap(l)
	}
	done := make(chan error, 1)
	go func() { done <- ep.srv.Serve(served) }()
	t.Cleanup(func() {
		_ = l.Close()
		ep.srv.CloseConnections()
		if err := <-done; err != nil {
			t.Logf("TDS test endpoint stopped: %v", err) // Serve ends with the closed listener's error
		}
	})
	return ep
}

func (ep *endpoint) target() Target {
	return Target{Host: "127.0.0.1", Port: ep.port, Instance: "MSSQLSERVER"}
}

func plainConfig() Config {
	return Config{Username: testLogin, Password: testPassword, Encrypt: "disable"}
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// The memory model and max server memory (Lock Pages in Memory): from the DMV where
// the build has the column; a build before 2016 SP1 answers max server memory
// alone (the model is the error log's then); a refusal leaves both unknown without
// failing IFI's check.
func TestCheckReadsMemoryModel(t *testing.T) {
	for _, tc := range []struct {
		name      string
		h         *sqlServer
		wantModel string
		wantMax   *int64
		wantErr   bool
	}{
		{"locked pages, max set", &sqlServer{memoryModel: "LOCK_PAGES", maxMemoryMB: int64(28672)}, "LOCK_PAGES", ptr(int64(28672)), false},
		{"conventional, default max", &sqlServer{memoryModel: "CONVENTIONAL", maxMemoryMB: int64(contract.DefaultMaxServerMemoryMB)},
			"CONVENTIONAL", ptr(int64(contract.DefaultMaxServerMemoryMB)), false},
		{"a 2014 build has no sql_memory_model_desc", &sqlServer{noMemoryCol: true, maxMemoryMB: int64(4096)}, "", ptr(int64(4096)), false},
		{"refused: both unknown, IFI's answer kept", &sqlServer{memoryDeny: true, maxMemoryMB: int64(4096)}, "", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.h.engineIFI = "Y"
			ep := serve(t, tc.h, tds.Options{}, nil)
			r, err := New(plainConfig()).Check(ctxFor(t, 20*time.Second), ep.target())
			if err != nil {
				t.Fatal(err)
			}
			if r.MemoryModel != tc.wantModel || !equalPtr(r.MaxServerMemoryMB, tc.wantMax) || (r.MemoryErr != "") != tc.wantErr {
				t.Fatalf("memory = %q, max %v, err %q; want %q, %v", r.MemoryModel, show(r.MaxServerMemoryMB), r.MemoryErr, tc.wantModel, show(tc.wantMax))
			}
			if r.IFIEnabled == nil || !*r.IFIEnabled {
				t.Fatalf("IFI = %v: the memory query changed IFI's answer", show(r.IFIEnabled))
			}
		})
	}
}

func TestCheckReadsEngineRowAndTDE(t *testing.T) {
	for _, tc := range []struct {
		ifi  any
		want *bool
	}{{"Y", ptr(true)}, {"N", ptr(false)}, {nil, nil}} {
		t.Run(fmt.Sprint(tc.ifi), func(t *testing.T) {
			h := &sqlServer{engineIFI: tc.ifi}
			ep := serve(t, h, tds.Options{}, nil)
			r, err := New(plainConfig()).Check(ctxFor(t, 20*time.Second), ep.target())
			if err != nil {
				t.Fatal(err)
			}
			if !r.IFIColumnPresent || !equalPtr(r.IFIEnabled, tc.want) {
				t.Fatalf("IFI = present %v, enabled %v; want present, %v", r.IFIColumnPresent, show(r.IFIEnabled), show(tc.want))
			}
			if r.ProductVersion != "16.0.4135.4" || r.ProductLevel != "RTM" || r.Clustered || r.ServiceAccount != `NT Service\MSSQLSERVER` {
				t.Fatalf("report = %+v", r)
			}
			if r.LastStartup == nil || !r.LastStartup.Equal(lastStart) || r.LastStartup.Location() != time.UTC {
				t.Fatalf("LastStartup = %v, want %v in UTC", r.LastStartup, lastStart)
			}
			if got := strings.Join(r.EncryptedDatabases, ","); got != "Sales,Staging,database_id 8" {
				t.Fatalf("EncryptedDatabases = %q", got)
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			// One connection, six batches: the HADR views are not asked when IsHadrEnabled is NULL.
			if len(h.batches) != 6 {
				t.Fatalf("batches = %q", h.batches)
			}
		})
	}
}

// Always On: the HADR views are asked only when IsHadrEnabled is 1; NULL (builds
// before 2012, which have no such views) and 0 mean no replica, and do not fail.
func TestCheckAvailabilityGroups(t *testing.T) {
	for _, tc := range []struct {
		name     string
		srv      *sqlServer
		wantHADR bool
		want     string
	}{
		{"before 2012", &sqlServer{engineIFI: "Y", replicaErr: &tds.SQLError{Number: 208, Class: 16, State: 1, Message: "Invalid object name 'sys.dm_hadr_availability_replica_states'."}}, false, "[]"},
		{"hadr off", &sqlServer{engineIFI: "Y", hadr: int32(0), replicaErr: &tds.SQLError{Number: 208, Class: 16, State: 1, Message: "must not be asked"}}, false, "[]"},
		{"hadr on, no group", &sqlServer{engineIFI: "Y", hadr: int32(1)}, true, "[]"},
		{"primary", &sqlServer{engineIFI: "Y", hadr: int32(1), replicas: [][]any{{"AG1", "SQL01", true, "PRIMARY", "CONNECTED", "HEALTHY"},
			{"AG1", "SQL02", false, nil, "DISCONNECTED", "NOT_HEALTHY"}}}, true,
			"[{AG1 SQL01 true PRIMARY CONNECTED HEALTHY} {AG1 SQL02 false  DISCONNECTED NOT_HEALTHY}]"},
		{"two groups, one name not shown", &sqlServer{engineIFI: "Y", hadr: int32(1), replicas: [][]any{{"AG1", "SQL01", true, "SECONDARY", "CONNECTED", "HEALTHY"},
			{nil, nil, true, "resolving", "connected", "healthy"}}}, true, "[{AG1 SQL01 true SECONDARY CONNECTED HEALTHY} {  true RESOLVING CONNECTED HEALTHY}]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := serve(t, tc.srv, tds.Options{}, nil)
			r, err := New(plainConfig()).Check(ctxFor(t, 10*time.Second), ep.target())
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if r.HADREnabled != tc.wantHADR || fmt.Sprint(r.Replicas) != tc.want && !(tc.want == "[]" && len(r.Replicas) == 0) {
				t.Errorf("HADREnabled %v, replicas %v; want %v, %s", r.HADREnabled, r.Replicas, tc.wantHADR, tc.want)
			}
		})
	}
}

// Running requests: BACKUP and RESTORE commands are the ones a restart would end.
func TestCheckRunningBackups(t *testing.T) {
	srv := &sqlServer{engineIFI: "Y", requests: [][]any{{int16(51), "SELECT"}, {int16(57), "BACKUP DATABASE"}, {int16(60), "RESTORE LOG"}}}
	ep := serve(t, srv, tds.Options{}, nil)
	r, err := New(plainConfig()).Check(ctxFor(t, 10*time.Second), ep.target())
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if got := fmt.Sprint(r.RunningBackups()); got != "[BACKUP DATABASE (session 57) RESTORE LOG (session 60)]" {
		t.Errorf("running backups %s", got)
	}
}

func TestCheckClusteredFromDMV(t *testing.T) {
	ep := serve(t, &sqlServer{engineIFI: "Y", clustered: "Y"}, tds.Options{}, nil)
	r, err := New(plainConfig()).Check(ctxFor(t, 20*time.Second), ep.target())
	if err != nil || !r.Clustered {
		t.Fatalf("report %+v, %v; want clustered", r, err)
	}
}

func TestCheckWithoutIFIColumn(t *testing.T) {
	h := &sqlServer{servicesErr: &tds.SQLError{Number: 207, State: 1, Class: 16, Line: 1, Message: "Invalid column name 'instant_file_initialization_enabled'."}}
	ep := serve(t, h, tds.Options{}, nil)
	r, err := New(plainConfig()).Check(ctxFor(t, 20*time.Second), ep.target())
	if err != nil {
		t.Fatalf("a missing column must not be an error: %v", err)
	}
	if r.IFIColumnPresent || r.IFIEnabled != nil {
		t.Fatalf("IFI = present %v, enabled %v; want unknown", r.IFIColumnPresent, show(r.IFIEnabled))
	}
	if len(r.EncryptedDatabases) != 3 {
		t.Fatalf("TDE databases after a 207: %v", r.EncryptedDatabases)
	}
}

func TestCheckWithoutViewServerState(t *testing.T) {
	h := &sqlServer{servicesErr: &tds.SQLError{Number: 300, State: 1, Class: 14, Line: 1,
		Message: "VIEW SERVER STATE permission was denied on object 'server', database 'master'."}}
	ep := serve(t, h, tds.Options{}, nil)
	_, err := New(plainConfig()).Check(ctxFor(t, 20*time.Second), ep.target())
	e := asError(t, err)
	if e.Kind != KindPermission || e.Number != 300 || !strings.Contains(err.Error(), "GRANT VIEW SERVER STATE TO [ifi_check]") ||
		!strings.Contains(err.Error(), "SQL Server instance MSSQLSERVER at 127.0.0.1:") || e.LogonFailed() {
		t.Fatalf("error = %v (kind %d)", err, e.Kind)
	}
}

func TestCheckWrongPassword(t *testing.T) {
	ep := serve(t, &sqlServer{engineIFI: "Y"}, tds.Options{}, nil)
	cfg := plainConfig()
	cfg.Password = "not-it"
	_, err := New(cfg).Check(ctxFor(t, 20*time.Second), ep.target())
	e := asError(t, err)
	if e.Kind != KindAuth || e.Number != 18456 || !strings.Contains(err.Error(), "login failed for ifi_check") ||
		!strings.Contains(err.Error(), "instance MSSQLSERVER") || strings.Contains(err.Error(), "not-it") || !e.LogonFailed() {
		t.Fatalf("error = %v (kind %d)", err, e.Kind)
	}
}

func TestCheckUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	_, err = New(plainConfig()).Check(ctxFor(t, 20*time.Second), Target{Host: "127.0.0.1", Port: port, Instance: "MSSQLSERVER"})
	e := asError(t, err)
	if e.Kind != KindUnreachable || e.Setting != SettingPort || !strings.Contains(e.Hint, "SQL Server service is running") || e.LogonFailed() {
		t.Fatalf("error = %v (kind %d)", err, e.Kind)
	}
}

func TestCheckTLS(t *testing.T) {
	caPEM, cert := certs.ForLoopback(t, "sql01.example.test")
	ep := serve(t, &sqlServer{engineIFI: "Y"}, tds.Options{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}, nil)
	for _, tc := range []struct {
		name string
		cfg  Config
		kind ErrorKind // KindUnknown: must succeed
	}{
		{"strict with ca_cert", Config{Encrypt: "strict", CACert: caPEM}, KindUnknown},
		{"true with ca_cert", Config{Encrypt: "true", CACert: caPEM}, KindUnknown},
		{"strict with tls_server_name", Config{Encrypt: "strict", CACert: caPEM, TLSServerName: "sql01.example.test"}, KindUnknown},
		{"strict naming another host", Config{Encrypt: "strict", CACert: caPEM, TLSServerName: "sql02.example.test"}, KindTLS},
		{"strict without the CA", Config{Encrypt: "strict"}, KindTLS},
		{"true trusting the server", Config{Encrypt: "true", TrustServerCertificate: true}, KindUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Username, cfg.Password = testLogin, testPassword
			r, err := New(cfg).Check(ctxFor(t, 20*time.Second), ep.target())
			if tc.kind == KindUnknown {
				if err != nil || r.IFIEnabled == nil || !*r.IFIEnabled {
					t.Fatalf("Check = %+v, %v", r, err)
				}
				return
			}
			e := asError(t, err)
			if e.Kind != tc.kind || e.Setting != SettingCACert || e.Encrypt != "strict" || !strings.Contains(e.Hint, "must name the host") {
				t.Fatalf("error = %v (kind %d, setting %d, encrypt %q)", err, e.Kind, e.Setting, e.Encrypt)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	_, err := New(Config{Username: "u", Encrypt: "maybe", CACert: []byte("nope")}).Check(ctxFor(t, 5*time.Second), Target{Host: "127.0.0.1", Port: 1})
	e := asError(t, err)
	if e.Kind != KindConfig || e.Setting != SettingEncrypt || !errors.Is(err, ErrEncrypt) || !strings.Contains(err.Error(), `encryption mode not supported: "maybe"`) || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Fatalf("error = %v", err)
	}
	if err := (Config{Username: "u", Password: "p", Encrypt: "strict"}).Validate(); err != nil {
		t.Fatal(err)
	}
}

// flakyListener drops the first n connections at once, like an Engine that listens
// but is still starting.
type flakyListener struct {
	net.Listener
	drop     int32
	accepted atomic.Int32
}

func (f *flakyListener) Accept() (net.Conn, error) {
	for {
		c, err := f.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if f.accepted.Add(1) <= f.drop {
			c.Close()
			continue
		}
		return c, nil
	}
}

func TestWaitReadyRetriesUntilLogin(t *testing.T) {
	var fl *flakyListener
	ep := serve(t, &sqlServer{engineIFI: "Y"}, tds.Options{}, func(l net.Listener) net.Listener {
		fl = &flakyListener{Listener: l, drop: 2}
		return fl
	})
	if err := New(plainConfig()).WaitReady(ctxFor(t, 20*time.Second), ep.target()); err != nil {
		t.Fatal(err)
	}
	if n := fl.accepted.Load(); n != 3 {
		t.Fatalf("WaitReady connected %d times, want 3 (two dropped, one login)", n)
	}
}

// After a restart SQL Server may refuse logins for a while; the wait must notice it
// is ready soon after, not back off for seconds. Six refused logins at a fixed
// 250 ms take 1.5 s; a backoff doubling from 250 ms would need 12.75 s and miss the
// 5 s deadline.
func TestWaitReadyPollsAtAFixedShortInterval(t *testing.T) {
	var fl *flakyListener
	ep := serve(t, &sqlServer{engineIFI: "Y"}, tds.Options{}, func(l net.Listener) net.Listener {
		fl = &flakyListener{Listener: l, drop: 6}
		return fl
	})
	if err := New(plainConfig()).WaitReady(ctxFor(t, 5*time.Second), ep.target()); err != nil {
		t.Fatalf("WaitReady did not see SQL Server accept a login after 6 refusals within 5 s: %v", err)
	}
	if n := fl.accepted.Load(); n != 7 {
		t.Fatalf("WaitReady connected %d times, want 7 (six dropped, one login)", n)
	}
}

func TestWaitReadyStopsAtDeadline(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	begin := time.Now()
	err = New(plainConfig()).WaitReady(ctxFor(t, 1200*time.Millisecond), Target{Host: "127.0.0.1", Port: port, Instance: "MSSQLSERVER"})
	e := asError(t, err)
	if e.Kind != KindTimeout || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "attempts") {
		t.Fatalf("error = %v (kind %d)", err, e.Kind)
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Fatalf("WaitReady returned %v after its deadline", d)
	}
}

func TestWaitReadyGivesUpOnWrongPassword(t *testing.T) {
	ep := serve(t, &sqlServer{engineIFI: "Y"}, tds.Options{}, nil)
	cfg := plainConfig()
	cfg.Password = "wrong"
	begin := time.Now()
	err := New(cfg).WaitReady(ctxFor(t, 30*time.Second), ep.target())
	if e := asError(t, err); e.Kind != KindAuth {
		t.Fatalf("error = %v", err)
	}
	// Before its 30 s deadline (an order, not a speed): polling on would take it all.
	if d := time.Since(begin); d >= 30*time.Second {
		t.Fatalf("a wrong password kept WaitReady polling until its deadline (%v)", d)
	}
}

func asError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *sqlcheck.Error", err, err)
	}
	return e
}

func ptr[T any](v T) *T { return &v }

func equalPtr[T comparable](a, b *T) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func show[T any](b *T) string {
	if b == nil {
		return "nil"
	}
	return fmt.Sprint(*b)
}

// A port that refuses connections (nothing listens yet) is tried again after 50 ms:
// the refusal never reaches SQL Server. One where something answers (here each
// connection is accepted and closed) is tried every 250 ms, no faster.
func TestWaitReadyPollsARefusingPortSoonerThanAnAnsweringOne(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	err = New(plainConfig()).WaitReady(ctxFor(t, 1200*time.Millisecond), Target{Host: "127.0.0.1", Port: port, Instance: "MSSQLSERVER"})
	var attempts int
	if _, serr := fmt.Sscanf(err.Error()[strings.Index(err.Error(), "(")+1:], "%d attempts", &attempts); serr != nil {
		t.Fatalf("no attempt count in %v", err)
	}
	// At 250 ms a time, 1.2 s holds at most 5 attempts; at 50 ms about 24.
	if attempts <= 5 {
		t.Errorf("a refusing port was tried %d times in 1.2 s: not sooner than every %s", attempts, ReadyPollInterval)
	}
	var fl *flakyListener
	ep := serve(t, &sqlServer{engineIFI: "Y"}, tds.Options{}, func(l net.Listener) net.Listener {
		fl = &flakyListener{Listener: l, drop: 4}
		return fl
	})
	begin := time.Now()
	if err := New(plainConfig()).WaitReady(ctxFor(t, 5*time.Second), ep.target()); err != nil {
		t.Fatal(err)
	}
	// Four answered failures, four intervals of at least 250 ms each (timers never
	// fire early).
	if d := time.Since(begin); d < 4*ReadyPollInterval {
		t.Errorf("an answering port was tried again sooner than every %s (%v for %d connections)", ReadyPollInterval, d, fl.accepted.Load())
	}
}

// The answer counts only for the instance that gave it: SQL Server at the port
// names itself (SERVERPROPERTY('InstanceName'), NULL for the default instance), and
// a connection that reached another instance of the host fails, naming both and the
// port, without a report that could stand for the asked instance.
func TestCheckRefusesTheAnswerOfAnotherInstance(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answers  any    // SERVERPROPERTY('InstanceName')
		asked    string // Target.Instance
		wantFail bool
	}{
		{"the default instance answers for itself", nil, "MSSQLSERVER", false},
		{"names compare without case", "INST02", "inst02", false},
		{"another named instance at the port", "INST01", "INST02", true},
		{"the default instance at a named instance's port", nil, "INST02", true},
		{"a named instance at the default instance's port", "INST02", "MSSQLSERVER", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := serve(t, &sqlServer{engineIFI: "N", instance: tc.answers}, tds.Options{}, nil)
			target := ep.target()
			target.Instance = tc.asked
			r, err := New(plainConfig()).Check(ctxFor(t, 20*time.Second), target)
			if !tc.wantFail {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				if !strings.EqualFold(r.InstanceName, tc.asked) || r.ProcessID != 4242 {
					t.Fatalf("report names instance %q, process %d; want %s, 4242", r.InstanceName, r.ProcessID, tc.asked)
				}
				return
			}
			e := asError(t, err)
			answered := contract.DefaultInstance
			if s, ok := tc.answers.(string); ok {
				answered = s
			}
			want := fmt.Sprintf("port %d answers for instance %s, not for %s", ep.port, answered, tc.asked)
			if r != nil || e.Kind != KindWrongInstance || e.Setting != SettingPort || !strings.Contains(err.Error(), want) {
				t.Fatalf("report %+v, error %v (kind %d); want no report and %q", r, err, e.Kind, want)
			}
		})
	}
}

// WaitReady after a restart waits for the asked instance: another instance that
// accepts logins at the port ends the wait at once with the mismatch, never with
// "ready".
func TestWaitReadyRefusesAnotherInstance(t *testing.T) {
	ep := serve(t, &sqlServer{engineIFI: "Y", instance: "INST01"}, tds.Options{}, nil)
	target := ep.target()
	target.Instance = "INST02"
	target.AnsweredTDS = true
	err := New(plainConfig()).WaitReady(ctxFor(t, 30*time.Second), target)
	if e := asError(t, err); e.Kind != KindWrongInstance || !strings.Contains(err.Error(), "answers for instance INST01, not for INST02") {
		t.Fatalf("WaitReady = %v; want the wrong instance named", err)
	}
}
