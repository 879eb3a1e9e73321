package winsim_test

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"testing"
	"time"

	mssql "github.com/microsoft/go-mssqldb"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tsql"
)

// The seed measurement through go-mssqldb: CREATE DATABASE with a data file and a
// small fixed log, IFI off, then on after a grant and a restart through the
// control plane. The assertion is on the durations the simulator modelled (the
// control plane's database_operations), never on the wall clock.
func TestSeedMeasurementThroughGoMssqldb(t *testing.T) {
	ifiAllocMS := 5
	sim := startFleetWith(t, func(cfg *winsim.Config) {
		for i := range cfg.Hosts[0].Instances {
			if cfg.Hosts[0].Instances[i].Name == "MSSQLSERVER" {
				// 256 MB: 100 ms without IFI, 5 ms with, to keep the test short.
				cfg.Hosts[0].Instances[i].ZeroMBPerSecond = 2560
				cfg.Hosts[0].Instances[i].IFIAllocMS = &ifiAllocMS
			}
		}
	})
	ctl := control{t, sim.Info().Control}
	u := url.URL{Scheme: "sqlserver", User: url.UserPassword("seed", "Winsim-Seed1!"), Host: sqlAddr(t, sim, "sql01", "MSSQLSERVER"), RawQuery: "encrypt=disable&dial+timeout=5"}
	db, err := sql.Open("sqlserver", u.String())
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxIdleConns(0)
	t.Cleanup(func() { _ = db.Close() })
	const create = `CREATE DATABASE mssqlifi_seed ON PRIMARY (NAME = mssqlifi_seed, FILENAME = 'C:\Data\mssqlifi_seed.mdf', SIZE = 256MB)
LOG ON (NAME = mssqlifi_seed_log, FILENAME = 'C:\Data\mssqlifi_seed_log.ldf', SIZE = 8MB)`
	exec := func(q string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	lastOp := func() tsql.DatabaseOperation {
		t.Helper()
		var snap host.Snapshot
		ctl.do("GET", "/v1/hosts/sql01", nil, &snap)
		for _, in := range snap.Instances {
			if in.Name == "MSSQLSERVER" && len(in.DatabaseOperations) > 0 {
				return in.DatabaseOperations[len(in.DatabaseOperations)-1]
			}
		}
		t.Fatal("the control plane reports no database operation on sql01\\MSSQLSERVER")
		return tsql.DatabaseOperation{}
	}

	exec(create)
	off := lastOp()
	var encrypted bool
	if err := db.QueryRow("SELECT is_encrypted FROM sys.databases WHERE name = 'mssqlifi_seed'").Scan(&encrypted); err != nil || encrypted {
		t.Errorf("sys.databases for the new database: is_encrypted %v, %v; want a row, not encrypted", encrypted, err)
	}
	exec("DROP DATABASE mssqlifi_seed")

	// A second CREATE by the same name fails with SQL Server's error, seen by go-mssqldb.
	exec(create)
	var sqlErr mssql.Error
	if _, err := db.Exec(create); !errors.As(err, &sqlErr) || sqlErr.Number != 1801 {
		t.Errorf("CREATE DATABASE of an existing name: %v; want Msg 1801", err)
	}
	exec("DROP DATABASE mssqlifi_seed")

	ctl.action("sql01", map[string]any{"action": "grant_right", "right": contract.RightManageVolume, "sid": mssqlserverSID})
	ctl.action("sql01", map[string]any{"action": "restart_service", "service": "MSSQLSERVER"})
	waitIFI(t, openDB(t, sqlAddr(t, sim, "sql01", "MSSQLSERVER")))
	exec(create)
	on := lastOp()
	exec("DROP DATABASE mssqlifi_seed")

	if off.IFI || !on.IFI {
		t.Fatalf("IFI of the Engine that ran the two creates: %v then %v; want false then true", off.IFI, on.IFI)
	}
	if !off.Files[0].Zeroed || on.Files[0].Zeroed || !off.Files[1].Zeroed || !on.Files[1].Zeroed {
		t.Errorf("zeroed files: without IFI %+v, with IFI %+v; want the data file zeroed only without IFI, the log both times", off.Files, on.Files)
	}
	var snap host.Snapshot
	ctl.do("GET", "/v1/hosts/sql01", nil, &snap)
	for _, in := range snap.Instances {
		z := in.Zeroing
		switch {
		case in.Name == "MSSQLSERVER" && (z.ZeroMBPerSecond != 2560 || z.IFIAllocMS == nil || *z.IFIAllocMS != 5 || z.IFIMBPerSecond != 0):
			t.Errorf("the snapshot's zeroing for the configured MSSQLSERVER = %+v; want zero_mb_per_s 2560, ifi_alloc_ms 5, no IFI rate", z)
		case in.Name != "MSSQLSERVER" && (z.ZeroMBPerSecond != tsql.DefaultZeroMBPerSecond || z.IFIMBPerSecond != tsql.DefaultIFIMBPerSecond || z.IFIAllocMS != nil):
			t.Errorf("the snapshot's zeroing for %s (defaults) = %+v; want the default rates, no ifi_alloc_ms", in.Name, z)
		}
	}
	ratio := off.ModelledMS / on.ModelledMS
	t.Logf("modelled by the simulator, not measured: %.0f ms without IFI, %.0f ms with IFI, ratio %.1f", off.ModelledMS, on.ModelledMS, ratio)
	if ratio < 5 {
		t.Errorf("modelled ratio %.1f (%v ms / %v ms); want the data file's zeroing to dominate", ratio, off.ModelledMS, on.ModelledMS)
	}
}
