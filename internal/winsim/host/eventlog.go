package host

import (
	"fmt"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// The Application event log, as far as the provider writes to it: every grant,
// revoke and restart leaves an entry (event_log.ps1, Write-ChangeEvent) under the
// source contract.EventSource, which the first entry registers
// ([System.Diagnostics.EventLog]::CreateEventSource: a key under
// HKLM\SYSTEM\CurrentControlSet\Services\EventLog\Application, administrators only).
// A host where registering fails (HostConfig.EventSourceDenied) keeps the change and
// answers with a warning, as the script does.

// EventLogEntry is one entry of the Application event log written by the
// provider's scripts.
type EventLogEntry struct {
	Time     time.Time `json:"time"`
	Source   string    `json:"source"`
	EventID  int       `json:"event_id"`
	Change   string    `json:"change"` // "grant", "revoke" or "restart"
	Instance string    `json:"instance"`
	SID      string    `json:"sid"`
	Account  string    `json:"account"`    // the logged-on account (WindowsIdentity.GetCurrent().Name)
	Agent    string    `json:"user_agent"` // the provider's User-Agent, as its parameters say
}

// EventLog returns the entries the provider's scripts wrote, oldest first.
func (h *Host) EventLog() []EventLogEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]EventLogEntry{}, h.eventLog...)
}

// EventSourceRegistered says whether the provider's event source exists.
func (h *Host) EventSourceRegistered() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.eventSource
}

// writeChangeEvent is Write-ChangeEvent: it registers the source on first use and
// appends the entry, or returns the warning the script puts in its result.
func (h *Host) writeChangeEvent(change, instance, sid, account, agent string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.eventSource {
		if h.cfg.EventSourceDenied {
			return fmt.Sprintf("The %s was made, but it could not be written to the Application event log of %s (event source %s): "+
				"Requested registry access is not allowed.", change, h.computer, contract.EventSource)
		}
		h.eventSource = true
	}
	id := map[string]int{"grant": contract.EventGrant, "revoke": contract.EventRevoke, "restart": contract.EventRestart}[change]
	h.eventLog = append(h.eventLog, EventLogEntry{Time: h.now().UTC(), Source: contract.EventSource, EventID: id, Change: change,
		Instance: instance, SID: sid, Account: account, Agent: agent})
	return ""
}
