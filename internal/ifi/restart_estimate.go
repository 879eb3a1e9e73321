package ifi

import (
	"fmt"
	"strconv"
	"time"
)

// How long a restart makes the instance unavailable, as the plan says it ("the
// instance is unavailable for about N s"). The figure comes from what the provider
// observed itself: the last restart it made of this instance, timed by the engine
// from its restart request to SQL Server accepting connections again (kept in the
// engine's memo, converge.Memo). Without one (a create, or an instance this provider
// never restarted) the plan gives DefaultRestartUnavailable with "typically at
// least": the host does not say how long its Engine takes to start and recover.

// DefaultRestartUnavailable is the plan's figure for a restart of an instance whose
// restart the provider has not timed: stopping SQL Server with its dependents,
// starting it and waiting for it to accept connections takes typically at least
// this long on a small instance; recovering large databases takes longer.
const DefaultRestartUnavailable = 30 * time.Second

// MeasuredRestart is the provider's own timing of its last restart of an instance.
type MeasuredRestart struct {
	// At is when the restart was requested (UTC).
	At time.Time `json:"at"`
	// Seconds is how long the instance was unavailable: from the restart request to
	// SQL Server accepting connections again (at least 1).
	Seconds int `json:"seconds"`
}

// MeasureRestart is the timing of a restart requested at start and ready at ready
// (nil when ready is not after start).
func MeasureRestart(start, ready time.Time) *MeasuredRestart {
	if !ready.After(start) {
		return nil
	}
	return &MeasuredRestart{At: start.UTC(), Seconds: max(int((ready.Sub(start)+time.Second/2)/time.Second), 1)}
}

// unavailableFor is how a restart's plan says how long the instance is unavailable:
// a short phrase for the warning's summary, and where the figure comes from, for
// its detail.
func unavailableFor(m *MeasuredRestart) (short, source string) {
	if m == nil || m.Seconds <= 0 {
		n := strconv.Itoa(int(DefaultRestartUnavailable / time.Second))
		return "unavailable for typically at least " + n + " s",
			"The instance is unavailable while it restarts: typically at least " + n + " s, longer while SQL Server recovers large " +
				"databases (this provider has not timed a restart of this instance yet)."
	}
	n := strconv.Itoa(m.Seconds)
	return "unavailable for about " + n + " s",
		fmt.Sprintf("The instance is unavailable for about %s s: its last restart by this provider (%s) took %s s from the restart "+
			"request to SQL Server accepting connections again; recovering databases may take longer.", n, m.At.UTC().Format(time.RFC3339), n)
}
