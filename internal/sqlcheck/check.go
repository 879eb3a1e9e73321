package sqlcheck

import (
	"context"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	mssql "github.com/microsoft/go-mssqldb"
	"github.com/microsoft/go-mssqldb/msdsn"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/testhooks"
)

// checker is a Checker over go-mssqldb. It keeps no connections: every Check opens
// one and closes it.
type checker struct {
	cfg Config
}

// New returns a Checker for cfg. Configuration mistakes surface from Validate, and
// from every Check as a KindConfig *Error.
func New(cfg Config) Checker {
	cfg.SetDefaults()
	return &checker{cfg: cfg}
}

// connector builds the driver's configuration through a URL (the password escaped by
// url.UserPassword), then puts the CA certificate into its TLS configuration, so no
// file is needed.
//
// done removes what the connector's login reads from files written for it (a UPN
// keytab's copy under the account's name); call it once the connection is open.
func (c *checker) connector(t Target, limit time.Duration) (connector *mssql.Connector, done func(), err error) {
	done = func() {}
	if err := c.cfg.Validate(); err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return nil, done, err
		}
		e.Target = t
		return nil, done, e
	}
	port := t.Port
	if port == 0 {
		port = DefaultPort
	}
	q := url.Values{}
	q.Set("encrypt", c.cfg.Encrypt)
	if c.cfg.TrustServerCertificate {
		q.Set("trustservercertificate", "true")
	}
	if c.cfg.TLSServerName != "" {
		q.Set("hostnameincertificate", c.cfg.TLSServerName)
	}
	appName := c.cfg.AppName
	if appName == "" {
		appName = contract.UserAgent("")
	}
	q.Set("app name", appName)
	user := url.UserPassword(c.cfg.Username, c.cfg.Password)
	if c.cfg.Auth == AuthKerberos {
		l, err := c.cfg.kerberosLogon()
		if err != nil {
			if e := c.kerberosError(t, err); e != nil {
				return nil, done, e
			}
			return nil, done, &Error{Target: t, Kind: KindConfig, Message: "Kerberos login: " + err.Error(), Err: err}
		}
		err = l.canonicalize()
		if l.cleanup != nil {
			done = l.cleanup
		}
		if err != nil {
			if e := c.kerberosError(t, err); e != nil {
				return nil, done, e
			}
			return nil, done, &Error{Target: t, Kind: KindAuth, Message: "Kerberos login: " + err.Error(), Err: err}
		}
		user = l.kerberosQuery(q, c.cfg.SPNFor(t), c.cfg.Password)
	}
	u := &url.URL{
		Scheme:   "sqlserver",
		User:     user,
		Host:     net.JoinHostPort(t.Host, strconv.Itoa(port)),
		RawQuery: q.Encode(),
	}
	dsn, err := msdsn.Parse(u.String())
	if err != nil {
		return nil, done, &Error{Target: t, Kind: KindConfig, Message: "invalid SQL connection settings: " + err.Error(), Err: err}
	}
	// Each read and write waits at most limit (the driver sees the context only
	// while it dials): a port that accepts connections but never answers (not SQL
	// Server) fails in that time, not at the caller's deadline.
	dsn.ConnTimeout = limit
	if len(c.cfg.CACert) > 0 && dsn.TLSConfig != nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(c.cfg.CACert)
		dsn.TLSConfig.RootCAs = pool
	}
	return mssql.NewConnectorConfig(dsn), done, nil
}

// open logs in once and returns the connection (and the pool to close with it).
func (c *checker) open(ctx context.Context, t Target) (*sql.DB, *sql.Conn, error) {
	return c.openWithin(ctx, t, LoginTimeout)
}

