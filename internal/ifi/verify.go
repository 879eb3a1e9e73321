package ifi

import (
	"fmt"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// Check verifies the instance after a restart: an error when SQL Server can say what
// it runs with and that differs from what the right, the start account and the
// startup parameters should give.
func Check(a *Assessment) error {
	if err := checkIFI(a); err != nil {
		return err
	}
	return checkLockPages(a)
}

// checkLockPages is Check for Lock Pages in Memory, when the resource manages it.
func checkLockPages(a *Assessment) error {
	lp := a.LockPages
	if lp == nil || !lp.Managed || !lp.Known || lp.Locked == nil || *lp.Locked == lp.ExpectedLocked {
		return nil
	}
	causes := []string{}
	if lp.GroupPolicyManaged {
		causes = append(causes, "a Group Policy refresh changed the right's holders")
	}
	if a.desired.Grantee == GranteeServiceSID && a.observed.Instance.ServiceSIDType == 0 {
		causes = append(causes, fmt.Sprintf("the service SID type of %s is none, so its service SID is not in the token", a.ServiceName))
	}
	if *lp.Locked {
		causes = append(causes, "the start account gets the right through a group the host does not report")
	} else {
		causes = append(causes, "the Engine could not lock its pages at start (its error log says why)")
		if a.observed.Verification.Edition == "" {
			causes = append(causes, "the edition does not use locked pages (Express, Web; SQL Server was not asked its edition)")
		}
	}
	causes = append(causes, fmt.Sprintf("the service %s did not really restart (check its process start time)", a.ServiceName))
	return fmt.Errorf("after the restart of %s on %s, Lock Pages in Memory is not as asked: SQL Server (%s) reports the memory model %s, "+
		"but the right and start account say it should %s locked pages. Likely causes: %s. Fix the cause on the host",
		a.ServiceName, a.Host, lp.VerifiedBy, lp.MemoryModel, useOrNot(lp.ExpectedLocked), strings.Join(causes, "; "))
}

func checkIFI(a *Assessment) error {
	if a.RunningIFI == nil || *a.RunningIFI == a.ExpectedRunning {
		return nil
	}
	var causes []string
	if a.TraceFlag1806 {
		causes = append(causes, "trace flag 1806 is in the startup parameters")
	}
	if a.GroupPolicyManaged {
		causes = append(causes, "a Group Policy refresh changed the right's holders")
	}
	if a.desired.Grantee == GranteeServiceSID && a.observed.Instance.ServiceSIDType == 0 {
		causes = append(causes, fmt.Sprintf("the service SID type of %s is none, so its service SID is not in the token", a.ServiceName))
	}
	if *a.RunningIFI && !a.ExpectedRunning {
		causes = append(causes, "the start account gets the right through a group the host does not report (a domain group nested in Administrators)")
	}
	causes = append(causes, fmt.Sprintf("the service %s did not really restart (check its process start time)", a.ServiceName))
	return fmt.Errorf("IFI is not as asked after the restart of %s on %s: SQL Server (%s) reports IFI %s, but the right "+
		"and start account say it should be %s. Likely causes: %s. Fix the cause on the host",
		a.ServiceName, a.Host, a.VerifiedBy, onOff(*a.RunningIFI), onOff(a.ExpectedRunning), strings.Join(causes, "; "))
}

// Verify says how the running Engine's IFI state is known. dmv is what
// sys.dm_server_services reported (nil when SQL Server was not asked, did not answer,
// or has no such column). SQL Server's own answer wins; else the current error log's
// startup line, which speaks for the running process only while the Engine runs;
// else nothing is known.
func Verify(ri *contract.ReadInstanceResult, dmv *bool) (Source, *bool) {
	if dmv != nil {
		v := *dmv
		return SourceSQLDMV, &v
	}
	if ri != nil && ri.ServiceState == contract.StateRunning && ri.ErrorLog.Found && ri.ErrorLog.Enabled != nil {
		v := *ri.ErrorLog.Enabled
		return SourceErrorLog, &v
	}
	return SourceNone, nil
}
