package tsql_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds/tdstest"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tsql"
)

// The defaults follow the article (10 GB: 133 s without IFI, 13 s with) on one
// clock, tsql.Compression times faster: 1 GB takes 1 to 2 s without IFI and a
// tenth of that with it, and a log file is zeroed with or without IFI.
func TestZeroingDefaultsFromTheArticle(t *testing.T) {
	const data, log = false, true
	if got := tsql.ArticleSizeMB / tsql.ArticleZeroMBPerSecond; got < 132.5 || got > 133.5 {
		t.Errorf("the article's zeroing rate writes 10 GB in %.1f s; want 133 s (2 min 13 s)", got)
	}
	if got := tsql.ArticleSizeMB / tsql.ArticleIFIMBPerSecond; got < 12.5 || got > 13.5 {
		t.Errorf("the article's rate with IFI creates 10 GB in %.1f s; want 13 s", got)
	}
	if r := tsql.ArticleRatio; r < 10.15 || r >= 10.25 {
		t.Errorf("ArticleRatio = %v; want 10.2 (133 / 13)", r)
	}
	noIFI := tsql.FileCost(data, 1<<20, false, false)
	if !noIFI.Zeroed || noIFI.ModelledMS < 1000 || noIFI.ModelledMS > 2000 || noIFI.SizeMB != 1024 {
		t.Errorf("1 GB data file without IFI = %+v; want zeroed, 1 to 2 s", noIFI)
	}
	withIFI := tsql.FileCost(data, 1<<20, true, false)
	if withIFI.Zeroed || withIFI.ModelledMS < 100 || withIFI.ModelledMS > 200 {
		t.Errorf("1 GB data file with IFI = %+v; want not zeroed, 0.1 to 0.2 s", withIFI)
	}
	if l := tsql.FileCost(log, 1<<20, true, false); !l.Zeroed || l.ModelledMS != noIFI.ModelledMS {
		t.Errorf("1 GB log file with IFI = %+v; want zeroed like a data file without IFI (%v ms)", l, noIFI.ModelledMS)
	}
	if tde := tsql.FileCost(data, 1<<20, true, true); !tde.Zeroed {
		t.Errorf("a TDE database's data file with IFI = %+v; want zeroed (IFI never applies to TDE data files)", tde)
	}
}

// Both default rates run on one clock: the article's 10 GB take the article's
// times divided by tsql.Compression, with IFI as without, so the data file's
// ratio is the article's at 10 GB and at any other size.
func TestZeroingDefaultsOnOneClock(t *testing.T) {
	const data = false
	off := tsql.FileCost(data, tsql.ArticleSizeMB<<10, false, false).ModelledMS
	on := tsql.FileCost(data, tsql.ArticleSizeMB<<10, true, false).ModelledMS
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"without IFI", off, tsql.ArticleWithoutIFISeconds * 1000 / tsql.Compression},
		{"with IFI", on, tsql.ArticleWithIFISeconds * 1000 / tsql.Compression},
	} {
		if math.Abs(c.got-c.want) > 1 {
			t.Errorf("a 10 GB data file %s costs %.1f ms; want the article's time on the simulator's clock, %.1f ms", c.name, c.got, c.want)
		}
	}
	for _, mb := range []int64{8, 1024, tsql.ArticleSizeMB, 100 << 10} {
		off := tsql.FileCost(data, mb<<10, false, false).ModelledMS
		on := tsql.FileCost(data, mb<<10, true, false).ModelledMS
		if r := off / on; math.Abs(r-tsql.ArticleRatio) > 1e-6 {
			t.Errorf("a %d MB data file: %.3f ms without IFI, %.3f ms with, ratio %.4f; want the article's %.4f", mb, off, on, r, tsql.ArticleRatio)
		}
	}
}