// openWithin is open, the connection and login bounded by limit.
func (c *checker) openWithin(ctx context.Context, t Target, limit time.Duration) (*sql.DB, *sql.Conn, error) {
	connector, done, err := c.connector(t, limit)
	defer done()
	if err != nil {
		return nil, nil, err
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(1)
	// A port that accepts connections but never answers (not SQL Server) must not
	// hold the caller until its deadline.
	lctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	conn, err := db.Conn(lctx)
	if err != nil {
		db.Close()
		return nil, nil, c.classify(ctx, t, err)
	}
	return db, conn, nil
}

func (c *checker) Check(ctx context.Context, t Target) (*Report, error) {
	start := time.Now()
	r, err := c.check(ctx, t)
	fields := map[string]any{
		"host": t.Host, "port": t.Port, "instance": t.Instance, "user": c.cfg.Username, "auth": c.cfg.Auth,
		"encrypt": c.cfg.Encrypt, "duration_ms": time.Since(start).Milliseconds(),
	}
	if c.cfg.Auth == AuthKerberos {
		fields["spn"] = c.cfg.SPNFor(t)
	}
	if err != nil {
		fields["error"] = err.Error()
	} else {
		fields["ifi_column_present"] = r.IFIColumnPresent
		fields["hadr_enabled"] = r.HADREnabled
		fields["replicas"] = fmt.Sprint(r.Replicas)
		fields["memory_model"] = r.MemoryModel
		if r.MemoryErr != "" {
			fields["memory_error"] = r.MemoryErr
		}
		if r.IFIEnabled != nil {
			fields["ifi_enabled"] = *r.IFIEnabled
		}
	}
	contract.LoggerOrDiscard(c.cfg.Log).Debug(ctx, "SQL check finished", fields)
	return r, err
}

func (c *checker) check(ctx context.Context, t Target) (*Report, error) {
	db, conn, err := c.open(ctx, t)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	defer conn.Close()

	r := &Report{}
	var version, level, edition, instance sql.NullString
	var clustered, pid sql.NullInt64
	if err := conn.QueryRowContext(ctx, contract.QueryServerProperties).Scan(&version, &level, &edition, &clustered, &instance, &pid); err != nil {
		return nil, c.classify(ctx, t, err)
	}
	r.ProductVersion, r.ProductLevel, r.Edition = version.String, level.String, edition.String
	r.Clustered = clustered.Valid && clustered.Int64 == 1
	r.InstanceName, r.ProcessID = answeringInstance(instance), int(pid.Int64)
	if err := wrongInstance(t, r.InstanceName); err != nil {
		return nil, err
	}

	if err := c.services(ctx, t, conn, r); err != nil {
		return nil, err
	}
	if err := c.encrypted(ctx, t, conn, r); err != nil {
		return nil, err
	}
	if err := c.replicas(ctx, t, conn, r); err != nil {
		return nil, err
	}
	if err := c.requests(ctx, t, conn, r); err != nil {
		return nil, err
	}
	if err := c.memory(ctx, t, conn, r); err != nil {
		return nil, err
	}
	return r, nil
}

// memory reads the Engine's memory model and max server memory (QueryMemory). A
// build without sql_memory_model_desc (error 207, before SQL Server 2016 SP1)
// answers max server memory alone (QueryMaxServerMemory); its memory model is then
// the error log's. Any other refusal leaves both unknown (Report.MemoryErr): IFI's
// verification does not depend on them.
func (c *checker) memory(ctx context.Context, t Target, conn *sql.Conn, r *Report) error {
	var model sql.NullString
	var maxMB sql.NullInt64
	err := conn.QueryRowContext(ctx, contract.QueryMemory).Scan(&model, &maxMB)
	if sqlNumber(err) == contract.SQLErrInvalidColumn {
		model = sql.NullString{}
		err = conn.QueryRowContext(ctx, contract.QueryMaxServerMemory).Scan(&maxMB)
	}
	if sqlNumber(err) != 0 { // SQL Server answered and refused: unknown, said in MemoryErr
		r.MemoryErr = sqlMessage(err)
		return nil
	}
	if err != nil {
		return c.classify(ctx, t, err)
	}
	r.MemoryModel = strings.ToUpper(strings.TrimSpace(model.String))
	if maxMB.Valid {
		v := maxMB.Int64
		r.MaxServerMemoryMB = &v
	}
	return nil
}

// replicas reads the instance's availability group replicas, only when Always On
// is enabled: IsHadrEnabled 0 means none, NULL a build without the HADR views.
func (c *checker) replicas(ctx context.Context, t Target, conn *sql.Conn, r *Report) error {
	var hadr sql.NullInt64
	if err := conn.QueryRowContext(ctx, contract.QueryHADREnabled).Scan(&hadr); err != nil {
		return c.classify(ctx, t, err)
	}
	r.HADREnabled = hadr.Valid && hadr.Int64 == 1
	if !r.HADREnabled {
		return nil
	}
	rows, err := conn.QueryContext(ctx, contract.QueryReplicaStates)
	if err != nil {
		return c.classify(ctx, t, err)
	}
	defer rows.Close()
	for rows.Next() {
		var group, server, role, connected, health sql.NullString
		var local sql.NullBool
		if err := rows.Scan(&group, &server, &local, &role, &connected, &health); err != nil {
			return c.classify(ctx, t, err)
		}
		up := func(s sql.NullString) string { return strings.ToUpper(strings.TrimSpace(s.String)) }
		r.Replicas = append(r.Replicas, Replica{Group: group.String, Server: server.String, Local: local.Bool,
			Role: up(role), Connected: up(connected), Health: up(health)})
	}
	if err := rows.Err(); err != nil {
		return c.classify(ctx, t, err)
	}
	return c.primaries(ctx, t, conn, r)
}

// requests reads the requests running now (sys.dm_exec_requests).
func (c *checker) requests(ctx context.Context, t Target, conn *sql.Conn, r *Report) error {
	rows, err := conn.QueryContext(ctx, contract.QueryRequests)
	if err != nil {
		return c.classify(ctx, t, err)
	}
	defer rows.Close()
	r.Requests = []Request{}
	for rows.Next() {
		var session sql.NullInt64
		var command sql.NullString
		if err := rows.Scan(&session, &command); err != nil {
			return c.classify(ctx, t, err)
		}
		r.Requests = append(r.Requests, Request{Session: int(session.Int64), Command: command.String})
	}
	if err := rows.Err(); err != nil {
		return c.classify(ctx, t, err)
	}
	return nil
}

// services reads the Engine's row of sys.dm_server_services.
func (c *checker) services(ctx context.Context, t Target, conn *sql.Conn, r *Report) error {
	rows, err := conn.QueryContext(ctx, contract.QueryServerServices)
	if err != nil {
		if sqlNumber(err) == contract.SQLErrInvalidColumn {
			// Builds before 2012 SP4 / 2016 SP1 lack the column: IFI is unknown here.
			r.IFIColumnPresent = false
			return nil
		}
		return c.classify(ctx, t, err)
	}
	defer rows.Close()
	r.IFIColumnPresent = true
	for rows.Next() {
		var name, account, clustered, ifi sql.NullString
		var pid sql.NullInt64
		var started sql.NullTime
		if err := rows.Scan(&name, &pid, &started, &account, &clustered, &ifi); err != nil {
			return c.classify(ctx, t, err)
		}
		if !isEngine(name.String, r.InstanceName) {
			continue
		}
		r.ServiceAccount = account.String
		if started.Valid {
			ts := started.Time.UTC()
			r.LastStartup = &ts
		}
		if clustered.String == "Y" {
			r.Clustered = true
		}
		r.IFIEnabled = yesNo(ifi)
	}
	if err := rows.Err(); err != nil {
		if sqlNumber(err) == contract.SQLErrInvalidColumn {
			r.IFIColumnPresent = false
			return nil
		}
		return c.classify(ctx, t, err)
	}
	return nil
}

// isEngine tells the Database Engine's row of instance ("SQL Server (MSSQLSERVER)",
// "SQL Server (INST01)": the service's display name as Setup names it) from the
// Agent's ("SQL Server Agent (MSSQLSERVER)"), other services' and any other
// instance's.
func isEngine(serviceName, instance string) bool {
	return strings.EqualFold(serviceName, "SQL Server ("+instance+")")
}

// answeringInstance is the instance SERVERPROPERTY('InstanceName') names: the
// default instance when it says NULL.
func answeringInstance(name sql.NullString) string {
	if !name.Valid || strings.TrimSpace(name.String) == "" {
		return contract.DefaultInstance
	}
	return name.String
}

// wrongInstance is the error of a connection to t that reached instance instead of
// t.Instance (another instance of the host listens at t.Port: a dynamic port taken
// after a reboot, a sql_port copied from another resource); nil when they are the
// same, or t names no instance. Nothing of its answer may stand for t's instance.
func wrongInstance(t Target, instance string) *Error {
	if t.Instance == "" || strings.EqualFold(t.Instance, instance) {
		return nil
	}
	port := t.Port
	if port == 0 {
		port = DefaultPort
	}
	return &Error{
		Target: t, Kind: KindWrongInstance, Setting: SettingPort,
		Message: fmt.Sprintf("port %d answers for instance %s, not for %s (SERVERPROPERTY('InstanceName')): another instance of the host listens there, "+
			"so its answer says nothing about %s", port, safetext.Escape(instance), t.Instance, t.Instance),
		Hint: fmt.Sprintf("Use the TCP port instance %s listens on (SQL Server Configuration Manager, TCP/IP, IPAll); a dynamic port changes when the instance restarts", t.Instance),
	}
}

func yesNo(v sql.NullString) *bool {
	if !v.Valid {
		return nil
	}
	var b bool
	switch strings.ToUpper(strings.TrimSpace(v.String)) {
	case "Y":
		b = true
	case "N":
		b = false
	default:
		return nil
	}
	return &b
}

// encrypted lists the TDE databases: encryption in progress (2) or encrypted (3),
// tempdb (database_id 2) left out since it follows any TDE database.
func (c *checker) encrypted(ctx context.Context, t Target, conn *sql.Conn, r *Report) error {
	rows, err := conn.QueryContext(ctx, contract.QueryEncryptedDatabases)
	if err != nil {
		return c.classify(ctx, t, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, state sql.NullInt64
		var name sql.NullString
		if err := rows.Scan(&id, &name, &state); err != nil {
			return c.classify(ctx, t, err)
		}
		if id.Int64 == 2 || (state.Int64 != 2 && state.Int64 != 3) {
			continue
		}
		n := name.String
		if !name.Valid || n == "" {
			n = "database_id " + strconv.FormatInt(id.Int64, 10)
		}
		r.EncryptedDatabases = append(r.EncryptedDatabases, n)
	}
	if err := rows.Err(); err != nil {
		return c.classify(ctx, t, err)
	}
	return nil
}

// LoginTimeout bounds each read and write of a connection (the login and the
// checks' queries): SQL Server answers within seconds even while it recovers
// databases. readyLoginTimeout bounds those of WaitReady's logins, which it repeats.
// (Both divided by testhooks.SQLLoginDivisor, which is 1 outside the provider's
// acceptance tests.)
var (
	LoginTimeout      = 10 * time.Second / time.Duration(testhooks.SQLLoginDivisor())
	readyLoginTimeout = 5 * time.Second / time.Duration(testhooks.SQLLoginDivisor())
)

// ReadyPollInterval is how often WaitReady tries a login once something answered
// at the port (a login SQL Server refused, a connection that timed out). It is
// fixed and short, so the wait ends at most this long after SQL Server accepts
// logins (a growing backoff used to wait seconds after SQL Server was ready), and
// four logins a second are nothing to an Engine recovering its databases.
const ReadyPollInterval = 250 * time.Millisecond

// ReadyRefusedPollInterval is how soon WaitReady tries again after the port
// refused the connection (nothing listens: the Engine has not opened its listener
// yet). The refusal is the host's TCP stack answering a SYN with a reset, one
// round trip that never reaches SQL Server, so trying every 50 ms costs the Engine
// nothing and finds the listener open within 50 ms rather than 250.
const ReadyRefusedPollInterval = 50 * time.Millisecond

// DefaultReadyTimeout bounds WaitReady when ctx carries no deadline of its own.
const DefaultReadyTimeout = 10 * time.Minute

// WaitReady polls a login every ReadyPollInterval until one succeeds or the
// deadline passes (ctx's, else DefaultReadyTimeout). A wrong password ends the wait
// at once: waiting cannot fix it. A port that was not seen answering TDS
// (t.AnsweredTDS false) and gives no TDS answer for t.NoTDSLimit ends it too, as
// does a port that answers without TDS for that long: both name the port. Only a
// port seen answering TDS is waited on until the deadline (recovering databases).
func (c *checker) WaitReady(ctx context.Context, t Target) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultReadyTimeout)
		defer cancel()
	}
	var last error
	limit := t.NoTDSLimit
	if limit <= 0 {
		limit = DefaultNoTDSLimit
	}
	start := time.Now()
	tds := t.AnsweredTDS
	var otherSince time.Time // when the current run of non-TDS answers began
	for attempt := 1; ; attempt++ {
		began := time.Now()
		db, conn, err := c.openWithin(ctx, t, readyLoginTimeout)
		if err == nil {
			var instance string
			instance, err = c.instanceName(ctx, t, conn)
			conn.Close()
			db.Close()
			if err == nil {
				err = wrongInstance(t, instance).orNil()
			}
		}
		if err == nil {
			contract.LoggerOrDiscard(c.cfg.Log).Debug(ctx, "SQL Server accepts logins", map[string]any{"host": t.Host, "port": t.Port, "instance": t.Instance, "attempts": attempt})
			return nil
		}
		var e *Error
		if errors.As(err, &e) && (e.Kind == KindAuth || e.Kind == KindConfig || e.Kind == KindTLS || e.Kind == KindWrongInstance) {
			return err // waiting cannot fix it (another instance accepting logins there is not this one starting)
		}
		last = err
		refused := errors.As(err, &e) && e.Kind == KindUnreachable && e.Setting == SettingPort
		silent := errors.As(err, &e) && e.Kind == KindTimeout // no answer at all within LoginTimeout
		switch {
		case AnsweredTDS(err):
			tds, otherSince = true, time.Time{}
		case refused || silent || ctx.Err() != nil:
			otherSince = time.Time{}
		case otherSince.IsZero():
			otherSince = time.Now()
		}
		if since := time.Since(start); !tds && since >= limit {
			return noTDSError(t, err, refused, since, attempt, "it was not seen answering as SQL Server before the restart either")
		}
		if !otherSince.IsZero() && time.Since(otherSince) >= limit {
			return noTDSError(t, err, false, time.Since(otherSince), attempt, "something answers there, but not SQL Server")
		}
		// The next attempt one interval after this one began (its own time counts).
		every := ReadyPollInterval
		if refused {
			every = ReadyRefusedPollInterval
		}
		next := time.NewTimer(max(every-time.Since(began), 0))
		select {
		case <-ctx.Done():
			next.Stop()
			return &Error{
				Target: t, Kind: KindTimeout, Err: errors.Join(ctx.Err(), last),
				Message: fmt.Sprintf("SQL Server did not accept a login within the deadline (%d attempts, one every %s, every %s while the port refused connections); last error: %s",
					attempt, ReadyPollInterval, ReadyRefusedPollInterval, messageOf(last)),
				Hint: fmt.Sprintf("It answered at port %d before, so it may still be recovering databases: look at the SQL Server error log", t.Port),
			}
		case <-next.C:
		}
	}
}

