package host

import (
	"context"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tsql"
)

// The instance as its T-SQL engine (internal/winsim/tsql) sees it: sqlSide is
// the tsql.Instance the engine was given, the instance's state under the host's
// mutex.

// TDSHandler returns the instance's SQL side for the TDS endpoint.
func (i *Instance) TDSHandler() tds.Handler { return i.sql }

// serverName is COMPUTER for the default instance, COMPUTER\NAME for a named one;
// on a failover cluster instance the role's virtual name takes the computer's place
// (@@SERVERNAME, SERVERPROPERTY('ServerName')).
func (i *Instance) serverName() string {
	machine := i.machineName()
	if contract.IsDefaultInstance(i.name) {
		return machine
	}
	return machine + `\` + i.name
}

// machineName is SERVERPROPERTY('MachineName'): the computer's name, or on a
// failover cluster instance its virtual server's name.
func (i *Instance) machineName() string {
	if v, _ := i.virtualName.Load().(string); v != "" {
		return v
	}
	return i.h.computer
}

// DatabaseOperations returns the operations the instance remembers, oldest first.
func (i *Instance) DatabaseOperations() []tsql.DatabaseOperation {
	return i.sql.DatabaseOperations()
}

// AppLockWaits is how many sp_getapplock calls have had to wait since the host
// started (for tests: a second session is seen waiting, without a sleep).
func (h *Host) AppLockWaits(instance string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if inst, ok := h.instanceLocked(instance); ok {
		return inst.sql.AppLockWaitsLocked()
	}
	return 0
}

// AppLockHolders lists the sessions holding an application lock on resource in
// database db (for tests: who holds what, as sys.dm_tran_locks would show).
func (h *Host) AppLockHolders(instance, db, resource string) []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	inst, ok := h.instanceLocked(instance)
	if !ok {
		return nil
	}
	return inst.sql.AppLockHoldersLocked(db, resource)
}

// sqlSide is the instance as its T-SQL engine sees it (tsql.Instance).
type sqlSide struct{ i *Instance }

func (s sqlSide) Lock()               { s.i.h.mu.Lock() }
func (s sqlSide) Unlock()             { s.i.h.mu.Unlock() }
func (s sqlSide) ServerName() string  { return s.i.serverName() }
func (s sqlSide) ServiceName() string { return s.i.engine.name }

func (s sqlSide) Version() (uint8, uint8, uint16) {
	v := s.i.ver
	return uint8(v.Major), uint8(v.Minor), uint16(v.Build)
}

func (s sqlSide) Ready() bool                    { return s.i.Ready() }
func (s sqlSide) CountConnection(appName string) { s.i.countConnection(appName) }

// RunningIFI reports whether the running Engine has IFI.
func (s sqlSide) RunningIFI() bool {
	s.i.h.mu.Lock()
	defer s.i.h.mu.Unlock()
	return s.i.proc != nil && s.i.proc.IFI
}

func (s sqlSide) ServerProperty(name string) any { return s.i.serverProperty(name) }

func (s sqlSide) SystemViewLocked(name string) (tsql.Table, bool) {
	view, ok := sysViews[name]
	if !ok {
		return tsql.Table{}, false
	}
	return view(s.i)
}

func (s sqlSide) Now() time.Time { return s.i.h.now() }

func (s sqlSide) Sleep(ctx context.Context, d time.Duration) bool { return sleepContext(ctx, d) }