// The seed measurement's statement (a data file and an 8 MB log, the log zeroed
// both times): its ratio is the one zeroing.go states, about 10.2 at the article's
// 10 GB and about 9.5 at the demo's 1 GB.
func TestZeroingStatementRatio(t *testing.T) {
	const data, log = false, true
	statement := func(dataMB int64, ifi bool) float64 {
		return tsql.FileCost(data, dataMB<<10, ifi, false).ModelledMS + tsql.FileCost(log, 8<<10, ifi, false).ModelledMS
	}
	for _, c := range []struct {
		dataMB   int64
		min, max float64
	}{
		{tsql.ArticleSizeMB, 10.15, 10.17}, // 10.16: printed as 10.2, the article's
		{1024, 9.54, 9.56},                 // 9.55
	} {
		if r := statement(c.dataMB, false) / statement(c.dataMB, true); r < c.min || r > c.max {
			t.Errorf("CREATE DATABASE with a %d MB data file and an 8 MB log: ratio %.3f; want %.2f to %.2f", c.dataMB, r, c.min, c.max)
		}
	}
}

// A configured zero_mb_per_s sets the instance's clock: the IFI rate moves with it
// and the ratio stays the article's; ifi_alloc_ms makes a data file under IFI cost
// a constant whatever its size.
func TestZeroingConfiguredFigures(t *testing.T) {
	const data = false
	slow := tsql.Config{ZeroMBPerSecond: tsql.DefaultZeroMBPerSecond / 4}
	for _, ifi := range []bool{false, true} {
		def := tsql.FileCost(data, 1<<20, ifi, false).ModelledMS
		got := tsql.FileCostWith(slow, data, 1<<20, ifi, false).ModelledMS
		if math.Abs(got-4*def) > 1e-6 {
			t.Errorf("IFI %t: a 1 GB data file at a quarter of the default zeroing rate costs %.3f ms; want 4 times the default's %.3f ms", ifi, got, def)
		}
	}
	alloc := 7
	fixed := tsql.Config{IFIAllocMS: &alloc}
	small, big := tsql.FileCostWith(fixed, data, 8<<10, true, false), tsql.FileCostWith(fixed, data, 10<<20, true, false)
	if small.ModelledMS != 7 || big.ModelledMS != 7 || big.Zeroed {
		t.Errorf("with ifi_alloc_ms 7: an 8 MB data file under IFI = %+v, a 10 GB one = %+v; want 7 ms each, not zeroed", small, big)
	}
	if l := tsql.FileCostWith(fixed, true, 1<<20, true, false); !l.Zeroed || l.ModelledMS != tsql.FileCost(true, 1<<20, false, false).ModelledMS {
		t.Errorf("with ifi_alloc_ms, a 1 GB log under IFI = %+v; want zeroed at the default rate", l)
	}
}

// zeroingHost is a host whose MSSQLSERVER zeroes at 10 GB/s (100 MB: 10 ms) and
// allocates under IFI in 1 ms, with a dbcreator login "creator" and a second one
// "other".
func zeroingHost(t *testing.T) (*host.Host, *host.Instance) {
	t.Helper()
	ic := defaultInstance()
	ic.ZeroMBPerSecond, ic.IFIAllocMS = 10240, intp(1)
	ic.Logins = append(ic.Logins, host.LoginConfig{Name: "creator", Password: "c", DBCreator: true},
		host.LoginConfig{Name: "other", Password: "o", DBCreator: true})
	h := start(t, ic)
	inst, _ := h.Instance("MSSQLSERVER")
	return h, inst
}

func tryBatch(t *testing.T, inst *host.Instance, user, q string) ([]tds.ResultSet, *tds.SQLError) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return inst.TDSHandler().Batch(ctx, tds.Login{User: user}, q)
}

func mustBatch(t *testing.T, inst *host.Instance, user, q string) []tds.ResultSet {
	t.Helper()
	rs, e := tryBatch(t, inst, user, q)
	if e != nil {
		t.Fatalf("%s as %s: Msg %d: %s", q, user, e.Number, e.Message)
	}
	return rs
}

func lastOperation(t *testing.T, inst *host.Instance) tsql.DatabaseOperation {
	t.Helper()
	ops := inst.DatabaseOperations()
	if len(ops) == 0 {
		t.Fatal("no database operation recorded")
	}
	return ops[len(ops)-1]
}

