package ifi

import (
	"fmt"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

// Assess compares what the user asked for with what the host reports.
func Assess(d Desired, o Observed) (*Assessment, error) {
	ri := o.Instance
	if ri == nil || !ri.Found {
		return nil, fmt.Errorf("instance %q is not installed on %s", instanceName(o), safetext.Escape(o.Host))
	}
	// The service name is the host's text: a SID is computed from it and messages
	// show it, so only the Engine's own name is taken.
	if err := contract.CheckEngineServiceName(ri.Instance, ri.ServiceName); err != nil {
		return nil, fmt.Errorf("the host %s reports a service name for instance %s that cannot be its Database Engine's: %w. "+
			"No service SID is computed from it and nothing is changed; check the instance's registry entries and services on the host "+
			"(Get-Service 'MSSQL*')", safetext.Escape(o.Host), safetext.Escape(instanceName(o)), err)
	}
	if d.Grantee == "" {
		d.Grantee = GranteeServiceSID
	}
	if d.Restart == "" {
		d.Restart = RestartIfNeeded
	}
	a := &Assessment{
		Host:           o.Host,
		Instance:       ri.Instance,
		ServiceName:    ri.ServiceName,
		ServiceAccount: ri.StartAccount,
		ServiceSID:     winsid.ServiceSID(ri.ServiceName),
		VerifiedBy:     o.Verification.Source,
		SQLVersion:     o.Verification.SQLVersion,
		TDEDatabases:   o.Verification.TDEDatabases,
		Clustered:      ri.Clustered || o.Verification.Clustered,
		AG:             o.Verification.AG,
		desired:        d,
		observed:       o,
	}
	if a.SQLVersion == "" {
		a.SQLVersion = ri.Version
	}
	if a.VerifiedBy == "" {
		a.VerifiedBy = SourceNone
	}
	a.ServiceAccountSID = ri.StartAccountSID
	if a.ServiceAccountSID == "" {
		if sid, ok := winsid.WellKnownAccountSID(ri.StartAccount); ok {
			a.ServiceAccountSID = sid
		}
	}
	switch d.Grantee {
	case GranteeServiceSID:
		a.GranteeSID = a.ServiceSID
	case GranteeServiceAccount:
		if a.ServiceAccountSID == "" {
			return nil, fmt.Errorf("cannot resolve the start account %q of %s on %s (instance %s) to a SID; "+
				"use grantee = \"service_sid\", or fix the account's name resolution on the host",
				safetext.Escape(ri.StartAccount), ri.ServiceName, safetext.Escape(o.Host), safetext.Escape(ri.Instance))
		}
		a.GranteeSID = a.ServiceAccountSID
	default:
		return nil, fmt.Errorf("unknown grantee %q: use \"service_sid\" or \"service_account\"", d.Grantee)
	}

	if hiddenApplies(d.IneffectiveRestart, a.ServiceAccountSID, o) {
		a.hidden = d.IneffectiveRestart
		a.IneffectiveRestart = a.hidden
	}
	holders := sidSet(ri.RightHolders)
	a.PrivilegeGranted = holders[a.GranteeSID]
	a.EffectiveAtNextStart, a.EffectiveVia, a.EffectiveViaOther = a.effective(holders)
	if !d.Enabled {
		// What stays effective once the grantee's own grant is gone.
		rest := sidSet(ri.RightHolders)
		delete(rest, a.GranteeSID)
		a.staysOn, a.staysOnVia, _ = a.effective(rest)
	}
	a.TraceFlag1806 = hasTraceFlag1806(ri.StartupParameters)
	a.ExpectedRunning = a.EffectiveAtNextStart && !a.TraceFlag1806

	if o.Verification.Source != SourceNone && o.Verification.Source != "" && o.Verification.Enabled != nil {
		v := *o.Verification.Enabled
		a.RunningIFI = &v
		p := v != a.ExpectedRunning
		a.RestartPending = &p
	} else {
		a.VerifiedBy = SourceNone
	}

	a.GroupPolicyKnown = ri.GroupPolicy.Known
	a.GroupPolicyManaged = ri.GroupPolicy.Known && ri.GroupPolicy.Defined
	if a.GroupPolicyManaged {
		a.GroupPolicyHolders = ri.GroupPolicy.Holders
	}

	pendingBlocks := d.Restart.Restarts() && a.RestartPending != nil && *a.RestartPending
	if d.Enabled {
		a.Converged = a.PrivilegeGranted && !pendingBlocks
	} else {
		a.Converged = !a.PrivilegeGranted && !pendingBlocks
	}

	a.assessLockPages()
	a.Warnings = append(a.warnings(), a.lockPagesWarnings()...)
	return a, nil
}

func instanceName(o Observed) string {
	if o.Instance != nil && o.Instance.Instance != "" {
		return o.Instance.Instance
	}
	return "(unknown)"
}

// where names the instance for messages.
func (a *Assessment) where() string {
	return fmt.Sprintf("instance %s on %s", safetext.Escape(a.Instance), safetext.Escape(a.Host))
}

// tokenSIDs lists the SIDs of the Engine's token at its next start, each with why.
func (a *Assessment) tokenSIDs() []struct{ sid, why string } {
	ri := a.observed.Instance
	var t []struct{ sid, why string }
	add := func(sid, why string) {
		if sid != "" {
			t = append(t, struct{ sid, why string }{sid, why})
		}
	}
	acct := a.ServiceAccountSID
	add(acct, fmt.Sprintf("the start account %s holds the right directly", safetext.Escape(a.ServiceAccount)))
	if ri.ServiceSIDType == 1 || ri.ServiceSIDType == 3 {
		add(a.ServiceSID, fmt.Sprintf("the service SID %s holds the right", winsid.ServiceAccountName(a.ServiceName)))
		add(winsid.AllServices, `NT SERVICE\ALL SERVICES holds the right`)
	}
	admin := acct == winsid.LocalSystem
	for _, m := range ri.AdministratorsMembers {
		if acct != "" && strings.EqualFold(m.SID, acct) {
			admin = true
		}
	}
	if admin {
		add(winsid.Administrators, fmt.Sprintf("the start account %s is a member of Administrators, which holds the right", safetext.Escape(a.ServiceAccount)))
	}
	add(winsid.Everyone, "Everyone holds the right")
	add(winsid.AuthenticatedUsers, "Authenticated Users hold the right")
	add(winsid.ServiceLogon, "SERVICE holds the right")
	add(winsid.Users, "Users hold the right")
	return t
}

// effective says whether the token at the next start holds the right given holders,
// why, and whether that is through something other than the grantee's direct grant.
func (a *Assessment) effective(holders map[string]bool) (bool, string, bool) {
	return a.effectiveWith(holders, a.hidden)
}

// effectiveWith is effective for any right's holders: hidden is a membership the
// host does not report that counts as a holder path (IFI's IneffectiveRestart), nil
// for none.
func (a *Assessment) effectiveWith(holders map[string]bool, hidden *IneffectiveRestart) (bool, string, bool) {
	if holders[a.GranteeSID] {
		for _, t := range a.tokenSIDs() {
			if t.sid == a.GranteeSID {
				return true, t.why, false
			}
		}
	}
	if a.ServiceAccountSID == winsid.LocalSystem {
		return true, fmt.Sprintf("the start account %s is LocalSystem, which always has the right", safetext.Escape(a.ServiceAccount)), true
	}
	for _, t := range a.tokenSIDs() {
		if holders[t.sid] {
			return true, t.why, true
		}
	}
	if hidden != nil && hidden.covers(holders) {
		return true, a.hiddenVia(), true
	}
	return false, "", false
}

// holdersAfter is the SID set of a right's holders ps once the steps of that right
// are made, in order (the steps of the other right left aside).
func holdersAfter(ps []contract.Principal, steps []Step, right string) map[string]bool {
	holders := sidSet(ps)
	for _, s := range steps {
		switch {
		case s.RightOf() != right:
		case s.Grant:
			holders[s.SID], holders[strings.ToUpper(s.SID)] = true, true
		default:
			delete(holders, s.SID)
			delete(holders, strings.ToUpper(s.SID))
		}
	}
	return holders
}

func sidSet(ps []contract.Principal) map[string]bool {
	m := make(map[string]bool, len(ps))
	for _, p := range ps {
		m[strings.ToUpper(p.SID)] = true
		m[p.SID] = true
	}
	return m
}

func hasTraceFlag1806(params []string) bool {
	for _, p := range params {
		if strings.EqualFold(strings.TrimSpace(p), "-T1806") {
			return true
		}
	}
	return false
}

func (a *Assessment) policyLists(sid string) bool { return listsSID(a.GroupPolicyHolders, sid) }

// listsSID reports whether a policy's holder list names sid.
func listsSID(holders []contract.Principal, sid string) bool {
	for _, p := range holders {
		if strings.EqualFold(p.SID, sid) {
			return true
		}
	}
	return false
}
