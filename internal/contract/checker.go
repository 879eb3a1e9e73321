package contract

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// SQLTarget is one instance's SQL endpoint.
type SQLTarget struct {
	Host string
	Port int
	// Instance is the instance expected to answer: the port decides where the
	// checker connects, and the answer counts only when SQL Server there says it is
	// this instance (SERVERPROPERTY('InstanceName'); the checker fails otherwise,
	// naming both). "" checks no name (a replica asked by its server name).
	Instance string
	// AnsweredTDS: SQL Server answered at Port before (a login, or an error that
	// SQL Server sent), so WaitReady waits for it until the deadline, as while it
	// recovers databases. Otherwise the port may be wrong, and WaitReady gives up
	// after NoTDSLimit without a TDS answer.
	AnsweredTDS bool
	// NoTDSLimit bounds how long WaitReady keeps trying while the port gives no TDS
	// answer (refused, or something else answers) when it was not seen answering
	// before, and how long any port may answer without TDS: 0 means the checker's
	// default (sqlcheck.DefaultNoTDSLimit).
	NoTDSLimit time.Duration
}

// SQLServerAnswered reports whether err, from an SQLChecker, came from SQL Server
// itself (an error it sent: a failed login, a permission or a query error), so the
// port is SQL Server's. The checker's errors say so with an AnsweredTDS method.
func SQLServerAnswered(err error) bool {
	var a interface{ AnsweredTDS() bool }
	return errors.As(err, &a) && a.AnsweredTDS()
}

// SQLLogonFailed reports whether err, from an SQLChecker, says the configured login
// could not log on (SQL Server, or the KDC, refused the login or its credential),
// as opposed to a server that could not be reached or did not answer in time. The
// checker's errors say so with a LogonFailed method.
func SQLLogonFailed(err error) bool {
	var l interface{ LogonFailed() bool }
	return errors.As(err, &l) && l.LogonFailed()
}

// SQLReport is what one connection to SQL Server learned.
type SQLReport struct {
	// InstanceName is the instance that answered: SERVERPROPERTY('InstanceName'),
	// DefaultInstance where SQL Server says NULL (the default instance).
	InstanceName string
	// ProcessID is SERVERPROPERTY('ProcessID'), the Engine's process id; 0 when
	// SQL Server did not say.
	ProcessID      int
	ProductVersion string
	ProductLevel   string
	Edition        string
	Clustered      bool
	// IFIColumnPresent is false when sys.dm_server_services has no
	// instant_file_initialization_enabled column (error 207): IFI is then unknown.
	IFIColumnPresent bool
	// IFIEnabled is the Engine row's column: nil when NULL or absent.
	IFIEnabled *bool
	// LastStartup is the Engine row's last_startup_time (UTC); nil when it could
	// not be read (no VIEW SERVER STATE, a build without the IFI column).
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
	// Primaries names, for each group the instance has a replica of, the server
	// instance hosting its primary replica (sys.dm_hadr_availability_group_states;
	// "" when the cluster cannot tell); nil when Always On is off.
	Primaries map[string]string
	// Requests are the commands of the requests running now (sys.dm_exec_requests),
	// each with its session; RunningBackups filters them.
	Requests []Request
	// MemoryModel is sys.dm_os_sys_info.sql_memory_model_desc (one of the
	// MemoryModel* constants); "" on a build without the column (before SQL Server
	// 2016 SP1), where the error log's line tells instead.
	MemoryModel string
	// MaxServerMemoryMB is max server memory (MB) in use (sys.configurations);
	// nil when SQL Server did not say.
	MaxServerMemoryMB *int64
	// MemoryErr is SQL Server's answer when it refused the memory query (a
	// permission, a view it lacks): the memory model and max server memory are
	// then unknown, which the rest of the check does not depend on.
	MemoryErr string
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
func (r *SQLReport) RunningBackups() []string {
	out := []string{}
	for _, q := range r.Requests {
		c := strings.ToUpper(strings.TrimSpace(q.Command))
		if strings.HasPrefix(c, "BACKUP") || strings.HasPrefix(c, "RESTORE") {
			out = append(out, fmt.Sprintf("%s (session %d)", c, q.Session))
		}
	}
	return out
}

// SQLChecker asks SQL Server itself, beside Host's WinRM operations:
// internal/sqlcheck implements it with go-mssqldb; internal/converge drives it;
// tests fake it.
type SQLChecker interface {
	// Check opens one connection, runs the queries of sql.go and closes it.
	Check(ctx context.Context, t SQLTarget) (*SQLReport, error)
	// WaitReady polls until a login succeeds or ctx ends (after a restart).
	WaitReady(ctx context.Context, t SQLTarget) error
}
