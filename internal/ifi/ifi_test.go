package ifi

import (
	"errors"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract/contracttest"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

var (
	svcSID   = contracttest.ServiceSID
	acctSID  = contracttest.AccountSID
	adminSID = "S-1-5-21-1-2-3-500"
)

func ptr(b bool) *bool { return &b }

// inst is a running default instance started as a domain account, service SID type
// unrestricted, nobody holding the right.
func inst(mod ...func(*contract.ReadInstanceResult)) *contract.ReadInstanceResult {
	r := contracttest.RunningDefaultInstance()
	r.AdministratorsMembers = []contract.Principal{{SID: adminSID, Name: `SQL01\Administrator`}}
	for _, m := range mod {
		m(r)
	}
	return r
}

func holders(sids ...string) func(*contract.ReadInstanceResult) {
	return func(r *contract.ReadInstanceResult) {
		for _, s := range sids {
			r.RightHolders = append(r.RightHolders, contract.Principal{SID: s})
		}
	}
}

func gp(sids ...string) func(*contract.ReadInstanceResult) {
	return func(r *contract.ReadInstanceResult) {
		r.GroupPolicy.Defined = true
		for _, s := range sids {
			r.GroupPolicy.Holders = append(r.GroupPolicy.Holders, contract.Principal{SID: s})
		}
	}
}

func dmv(on bool) Verification {
	// SQL Server answered: the instance is in no availability group, no backup runs.
	return Verification{Source: SourceSQLDMV, Enabled: ptr(on), SQLVersion: "16.0.4135.4",
		AG: &AGMembership{Groups: []string{}}, RunningBackups: []string{}}
}

func obs(v Verification, mod ...func(*contract.ReadInstanceResult)) Observed {
	return Observed{Host: "sql01.corp.example", Instance: inst(mod...), Verification: v}
}

var (
	enable  = Desired{Enabled: true, Grantee: GranteeServiceSID, Restart: RestartIfNeeded}
	disable = Desired{Enabled: false, Grantee: GranteeServiceSID, Restart: RestartIfNeeded}
)

func withRestart(d Desired, r RestartPolicy) Desired { d.Restart = r; return d }

type stepWant struct {
	grant bool
	sid   string
}

func TestPlanApply(t *testing.T) {
	tests := []struct {
		name      string
		desired   Desired
		observed  Observed
		steps     []stepWant
		restart   bool
		refusal   string // substring of the refusal; "" = no refusal
		converged bool
		pending   *bool
		warnings  []string
	}{
		{
			name:     "grant and restart when the right is missing",
			desired:  enable,
			observed: obs(dmv(false)),
			steps:    []stepWant{{true, svcSID}},
			restart:  true,
			pending:  ptr(false),
		},
		{
			name:      "already held and running: nothing to do",
			desired:   enable,
			observed:  obs(dmv(true), holders(svcSID)),
			converged: true,
			pending:   ptr(false),
		},
		{
			name:     "held but not restarted since: restart only",
			desired:  enable,
			observed: obs(dmv(false), holders(svcSID)),
			restart:  true,
			pending:  ptr(true),
		},
		{
			name:      "held, restart never, pending: converged with a warning",
			desired:   withRestart(enable, RestartNever),
			observed:  obs(dmv(false), holders(svcSID)),
			converged: true,
			pending:   ptr(true),
			warnings:  []string{WarnRestartPending},
		},
		{
			// The warning says the state the apply leaves: the grant makes a restart pending.
			name:     "grant with restart never: no restart",
			desired:  withRestart(enable, RestartNever),
			observed: obs(dmv(false)),
			steps:    []stepWant{{true, svcSID}},
			pending:  ptr(false),
			warnings: []string{WarnRestartPending},
		},
		{
			name:     "revoke and restart",
			desired:  disable,
			observed: obs(dmv(true), holders(svcSID)),
			steps:    []stepWant{{false, svcSID}},
			restart:  true,
			pending:  ptr(false),
		},
		{
			name:     "grantee move revokes the old SID and grants the new one",
			desired:  Desired{Enabled: true, Grantee: GranteeServiceAccount, Restart: RestartIfNeeded, PriorGranteeSID: svcSID},
			observed: obs(dmv(true), holders(svcSID)),
			steps:    []stepWant{{false, svcSID}, {true, acctSID}},
			pending:  ptr(false),
		},
		{
			name:    "administrator start account with enabled = false: no steps, converged, warning",
			desired: disable,
			observed: obs(dmv(true), func(r *contract.ReadInstanceResult) {
				r.StartAccount, r.StartAccountSID = `SQL01\Administrator`, adminSID
			}, holders(winsid.Administrators)),
			converged: true,
			pending:   ptr(false),
			warnings:  []string{WarnStaysOn},
		},
		{
			name:    "LocalSystem with enabled = false: revoke the service SID, no restart",
			desired: disable,
			observed: obs(dmv(true), func(r *contract.ReadInstanceResult) {
				r.StartAccount, r.StartAccountSID = "LocalSystem", ""
			}, holders(svcSID)),
			steps:    []stepWant{{false, svcSID}},
			pending:  ptr(false),
			warnings: []string{WarnStaysOn},
		},
		{
			name:    "service SID type none: the grant does not count, no restart, warning",
			desired: enable,
			observed: obs(dmv(false), func(r *contract.ReadInstanceResult) {
				r.ServiceSIDType = 0
			}),
			steps:    []stepWant{{true, svcSID}},
			pending:  ptr(false),
			warnings: []string{WarnSIDTypeNone},
		},
		{
			name:    "trace flag 1806: grant, no restart, warning",
			desired: enable,
			observed: obs(dmv(false), func(r *contract.ReadInstanceResult) {
				r.StartupParameters = []string{"-dC:\\data\\master.mdf", "-T1806"}
			}),
			steps:    []stepWant{{true, svcSID}},
			pending:  ptr(false),
			warnings: []string{WarnTraceFlag1806},
		},
		{
			name:     "group policy does not list the grantee: refuse to grant",
			desired:  enable,
			observed: obs(dmv(false), gp(acctSID)),
			refusal:  "set grantee = \"service_account\"",
		},
		{
			name:     "group policy lists the grantee: refuse to revoke",
			desired:  disable,
			observed: obs(dmv(true), gp(svcSID), holders(svcSID)),
			refusal:  "remove NT SERVICE\\MSSQLSERVER",
		},
		{
			name:      "group policy agrees: proceed, warn",
			desired:   enable,
			observed:  obs(dmv(true), gp(svcSID), holders(svcSID)),
			converged: true,
			pending:   ptr(false),
			warnings:  []string{WarnGroupPolicy},
		},
		{
			name:    "clustered and a restart is needed: refuse",
			desired: enable,
			observed: obs(dmv(false), func(r *contract.ReadInstanceResult) {
				r.Clustered = true
			}),
			refusal: "restart = \"never\"",
		},
		{
			name:    "clustered without a restart: grant",
			desired: withRestart(enable, RestartNever),
			observed: obs(dmv(false), func(r *contract.ReadInstanceResult) {
				r.Clustered = true
			}),
			steps:    []stepWant{{true, svcSID}},
			pending:  ptr(false),
			warnings: []string{WarnRestartPending},
		},
		{
			name:     "unverifiable and changed: restart to be sure",
			desired:  enable,
			observed: obs(Verification{Source: SourceNone}, hadrOff),
			steps:    []stepWant{{true, svcSID}},
			restart:  true,
			warnings: []string{WarnUnverified},
		},
		{
			name:      "unverifiable and unchanged: no restart",
			desired:   enable,
			observed:  obs(Verification{Source: SourceNone}, holders(svcSID)),
			converged: true,
			warnings:  []string{WarnUnverified},
		},
		{
			name:      "error log source counts as verification",
			desired:   enable,
			observed:  obs(Verification{Source: SourceErrorLog, Enabled: ptr(true)}, holders(svcSID)),
			converged: true,
			pending:   ptr(false),
		},
		{
			name:    "TDE databases are named in a warning",
			desired: enable,
			observed: func() Observed {
				o := obs(dmv(true), holders(svcSID))
				o.Verification.TDEDatabases = []string{"Payroll"}
				return o
			}(),
			converged: true,
			pending:   ptr(false),
			warnings:  []string{WarnTDE},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, p, err := PlanApply(tt.desired, tt.observed)
			if tt.refusal != "" {
				var r *Refusal
				if !errors.As(err, &r) {
					t.Fatalf("want a refusal containing %q, got err=%v plan=%+v", tt.refusal, err, p)
				}
				if !strings.Contains(r.Detail, tt.refusal) || !strings.Contains(r.Detail, "sql01.corp.example") ||
					!strings.Contains(r.Detail, "Nothing was changed") {
					t.Errorf("refusal detail %q should contain %q, the host and 'Nothing was changed'", r.Detail, tt.refusal)
				}
				return
			}
			if err != nil {
				t.Fatalf("PlanApply: %v", err)
			}
			var got []stepWant
			for _, s := range p.Steps {
				got = append(got, stepWant{s.Grant, s.SID})
			}
			if len(got) != len(tt.steps) {
				t.Fatalf("steps = %+v, want %+v", got, tt.steps)
			}
			for i := range got {
				if got[i] != tt.steps[i] {
					t.Fatalf("steps = %+v, want %+v", got, tt.steps)
				}
			}
			if p.Restart != tt.restart {
				t.Errorf("restart = %v (%s), want %v", p.Restart, p.RestartReason, tt.restart)
			}
			if a.Converged != tt.converged {
				t.Errorf("converged = %v, want %v", a.Converged, tt.converged)
			}
			if (a.RestartPending == nil) != (tt.pending == nil) || (a.RestartPending != nil && *a.RestartPending != *tt.pending) {
				t.Errorf("restart pending = %v, want %v", contracttest.TriState(a.RestartPending), contracttest.TriState(tt.pending))
			}
			for _, code := range tt.warnings {
				if !HasWarning(a.Warnings, code) {
					t.Errorf("missing warning %q; got %+v", code, a.Warnings)
				}
			}
			if len(tt.warnings) == 0 && len(a.Warnings) > 0 {
				t.Errorf("unexpected warnings %+v", a.Warnings)
			}
			for _, w := range a.Warnings {
				if !strings.Contains(w.Detail, "sql01.corp.example") || !strings.Contains(w.Detail, "MSSQLSERVER") {
					t.Errorf("warning %q does not name host and instance: %s", w.Code, w.Detail)
				}
			}
		})
	}
}

