package remote

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/sqlcheck"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// A host's administrators see which provider build talks to them: every WinRM
// request carries the User-Agent, and the SQL login the same application name
// (program_name in sys.dm_exec_sessions).
func TestUserAgentReachesWinRMAndSQLServer(t *testing.T) {
	sim, err := winsim.Start(&winsim.Config{Hosts: []host.HostConfig{simConfig()}}, winsim.Options{CertDir: t.TempDir(), Logf: t.Logf})
	if err != nil {
		t.Fatalf("winsim.Start: %v", err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	info := sim.Info().Hosts[0]
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	ua := contract.UserAgent("1.2.3")
	if ua != "terraform-provider-mssqlifi/1.2.3" {
		t.Fatalf("UserAgent(1.2.3) = %q", ua)
	}
	h, err := New(Config{Host: "127.0.0.1", Port: portOf(t, info.WinRM), Auth: "ntlm", Username: testUser, Password: testPassword,
		Timeout: 20 * time.Second, UserAgent: ua})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.ReadInstance(ctx, contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume}); err != nil {
		t.Fatal(err)
	}
	model, err := sim.Host(info.Name)
	if err != nil {
		t.Fatal(err)
	}
	audit := model.Audit()
	if len(audit) == 0 {
		t.Fatal("the simulator recorded no WinRM command")
	}
	for _, e := range audit {
		if e.UserAgent != ua {
			t.Errorf("command %q arrived with User-Agent %q, want %q", e.Command, e.UserAgent, ua)
		}
	}

	cfg := (&sqlcheck.Config{Username: simLogin, Password: simLoginPwd, Encrypt: "disable"}).WithAppName(ua)
	target := sqlcheck.Target{Host: "127.0.0.1", Port: portOf(t, info.Instances[0].SQL), Instance: info.Instances[0].Name}
	if _, err := sqlcheck.New(*cfg).Check(ctx, target); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, is := range model.Snapshot().Instances {
		if is.Name == target.Instance && is.Process != nil {
			names = is.Process.ProgramNames
		}
	}
	if !slices.Equal(names, []string{ua}) {
		t.Errorf("SQL Server saw the application names %q, want [%q]", names, ua)
	}
}
