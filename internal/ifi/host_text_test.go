package ifi

import (
	"errors"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

// rawControl reports whether s holds a control character or a line break as such.
func rawControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) })
}

// The service name is the host's text. One that cannot be the instance's Database
// Engine's (escape codes, CR/LF, another instance's, a look-alike letter) is
// refused with the host and instance named, no SID is computed from it, and the
// error shows it escaped.
func TestAssessRefusesAServiceNameThatIsNotTheEngines(t *testing.T) {
	for _, tc := range []struct {
		name, instance, service string
		ok                      bool
	}{
		{"the default instance", "MSSQLSERVER", "MSSQLSERVER", true},
		{"a named instance, any case", "Sales", "mssql$SALES", true},
		{"escape codes and a line break", "MSSQLSERVER", "MSSQLSERVER\x1b[2J\r\nWARNING: granted", false},
		{"another instance's Engine", "MSSQLSERVER", "MSSQL$INST02", false},
		{"the Kelvin sign for K", "KPI", "MSSQL$\u212aPI", false},
		{"a path", "MSSQLSERVER", `..\MSSQLSERVER`, false},
		{"empty", "MSSQLSERVER", "", false},
		{"longer than Windows allows", "MSSQLSERVER", strings.Repeat("M", 257), false},
		{"a space", "MSSQLSERVER", "MSSQLSERVER ", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := obs(dmv(false), func(r *contract.ReadInstanceResult) { r.Instance, r.ServiceName = tc.instance, tc.service })
			a, err := Assess(enable, o)
			if tc.ok {
				if err != nil || a.ServiceSID != winsid.ServiceSID(tc.service) {
					t.Fatalf("Assess: %v (service SID %v)", err, a)
				}
				return
			}
			if err == nil || a != nil {
				t.Fatalf("Assess accepted the service name %q: %+v", tc.service, a)
			}
			msg := err.Error()
			if !errors.Is(err, contract.ErrInvalidServiceName) || rawControl(msg) || !strings.Contains(msg, "sql01.corp.example") ||
				!strings.Contains(msg, "instance "+tc.instance) || !strings.Contains(msg, "No service SID is computed") {
				t.Errorf("error %q: want the name refused, escaped, with the host and instance named", msg)
			}
			// The read kept between operations keeps no holder for a SID computed from it.
			bogus := winsid.ServiceSID(tc.service)
			o.Instance.RightHolders = append(o.Instance.RightHolders, contract.Principal{SID: bogus})
			for _, h := range KeepForDecisions(o.Instance).RightHolders {
				if h.SID == bogus {
					t.Errorf("the kept read holds %s, the SID of %q", bogus, tc.service)
				}
			}
		})
	}
}

// Names the host translated (the start account, the policy's holders) reach the
// plan's warnings escaped.
func TestWarningsEscapeTheHostsNames(t *testing.T) {
	named := func(r *contract.ReadInstanceResult) {
		gp()(r)
		r.GroupPolicy.Holders = []contract.Principal{{SID: svcSID, Name: "NT SERVICE\\MSSQLSERVER\x1b]8;;http://x\x07\r\n"}}
		r.StartAccount = "CORP\\svc\x1b[8m-sql"
	}
	a, err := Assess(enable, obs(dmv(true), holders(svcSID), named))
	if err != nil {
		t.Fatal(err)
	}
	w, ok := warningOf(a.Warnings, WarnGroupPolicy)
	if !ok || rawControl(w.Detail) || !strings.Contains(w.Detail, `NT SERVICE\MSSQLSERVER\x1B]8;;http://x\x07\r\n (`) {
		t.Errorf("Group Policy warning %q: want the holder's name escaped", w.Detail)
	}
	if rawControl(a.EffectiveVia) {
		t.Errorf("a cause shows the start account raw: %q", a.EffectiveVia)
	}
}