func TestAssessValues(t *testing.T) {
	o := obs(dmv(true), holders(svcSID), func(r *contract.ReadInstanceResult) { r.Version = "16.0.1000.6" })
	o.Verification.SQLVersion = ""
	a, err := Assess(enable, o)
	if err != nil {
		t.Fatal(err)
	}
	if a.ServiceSID != "S-1-5-80-3880718306-3832830129-1677859214-2598158968-1052248003" || a.GranteeSID != a.ServiceSID {
		t.Errorf("service SID %s grantee %s", a.ServiceSID, a.GranteeSID)
	}
	if !a.PrivilegeGranted || !a.EffectiveAtNextStart || a.EffectiveViaOther || !a.ExpectedRunning {
		t.Errorf("assessment %+v", a)
	}
	if a.SQLVersion != "16.0.1000.6" {
		t.Errorf("SQL version should fall back to the registry's: %q", a.SQLVersion)
	}
	if a.VerifiedBy != SourceSQLDMV {
		t.Errorf("verified by %s", a.VerifiedBy)
	}
}

func TestAssessServiceAccountUnresolvable(t *testing.T) {
	o := obs(dmv(true), func(r *contract.ReadInstanceResult) { r.StartAccount, r.StartAccountSID = `CORP\gone`, "" })
	_, err := Assess(Desired{Enabled: true, Grantee: GranteeServiceAccount}, o)
	if err == nil || !strings.Contains(err.Error(), `grantee = "service_sid"`) {
		t.Fatalf("want an error suggesting service_sid, got %v", err)
	}
	// A well-known account resolves without the host's help.
	o = obs(dmv(true), func(r *contract.ReadInstanceResult) {
		r.StartAccount, r.StartAccountSID = `NT Service\MSSQLSERVER`, ""
	})
	a, err := Assess(Desired{Enabled: true, Grantee: GranteeServiceAccount}, o)
	if err != nil || a.GranteeSID != svcSID {
		t.Fatalf("virtual account should resolve to the service SID: %v %+v", err, a)
	}
}

