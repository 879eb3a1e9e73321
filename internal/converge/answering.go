package converge

import (
	"fmt"
	"strings"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
)

// EngineStartSkew is how far SQL Server's start time (sys.dm_server_services
// last_startup_time) may lie from the start of the process the host reports for
// the instance (Get-Process StartTime) and still be that process's: the Engine
// records its start while it starts, seconds after Windows created the process. A
// process id reused after a restart is hours or days away from the start it had.
const EngineStartSkew = 2 * time.Minute

// WrongInstanceError says that SQL Server at a port answered as another Engine than
// the one the host reports for the target's instance: another instance of the host
// listens there (a dynamic port taken after a reboot, a port configured for
// another instance), or another machine's. Nothing of that answer stands for the instance.
type WrongInstanceError struct {
	Target Target
	// Where is the host and port asked.
	Where string
	Port  int
	// Answered is the instance SQL Server named (SERVERPROPERTY('InstanceName')),
	// its process id and start (0 and nil when not said).
	Answered        string
	AnsweredPID     int
	AnsweredStarted *time.Time
	// Reported is what the host reported for the target's instance.
	ReportedPID     int
	ReportedStarted *time.Time
	// Why is what differs.
	Why string
}

func (e *WrongInstanceError) Error() string {
	return fmt.Sprintf("SQL Server at %s is not the Engine the host reports for instance %s: it answers as instance %s (process %s, started %s), "+
		"while the host reports %s's Engine as process %s, started %s (%s). Its answer says nothing about %s; "+
		"SQL Server is to be asked at the TCP port instance %s listens on (a dynamic port changes when the instance restarts)",
		e.Where, e.Target.Instance, safetext.Escape(e.Answered), pidText(e.AnsweredPID), timeText(e.AnsweredStarted),
		e.Target.Instance, pidText(e.ReportedPID), timeText(e.ReportedStarted), e.Why, e.Target.Instance, e.Target.Instance)
}

func pidText(pid int) string {
	if pid == 0 {
		return "unknown"
	}
	return fmt.Sprint(pid)
}

func timeText(t *time.Time) string {
	if t == nil {
		return "unknown"
	}
	return t.UTC().Format(time.RFC3339)
}

// answeredFor checks that rep, SQL Server's answer at st, came from the Engine the
// host reported in ri for t's instance: the same instance name (the default
// instance's is MSSQLSERVER), the same process id, and a start within
// EngineStartSkew of the process's. What cannot be compared (a process id either
// side does not give) fails: unknown is unsafe, as every guard that needed SQL
// Server's answer refuses without it. The start time is compared when both sides
// give it (a login without VIEW SERVER STATE, or a build without the IFI column,
// reads no last_startup_time).
func answeredFor(t Target, st *contract.SQLTarget, ri *contract.ReadInstanceResult, rep *contract.SQLReport) error {
	e := &WrongInstanceError{Target: t, Where: fmt.Sprintf("%s:%d", safetext.Escape(st.Host), st.Port), Port: st.Port,
		Answered: rep.InstanceName, AnsweredPID: rep.ProcessID, AnsweredStarted: rep.LastStartup,
		ReportedPID: ri.ProcessID, ReportedStarted: ri.ProcessStartTime}
	switch {
	case !strings.EqualFold(rep.InstanceName, t.Instance):
		e.Why = fmt.Sprintf("instance %s answered at port %d, not %s", safetext.Escape(rep.InstanceName), st.Port, t.Instance)
	case rep.ProcessID == 0 || ri.ProcessID == 0:
		e.Why = "the process id could not be compared"
	case rep.ProcessID != ri.ProcessID:
		e.Why = fmt.Sprintf("process %d answered at port %d, not %d", rep.ProcessID, st.Port, ri.ProcessID)
	case rep.LastStartup != nil && ri.ProcessStartTime != nil &&
		rep.LastStartup.Sub(*ri.ProcessStartTime).Abs() > EngineStartSkew:
		e.Why = fmt.Sprintf("the Engine that answered started %s from the process the host reports", rep.LastStartup.Sub(*ri.ProcessStartTime).Abs().Round(time.Second))
	default:
		return nil
	}
	return e
}