// CREATE DATABASE without IFI zeroes the data file (size / rate); after a grant and
// a restart the running Engine has IFI and the same statement costs the constant
// plus the log, which is zeroed both times. The statement waits its modelled time.
func TestCreateDatabaseZeroingWithAndWithoutIFI(t *testing.T) {
	t.Parallel()
	h, inst := zeroingHost(t)
	const create = "CREATE DATABASE seed ON PRIMARY (NAME = seed, FILENAME = 'D:\\data\\seed.mdf', SIZE = 200MB) LOG ON (NAME = seed_log, FILENAME = 'L:\\log\\seed_log.ldf', SIZE = 8 MB);"
	began := time.Now()
	if rs := mustBatch(t, inst, "creator", create); len(rs) != 1 || len(rs[0].Columns) != 0 {
		t.Fatalf("CREATE DATABASE answered %+v; want one statement without a result set", rs)
	}
	elapsed := time.Since(began)
	off := lastOperation(t, inst)
	if off.IFI || off.Statement != "CREATE DATABASE" || off.Database != "seed" || off.Login != "creator" || len(off.Files) != 2 {
		t.Fatalf("operation without IFI = %+v", off)
	}
	if d, l := off.Files[0], off.Files[1]; d.Type != "data" || !d.Zeroed || d.SizeMB != 200 || l.Type != "log" || !l.Zeroed || l.SizeMB != 8 {
		t.Errorf("files without IFI = %+v; want a zeroed 200 MB data file and a zeroed 8 MB log", off.Files)
	}
	if elapsed < time.Duration(off.ModelledMS*float64(time.Millisecond)) {
		t.Errorf("CREATE DATABASE answered after %v, before its modelled %v ms", elapsed, off.ModelledMS)
	}
	mustBatch(t, inst, "creator", "DROP DATABASE seed")

	if _, err := h.GrantRight(contract.RightManageVolume, engineSID); err != nil {
		t.Fatal(err)
	}
	mustBatch(t, inst, "creator", create)
	if still := lastOperation(t, inst); still.IFI || !still.Files[0].Zeroed {
		t.Fatalf("after a grant without a restart: %+v; want the data file still zeroed (the token is the one the Engine started with)", still)
	}
	mustBatch(t, inst, "creator", "DROP DATABASE seed")
	if err := h.RestartService("MSSQLSERVER"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.WaitServiceState(ctx, "MSSQLSERVER", contract.StateRunning); err != nil {
		t.Fatal(err)
	}
	waitReady(t, inst)
	mustBatch(t, inst, "creator", create)
	on := lastOperation(t, inst)
	if !on.IFI || on.Files[0].Zeroed || !on.Files[1].Zeroed {
		t.Fatalf("after the restart: %+v; want IFI, the data file not zeroed, the log zeroed", on)
	}
	if ratio := off.ModelledMS / on.ModelledMS; ratio < 5 {
		t.Errorf("modelled %v ms without IFI, %v ms with: ratio %.1f; want the data file's zeroing to dominate (> 5)", off.ModelledMS, on.ModelledMS, ratio)
	}
	// Growing the data file: zeroed only without IFI; the log always.
	mustBatch(t, inst, "creator", "ALTER DATABASE seed MODIFY FILE (NAME = seed, SIZE = 300MB)")
	if grow := lastOperation(t, inst); grow.Statement != "ALTER DATABASE MODIFY FILE" || grow.Files[0].Zeroed || grow.Files[0].SizeMB != 100 {
		t.Errorf("a data file growth with IFI = %+v; want 100 MB, not zeroed", grow)
	}
	mustBatch(t, inst, "creator", "ALTER DATABASE seed MODIFY FILE (NAME = seed_log, SIZE = 16MB)")
	if grow := lastOperation(t, inst); !grow.Files[0].Zeroed || grow.Files[0].Type != "log" {
		t.Errorf("a log growth with IFI = %+v; want zeroed", grow)
	}
}

func waitReady(t *testing.T, inst *host.Instance) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !inst.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("the Engine did not accept connections within 10s")
		}
		time.Sleep(10 * time.Millisecond) // poll interval, with a deadline
	}
}