func TestAssessNotFound(t *testing.T) {
	_, err := Assess(enable, Observed{Host: "h", Instance: &contract.ReadInstanceResult{Found: false}})
	if err == nil {
		t.Fatal("want an error for a missing instance")
	}
}

func TestDriftShowsInConverged(t *testing.T) {
	// Enabled, then someone revoked the right: Read must report not converged.
	a, err := Assess(enable, obs(dmv(true)))
	if err != nil {
		t.Fatal(err)
	}
	if a.Converged {
		t.Error("a revoked right must not be converged")
	}
	// And the pending restart that follows is not a reason to call it converged.
	if a.RestartPending == nil || !*a.RestartPending {
		t.Error("running with IFI while the right is gone is a pending restart")
	}
}

func TestPlanDestroy(t *testing.T) {
	t.Run("revokes, never restarts, warns IFI stays on", func(t *testing.T) {
		_, p, w, err := PlanDestroy(enable, obs(dmv(true), holders(svcSID)))
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Steps) != 1 || p.Steps[0].Grant || p.Steps[0].SID != svcSID || p.Restart {
			t.Fatalf("plan %+v", p)
		}
		if !HasWarning(w, WarnStaysOnDestroy) {
			t.Errorf("want stays-on warning, got %+v", w)
		}
	})
	t.Run("nothing held: nothing to do, no warning when IFI is off", func(t *testing.T) {
		_, p, w, err := PlanDestroy(enable, obs(dmv(false)))
		if err != nil {
			t.Fatal(err)
		}
		if p.Changes() || len(w) != 0 {
			t.Fatalf("plan %+v warnings %+v", p, w)
		}
	})
	t.Run("group policy grants it: leave it and say so", func(t *testing.T) {
		_, p, w, err := PlanDestroy(enable, obs(dmv(true), holders(svcSID), gp(svcSID)))
		if err != nil {
			t.Fatal(err)
		}
		if p.Changes() || !HasWarning(w, WarnGroupPolicy) {
			t.Fatalf("plan %+v warnings %+v", p, w)
		}
	})
	t.Run("administrator start account: IFI stays on, no restart advised", func(t *testing.T) {
		_, p, w, err := PlanDestroy(enable, obs(dmv(true), func(r *contract.ReadInstanceResult) {
			r.StartAccount, r.StartAccountSID = `SQL01\Administrator`, adminSID
		}, holders(svcSID, winsid.Administrators)))
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Steps) != 1 || p.Steps[0].Grant || p.Steps[0].SID != svcSID || p.Restart {
			t.Fatalf("plan %+v", p)
		}
		if len(w) != 1 || w[0].Code != WarnStaysOnDestroy || w[0].Summary != "IFI stays on after the destroy" ||
			!strings.Contains(w[0].Detail, "Administrators") || !strings.Contains(w[0].Detail, "no restart changes that") ||
			strings.Contains(w[0].Detail, "maintenance window") {
			t.Fatalf("warnings %+v; want one saying IFI stays on through Administrators and that no restart changes it", w)
		}
	})
	t.Run("administrator start account, IFI unverifiable: only the next start is claimed", func(t *testing.T) {
		_, _, w, err := PlanDestroy(enable, obs(Verification{Source: SourceNone}, func(r *contract.ReadInstanceResult) {
			r.StartAccount, r.StartAccountSID = `SQL01\Administrator`, adminSID
		}, holders(svcSID, winsid.Administrators)))
		if err != nil {
			t.Fatal(err)
		}
		if len(w) != 1 || !strings.Contains(w[0].Detail, "has IFI from its next start (whether the running Engine has it now could not be verified)") {
			t.Fatalf("warnings %+v; want one that claims only the next start", w)
		}
	})
	t.Run("unverifiable: still warns", func(t *testing.T) {
		_, _, w, err := PlanDestroy(enable, obs(Verification{Source: SourceNone}, holders(svcSID)))
		if err != nil {
			t.Fatal(err)
		}
		if !HasWarning(w, WarnStaysOnDestroy) {
			t.Fatalf("warnings %+v", w)
		}
	})
}

