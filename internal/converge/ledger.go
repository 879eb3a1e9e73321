package converge

import (
	"fmt"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
)

// ledger is what an operation records as it goes: an Outcome, or a ClusterOutcome
// for a failover cluster instance.
type ledger interface {
	// changed records that the host was changed.
	changed()
	// unanswered records a set_right whose answer was lost: the request may have
	// arrived. A ClusterOutcome counts it as a change (unknown is unsafe); an
	// Outcome counts only what the host confirmed.
	unanswered()
	warn(w ifi.Warning)
	// fail records on err what the operation had done so far.
	fail(err *Error) *Error
}

func (o *Outcome) changed()           { o.Changed = true }
func (o *Outcome) unanswered()        {}
func (o *Outcome) warn(w ifi.Warning) { o.Warnings = append(o.Warnings, w) }

// WarnEventLog: a change was made but not written to the host's event log.
const WarnEventLog = "event_log"

// eventLogWarning records in out that a change on t's host (node: the failover
// cluster node it is, "" for none) left no entry in its event log (the host says
// why: contract.SetRightResult.EventLogWarning); "" records nothing.
func eventLogWarning(out ledger, t Target, node, why string) {
	if why == "" {
		return
	}
	on := t.String()
	if node != "" {
		on += " (node " + safetext.Escape(node) + ")"
	}
	out.warn(ifi.Warning{Code: WarnEventLog, Summary: "Change not recorded in the host's event log",
		Detail: fmt.Sprintf("On %s: %s", on, why)})
}

// fail records on err what the operation had done so far.
func (o *Outcome) fail(err *Error) *Error {
	err.Changed = err.Changed || o.Changed
	err.Restarted = err.Restarted || o.Restarted
	return err
}