// A new database is TDE-off: sys.databases lists it unencrypted, and
// sys.dm_database_encryption_keys has no row for it; the snapshot shows its owner
// and files. DROP removes it.
func TestCreatedDatabaseInTheCatalog(t *testing.T) {
	t.Parallel()
	h, inst := zeroingHost(t)
	mustBatch(t, inst, "creator", "create database [Seed 1] on (name='s1', filename='D:\\s1.mdf', size=1GB)")
	got := tdstest.Render(mustBatch(t, inst, "sa", "SELECT name, database_id, is_encrypted FROM sys.databases WHERE database_id > 4"))
	if got != "name:nvarchar,database_id:int,is_encrypted:bit\nSeed 1|5|false\n" {
		t.Errorf("sys.databases:\n%s", got)
	}
	if got := tdstest.Render(mustBatch(t, inst, "sa", "SELECT database_id FROM sys.dm_database_encryption_keys")); got != "database_id:int\n" {
		t.Errorf("sys.dm_database_encryption_keys has rows for an unencrypted database:\n%s", got)
	}
	snap := h.Snapshot().Instances[0]
	db := snap.Databases[len(snap.Databases)-1]
	if db.Name != "Seed 1" || db.Owner != "creator" || db.TDE || len(db.Files) != 2 || db.Files[0].SizeMB != 1024 || db.Files[1].SizeMB != 256 {
		t.Errorf("snapshot database = %+v; want Seed 1 owned by creator, 1 GB data and a 256 MB log (25%% of the data without LOG ON)", db)
	}
	mustBatch(t, inst, "creator", "DROP DATABASE [Seed 1]")
	if got := tdstest.Render(mustBatch(t, inst, "sa", "SELECT name FROM sys.databases WHERE database_id > 4")); got != "name:nvarchar\n" {
		t.Errorf("after DROP, sys.databases still lists:\n%s", got)
	}
}

