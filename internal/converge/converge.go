// Package converge brings one SQL Server instance to what the user asked for:
// observe the host, decide (internal/ifi), change the right's holders, restart the
// Engine, wait for SQL Server, read back and check. It also owns the recovery after a
// failed step and the destroy path.
//
// It is plain Go: no Terraform types. It talks to hosts and SQL Server through the
// narrow interfaces below, and returns an Outcome, ifi.Warning values and typed
// errors (*Error), which the Terraform layer turns into state and diagnostics.
package converge

import (
	"context"
	"fmt"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
)

// Host runs the contract's operations on one host (remote.Host satisfies it).
type Host = contract.Host

// Clients opens the clients the engine needs. Implementations may open them lazily
// and share them between instances.
type Clients interface {
	// Host returns the client of one host's WinRM listener, or a nil Host and the
	// error; port 0 means the configured default.
	Host(host string, port int) (Host, error)
	// SQLChecker returns the SQL Server checker, or (nil, nil) when no SQL
	// credentials are configured.
	SQLChecker() (contract.SQLChecker, error)
}

// Logger receives what an operator needs to follow an apply (contract.Logger).
type Logger = contract.Logger

// Clock is the engine's time: tests give a fake one.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx ends (then it returns ctx.Err()).
	Sleep(ctx context.Context, d time.Duration) error
}

// Target names one instance and how to reach it.
type Target struct {
	Host     string
	Instance string
	Port     int // WinRM port override; 0: the provider's setting
	SQLPort  int // SQL port override; 0: what the host reports
	// SQLPortHint is the port the last observation saw (0: none). It only lets the
	// SQL check start alongside read_instance; where SQL Server is asked is still
	// SQLPort, else what the host reports now.
	SQLPortHint int
	// Read is what read_instance reported of this instance at ReadAt in an earlier
	// operation (the plan's refresh, kept in the private state). Apply uses it instead
	// of reading the host again while it is at most Engine.ReadFreshness old; SQL
	// Server is asked again in any case. nil: none.
	Read   *contract.ReadInstanceResult
	ReadAt time.Time
	// ReplicaAddresses maps availability replica names (as SQL Server reports them,
	// such as SQL01 or SQL01\INST; case-insensitive) to the address the provider
	// reaches their SQL Server at, host or host:port, where those names do not
	// resolve from where Terraform runs. A secondary's group health and restart
	// lock are asked of its primary there. nil: none (a pointer, so that Target
	// stays comparable).
	ReplicaAddresses *ReplicaAddresses
}

// String names the target for messages, its user-supplied text escaped (safetext).
func (t Target) String() string {
	return fmt.Sprintf("instance %s on %s", safetext.Escape(t.Instance), safetext.Escape(t.Host))
}

// Default durations.
const (
	// DefaultRecoveryTimeout is the least time the read-back after a failed step is
	// given: it runs until the operation's deadline, and this long past it when the
	// deadline has passed, so an apply ends within its timeout and half a minute.
	DefaultRecoveryTimeout = 20 * time.Second
	// DefaultReadFreshness is how old the plan's read_instance may be for an apply to
	// use it instead of reading again: long enough for terraform apply -auto-approve
	// (or a quick "yes") to go from the plan's refresh to the apply, short enough that
	// a change on the host in between is unlikely.
	DefaultReadFreshness = 30 * time.Second
	// readBackMargin is kept from the operation's deadline for what follows a
	// restart (wait for SQL, read back).
	readBackMargin = 30 * time.Second
	// minRestartSeconds and noDeadlineRestartSeconds bound restart_instance's wait.
	minRestartSeconds        = 30
	noDeadlineRestartSeconds = 600
)

// MaxOperationTimeout is the longest operation the engine can honour: the restart
// it may run is limited to contract.MaxRestartSeconds on the host.
const MaxOperationTimeout = contract.MaxRestartSeconds * time.Second

// MinRestartTimeout is the shortest wait restart_instance is given.
const MinRestartTimeout = minRestartSeconds * time.Second

