package provider

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// sqlPortOf is the TCP port the simulator's instance listens for SQL on.
func (e *accEnv) sqlPortOf(instance string) int {
	e.t.Helper()
	for _, hi := range e.sim.Info().Hosts {
		for _, in := range hi.Instances {
			if hi.Name == e.name && strings.EqualFold(in.Name, instance) {
				return port(e.t, in.SQL)
			}
		}
	}
	e.t.Fatalf("the simulator reports no SQL endpoint for %s on %s", instance, e.name)
	return 0
}

// A sql_port that reaches another instance of the host (what a dynamic port does
// after a reboot) gets that instance's answer, which says nothing of the resource's
// instance: INST02 runs a BACKUP while MSSQLSERVER, at the configured port, runs
// none. The check fails naming both instances and the port, the restart that needed
// to know whether a backup runs is refused, nothing is changed, and three more
// applies refuse again: INST02 is never stopped.
func TestCLI_sqlPortOfAnotherInstanceRefusesTheRestart(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, func(hc *host.HostConfig) {
		hc.Instances = append(hc.Instances, host.InstanceConfig{
			Name:   "INST02",
			Logins: []host.LoginConfig{{Name: accSQLUser, Password: accSQLPass}},
		})
	})
	if err := e.sim.Do(e.name, winsim.Action{Action: winsim.ActionStartBackup, Instance: "INST02", Command: "BACKUP DATABASE"}); err != nil {
		t.Fatal(err)
	}
	other := e.sqlPortOf("MSSQLSERVER")
	w.write(e.providerConfig(true) + resourceConfig(e.addr, fmt.Sprintf("instance = \"INST02\"\n  sql_port = %d", other)))
	const service = "MSSQL$INST02"
	svcSID := winsid.ServiceSID(service)
	for apply := 1; apply <= 4; apply++ {
		ap := w.apply()
		if ap.Exit == 0 {
			t.Fatalf("apply %d succeeded; want the restart refused:\n%s", apply, ap.describe())
		}
		if len(ap.find("error", `^Running backups unknown: refusing to restart`, `(?s)Nothing was changed`)) == 0 {
			t.Errorf("apply %d: no refusal for unknown running backups:\n%s", apply, ap.describe())
		}
		want := fmt.Sprintf(`(?s)port %d answers for instance MSSQLSERVER, not for INST02`, other)
		if len(ap.find("warning", `^IFI could not be verified through SQL Server$`, want)) == 0 {
			t.Errorf("apply %d: no warning naming both instances and the port (%s):\n%s", apply, want, ap.describe())
		}
		if n := e.stops(service); n != 0 {
			t.Fatalf("apply %d: %s was stopped %d times during its BACKUP; want never", apply, service, n)
		}
	}
	if e.holdsRight(contract.RightManageVolume, svcSID) {
		t.Errorf("the right was granted to %s although the apply refused", svcSID)
	}
}