func TestCheckAfterRestart(t *testing.T) {
	tests := []struct {
		name    string
		o       Observed
		wantErr string
	}{
		{"on as asked", obs(dmv(true), holders(svcSID)), ""},
		{"off as asked", obs(dmv(false)), ""},
		{"unverifiable passes", obs(Verification{Source: SourceNone}, holders(svcSID)), ""},
		{"granted but still off", obs(dmv(false), holders(svcSID)), "did not really restart"},
		{"group policy reverted", obs(dmv(false), holders(svcSID), gp(svcSID)), "Group Policy"},
		{"SID type none", obs(dmv(true), holders(svcSID), func(r *contract.ReadInstanceResult) { r.ServiceSIDType = 0 }), "SID type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Assess(enable, tt.o)
			if err != nil {
				t.Fatal(err)
			}
			err = Check(a)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "sql01.corp.example") {
				t.Fatalf("Check error %v, want one containing %q and the host", err, tt.wantErr)
			}
		})
	}
}

func TestVerify(t *testing.T) {
	on, off := true, false
	running := func(log *bool) *contract.ReadInstanceResult {
		return &contract.ReadInstanceResult{Found: true, ServiceState: contract.StateRunning,
			ErrorLog: contract.ErrorLogInfo{Found: log != nil, Enabled: log}}
	}
	stopped := running(&on)
	stopped.ServiceState = contract.StateStopped
	cases := []struct {
		name   string
		ri     *contract.ReadInstanceResult
		dmv    *bool
		source Source
		want   *bool
	}{
		{"the DMV wins over the error log", running(&on), &off, SourceSQLDMV, &off},
		{"error log when SQL Server was not asked", running(&on), nil, SourceErrorLog, &on},
		{"no error-log line", running(nil), nil, SourceNone, nil},
		{"a stopped Engine's old log says nothing", stopped, nil, SourceNone, nil},
	}
	for _, c := range cases {
		src, got := Verify(c.ri, c.dmv)
		if src != c.source || (got == nil) != (c.want == nil) || (got != nil && *got != *c.want) {
			t.Errorf("%s: Verify = %s, %v; want %s, %v", c.name, src, got, c.source, c.want)
		}
	}
}