// Engine converges instances. The zero value is not usable: set Clients.
type Engine struct {
	Clients Clients
	Log     Logger // nil: no logging
	Clock   Clock  // nil: SystemClock
	// RecoveryTimeout is the least time the read-back after a failed step is given; 0: DefaultRecoveryTimeout.
	RecoveryTimeout time.Duration
	// ReadFreshness is how old Target.Read may be for Apply to use it; 0:
	// DefaultReadFreshness, negative: Apply always reads.
	ReadFreshness time.Duration
	// Restarts bounds concurrent restarts across the instances this engine (and
	// any other sharing the limiter) converges; nil: no limit.
	Restarts *RestartLimiter
	// SQLOptional: a configured SQL login that cannot log on (contract.SQLLogonFailed)
	// is a warning, and verification falls back to the error log. Otherwise it is
	// the observation's error (KindSQLLogonFailed), before anything is changed.
	SQLOptional bool

	// reads: one read per host per run (hostReads).
	reads hostReads
	// goSlotWait is how long a prepared gated restart waits for the limit's slot
	// before it lets its request end (0: goSlotWait); tests shorten it.
	goSlotWait time.Duration
}

// New returns an engine over c with the system clock and no logging.
func New(c Clients) *Engine { return &Engine{Clients: c} }

// Outcome is what an operation leaves behind.
type Outcome struct {
	// Assessment is what is true on the host now, for the computed attributes; nil
	// when it is not known (the caller keeps its previous state).
	Assessment *ifi.Assessment
	// Enabled is the value the `enabled` argument should hold in the state. After
	// an apply it is always the asked value, failed or not: the state keeps the
	// configuration's intent, and the computed attributes (with the caller's
	// unverified mark after a failure) say what the host has, so that a half-done
	// change is finished in place rather than undone. After a read it is the asked
	// value when the instance is as asked, else its opposite (EnabledInState).
	Enabled bool
	// LockPages is the value lock_pages_in_memory should hold in the state: what
	// was asked, always (a drift shows in lock_pages_in_memory_granted,
	// memory_model and planned_action, as enabled's does in privilege_granted);
	// nil when it is not managed.
	LockPages *bool
	// Changed: the host was changed (a right was granted or revoked, or a restart
	// was attempted). Restarted: the Engine was restarted.
	Changed   bool
	Restarted bool
	// Warnings for the user, in order: the observation's, then the decision's.
	Warnings []ifi.Warning
	// IneffectiveRestart is the lesson for the caller to keep for the next
	// operation (in Desired): the one this apply's restart taught, nil after a
	// restart that went as expected, else the one it was given.
	IneffectiveRestart *ifi.IneffectiveRestart
	// SQLPort is the TCP port the host reported in the observation the Assessment
	// comes from (0: none); the caller keeps it as the next Target.SQLPortHint.
	SQLPort int
	// Read is the read_instance the Assessment comes from, asked at ReadAt (nil when
	// none was made); the caller keeps them as the next Target.Read and ReadAt.
	Read   *contract.ReadInstanceResult
	ReadAt time.Time
	// Verification is what SQL Server (or the error log) said in that observation;
	// with Read, it lets the next plan predict the apply (ifi.Predict).
	Verification ifi.Verification
	// Action is what the apply did, or refused (ifi.ActionOf); "" from a read.
	Action ifi.Action
	// LastRestart is this apply's timing of its restart, from the request to SQL
	// Server accepting connections (nil when it made none, or the restart failed);
	// the caller keeps it for the next plan's "unavailable for about N s".
	LastRestart *ifi.MeasuredRestart
}

// EnabledInState is the `enabled` value that says what is true: d.Enabled when the
// instance is as asked, else the opposite.
func EnabledInState(d ifi.Desired, a *ifi.Assessment) bool {
	if a.Converged {
		return d.Enabled
	}
	return !d.Enabled
}

// clock is the engine's Clock, SystemClock when none is set.
func (e *Engine) clock() Clock {
	if e.Clock == nil {
		return SystemClock{}
	}
	return e.Clock
}

func (e *Engine) debug(ctx context.Context, msg string, fields map[string]any) {
	progress(ctx, true, msg, fields) // a restart on its own says it as it goes (restart_now.go)
	if e.Log != nil {
		e.Log.Debug(ctx, msg, fields)
	}
}

func (e *Engine) info(ctx context.Context, msg string, fields map[string]any) {
	progress(ctx, false, msg, fields)
	if e.Log != nil {
		e.Log.Info(ctx, msg, fields)
	}
}

// SystemClock is the real time.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Sleep waits d or until ctx ends.
func (SystemClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// restartSeconds is the time left for restart_instance: the context's deadline
// minus a margin for reading back, at least 30 seconds.
func (e *Engine) restartSeconds(ctx context.Context) int {
	dl, ok := ctx.Deadline()
	if !ok {
		return noDeadlineRestartSeconds
	}
	left := int((dl.Sub(e.clock().Now()) - readBackMargin) / time.Second)
	return min(max(left, minRestartSeconds), contract.MaxRestartSeconds)
}