// orNil is e as an error: nil when e is (no typed nil in an error).
func (e *Error) orNil() error {
	if e == nil {
		return nil
	}
	return e
}

// instanceName asks the instance conn reached for its name (answeringInstance).
func (c *checker) instanceName(ctx context.Context, t Target, conn *sql.Conn) (string, error) {
	var version, level, edition, instance sql.NullString
	var clustered, pid sql.NullInt64
	if err := conn.QueryRowContext(ctx, contract.QueryServerProperties).Scan(&version, &level, &edition, &clustered, &instance, &pid); err != nil {
		return "", c.classify(ctx, t, err)
	}
	return answeringInstance(instance), nil
}

// noTDSError is WaitReady's failure for a port that gave no TDS answer for since.
func noTDSError(t Target, err error, refused bool, since time.Duration, attempts int, why string) *Error {
	msg := fmt.Sprintf("port %d of %s gave no SQL Server (TDS) answer for %s (%d attempts) although the service was started; %s; last error: %s",
		t.Port, t.Host, since.Round(time.Second), attempts, why, messageOf(err))
	if refused {
		msg = fmt.Sprintf("nothing accepts connections on port %d of %s: refused for %s (%d attempts) although the service was started; %s; last error: %s",
			t.Port, t.Host, since.Round(time.Second), attempts, why, messageOf(err))
	}
	return &Error{
		Target: t, Kind: KindUnreachable, Setting: SettingPort, Err: err, Message: msg,
		Hint: fmt.Sprintf("Check that %d is the TCP port instance %s listens on (SQL Server Configuration Manager, TCP/IP, IPAll) "+
			"and that the firewall allows it", t.Port, t.Instance),
	}
}

func messageOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}

// Open logs in to t as Check does and returns the connection, for a program that
// sends its own statements (the real-host suite, internal/hostsuite). limit bounds
// the login and each read and write of the connection (0: LoginTimeout); a statement
// that runs longer, such as a CREATE DATABASE that zeroes a large file, needs a limit
// above its duration. Close the connection, then the pool.
func Open(ctx context.Context, cfg Config, t Target, limit time.Duration) (*sql.DB, *sql.Conn, error) {
	cfg.SetDefaults()
	if limit <= 0 {
		limit = LoginTimeout
	}
	return (&checker{cfg: cfg}).openWithin(ctx, t, limit)
}
