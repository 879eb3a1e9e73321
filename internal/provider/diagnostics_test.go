package provider

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/sqlcheck"
)

// The errors of the converge engine as a user reads them: what failed, where, and
// what to do next, depending on the operation.
func TestAddEngineError(t *testing.T) {
	tg := converge.Target{Host: "sql01.example.com", Instance: "REPORTING"}
	unreachable := &remote.Error{Host: tg.Host, Kind: remote.KindUnreachable, Message: "connection refused"}
	observeFailed := &converge.Error{Kind: converge.KindObserveFailed, Target: tg, Err: unreachable}
	sqlLogonFailed := &converge.Error{Kind: converge.KindSQLLogonFailed, Target: tg, SQLPort: 1433,
		Err: &sqlcheck.Error{Target: sqlcheck.Target{Host: tg.Host, Port: 1433, Instance: tg.Instance}, Kind: sqlcheck.KindAuth,
			Setting: sqlcheck.SettingPassword, Number: 18456, Message: "login failed for ifi (error 18456)"}}
	for _, tc := range []struct {
		name string
		op   operation
		err  error
		// want: one summary and detail pattern per error diagnostic, in order.
		want      [][2]string
		attribute bool   // the first error points at the instance argument
		sqlAuth   string // the sql block's login kind
		notWant   string // no error detail says it
	}{
		{name: "not found points at the instance argument", op: opApply, attribute: true,
			err: &converge.Error{Kind: converge.KindNotFound, Target: tg,
				Instance: &contract.ReadInstanceResult{ComputerName: "SQL01", InstalledInstances: []string{"MSSQLSERVER"}}},
			want: [][2]string{{`^SQL Server instance not found$`, `"REPORTING" is not installed on sql01.example.com \(SQL01\); installed instances: MSSQLSERVER\. Check the instance argument`}}},
		{name: "text from the host is escaped", op: opApply, attribute: true,
			err: &converge.Error{Kind: converge.KindNotFound, Target: converge.Target{Host: "sql01\u202Eexe", Instance: "REPORTING"},
				Instance: &contract.ReadInstanceResult{ComputerName: "SQL01\r\nERROR: forged", InstalledInstances: []string{"A\x00B", "C\u2066D"}}},
			want: [][2]string{{`^SQL Server instance not found$`, `^[^\r\n\x00\x{202E}\x{2066}]*sql01\\u202Eexe \(SQL01\\r\\nERROR: forged\); installed instances: A\\x00B, C\\u2066D\.`}}},
		{name: "unreachable host", op: opRead, err: observeFailed,
			want: [][2]string{{`^Cannot read SQL Server instance REPORTING on sql01.example.com$`, `connection refused.*firewall.*state was not changed`}}},
		{name: "grant fails in an apply", op: opApply,
			err:  &converge.Error{Kind: converge.KindSetRightFailed, Target: tg, Err: unreachable, Step: &ifi.Step{Grant: true, SID: "S-1-5-80-1"}},
			want: [][2]string{{`^Cannot grant the right on sql01.example.com$`, `^Could not grant SeManageVolumePrivilege to S-1-5-80-1: `}}},
		{name: "revoke fails in a destroy", op: opDestroy,
			err:  &converge.Error{Kind: converge.KindSetRightFailed, Target: tg, Err: unreachable, Step: &ifi.Step{SID: "S-1-5-80-1"}},
			want: [][2]string{{`^Cannot revoke the right on sql01.example.com$`, `from S-1-5-80-1: .*run terraform destroy again\.$`}}},
		{name: "restart fails", op: opApply,
			err:  &converge.Error{Kind: converge.KindRestartFailed, Target: tg, Err: unreachable, ServiceName: "MSSQL$REPORTING", RestartReason: "IFI off", Changed: true},
			want: [][2]string{{`^Cannot restart SQL Server REPORTING on sql01.example.com$`, `^The restart of MSSQL\$REPORTING \(IFI off\) failed: .*run terraform apply again`}}},
		{name: "not ready", op: opApply,
			err:  &converge.Error{Kind: converge.KindNotReady, Target: tg, Err: errors.New("login timed out"), SQLPort: 1433},
			want: [][2]string{{`did not accept connections after the restart$`, `^Waiting for instance REPORTING on sql01.example.com at sql01.example.com:1433: login timed out\. .*raise the resource's timeouts if recovery takes long, then run terraform apply again\.$`}}},
		{name: "read back fails after a restart", op: opApply,
			err: &converge.Error{Kind: converge.KindReadBackFailed, Target: tg, Err: observeFailed, Changed: true, Restarted: true},
			want: [][2]string{
				{`^Cannot read SQL Server instance REPORTING on sql01.example.com$`, `connection refused`},
				{`^The change was made but could not be read back$`, `right was changed and SQL Server restarted, but .*terraform refresh`},
			}},
		{name: "refused SQL login", op: opRead, err: sqlLogonFailed,
			want: [][2]string{{`^The sql login cannot log on to SQL Server REPORTING on sql01.example.com$`,
				`^SQL Server instance REPORTING at sql01.example.com:1433: login failed for ifi \(error 18456\)\. .*sql.password.*` +
					`sql.auth = "sql", a SQL Server login; for a Windows account, set sql.auth = "ntlm" with sql.username = "DOMAIN\\\\user".*` +
					`Nothing was changed\. .*set sql.optional = true\.$`}}},
		{name: "refused Windows login", op: opApply, err: sqlLogonFailed, sqlAuth: sqlcheck.AuthNTLM,
			want: [][2]string{{`^The sql login cannot log on to SQL Server REPORTING on sql01.example.com$`,
				`sql.auth = "ntlm", a Windows account: sql.username written DOMAIN\\user .*sql.auth = "kerberos".*Nothing was changed.*sql.optional = true`}}},
		{name: "refused SQL login when read back after a change", op: opApply,
			err: &converge.Error{Kind: converge.KindReadBackFailed, Target: tg, Err: sqlLogonFailed, Changed: true},
			want: [][2]string{
				{`^The sql login cannot log on to SQL Server REPORTING on sql01.example.com$`, `login failed for ifi.*sql.optional = true\.$`},
				{`^The change was made but could not be read back$`, `right was changed`},
			}, notWant: "Nothing was changed"},
		{name: "the read-back differs from what the plan showed", op: opApply,
			err: &converge.Error{Kind: converge.KindAfterDiffers, Target: tg, Changed: true,
				Err: errors.New("after the change, instance REPORTING on sql01.example.com reads otherwise than its plan said: " +
					"restart_pending is null, the plan said false. Run terraform plan again and review what it says")},
			want: [][2]string{{`^instance REPORTING on sql01.example.com reads back otherwise than its plan said$`,
				`restart_pending is null, the plan said false\. Run terraform plan again`}}},
		{name: "refusal", op: opApply,
			err:  &converge.Error{Kind: converge.KindRefused, Target: tg, Refusal: &ifi.Refusal{Summary: "Group Policy owns the right", Detail: "Change the GPO."}},
			want: [][2]string{{`^Group Policy owns the right$`, `^Change the GPO\.$`}}},
		{name: "no restart slot before the deadline", op: opApply,
			err: &converge.Error{Kind: converge.KindRestartSlot, Target: tg, Err: errors.New("context deadline exceeded"), MaxParallelRestarts: 1},
			want: [][2]string{{`^SQL Server REPORTING on sql01.example.com was not restarted: no restart slot before the deadline$`,
				`max_parallel_restarts = 1(.|\n)*nothing was changed on it(.|\n)*MSSQLIFI_MAX_PARALLEL_RESTARTS; 0 = no limit`}}},
		{name: "another instance of the host restarting in this run", op: opApply,
			err: &converge.Error{Kind: converge.KindRestartSlot, Target: tg, Err: errors.New("context deadline exceeded"), HostBusy: true},
			want: [][2]string{{`^SQL Server REPORTING on sql01.example.com was not restarted: another instance of the host was restarting$`,
				`one at a time(.|\n)*nothing was changed on it`}}},
		// The restart action shares these errors with an apply; each says its own next step.
		{name: "the action's restart fails", op: opAction,
			err: &converge.Error{Kind: converge.KindRestartFailed, Target: tg, Err: unreachable, ServiceName: "MSSQL$REPORTING", RestartReason: "IFI off"},
			want: [][2]string{{`^Cannot restart SQL Server REPORTING on sql01.example.com$`,
				`^The restart of MSSQL\$REPORTING \(IFI off\) failed: .*No right was changed .*; invoke the action again \(terraform apply -invoke=action\.mssqlifi_restart\.NAME\) once the service can restart`}},
			notWant: "terraform apply again"},
		{name: "the action's restart fails on the host", op: opAction,
			err: &converge.Error{Kind: converge.KindRestartFailed, Target: tg, Err: errors.New("the service did not stop."), ServiceName: "MSSQL$REPORTING",
				RestartReason: "IFI off", Restart: &contract.RestartInstanceResult{}},
			want: [][2]string{{`^Cannot restart SQL Server REPORTING on sql01.example.com$`,
				`No right was changed .*; invoke the action again \(terraform apply -invoke=action\.mssqlifi_restart\.NAME\) once the service can restart\.$`}},
			notWant: "terraform apply again"},
		{name: "the apply's restart fails on the host", op: opApply,
			err: &converge.Error{Kind: converge.KindRestartFailed, Target: tg, Err: errors.New("the service did not stop."), ServiceName: "MSSQL$REPORTING",
				RestartReason: "IFI off", Restart: &contract.RestartInstanceResult{}},
			want: [][2]string{{`^Cannot restart SQL Server REPORTING on sql01.example.com$`,
				`The right was changed as asked; run terraform apply again once the service can restart\.$`}},
			notWant: "invoke"},
		{name: "not ready after the action's restart", op: opAction,
			err: &converge.Error{Kind: converge.KindNotReady, Target: tg, Err: errors.New("login timed out"), SQLPort: 1433},
			want: [][2]string{{`did not accept connections after the restart$`,
				`raise the action's timeout if recovery takes long, then invoke the action again \(terraform apply -invoke=action\.mssqlifi_restart\.NAME\)\.$`}},
			notWant: "terraform apply again"},
		{name: "no restart slot for the action", op: opAction,
			err: &converge.Error{Kind: converge.KindRestartSlot, Target: tg, Err: errors.New("context deadline exceeded"), MaxParallelRestarts: 1},
			want: [][2]string{{`no restart slot before the deadline$`,
				`Invoke the action again \(terraform apply -invoke=action\.mssqlifi_restart\.NAME\), raise the action's timeout, or raise max_parallel_restarts`}},
			notWant: "terraform apply again"},
		{name: "another instance restarting, for the action", op: opAction,
			err: &converge.Error{Kind: converge.KindRestartSlot, Target: tg, Err: errors.New("context deadline exceeded"), HostBusy: true},
			want: [][2]string{{`another instance of the host was restarting$`,
				`Invoke the action again \(terraform apply -invoke=action\.mssqlifi_restart\.NAME\), or raise the action's timeout\.$`}},
			notWant: "terraform apply again"},
		{name: "IFI not as asked after the apply's restart", op: opApply,
			err: &converge.Error{Kind: converge.KindCheckFailed, Target: tg, Err: errors.New("IFI is not as asked after the restart of MSSQL$REPORTING. Fix the cause on the host")},
			want: [][2]string{{`^IFI is not as asked on instance REPORTING on sql01.example.com after the restart$`,
				`Fix the cause on the host, then run terraform apply again\.$`}}},
		{name: "IFI not as asked after the action's restart", op: opAction,
			err: &converge.Error{Kind: converge.KindCheckFailed, Target: tg, Err: errors.New("IFI is not as asked after the restart of MSSQL$REPORTING. Fix the cause on the host")},
			want: [][2]string{{`^IFI is not as asked on instance REPORTING on sql01.example.com after the restart$`,
				`Fix the cause on the host, then invoke the action again \(terraform apply -invoke=action\.mssqlifi_restart\.NAME\)\.$`}},
			notWant: "terraform apply again"},
		{name: "decide fails in a destroy", op: opDestroy,
			err:  &converge.Error{Kind: converge.KindDecideFailed, Target: tg, Err: errors.New("unknown grantee")},
			want: [][2]string{{`^Cannot decide how to remove IFI from instance REPORTING on sql01.example.com$`, `unknown grantee`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var diags diag.Diagnostics
			addEngineError(&diags, tc.op, tc.err, errorReport{user: `CORP\admin`, sqlAuth: tc.sqlAuth})
			errs := diags.Errors()
			if len(errs) != len(tc.want) {
				t.Fatalf("%d errors, want %d: %v", len(errs), len(tc.want), errs)
			}
			for i, w := range tc.want {
				if !regexp.MustCompile(w[0]).MatchString(errs[i].Summary()) {
					t.Errorf("error %d summary %q, want %s", i, errs[i].Summary(), w[0])
				}
				if !regexp.MustCompile(w[1]).MatchString(errs[i].Detail()) {
					t.Errorf("error %d detail %q, want %s", i, errs[i].Detail(), w[1])
				}
				if tc.notWant != "" && strings.Contains(errs[i].Detail(), tc.notWant) {
					t.Errorf("error %d detail %q says %q", i, errs[i].Detail(), tc.notWant)
				}
			}
			wp, ok := errs[0].(diag.DiagnosticWithPath)
			if tc.attribute != (ok && wp.Path().Equal(path.Root("instance"))) {
				t.Errorf("points at the instance argument: %v, want %v", ok, tc.attribute)
			}
		})
	}
}
