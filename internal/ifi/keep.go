package ifi

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

// KeepForDecisions is the part of read_instance's answer ri that a later decision
// on the instance uses (Assess, PlanApply, Predict), for the engine's memo in the
// private state (converge.Memo): the same decisions, without what the host told
// about other principals.
//   - Administrators' direct members: only the start account's membership (the
//     Engine's token holds Administrators through it), and a digest of the whole
//     list (AdministratorsDigest), which tells whether an ineffective restart's
//     lesson still applies (IneffectiveRestart);
//   - the right's holders: only the SIDs that can be in the Engine's token (the
//     start account, the service SID, Administrators and the well-known groups
//     tokenSIDs lists) and those of keep (the grantee, so that a moved grant is
//     revoked; a lesson's holders, which must still hold the right);
//   - the host's other instances: none.
//
// Everything else (service state, start account, the Group Policy's holder list,
// which the plan's warning names, the error log's line) is kept as it is.
func KeepForDecisions(ri *contract.ReadInstanceResult, keep ...string) *contract.ReadInstanceResult {
	if ri == nil {
		return nil
	}
	r := *ri
	r.InstalledInstances = nil
	acct := ri.StartAccountSID
	if acct == "" {
		acct, _ = winsid.WellKnownAccountSID(ri.StartAccount)
	}
	r.AdministratorsDigest = administratorsDigest(ri)
	r.AdministratorsMembers = nil
	for _, m := range ri.AdministratorsMembers {
		if acct != "" && strings.EqualFold(m.SID, acct) {
			r.AdministratorsMembers = []contract.Principal{{SID: m.SID}}
		}
	}
	service := "" // the service SID, from the Engine's own name only (Assess refuses any other)
	if contract.CheckEngineServiceName(ri.Instance, ri.ServiceName) == nil {
		service = winsid.ServiceSID(ri.ServiceName)
	}
	relevant := map[string]bool{}
	for _, s := range append([]string{acct, service, winsid.Administrators, winsid.Everyone,
		winsid.AuthenticatedUsers, winsid.ServiceLogon, winsid.Users, winsid.AllServices}, keep...) {
		if s != "" {
			relevant[strings.ToUpper(s)] = true
		}
	}
	r.RightHolders = relevantHolders(ri.RightHolders, relevant)
	if ri.LockPages != nil {
		lp := *ri.LockPages
		lp.Holders = relevantHolders(ri.LockPages.Holders, relevant)
		r.LockPages = &lp
	}
	return &r
}

// relevantHolders are the holders whose SIDs are relevant, SIDs only.
func relevantHolders(hs []contract.Principal, relevant map[string]bool) []contract.Principal {
	var out []contract.Principal
	for _, h := range hs {
		if relevant[strings.ToUpper(h.SID)] {
			out = append(out, contract.Principal{SID: h.SID})
		}
	}
	return out
}

// administratorsDigest is the digest of Administrators' direct members in ri: the
// one a kept read carries, or the SHA-256 of their sorted, upper-cased SIDs.
func administratorsDigest(ri *contract.ReadInstanceResult) string {
	if ri.AdministratorsDigest != "" {
		return ri.AdministratorsDigest
	}
	return digestOf(upperSorted(sidsOf(ri.AdministratorsMembers)))
}

func digestOf(sids []string) string {
	sum := sha256.Sum256([]byte(strings.Join(sids, "\n")))
	return hex.EncodeToString(sum[:])
}
