package host

import (
	"errors"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

// Uninstalling an instance leaves what SQL Setup leaves: no services, no registry
// entries, a closed SQL endpoint, and the orphaned service SID still in the right's
// holder list, without a name.
func TestUninstallInstance(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.Instances = append(cfg.Instances, InstanceConfig{Name: "REPORTING"})
	cfg.Services = []ServiceConfig{{Name: "MSSQLLaunchpad", DependsOn: []string{"MSSQLSERVER"}}}
	cfg.Rights = map[string][]string{contract.RightManageVolume: {`BUILTIN\Administrators`, engineSID}}
	h := newHost(t, cfg)
	inst, _ := h.Instance("MSSQLSERVER")
	calls := recordListenerHooks(inst)

	if err := h.UninstallInstance("mssqlserver"); err != nil {
		t.Fatalf("UninstallInstance: %v", err)
	}
	got := calls()
	if got != "open,close" {
		t.Errorf("listener hooks %q, want open,close (the endpoint closes at uninstall)", got)
	}

	// Registry: read_instance answers not found and lists only REPORTING.
	ri := decode[contract.ReadInstanceResult](t, execOp(t, h, "Administrator", contract.OpReadInstance,
		contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume}))
	if ri.Found || strings.Join(ri.InstalledInstances, ",") != "REPORTING" {
		t.Fatalf("read_instance after uninstall: found %v, installed %v; want not found, [REPORTING]", ri.Found, ri.InstalledInstances)
	}
	// restart_instance: not_found.
	wantScriptError(t, execOp(t, h, "Administrator", contract.OpRestartInstance,
		contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30}), contract.ExitNotFound, "not_found")

	// LSA keeps the orphaned SID; it no longer translates.
	other := decode[contract.ReadInstanceResult](t, execOp(t, h, "Administrator", contract.OpReadInstance,
		contract.ReadInstanceParams{Instance: "REPORTING", Right: contract.RightManageVolume}))
	var orphan *contract.Principal
	for i, p := range other.RightHolders {
		if p.SID == engineSID {
			orphan = &other.RightHolders[i]
		}
	}
	if orphan == nil {
		t.Fatalf("the service SID left the holder list: %+v", other.RightHolders)
	}
	if orphan.Name != "" {
		t.Errorf("the orphaned SID still translates to %q", orphan.Name)
	}

	// SCM: the instance's services are gone; the dependent feature service is
	// stopped and cannot start without its dependency.
	snap := h.Snapshot()
	for _, s := range snap.Services {
		switch strings.ToUpper(s.Name) {
		case "MSSQLSERVER", "SQLSERVERAGENT":
			t.Errorf("service %s still installed: %+v", s.Name, s)
		case "MSSQLLAUNCHPAD":
			if s.State != contract.StateStopped {
				t.Errorf("the dependent service is %s, want Stopped", s.State)
			}
		}
	}
	for _, in := range snap.Instances {
		if in.Name == "MSSQLSERVER" {
			t.Errorf("the snapshot still lists the instance")
		}
	}
	if _, err := h.ServiceState("MSSQLSERVER"); !errors.Is(err, ErrNoSuchService) {
		t.Errorf("ServiceState of the removed Engine: %v, want ErrNoSuchService", err)
	}
	if err := h.StartService("MSSQLLaunchpad"); err == nil || !strings.Contains(err.Error(), "1075") {
		t.Errorf("starting a service whose dependency was uninstalled: %v, want error 1075", err)
	}

	// The other instance is untouched and still runs with its own token.
	if st, err := h.ServiceState(`MSSQL$REPORTING`); err != nil || st != contract.StateRunning {
		t.Errorf("MSSQL$REPORTING: %s, %v; want Running", st, err)
	}
	if !other.Found || other.ServiceName != `MSSQL$REPORTING` || winsid.ServiceSID(other.ServiceName) == engineSID {
		t.Errorf("read_instance REPORTING: %+v", other)
	}

	// Uninstalling twice: not installed.
	if err := h.UninstallInstance("MSSQLSERVER"); !errors.Is(err, ErrNoSuchInstance) || !strings.Contains(err.Error(), "REPORTING") {
		t.Errorf("second uninstall: %v, want ErrNoSuchInstance naming the installed instances", err)
	}
}
