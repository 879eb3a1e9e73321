package ifi

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
)

// IneffectiveRestart is what an apply learned when a restart it made to turn IFI off
// left IFI on: the Engine's new token holds the right through something the host does
// not report, most likely a domain or nested group in Administrators whose members
// read_instance's local enumeration cannot expand (design/host-knowledge.md).
//
// The provider keeps it in the resource's private state and passes it back in
// Desired. While the start account, the right's holders and Administrators' direct
// members are what they were at that restart (holders may have been added) and SQL
// Server still reports IFI on, another restart would start the Engine with the same
// token: the assessment then expects IFI on, so no restart is planned, restart_pending
// is false and `enabled` shows no diff, and a warning names the likely cause.
type IneffectiveRestart struct {
	// StartAccountSID is the Engine's start account at the restart.
	StartAccountSID string `json:"start_account_sid"`
	// Holders are the right's direct holders at the restart (SIDs, upper-case, sorted).
	Holders []string `json:"holders"`
	// AdministratorsDigest is the digest of Administrators' direct members at the
	// restart (their sorted, upper-cased SIDs, as KeepForDecisions keeps them): the
	// lesson holds while they stay the same, and the memo keeps no member.
	AdministratorsDigest string `json:"administrators_digest"`
	// LegacyAdministrators is the member list an older version kept; Upgrade turns
	// it into AdministratorsDigest.
	LegacyAdministrators []string `json:"administrators,omitempty"`
	// ProcessStart is when the restarted Engine's process started (UTC); nil when
	// the host did not say.
	ProcessStart *time.Time `json:"process_start,omitempty"`
	// Source is how SQL Server's answer (IFI on) was read.
	Source Source `json:"source"`
}

// LearnIneffectiveRestart returns what an apply learns from a's reading of the
// instance right after its restart: non-nil when SQL Server reports IFI on although
// no holder the host reports reaches the start account and trace flag 1806 is off.
// The caller makes sure the Engine did restart (its process start time moved).
func LearnIneffectiveRestart(a *Assessment) *IneffectiveRestart {
	if a == nil || a.RunningIFI == nil || !*a.RunningIFI || a.ExpectedRunning || a.TraceFlag1806 || a.ServiceAccountSID == "" {
		return nil
	}
	ri := a.observed.Instance
	return &IneffectiveRestart{
		StartAccountSID:      strings.ToUpper(a.ServiceAccountSID),
		Holders:              upperSorted(sidsOf(ri.RightHolders)),
		AdministratorsDigest: administratorsDigest(ri),
		ProcessStart:         ri.ProcessStartTime,
		Source:               a.VerifiedBy,
	}
}

// hiddenApplies reports whether the lesson m still speaks for the instance as o
// reports it: same start account, same direct members of Administrators, SQL Server
// reporting IFI on now, and no trace flag 1806.
func hiddenApplies(m *IneffectiveRestart, accountSID string, o Observed) bool {
	ri := o.Instance
	v := o.Verification
	if m == nil || ri == nil || accountSID == "" || !strings.EqualFold(m.StartAccountSID, accountSID) {
		return false
	}
	if v.Source == SourceNone || v.Source == "" || v.Enabled == nil || !*v.Enabled || hasTraceFlag1806(ri.StartupParameters) {
		return false
	}
	return administratorsDigest(ri) == m.AdministratorsDigest
}

// Upgrade turns a lesson an older version kept (Administrators' members as a list)
// into today's (their digest).
func (m *IneffectiveRestart) Upgrade() {
	if m != nil && len(m.LegacyAdministrators) > 0 && m.AdministratorsDigest == "" {
		m.AdministratorsDigest = digestOf(upperSorted(m.LegacyAdministrators))
	}
	if m != nil {
		m.LegacyAdministrators = nil
	}
}

// covers reports whether holders include every holder of the lesson's restart: the
// right then reaches the start account at least as it did then.
func (m *IneffectiveRestart) covers(holders map[string]bool) bool {
	for _, s := range m.Holders {
		if !holders[strings.ToUpper(s)] {
			return false
		}
	}
	return true
}

// hiddenVia is the phrase that explains IFI through the lesson.
func (a *Assessment) hiddenVia() string {
	when := "after the provider's restart"
	if m := a.hidden; m != nil && m.ProcessStart != nil {
		when = fmt.Sprintf("after the provider's restart (Engine started %s)", m.ProcessStart.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("SQL Server reported IFI on %s although no holder of the right the host reports reaches the start account %s: "+
		"the start account most likely gets it through a domain or nested group in Administrators that the host's local "+
		"enumeration cannot expand", when, safetext.Escape(a.ServiceAccount))
}

// hiddenWarning says that IFI stays on through membership the host cannot see, and
// what to check.
func (a *Assessment) hiddenWarning() Warning {
	admins := principals(a.observed.Instance.AdministratorsMembers)
	if a.observed.Instance.AdministratorsDigest != "" { // a kept read (KeepForDecisions) names no member
		admins = "as on the host: the provider keeps no list of them"
	}
	return Warning{WarnHiddenMembership, "IFI stays on through a group the host cannot expand",
		fmt.Sprintf("On %s %s (direct members of Administrators: %s). The provider does not restart the service %s again for this "+
			"while the start account, the right's holders and Administrators' members stay as they are. To see why, list the "+
			"members of the domain groups in Administrators (Get-ADGroupMember -Identity GROUP -Recursive, or net group GROUP /domain), "+
			"or look at the groups and privileges of sqlservr.exe's token (whoami /groups /priv run as the start account, or Process "+
			"Explorer's Security tab). To turn IFI off, take %s out of that group, or run the service as an account outside "+
			"Administrators, then restart the service.",
			a.where(), a.hiddenVia(), admins, a.ServiceName, safetext.Escape(a.ServiceAccount)), nil}
}

func sidsOf(ps []contract.Principal) []string {
	s := make([]string, 0, len(ps))
	for _, p := range ps {
		s = append(s, p.SID)
	}
	return s
}

// upperSorted is sids upper-cased, sorted, without duplicates.
func upperSorted(sids []string) []string {
	u := make([]string, 0, len(sids))
	for _, s := range sids {
		u = append(u, strings.ToUpper(s))
	}
	slices.Sort(u)
	return slices.Compact(u)
}
