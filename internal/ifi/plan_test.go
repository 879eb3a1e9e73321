package ifi

import "testing"

// The destroy half of a replace keeps a grant its create grants again; every other
// destroy revokes (issue 24: a half-done change is adopted, not undone).
func TestPlanDestroyKeepsTheGrantForItsReplacement(t *testing.T) {
	same := Replacement{Host: "SQL01.corp.example.", Instance: "mssqlserver", Enabled: true, Grantee: GranteeServiceSID, GranteeSID: svcSID}
	for name, tc := range map[string]struct {
		mod  func(*Replacement)
		none bool // no replacement at all: the user's destroy
		keep bool
	}{
		"the same grant again":            {keep: true},
		"the grantee's SID not yet known": {mod: func(r *Replacement) { r.GranteeSID = "" }, keep: true},
		"the user's destroy":              {none: true},
		"the replacement disables IFI":    {mod: func(r *Replacement) { r.Enabled = false }},
		"another grantee":                 {mod: func(r *Replacement) { r.Grantee = "CORP\\sqlsvc" }},
		"another SID for the grantee":     {mod: func(r *Replacement) { r.GranteeSID = "S-1-5-21-1-2-3-1001" }},
		"another host":                    {mod: func(r *Replacement) { r.Host = "sql02.corp.example" }},
		"another instance":                {mod: func(r *Replacement) { r.Instance = "REPORTING" }},
	} {
		d := enable
		if !tc.none {
			r := same
			if tc.mod != nil {
				tc.mod(&r)
			}
			d.Replacement = &r
		}
		_, p, w, err := PlanDestroy(d, obs(dmv(true), holders(svcSID)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		kept := len(p.Steps) == 0
		if kept != tc.keep {
			t.Errorf("%s: steps %+v; want the grant kept %v", name, p.Steps, tc.keep)
		}
		said := false
		for _, x := range w {
			said = said || x.Code == WarnKeptForReplace
		}
		if said != tc.keep {
			t.Errorf("%s: warnings %+v; want the kept-for-replace warning %v", name, w, tc.keep)
		}
	}
}
