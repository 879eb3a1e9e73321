package converge

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

// Memo is what the engine keeps of one instance from one operation to the next;
// the caller stores it as opaque bytes (Encode, DecodeMemo), in Terraform's private
// state. It holds only what a later operation uses:
//   - Enabled: the `enabled` last applied (or adopted by an import), which a refresh
//     assesses against;
//   - IneffectiveRestart: the lesson of a restart that left IFI on (ifi), so that no
//     apply restarts again for nothing;
//   - LastRestart: the provider's timing of its last restart of the instance,
//     which the plan quotes ("unavailable for about N s");
//   - SQLPort: where SQL Server listened, so the next SQL check starts alongside
//     read_instance (Target.SQLPortHint);
//   - the last observation, Read at ReadAt with SQL Server's Verification: an apply
//     right after the plan uses the read instead of reading again
//     (DefaultReadFreshness), and the plan predicts the apply from both
//     (ifi.Predict). The read is the part of read_instance's answer for an
//     installed instance that those decisions use (ifi.KeepForDecisions): no member
//     of Administrators (only the start account's membership and a digest of the
//     list), no holder of the right that cannot reach the Engine's token, not the
//     host's other instances.
type Memo struct {
	Host               string                       `json:"host"`
	Instance           string                       `json:"instance"`
	Enabled            *bool                        `json:"enabled,omitempty"`
	IneffectiveRestart *ifi.IneffectiveRestart      `json:"ineffective_restart,omitempty"`
	LastRestart        *ifi.MeasuredRestart         `json:"last_restart,omitempty"`
	SQLPort            int                          `json:"sql_port,omitempty"`
	ReadAt             time.Time                    `json:"read_at,omitzero"`
	Read               *contract.ReadInstanceResult `json:"read,omitempty"`
	Verification       *ifi.Verification            `json:"verification,omitempty"`
	// Said: the standing conditions already said (digests, news.go); NTLMFallback:
	// why the host was last reached with NTLM instead of Kerberos ("" when not).
	Said         []string `json:"said,omitempty"`
	NTLMFallback string   `json:"ntlm_fallback,omitempty"`
}

// NewMemo is an empty memo of t's instance.
func NewMemo(t Target) *Memo { return &Memo{Host: t.Host, Instance: t.Instance} }

// DecodeMemo is the memo in b when it is of t's instance; otherwise (none,
// unreadable, another instance) an empty one: the engine then only reads again.
func DecodeMemo(b []byte, t Target) *Memo {
	var m Memo
	if len(b) == 0 || json.Unmarshal(b, &m) != nil || !strings.EqualFold(m.Host, t.Host) || !strings.EqualFold(m.Instance, t.Instance) {
		return NewMemo(t)
	}
	if m.IneffectiveRestart != nil && m.IneffectiveRestart.StartAccountSID == "" {
		m.IneffectiveRestart = nil
	}
	m.IneffectiveRestart.Upgrade()
	if m.LastRestart != nil && m.LastRestart.Seconds <= 0 {
		m.LastRestart = nil
	}
	if m.SQLPort < 0 || m.SQLPort > 65535 {
		m.SQLPort = 0
	}
	if m.Read != nil && !m.Read.Found {
		m.Read = nil
	}
	return &m
}

// Encode is the memo's bytes.
func (m *Memo) Encode() []byte {
	b, err := json.Marshal(m)
	if err != nil { // every field is plain data; keep nothing rather than fail
		return nil
	}
	return b
}

// Prime gives t and d what the memo knows: the SQL port, the last read and the
// lesson of an ineffective restart.
func (m *Memo) Prime(t *Target, d *ifi.Desired) {
	t.SQLPortHint = m.SQLPort
	if m.Read != nil {
		t.Read, t.ReadAt = m.Read, m.ReadAt
	}
	d.IneffectiveRestart = m.IneffectiveRestart
	d.LastRestart = m.LastRestart
}

// Remember keeps what the outcome of an operation on the memo's instance tells the
// next one.
func (m *Memo) Remember(out *Outcome) {
	if out == nil {
		return
	}
	m.IneffectiveRestart = out.IneffectiveRestart
	if out.LastRestart != nil {
		m.LastRestart = out.LastRestart
	}
	m.SQLPort = out.SQLPort
	m.Read, m.ReadAt, m.Verification = nil, time.Time{}, nil
	if out.Read != nil && out.Read.Found {
		var keep []string // the SIDs a later decision looks for among the right's holders
		if out.Assessment != nil {
			keep = append(keep, out.Assessment.GranteeSID) // the next update's PriorGranteeSID
		}
		if out.IneffectiveRestart != nil {
			keep = append(keep, out.IneffectiveRestart.Holders...)
		}
		v := out.Verification
		m.Read, m.ReadAt, m.Verification = ifi.KeepForDecisions(out.Read, keep...), out.ReadAt.UTC(), &v
	}
}

// DestroyPlanWarnings is what a planned destroy of the memo's instance leaves in
// effect, decided without contacting the host (a plan of a destroy reads nothing):
// from the memo's last observation when it has one, where the Engine keeping the
// right through Administrators or another holder is told apart from IFI staying on
// until the next restart; else from what the state says (ifiEnabled: nil when
// unknown). service names the Engine's service. On a failover cluster instance the
// memo's read speaks for one node only, so only the state is used.
func (m *Memo) DestroyPlanWarnings(d ifi.Desired, service string, ifiEnabled *bool, clustered bool) []ifi.Warning {
	if !clustered && m.Read != nil && m.Verification != nil {
		d.IneffectiveRestart = m.IneffectiveRestart
		o := ifi.Observed{Host: m.Host, Instance: m.Read, Verification: *m.Verification}
		if _, _, ws, err := ifi.PlanDestroy(d, o); err == nil {
			return slices.DeleteFunc(ws, func(w ifi.Warning) bool { return w.Code != ifi.WarnStaysOnDestroy })
		}
	}
	if ifiEnabled != nil && !*ifiEnabled {
		return nil
	}
	return []ifi.Warning{ifi.StaysOnAfterDestroy(m.Host, m.Instance, service)}
}
