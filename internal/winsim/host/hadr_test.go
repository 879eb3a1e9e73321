package host

import (
	"context"
	"strings"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds/tdstest"
)

// sqlHost has four instances: the default one (2022) the primary replica of AG1,
// REPORTING (2019, two TDE databases) its secondary, OLD (2014: no IFI column,
// Always On off) and LEGACY (2008 R2: no Always On at all).
func sqlHost(t *testing.T) *Host {
	t.Helper()
	cfg := baseConfig()
	cfg.Instances[0].AvailabilityGroup = &AvailabilityGroupConfig{Name: "AG1", Role: "Primary"}
	login := []LoginConfig{{Name: "sa", Password: "Sql!"}, {Name: "weak", Password: "w", ViewServerState: boolp(false)}}
	cfg.Instances = append(cfg.Instances,
		InstanceConfig{Name: "REPORTING", Version: "15.0.4355.3", TDEDatabases: []string{"Sales", "HR"}, Logins: login,
			AvailabilityGroup: &AvailabilityGroupConfig{Name: "AG1", Role: "secondary"}},
		InstanceConfig{Name: "OLD", Version: "12.0.6024.0", Logins: login, Agent: boolp(false)},
		InstanceConfig{Name: "LEGACY", Version: "10.50.6000.34", Logins: login})
	return newHost(t, cfg)
}

const agQuery = `SELECT ars.role_desc, ag.name FROM sys.dm_hadr_availability_replica_states ars
JOIN sys.availability_groups ag ON ars.group_id = ag.group_id WHERE ars.is_local = 1`

func batch(t *testing.T, inst *Instance, user, q string) string {
	t.Helper()
	rs, e := inst.TDSHandler().Batch(context.Background(), tds.Login{User: user}, q)
	if e != nil {
		t.Fatalf("%s as %s: Msg %d %s", q, user, e.Number, e.Message)
	}
	return tdstest.Render(rs)
}

func rowCount(rendered string) int { return strings.Count(strings.TrimSpace(rendered), "\n") }

// A login with VIEW SERVER STATE but not VIEW ANY DEFINITION sees no rows in the
// catalog views, without an error, so a DMV INNER JOINed with one shows nothing;
// the provider's query (DMVs only) still finds the primary replica.
func TestCatalogViewsNeedViewAnyDefinition(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.Instances[0].AvailabilityGroup = &AvailabilityGroupConfig{Name: "AG1", Role: AGRolePrimary}
	cfg.Instances[0].Logins = []LoginConfig{{Name: "sa", Password: "a"}, {Name: "monitor", Password: "m"},
		{Name: "auditor", Password: "d", ViewAnyDefinition: true}}
	inst, _ := newHost(t, cfg).Instance("MSSQLSERVER")

	if n := rowCount(batch(t, inst, "monitor", "SELECT name FROM sys.availability_groups")); n != 0 {
		t.Errorf("a login without VIEW ANY DEFINITION sees %d rows of sys.availability_groups, want 0", n)
	}
	if n := rowCount(batch(t, inst, "monitor", agQuery)); n != 0 {
		t.Errorf("the INNER JOIN with a catalog view shows %d rows without VIEW ANY DEFINITION, want 0", n)
	}
	for _, user := range []string{"sa", "auditor"} {
		if n := rowCount(batch(t, inst, user, "SELECT name FROM sys.availability_groups")); n != 1 {
			t.Errorf("%s sees %d rows of sys.availability_groups, want 1", user, n)
		}
	}
	if got := batch(t, inst, "monitor", contract.QueryReplicaStates); !strings.Contains(got, "AG1|SQL01|true|PRIMARY|CONNECTED|HEALTHY") {
		t.Errorf("the provider's replica query as monitor:\n%s", got)
	}
}