// Permissions as SQL Server checks them, and its errors.
func TestDatabaseStatementErrors(t *testing.T) {
	t.Parallel()
	_, inst := zeroingHost(t)
	mustBatch(t, inst, "creator", "CREATE DATABASE mine")
	for _, tc := range []struct {
		name, user, query string
		number            int32
		class, state      uint8
		message           string
	}{
		{"CREATE without CREATE ANY DATABASE", "weak", "CREATE DATABASE x", 262, 14, 1, "CREATE DATABASE permission denied in database 'master'."},
		{"CREATE an existing database", "sa", "CREATE DATABASE MINE", 1801, 16, 3, "Database 'MINE' already exists. Choose a different database name."},
		{"CREATE a system database's name", "sa", "CREATE DATABASE model", 1801, 16, 3, "Database 'model' already exists."},
		{"a primary file smaller than model", "sa", "CREATE DATABASE x ON (NAME = x, SIZE = 4MB)", 1803, 16, 1, "The CREATE DATABASE statement failed. The primary file must be at least 8 MB"},
		{"one logical name twice", "sa", "CREATE DATABASE x ON (NAME = f) LOG ON (NAME = f)", 1828, 16, 3, `The logical file name "f" is already in use.`},
		{"DROP a system database", "sa", "DROP DATABASE master", 3708, 16, 1, "Cannot drop the database 'master' because it is a system database."},
		{"DROP a missing database", "sa", "DROP DATABASE nope", 3701, 11, 1, "Cannot drop the database 'nope', because it does not exist or you do not have permission."},
		{"DROP another login's database as dbcreator", "other", "DROP DATABASE mine", 3701, 11, 1, "Cannot drop the database 'mine', because it does not exist or you do not have permission."},
		{"DROP without any permission", "weak", "DROP DATABASE mine", 3701, 11, 1, "Cannot drop the database 'mine'"},
		{"ALTER another login's database", "other", "ALTER DATABASE mine MODIFY FILE (NAME = mine, SIZE = 20MB)", 5011, 14, 9, "User does not have permission to alter database 'mine', the database does not exist"},
		{"ALTER a missing file", "creator", "ALTER DATABASE mine MODIFY FILE (NAME = nofile, SIZE = 20MB)", 5041, 16, 1, "MODIFY FILE failed. File 'nofile' does not exist."},
		{"shrink with MODIFY FILE", "creator", "ALTER DATABASE mine MODIFY FILE (NAME = mine, SIZE = 8MB)", 5039, 16, 1, "MODIFY FILE failed. Specified size is less than or equal to current size."},
		{"filespec without NAME", "sa", "CREATE DATABASE x ON (FILENAME = 'x.mdf', SIZE = 1GB)", 102, 15, 1, "Incorrect syntax near ')'."},
		{"a unit that is none", "sa", "CREATE DATABASE x ON (NAME = x, SIZE = 1PB)", 102, 15, 1, "Incorrect syntax near '1PB'."},
		{"CREATE DATABASE without a name", "sa", "CREATE DATABASE", 156, 15, 1, "Incorrect syntax near the keyword 'DATABASE'."},
		{"DROP DATABASE IF without EXISTS", "sa", "DROP DATABASE IF mine", 102, 15, 1, "Incorrect syntax near 'mine'."},
		{"CREATE TABLE is not modelled", "sa", "CREATE TABLE t (a int)", 50000, 16, 1, "winsim does not model CREATE TABLE statements"},
		{"COLLATE is not modelled", "sa", "CREATE DATABASE x COLLATE Latin1_General_CI_AS", 50000, 16, 1, "winsim does not model CREATE DATABASE ... COLLATE"},
		{"two data files are not modelled", "sa", "CREATE DATABASE x ON (NAME = a), (NAME = b)", 50000, 16, 1, "winsim does not model CREATE DATABASE with more than one data file"},
		{"ALTER DATABASE SET is not modelled", "sa", "ALTER DATABASE mine SET RECOVERY SIMPLE", 50000, 16, 1, "winsim does not model ALTER DATABASE ... SET"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, e := tryBatch(t, inst, tc.user, tc.query)
			if e == nil {
				t.Fatalf("%s\nanswered %+v\nwant Msg %d", tc.query, rs, tc.number)
			}
			if e.Number != tc.number || e.Class != tc.class || e.State != tc.state || e.Line != 1 || !strings.HasPrefix(e.Message, tc.message) {
				t.Errorf("%s\ngot Msg %d, Level %d, State %d, Line %d: %s\nwant Msg %d, Level %d, State %d, Line 1: %s",
					tc.query, e.Number, e.Class, e.State, e.Line, e.Message, tc.number, tc.class, tc.state, tc.message)
			}
		})
	}
	// The owner and sysadmin may drop; IF EXISTS skips a missing name.
	mustBatch(t, inst, "creator", "DROP DATABASE IF EXISTS nope, mine")
	mustBatch(t, inst, "other", "CREATE DATABASE theirs; CREATE DATABASE more")
	mustBatch(t, inst, "sa", "DROP DATABASE theirs, more")
	if got := tdstest.Render(mustBatch(t, inst, "sa", "SELECT name FROM sys.databases WHERE database_id > 4")); got != "name:nvarchar\n" {
		t.Errorf("after the drops, sys.databases lists:\n%s", got)
	}
}

// A cancelled CREATE DATABASE (ATTENTION, a lost connection) creates nothing.
func TestCancelledCreateDatabaseCreatesNothing(t *testing.T) {
	ic := defaultInstance()
	ic.ZeroMBPerSecond = 1 // 1 GB: 17 minutes
	h := start(t, ic)
	inst, _ := h.Instance("MSSQLSERVER")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *tds.SQLError, 1)
	go func() {
		_, e := inst.TDSHandler().Batch(ctx, tds.Login{User: "sa"}, "CREATE DATABASE slow ON (NAME = slow, SIZE = 1GB)")
		done <- e
	}()
	cancel()
	if e := <-done; e == nil {
		t.Fatal("a cancelled CREATE DATABASE succeeded")
	}
	if got := tdstest.Render(mustBatch(t, inst, "sa", "SELECT name FROM sys.databases WHERE name = 'slow'")); got != "name:nvarchar\n" {
		t.Errorf("the cancelled CREATE DATABASE left a database:\n%s", got)
	}
}
