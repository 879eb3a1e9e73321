package converge

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

// Warnings are news, not weather. A standing condition of an instance (a TDE
// database, a Group Policy, a pending restart, SQL Server that cannot be asked, a
// logon that fell back to NTLM) is said by the refresh when it first appears or
// changes, and by the plan of a change it matters to; the memo keeps what was said.
// The apply does not repeat what its plan said.

// standing are the warning codes of standing conditions.
var standing = []string{ifi.WarnTDE, ifi.WarnStaysOn, ifi.WarnRestartPending, ifi.WarnUnverified, ifi.WarnSIDTypeNone,
	ifi.WarnTraceFlag1806, ifi.WarnGroupPolicy, ifi.WarnNotRunning, ifi.WarnAGUnknown, ifi.WarnGPUnknown, ifi.WarnHiddenMembership,
	ifi.WarnFailedCreate, WarnSQLSetup, WarnSQLPortUnknown, WarnSQLCheck, WarnGroupNotHealthy}

func isStanding(w ifi.Warning) bool { return slices.Contains(standing, w.Code) }

// outcome are the standing conditions a change can bring about (the apply's own
// news when it does): a pending restart, IFI that stays on, a replica its restart
// left not HEALTHY (or whose group failed over meanwhile).
var outcome = []string{ifi.WarnRestartPending, ifi.WarnStaysOn, ifi.WarnHiddenMembership, ifi.WarnNotRunning, WarnGroupNotHealthy}

// digest names a warning's text, so that a changed condition is said again.
func digest(w ifi.Warning) string {
	h := sha256.Sum256([]byte(w.Code + "\x00" + w.Summary + "\x00" + w.Detail))
	return hex.EncodeToString(h[:8])
}

// news is what of ws a refresh says: every warning that is not a standing
// condition, and each standing one the memo does not hold as said; the memo then
// holds the standing conditions of ws (one that ends is said again when it returns).
func (m *Memo) news(ws []ifi.Warning) []ifi.Warning {
	said := m.Said
	m.Said = nil
	var out []ifi.Warning
	for _, w := range ws {
		if !isStanding(w) {
			out = append(out, w)
			continue
		}
		d := digest(w)
		if !slices.Contains(said, d) {
			out = append(out, w)
		}
		m.Said = append(m.Said, d)
	}
	return out
}

// told is what of an apply's warnings ws the apply says: not what its plan said.
// An update's plan refreshed the memo, so a standing condition the memo holds as
// said is left out and a new one (found by the apply) is said; a create's plan read
// the host moments ago and said every condition it found there, but not those the
// change brings about (outcome). Every standing condition is then recorded as said.
func (m *Memo) told(ws []ifi.Warning, create bool) []ifi.Warning {
	if !create {
		return m.news(ws)
	}
	m.Said = nil
	var out []ifi.Warning
	for _, w := range ws {
		if isStanding(w) {
			m.Said = append(m.Said, digest(w))
			if !slices.Contains(outcome, w.Code) {
				continue
			}
		}
		out = append(out, w)
	}
	return out
}

// fallbackReporter is a host client that says why auth "negotiate" used NTLM
// (remote's).
type fallbackReporter interface{ NTLMFallback() string }

// ntlmFallback is why the run reaches t's host with NTLM instead of Kerberos; ""
// when it does not, or the client cannot say.
func (s *Session) ntlmFallback(t Target) string {
	h, err := s.Engine.Clients.Host(t.Host, t.Port)
	if err != nil {
		return ""
	}
	if r, ok := h.(fallbackReporter); ok {
		return r.NTLMFallback()
	}
	return ""
}

// sayFallback is the NTLM fallback to say for an operation on t that changes the
// host, or the first that reached it in this run: once per host and run.
func (s *Session) sayFallback(t Target) string {
	why := s.ntlmFallback(t)
	if why == "" {
		return ""
	}
	if _, isNew := s.Once("ntlm "+NewInstanceKey(t.Host, "").Host, ""); !isNew {
		return ""
	}
	return why
}

// refreshFallback is the NTLM fallback a refresh of t says: when it first appears
// or its cause changed since the memo's (once per host and run).
func (s *Session) refreshFallback(t Target, m *Memo) string {
	why := s.ntlmFallback(t)
	was := m.NTLMFallback
	m.NTLMFallback = why
	if why == "" || why == was {
		return ""
	}
	return s.sayFallback(t)
}