// Replicas on hosts that share a directory see each other as SQL Server's DMVs
// do: the primary every replica, a secondary only itself; a stopped secondary is
// DISCONNECTED on the primary, and one catching up after its start NOT_HEALTHY.
func TestReplicasSeeEachOther(t *testing.T) {
	t.Parallel()
	dir := &AGDirectory{}
	mk := func(name, role string) *Host {
		cfg := baseConfig()
		cfg.Name, cfg.Address = name, "127.0.0.9"
		cfg.Instances[0].AvailabilityGroup = &AvailabilityGroupConfig{Name: "AG1", Role: role}
		cfg.Instances[0].AGSyncMS = 60000
		h, err := New(cfg, Options{AGs: dir})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.Close)
		return h
	}
	p, s := mk("sqlp", AGRolePrimary), mk("sqls", AGRoleSecondary)
	pi, _ := p.Instance("MSSQLSERVER")
	si, _ := s.Instance("MSSQLSERVER")
	if got := batch(t, pi, "sa", contract.QueryReplicaStates); !strings.Contains(got, "AG1|SQLP|true|PRIMARY|CONNECTED|HEALTHY") ||
		!strings.Contains(got, "AG1|SQLS|false|SECONDARY|CONNECTED|HEALTHY") {
		t.Errorf("the primary's view:\n%s", got)
	}
	if got := batch(t, si, "sa", contract.QueryReplicaStates); rowCount(got) != 1 || !strings.Contains(got, "AG1|SQLS|true|SECONDARY|CONNECTED|HEALTHY") {
		t.Errorf("the secondary's view:\n%s", got)
	}
	if err := s.StopService("MSSQLSERVER", true); err != nil {
		t.Fatal(err)
	}
	if got := batch(t, pi, "sa", contract.QueryReplicaStates); !strings.Contains(got, "AG1|SQLS|false|NULL|DISCONNECTED|NOT_HEALTHY") {
		t.Errorf("the primary's view of a stopped secondary:\n%s", got)
	}
	if err := s.StartService("MSSQLSERVER"); err != nil {
		t.Fatal(err)
	}
	if err := s.waitFor(context.Background(), func() (bool, error) { return si.ready, nil }); err != nil {
		t.Fatal(err)
	}
	if got := batch(t, pi, "sa", contract.QueryReplicaStates); !strings.Contains(got, "AG1|SQLS|false|SECONDARY|CONNECTED|NOT_HEALTHY") {
		t.Errorf("the primary's view of a secondary catching up:\n%s", got)
	}
	if got := batch(t, si, "sa", contract.QueryReplicaStates); !strings.Contains(got, "|NOT_HEALTHY") {
		t.Errorf("the secondary catching up sees itself:\n%s", got)
	}
	// EndAGSyncNow ends the catching up before its 60 s: both views say HEALTHY,
	// and a second call fails (nothing to end).
	if err := s.EndAGSyncNow("MSSQLSERVER"); err != nil {
		t.Fatal(err)
	}
	if got := batch(t, pi, "sa", contract.QueryReplicaStates); !strings.Contains(got, "AG1|SQLS|false|SECONDARY|CONNECTED|HEALTHY") {
		t.Errorf("the primary's view once the secondary caught up:\n%s", got)
	}
	if got := batch(t, si, "sa", contract.QueryReplicaStates); strings.Contains(got, "NOT_HEALTHY") {
		t.Errorf("the secondary that caught up sees itself:\n%s", got)
	}
	if err := s.EndAGSyncNow("MSSQLSERVER"); err == nil {
		t.Error("EndAGSyncNow of a replica that is not catching up succeeded")
	}
}

// A running backup shows in sys.dm_exec_requests to a login with VIEW SERVER
// STATE only (others see their own session), and ends when the Engine stops.
func TestRunningBackups(t *testing.T) {
	t.Parallel()
	h := sqlHost(t)
	inst, _ := h.Instance("REPORTING")
	if err := h.StartBackup("REPORTING", ""); err != nil {
		t.Fatal(err)
	}
	if got := batch(t, inst, "sa", contract.QueryRequests); !strings.Contains(got, "BACKUP DATABASE") {
		t.Errorf("sa's requests:\n%s", got)
	}
	if got := batch(t, inst, "weak", contract.QueryRequests); strings.Contains(got, "BACKUP") || rowCount(got) != 1 {
		t.Errorf("a login without VIEW SERVER STATE sees other sessions:\n%s", got)
	}
	if err := h.RestartService("MSSQL$REPORTING"); err != nil {
		t.Fatal(err)
	}
	if got := batch(t, inst, "sa", contract.QueryRequests); strings.Contains(got, "BACKUP") {
		t.Errorf("the backup survived a restart:\n%s", got)
	}
}

