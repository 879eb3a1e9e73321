package contract

import (
	"context"
	"strings"
)

// A gated restart (RestartInstanceParams.AwaitGo) holds the provider's restart
// slot only for the outage (design/restart.md, "A slot held for the outage"): the
// command is on the host, its powershell.exe started and its checks done (the
// parameters, the guard's file, the host's restart lease free and held) before the
// provider takes the slot. The script then prints the progress line
// "#mssqlifi-progress prepared <restart_id>" and waits on its stdin, at most
// GoSeconds, for the line "go <restart_id>", which the provider sends when it holds
// the slot. Anything else (the end of stdin, another line, the deadline, the shell
// deleted) ends the request with CodeRestartNotStarted, having changed nothing.
// After the go line the request runs as an ungated one, and prints
// "#mssqlifi-progress started <restart_id>" when the Engine runs again: the
// provider gives the slot back once SQL Server also accepts a login, before the
// output is collected and the shell deleted. A request that joins a restart in
// progress prints neither line and waits for no go line.

// ProgressPrefix starts a progress line on a script's stdout; the result is the
// output without these lines (StripProgress).
const ProgressPrefix = "#mssqlifi-progress "

// Progress events of a gated restart.
const (
	ProgressPrepared = "prepared" // ready to restart; waiting for the go line
	ProgressStarted  = "started"  // the Engine runs again after the stop
)

// CodeRestartNotStarted is a gated restart_instance's answer (exit ExitRefused) when
// no go line came: nothing was changed or stopped.
const CodeRestartNotStarted = "restart_not_started"

// MaxGoSeconds bounds RestartInstanceParams.GoSeconds.
const MaxGoSeconds = MaxRestartSeconds

// GoLine is the line that lets the gated restart id go.
func GoLine(id string) string { return "go " + id + "\n" }

// ParseProgress reads one line of a script's stdout as a progress line: its event
// and restart id; false for any other line.
func ParseProgress(line string) (event, id string, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimRight(line, "\r\n"), ProgressPrefix)
	if !found {
		return "", "", false
	}
	event, id, found = strings.Cut(rest, " ")
	if !found || event == "" || id == "" || strings.ContainsAny(id, " \t") {
		return "", "", false
	}
	return event, id, true
}

// StripProgress is stdout without its progress lines.
func StripProgress(stdout []byte) []byte {
	s := string(stdout)
	if !strings.Contains(s, ProgressPrefix) {
		return stdout
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if _, _, ok := ParseProgress(line); ok {
			continue
		}
		b.WriteString(line)
	}
	return []byte(b.String())
}

// RestartGate is what a gated restart asks of its caller.
type RestartGate interface {
	// Prepared is called when the host is ready to restart (ProgressPrepared); it
	// returns once the restart may go (the caller holds its slot), or with an error,
	// which ends the request without the go line (nothing changes on the host).
	Prepared(ctx context.Context) error
	// Started is called when the host says the Engine runs again (ProgressStarted).
	Started()
}

// GateNotPassedError is a gated restart that ended before its go line was sent (a
// lost connection, a deadline): whatever the host received, it changed nothing,
// since nothing changes before the go line.
type GateNotPassedError struct{ Err error }

func (e *GateNotPassedError) Error() string {
	return "the restart ended before its go line was sent (nothing was changed): " + e.Err.Error()
}

func (e *GateNotPassedError) Unwrap() error { return e.Err }

// GatedRestarter is a Host that can run a gated restart (remote.Host does).
type GatedRestarter interface {
	RestartInstanceGated(ctx context.Context, p RestartInstanceParams, gate RestartGate) (*RestartInstanceResult, error)
}
