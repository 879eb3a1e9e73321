package hostsuite

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/sqlcheck"
)

func (s *Suite) planSeed() []string {
	return []string{
		fmt.Sprintf("read the default data and log paths (SERVERPROPERTY) and check that no database %s exists", seedDatabase),
		"revoke the right and restart the Engine (restart_instance); check that SQL Server says IFI is off",
		fmt.Sprintf("time CREATE DATABASE %s with a data file of %d MB (%s; that much free space in the data folder for a moment) and a log of %d MB, as %s; check it does not use TDE; DROP it",
			seedDatabase, s.cfg.SeedMB, EnvSeedMB, seedLogSizeMB, EnvSeedUser),
		"grant the right and restart the Engine; check that SQL Server says IFI is on",
		fmt.Sprintf("time the same CREATE DATABASE again; DROP it; print both times and the ratio, beside the article's (%d MB: %s off, %s on)",
			articleSeedMB, articleOff, articleOn),
		"put the right back as the preflight found it (restarting when that changes it)",
	}
}

// seedStage times CREATE DATABASE with IFI off, then on.
func (s *Suite) seedStage(ctx context.Context) {
	if s.sqlCfg == nil {
		s.p.skip("seed", "%s is not set: the suite checks IFI through SQL Server between the two measurements", EnvSQLUser)
		return
	}
	seedCfg, err := s.sqlConfig(s.cfg.SeedUser, s.cfg.SeedPass)
	if err != nil {
		s.p.fail("seed", "%v", err)
		return
	}
	s.p.about("read the default data and log paths, and check that no database %s exists", seedDatabase)
	rows, err := s.query(ctx, seedCfg, "SELECT CAST(SERVERPROPERTY('InstanceDefaultDataPath') AS nvarchar(260)) AS data_path, "+
		"CAST(SERVERPROPERTY('InstanceDefaultLogPath') AS nvarchar(260)) AS log_path")
	if err != nil || len(rows) != 1 {
		s.p.fail("seed paths", "%v (rows: %d)", err, len(rows))
		return
	}
	dataPath, logPath := text(rows[0][0]), text(rows[0][1])
	if dataPath == "" || logPath == "" {
		s.p.fail("seed paths", "SQL Server gave no default data or log path (SERVERPROPERTY InstanceDefaultDataPath/LogPath, SQL Server 2012 and later)")
		return
	}
	if exists, _, err := s.seedDB(ctx, seedCfg); err != nil || exists {
		s.p.fail("seed", "a database %s already exists (a run that stopped half-way?): look at it and DROP DATABASE [%s] yourself; err: %v", seedDatabase, seedDatabase, err)
		return
	}
	s.p.pass("seed paths", "data files in %s, logs in %s", dataPath, logPath)
	create := fmt.Sprintf("CREATE DATABASE [%s] ON PRIMARY (NAME = N'%s', FILENAME = N'%s%s.mdf', SIZE = %dMB) "+
		"LOG ON (NAME = N'%s_log', FILENAME = N'%s%s_log.ldf', SIZE = %dMB)",
		seedDatabase, seedDatabase, sqlQuote(withSep(dataPath)), seedDatabase, s.cfg.SeedMB,
		seedDatabase, sqlQuote(withSep(logPath)), seedDatabase, seedLogSizeMB)
	m := &Measurement{SizeMB: s.cfg.SeedMB, LogMB: seedLogSizeMB, Modelled: s.cfg.SimControl != ""}
	for _, on := range []bool{false, true} {
		if !s.restartWith(ctx, "ifi "+onOff(on), on) {
			s.restore(ctx)
			return
		}
		s.verifyIFI(ctx, on)
		took, ok := s.timeCreate(ctx, seedCfg, create, on)
		if !ok {
			s.restore(ctx)
			return
		}
		if on {
			m.On = took
		} else {
			m.Off = took
		}
	}
	s.rep.Seed = m
	s.p.line("seed measurement: %s", m)
	s.p.pass("seed measurement", "%s", m)
	s.restore(ctx)
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// timeCreate times one CREATE DATABASE, checks the database does not use TDE, and
// drops it.
func (s *Suite) timeCreate(ctx context.Context, cfg *sqlcheck.Config, create string, on bool) (time.Duration, bool) {
	check := "create database (ifi " + onOff(on) + ")"
	s.p.about("CREATE DATABASE %s (data file %d MB, log %d MB), timed", seedDatabase, s.cfg.SeedMB, seedLogSizeMB)
	took, err := s.execTimed(ctx, cfg, create, s.opt.StepTimeout)
	if err != nil {
		s.p.fail(check, "%v", err)
		return 0, false
	}
	ok := true
	if exists, encrypted, err := s.seedDB(ctx, cfg); err != nil || !exists || encrypted {
		s.p.fail(check, "after CREATE DATABASE: exists %t, uses TDE %t, err %v (IFI never applies to a TDE database's data files)", exists, encrypted, err)
		ok = false
	} else {
		s.p.pass(check, "%s", roundDur(took))
	}
	s.p.about("DROP DATABASE %s", seedDatabase)
	if _, err := s.execTimed(ctx, cfg, "DROP DATABASE ["+seedDatabase+"]", s.opt.StepTimeout); err != nil {
		s.p.fail("drop database", "%v. Drop it yourself: DROP DATABASE [%s]", err, seedDatabase)
		return took, false
	}
	return took, ok
}

// seedDB reports whether the seed's database exists and whether it is encrypted.
func (s *Suite) seedDB(ctx context.Context, cfg *sqlcheck.Config) (exists, encrypted bool, err error) {
	rows, err := s.query(ctx, cfg, "SELECT name, is_encrypted FROM sys.databases WHERE name = N'"+seedDatabase+"'")
	if err != nil || len(rows) == 0 {
		return false, false, err
	}
	return true, text(rows[0][1]) == "true" || text(rows[0][1]) == "1", nil
}

func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case []byte:
		return string(x)
	}
	return fmt.Sprint(v)
}

func withSep(p string) string {
	if strings.HasSuffix(p, `\`) || strings.HasSuffix(p, "/") {
		return p
	}
	return p + `\`
}

func sqlQuote(s string) string { return strings.ReplaceAll(s, "'", "''") }
