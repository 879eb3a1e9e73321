// Package sqlcheck asks SQL Server itself whether Instant File Initialization is on,
// through go-mssqldb.
package sqlcheck

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Config holds the SQL credentials and TLS settings shared by every instance.
type Config struct {
	Username               string
	Password               string
	Encrypt                string // "strict", "true" or "disable"
	CACert                 []byte // PEM
	TrustServerCertificate bool
	TLSServerName          string // optional override of the name checked in the certificate
	// AppName is the connection's application name (LOGIN7 AppName; program_name in
	// sys.dm_exec_sessions), "terraform-provider-mssqlifi/<version>"; "": without the
	// version.
	AppName string
}

// WithAppName returns a copy of c with AppName set, or nil when c is nil (no SQL
// credentials configured).
func (c *Config) WithAppName(name string) *Config {
	if c == nil {
		return nil
	}
	cp := *c
	cp.AppName = name
	return &cp
}

// Target is one instance's SQL endpoint.
type Target struct {
	Host     string
	Port     int
	Instance string // for messages only; the port decides where we connect
	// AnsweredTDS: SQL Server answered at Port before (a login, or an error that
	// SQL Server sent), so WaitReady waits for it until the deadline, as while it
	// recovers databases. Otherwise the port may be wrong, and WaitReady gives up
	// after NoTDSLimit without a TDS answer.
	AnsweredTDS bool
	// NoTDSLimit bounds how long WaitReady keeps trying while the port gives no TDS
	// answer (refused, or something else answers) when it was not seen answering
	// before, and how long any port may answer without TDS: 0 means
	// DefaultNoTDSLimit.
	NoTDSLimit time.Duration
}

// DefaultNoTDSLimit is how long WaitReady waits for a TDS answer from a port not
// seen answering TDS before. SQL Server listens within seconds of its start, well
// before recovery ends, so a port that gives no TDS answer after this long is the
// wrong port (issue 14: a wrong sql_port that answered, but not with TDS, waited
// the whole timeout and blamed recovery). An apply with a wrong sql_port so ends
// within a minute.
const DefaultNoTDSLimit = 25 * time.Second

// AnsweredTDS reports whether err came from SQL Server itself (an error it sent:
// a failed login, a permission or a query error): the port is SQL Server's.
func AnsweredTDS(err error) bool {
	var e *Error
	return errors.As(err, &e) && (e.Number != 0 || e.Kind == KindAuth || e.Kind == KindPermission || e.Kind == KindQuery)
}

// Report is what one connection learned.
type Report struct {
	ProductVersion string
	ProductLevel   string
	Edition        string
	Clustered      bool
	// IFIColumnPresent is false when sys.dm_server_services has no
	// instant_file_initialization_enabled column (error 207): IFI is then unknown.
	IFIColumnPresent bool
	// IFIEnabled is the Engine row's column: nil when NULL or absent.
	IFIEnabled     *bool
	LastStartup    *time.Time
	ServiceAccount string
	// EncryptedDatabases are the TDE databases (encryption_state 2 or 3), tempdb excluded.
	EncryptedDatabases []string
	// HADREnabled: SERVERPROPERTY('IsHadrEnabled') is 1. When false (0, or NULL on
	// builds without Always On) Replicas is empty and the HADR views were not asked.
	HADREnabled bool
	// Replicas are the availability replicas the instance can see: its own (Local)
	// and, on a primary, the group's others.
	Replicas []Replica
	// Requests are the commands of the requests running now (sys.dm_exec_requests),
	// each with its session; RunningBackups filters them.
	Requests []Request
}

// Replica is one availability replica as sys.dm_hadr_availability_replica_states
// shows it.
type Replica struct {
	Group  string // sys.dm_hadr_name_id_map.ag_name ("" when not shown)
	Server string // replica_server_name ("" when not shown)
	Local  bool   // is_local: this instance's own replica
	Role   string // role_desc: PRIMARY, SECONDARY or RESOLVING ("" for a remote one not connected)
	// Connected and Health are connected_state_desc and synchronization_health_desc.
	Connected string
	Health    string
}

// Healthy: the replica is connected and its synchronization health is HEALTHY.
func (r Replica) Healthy() bool { return r.Connected == "CONNECTED" && r.Health == "HEALTHY" }

// Request is one row of sys.dm_exec_requests.
type Request struct {
	Session int
	Command string
}

// RunningBackups are the requests running a BACKUP or RESTORE command (which a
// restart ends), each as "BACKUP DATABASE (session 57)".
func (r *Report) RunningBackups() []string {
	out := []string{}
	for _, q := range r.Requests {
		c := strings.ToUpper(strings.TrimSpace(q.Command))
		if strings.HasPrefix(c, "BACKUP") || strings.HasPrefix(c, "RESTORE") {
			out = append(out, fmt.Sprintf("%s (session %d)", c, q.Session))
		}
	}
	return out
}

// Checker verifies instances.
type Checker interface {
	// Check opens one connection, runs the contract's queries and closes it.
	Check(ctx context.Context, t Target) (*Report, error)
	// WaitReady polls until a login succeeds or ctx ends (after a restart).
	WaitReady(ctx context.Context, t Target) error
}