// HADR_Enabled: read_instance reports the value and when its key was written; the
// Engine reads it at its next start (turning Always On off also leaves the group).
// A WSFC group's primary makes its node the owner of the group's cluster resource.
func TestHADRRegistry(t *testing.T) {
	t.Parallel()
	h := sqlHost(t)
	r := h.instanceReport("MSSQLSERVER", contract.RightManageVolume)
	if r.HADR == nil || !r.HADR.KeyFound || r.HADR.Enabled == nil || *r.HADR.Enabled != 1 || !r.HADR.KeyWritten.Before(*r.ProcessStartTime) ||
		!r.HADR.ClusterKnown || len(r.HADR.OwnedGroups) != 0 || strings.Join(r.HADR.UntiedGroups, ",") != "AG1" {
		t.Fatalf("HADR report %+v: want AG1 untied (the node has several instances; no cluster dependency ties it)", r.HADR)
	}
	// The other instance of the node is not reported as AG1's primary either: the
	// cluster cannot tell which instance holds it.
	if o := h.instanceReport("REPORTING", contract.RightManageVolume); len(o.HADR.OwnedGroups) != 0 || strings.Join(o.HADR.UntiedGroups, ",") != "AG1" {
		t.Errorf("REPORTING's HADR report %+v: want AG1 untied, owned none", o.HADR)
	}
	if err := h.SetHADRRegistry("MSSQLSERVER", new(int)); err != nil {
		t.Fatal(err)
	}
	r = h.instanceReport("MSSQLSERVER", contract.RightManageVolume)
	if *r.HADR.Enabled != 0 || r.HADR.KeyWritten.Before(*r.ProcessStartTime) {
		t.Errorf("after the write: %+v (Engine started %v)", r.HADR, r.ProcessStartTime)
	}
	if _, _, hadr := mustInstance(t, h, "MSSQLSERVER").AGState(); !hadr {
		t.Error("the running Engine left Always On before its restart")
	}
	if err := h.RestartService("MSSQLSERVER"); err != nil {
		t.Fatal(err)
	}
	if g, _, hadr := mustInstance(t, h, "MSSQLSERVER").AGState(); hadr || g != "" {
		t.Errorf("after the restart: group %q, Always On %v; want none, off", g, hadr)
	}
	r = h.instanceReport("MSSQLSERVER", contract.RightManageVolume)
	if !r.HADR.KeyWritten.Before(*r.ProcessStartTime) || len(r.HADR.OwnedGroups) != 0 || len(r.HADR.UntiedGroups) != 0 {
		t.Errorf("after the restart: %+v", r.HADR)
	}
	if r := h.instanceReport("LEGACY", contract.RightManageVolume); r.HADR.KeyFound {
		t.Errorf("SQL Server 2008 R2 has an HADR key: %+v", r.HADR)
	}
}

func mustInstance(t *testing.T, h *Host, name string) *Instance {
	t.Helper()
	i, ok := h.Instance(name)
	if !ok {
		t.Fatalf("no instance %s", name)
	}
	return i
}

// sys.availability_groups has cluster_type and cluster_type_desc from SQL Server 2017
// on (the replay of the synthetic transcript found them missing); before, the
// columns are unknown (error 207).
func TestAvailabilityGroupsClusterType(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.Instances[0].AvailabilityGroup = &AvailabilityGroupConfig{Name: "AG1", Role: AGRolePrimary, ClusterType: ClusterTypeNone}
	inst, _ := newHost(t, cfg).Instance("MSSQLSERVER")
	if got := batch(t, inst, "sa", "SELECT name, cluster_type, cluster_type_desc FROM sys.availability_groups"); !strings.Contains(got, "AG1|2|NONE") {
		t.Errorf("sys.availability_groups on 2022 with CLUSTER_TYPE = NONE:\n%s", got)
	}
	cfg = baseConfig()
	cfg.Instances[0].Version = "13.0.6300.2"
	cfg.Instances[0].AvailabilityGroup = &AvailabilityGroupConfig{Name: "AG1", Role: AGRolePrimary}
	inst, _ = newHost(t, cfg).Instance("MSSQLSERVER")
	if _, e := inst.TDSHandler().Batch(context.Background(), tds.Login{User: "sa"}, "SELECT cluster_type_desc FROM sys.availability_groups"); e == nil || e.Number != 207 {
		t.Errorf("cluster_type_desc on SQL Server 2016: %+v, want error 207", e)
	}
}

// A secondary names its primary in sys.dm_hadr_availability_group_states, and sees
// only its own row in sys.dm_hadr_availability_replica_states; the primary sees
// every replica.
func TestGroupStatesNamePrimary(t *testing.T) {
	h := sqlHost(t)
	q := `SELECT gs.primary_replica FROM sys.dm_hadr_availability_group_states AS gs`
	sec, _ := h.Instance("REPORTING")
	sets, err := sec.TDSHandler().Batch(context.Background(), tds.Login{User: "sa", Password: "Sql!", Session: 51}, q+`; SELECT is_local FROM sys.dm_hadr_availability_replica_states`)
	if err != nil {
		t.Fatal(err)
	}
	prim, _ := h.Instance("MSSQLSERVER")
	want := "primary_replica:nvarchar\n" + prim.serverName() + "\n--\nis_local:bit\ntrue\n"
	if got := tdstest.Render(sets); got != want {
		t.Errorf("on the secondary:\n%s\nwant\n%s", got, want)
	}
	sets, err = prim.TDSHandler().Batch(context.Background(), tds.Login{User: "sa", Password: "Sql!", Session: 51}, `SELECT is_local FROM sys.dm_hadr_availability_replica_states`)
	if err != nil {
		t.Fatal(err)
	}
	if got := tdstest.Render(sets); got != "is_local:bit\ntrue\nfalse\n" {
		t.Errorf("on the primary:\n%s", got)
	}
}
