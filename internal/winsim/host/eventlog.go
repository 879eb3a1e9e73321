package host

import (
	"fmt"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// The Application event log, as far as the provider writes to it: every grant,
// revoke and restart leaves an entry (event_log.ps1, Write-ChangeEvent) under the
// source contract.EventSource, which each changing operation registers before its
// change when it is missing ([System.Diagnostics.EventLog]::CreateEventSource: a key
// under HKLM\SYSTEM\CurrentControlSet\Services\EventLog\Application,
// administrators only); a write within HostConfig.EventSourceRefreshMS of the
// registration fails, and the script writes once more a second later.
// A host where registering fails (HostConfig.EventSourceDenied) keeps the change and
// answers with a warning, as the script does.

// EventLogEntry is one entry of the Application event log written by the
// provider's scripts.
type EventLogEntry struct {
	Time     time.Time `json:"time"`
	Source   string    `json:"source"`
	EventID  int       `json:"event_id"`
	Change   string    `json:"change"`          // "grant", "revoke" or "restart"
	Right    string    `json:"right,omitempty"` // the right granted or revoked; "" for a restart
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

// registerEventSource is Register-ChangeEventSource, which the changing operations
// run before their change: CreateEventSource when the source does not exist (a
// host with EventSourceDenied refuses it; the write then fails).
func (h *Host) registerEventSource() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.eventSource && !h.cfg.EventSourceDenied {
		h.eventSource = true
		h.eventSourceAt = h.now()
	}
}

// eventSourceRefresh is how long a new source's writes fail (HostConfig.EventSourceRefreshMS).
func (h *Host) eventSourceRefresh() time.Duration {
	switch ms := h.cfg.EventSourceRefreshMS; {
	case ms < 0:
		return 0
	case ms == 0:
		return 200 * time.Millisecond
	default:
		return time.Duration(ms) * time.Millisecond
	}
}

// eventWriteRetryPause is Write-ChangeEvent's pause before its second write (Start-Sleep 1).
const eventWriteRetryPause = time.Second

// writeChangeEvent is Write-ChangeEvent: it writes the entry, once more after a
// pause when the first write fails, or returns the warning the script puts in its
// result. A write fails while the source is not registered, or was registered less
// than the refresh time ago.
func (h *Host) writeChangeEvent(change, right, instance, sid, account, agent string) string {
	why := ""
	for attempt := 1; attempt <= 2; attempt++ {
		if attempt == 2 {
			time.Sleep(eventWriteRetryPause) // the script's Start-Sleep, outside the lock
		}
		h.mu.Lock()
		switch {
		case !h.eventSource && h.cfg.EventSourceDenied:
			why = "the event source could not be registered: Requested registry access is not allowed.; " +
				fmt.Sprintf("The source '%s' is not registered in log 'Application'.", contract.EventSource)
		case !h.eventSource || h.now().Before(h.eventSourceAt.Add(h.eventSourceRefresh())):
			why = fmt.Sprintf("The source '%s' is not registered in log 'Application'. (It will not write to the event log.)", contract.EventSource)
		default:
			id := map[string]int{"grant": contract.EventGrant, "revoke": contract.EventRevoke, "restart": contract.EventRestart}[change]
			h.eventLog = append(h.eventLog, EventLogEntry{Time: h.now().UTC(), Source: contract.EventSource, EventID: id, Change: change, Right: right,
				Instance: instance, SID: sid, Account: account, Agent: agent})
			h.mu.Unlock()
			return ""
		}
		h.mu.Unlock()
	}
	return fmt.Sprintf("The %s was made, but it could not be written to the Application event log of %s (event source %s, tried twice): %s",
		change, h.computer, contract.EventSource, why)
}
