package winsim_test

import (
	"errors"
	"net/http"
	"slices"
	"syscall"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// uninstall_instance over the control plane: the SQL port refuses connections at
// once and for good, WinRM no longer finds the instance, a second uninstall is 404.
func TestUninstallInstanceAction(t *testing.T) {
	sim := startFleet(t)
	ctl := control{t, sim.Info().Control}
	addr := sqlAddr(t, sim, "sql01", "MSSQLSERVER")
	if err := dialState(addr); err != nil {
		t.Fatalf("the SQL port %s does not answer before the uninstall: %v", addr, err)
	}
	ctl.action("sql01", map[string]any{"action": "uninstall_instance", "instance": "MSSQLSERVER"})
	if err := dialState(addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("the SQL port %s after the uninstall: %v; want connection refused", addr, err)
	}
	if open, _ := sim.SQLListening("sql01", "MSSQLSERVER"); open {
		t.Error("SQLListening reports the uninstalled instance's endpoint open")
	}
	for _, h := range sim.Info().Hosts {
		for _, i := range h.Instances {
			if h.Name == "sql01" && i.Name == "MSSQLSERVER" {
				t.Errorf("Info still lists the uninstalled instance sql01\\MSSQLSERVER at %s", i.SQL)
			}
		}
	}
	c := winrmClient(t, sim, "sql01", adminUser, adminPassword, false)
	if r := readInstance(t, c); r.Found || slices.Contains(r.InstalledInstances, "MSSQLSERVER") {
		t.Errorf("read_instance after the uninstall: found %v, installed %v", r.Found, r.InstalledInstances)
	}
	var out map[string]any
	if code := ctl.do("POST", "/v1/hosts/sql01/actions", map[string]any{"action": "uninstall_instance", "instance": "MSSQLSERVER"}, &out); code != http.StatusNotFound {
		t.Errorf("second uninstall answered %d %v; want 404", code, out)
	}
	if code := ctl.do("POST", "/v1/hosts/sql01/actions", map[string]any{"action": "uninstall_instance"}, &out); code != http.StatusBadRequest {
		t.Errorf("uninstall without an instance answered %d %v; want 400", code, out)
	}
	if err := sim.Do("sql01", winsim.Action{Action: winsim.ActionUninstallInstance, Instance: "MSSQLSERVER"}); !errors.Is(err, host.ErrNoSuchInstance) {
		t.Errorf("Sim.Do of a second uninstall: %v; want host.ErrNoSuchInstance", err)
	}
}
