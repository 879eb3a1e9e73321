package ifi

import (
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

func TestCheckNamesOnlyTheCausesThatFit(t *testing.T) {
	assess := func(d Desired, o Observed) *Assessment {
		a, err := Assess(d, o)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	tf := func(r *contract.ReadInstanceResult) { r.StartupParameters = []string{"-T1806"} }
	err := Check(assess(enable, obs(dmv(true), holders(svcSID), tf)))
	if err == nil || !strings.Contains(err.Error(), "trace flag 1806") {
		t.Errorf("trace flag: %v", err)
	}
	// Running off, expected on, service SID type unrestricted: neither the SID type
	// nor a hidden group explains it.
	err = Check(assess(enable, obs(dmv(false), holders(svcSID))))
	if err == nil || strings.Contains(err.Error(), "SID type") || strings.Contains(err.Error(), "group the host does not report") {
		t.Errorf("off though expected on: %v", err)
	}
	sidNone := func(r *contract.ReadInstanceResult) { r.ServiceSIDType = 0 }
	err = Check(assess(Desired{Enabled: true, Grantee: GranteeServiceAccount, Restart: RestartIfNeeded}, obs(dmv(false), holders(acctSID), sidNone)))
	if err == nil || strings.Contains(err.Error(), "SID type") {
		t.Errorf("grantee service_account, off though expected on: %v; the service SID's type does not matter", err)
	}
	err = Check(assess(Desired{Enabled: true, Grantee: GranteeServiceAccount, Restart: RestartIfNeeded}, obs(dmv(false), holders(acctSID, svcSID), sidNone, tf)))
	if err != nil {
		t.Errorf("trace flag makes off expected: %v", err)
	}
}
