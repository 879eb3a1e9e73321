package tsql

import (
	"context"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds"
)

// Zeroing: what creating or growing a database file costs the Engine, the
// difference Instant File Initialization makes (modelled, not measured;
// FIDELITY.md). SQL Server writes zeros over the whole new space of a file unless
// the running Engine's token holds SeManageVolumePrivilege ("Database instant file
// initialization", Microsoft Learn). IFI never applies to log files (always zeroed;
// the SQL Server 2022 exception for log autogrowth of up to 64 MB is not modelled:
// the simulator has no autogrowth), to the data files of a TDE database, or while
// trace flag 1806 is on (Process.IFI).
//
// The figures come from the article the project started from: a 10 GB data file
// took 2 min 13 s (133 s) to create without IFI and 13 s with it, a ratio of 10.2.
// The article gives one size and the whole statement's time, not a breakdown: its
// log's size, the copy of model and the metadata are inside both figures. The model
// charges both figures to the data file, as rates per MB:
//
//   - without IFI, the new space is zeroed at 10240 MB / 133 s, about 77 MB/s
//     (ArticleZeroMBPerSecond);
//   - with IFI, a data file is allocated at 10240 MB / 13 s, about 788 MB/s
//     (ArticleIFIMBPerSecond).
//
// A rate rather than a constant for the second: from one size a constant cannot be
// told apart from a rate, and a constant would have to be the article's whole 13 s,
// which would make a 1 GB data file as slow with IFI as without. With rates, the
// model's ratio for a data file alone is 133 / 13 (ArticleRatio) at every size. A
// log file is zeroed with or without IFI, at the zeroing rate, so a statement's
// ratio is a little lower than the data file's, the more so the larger the log is
// beside the data file: CREATE DATABASE with a 10 GB data file and an 8 MB log
// (the seed measurement's) comes to about 10.2 (10.16), with a 1 GB data file and
// the same log to about 9.5.
//
// The simulator runs both rates on one clock, Compression times faster than the
// article's, so the demo does not wait minutes: a 1 GB data file takes about 1.3 s
// to zero and 0.13 s to allocate under IFI. Compression changes every duration by
// the same factor and so no ratio. An instance's zero_mb_per_s sets its clock: its
// IFI rate stays ArticleRatio times its zeroing rate. ifi_alloc_ms replaces the
// IFI rate with a constant per data file (tests use it to keep a data file's cost
// small and fixed).
const (
	// ArticleSizeMB is the size of the article's data file: 10 GB.
	ArticleSizeMB = 10240
	// ArticleWithoutIFISeconds and ArticleWithIFISeconds are the article's times for
	// creating it: 2 min 13 s without IFI, 13 s with.
	ArticleWithoutIFISeconds = 133
	ArticleWithIFISeconds    = 13
	// ArticleRatio is the article's ratio, 133 / 13 (10.2): the model's for a data
	// file alone, at any size.
	ArticleRatio = float64(ArticleWithoutIFISeconds) / ArticleWithIFISeconds
	// ArticleZeroMBPerSecond is the article's zeroing rate: 10 GB in 133 s.
	ArticleZeroMBPerSecond = float64(ArticleSizeMB) / ArticleWithoutIFISeconds
	// ArticleIFIMBPerSecond is the article's rate of creating a data file with IFI:
	// 10 GB in 13 s.
	ArticleIFIMBPerSecond = float64(ArticleSizeMB) / ArticleWithIFISeconds
	// Compression is how many times faster than the article's the simulator's clock
	// runs by default, for zeroing and for allocation alike.
	Compression = 10
	// DefaultZeroMBPerSecond is the simulator's default zeroing rate: the article's,
	// Compression times faster.
	DefaultZeroMBPerSecond = ArticleZeroMBPerSecond * Compression
	// DefaultIFIMBPerSecond is the simulator's default rate of creating or growing a
	// data file under IFI: the article's, Compression times faster.
	DefaultIFIMBPerSecond = ArticleIFIMBPerSecond * Compression
	// modelFileKB is the size of the model database's data and log files (8 MB
	// since SQL Server 2016), which a new database's files default to; the primary
	// file may not be smaller (error 1803).
	modelFileKB = 8 << 10
	// minLogKB is the smallest log CREATE DATABASE makes by itself (512 KB).
	minLogKB = 512
	// maxDatabaseOperations bounds the operations an instance remembers.
	maxDatabaseOperations = 32
)

// userDatabase is a user database: a configured TDE one or one CREATE DATABASE made.
type userDatabase struct {
	id    int
	name  string
	owner string // the login that created it (its dbo)
	tde   bool
	files []*dbFile
}

// dbFile is one file of a user database.
type dbFile struct {
	name     string // logical name
	physical string
	log      bool
	sizeKB   int64
}

func configuredTDEDatabase(name string, id int) *userDatabase {
	return &userDatabase{id: id, name: name, owner: "sa", tde: true, files: []*dbFile{
		{name: name, physical: defaultDataDir + name + ".mdf", sizeKB: modelFileKB},
		{name: name + "_log", physical: defaultDataDir + name + "_log.ldf", log: true, sizeKB: modelFileKB},
	}}
}

// defaultDataDir is where files without a FILENAME go.
const defaultDataDir = `C:\Program Files\Microsoft SQL Server\MSSQL\DATA\`

// DatabaseOperation is one statement that created or grew files, as the control
// plane reports it (instances[].database_operations): what the model charged for
// it. ModelledMS is what the statement waited, not a measurement.
type DatabaseOperation struct {
	Statement string          `json:"statement"` // CREATE DATABASE, ALTER DATABASE MODIFY FILE
	Database  string          `json:"database"`
	Login     string          `json:"login"`
	IFI       bool            `json:"ifi"` // the running Engine's token gave IFI
	Files     []FileOperation `json:"files"`
	// ModelledMS is the statement's modelled duration, the sum of its files'.
	ModelledMS float64   `json:"modelled_ms"`
	At         time.Time `json:"at"`
}

// FileOperation is one file created or grown.
type FileOperation struct {
	File   string `json:"file"` // logical name
	Type   string `json:"type"` // "data" or "log"
	SizeMB int64  `json:"size_mb"`
	// Zeroed: the new space was written with zeros (a log file; a data file without IFI).
	Zeroed     bool    `json:"zeroed"`
	ModelledMS float64 `json:"modelled_ms"`
}

// ZeroingModel is an instance's zeroing figures, defaults filled, as the control
// plane reports them (instances[].zeroing).
type ZeroingModel struct {
	// ZeroMBPerSecond is how fast a file that must be zeroed is written.
	ZeroMBPerSecond float64 `json:"zero_mb_per_s"`
	// IFIMBPerSecond is how fast a data file is created or grown under IFI:
	// ArticleRatio times ZeroMBPerSecond; 0 when IFIAllocMS replaces it.
	IFIMBPerSecond float64 `json:"ifi_mb_per_s"`
	// IFIAllocMS, when set (ifi_alloc_ms), is what a data file's creation or growth
	// costs under IFI whatever its size.
	IFIAllocMS *int `json:"ifi_alloc_ms"`
}

// Zeroing returns the instance's zeroing figures, defaults filled: a configured
// zero_mb_per_s sets the clock of both rates.
func (srv *Server) Zeroing() ZeroingModel {
	m := ZeroingModel{ZeroMBPerSecond: DefaultZeroMBPerSecond, IFIMBPerSecond: DefaultIFIMBPerSecond}
	if srv.cfg.ZeroMBPerSecond > 0 {
		m.ZeroMBPerSecond = srv.cfg.ZeroMBPerSecond
		m.IFIMBPerSecond = srv.cfg.ZeroMBPerSecond * ArticleRatio
	}
	if srv.cfg.IFIAllocMS != nil {
		ms := *srv.cfg.IFIAllocMS
		m.IFIAllocMS, m.IFIMBPerSecond = &ms, 0
	}
	return m
}

// cost is what writing kb costs: zeroed, or allocated under IFI.
func (m ZeroingModel) cost(kb int64, zeroed bool) time.Duration {
	switch {
	case zeroed:
		return mbDuration(kb, m.ZeroMBPerSecond)
	case m.IFIAllocMS != nil:
		return time.Duration(*m.IFIAllocMS) * time.Millisecond
	}
	return mbDuration(kb, m.IFIMBPerSecond)
}

func mbDuration(kb int64, mbPerSecond float64) time.Duration {
	return time.Duration(float64(kb) / 1024 / mbPerSecond * float64(time.Second))
}

// fileCost is what creating or growing a file by kb costs.
func (srv *Server) fileCost(f *dbFile, kb int64, ifi, tde bool) FileOperation {
	op := FileOperation{File: f.name, Type: "data", SizeMB: (kb + 1023) >> 10}
	if f.log {
		op.Type = "log"
	}
	op.Zeroed = f.log || tde || !ifi
	op.ModelledMS = float64(srv.Zeroing().cost(kb, op.Zeroed)) / float64(time.Millisecond)
	return op
}

// charge waits for an operation's modelled duration, as the statement's caller
// waits for SQL Server to finish writing. A cancelled batch (ATTENTION, a lost
// connection) ends the wait and the statement does nothing.
func (srv *Server) charge(ctx context.Context, op *DatabaseOperation) *tds.SQLError {
	for _, f := range op.Files {
		op.ModelledMS += f.ModelledMS
	}
	if !srv.inst.Sleep(ctx, time.Duration(op.ModelledMS*float64(time.Millisecond))) {
		return sqlErr(3621, 10, 51, 1, "The statement has been terminated.")
	}
	return nil
}

// record remembers an operation for the control plane. srv.dbMu must be held.
func (srv *Server) recordLocked(op DatabaseOperation) {
	op.At = srv.inst.Now().UTC()
	srv.fileOps = append(srv.fileOps, op)
	if len(srv.fileOps) > maxDatabaseOperations {
		srv.fileOps = slices.Delete(srv.fileOps, 0, len(srv.fileOps)-maxDatabaseOperations)
	}
}

// DatabaseOperations returns the operations the instance remembers, oldest first.
func (srv *Server) DatabaseOperations() []DatabaseOperation {
	srv.dbMu.Lock()
	defer srv.dbMu.Unlock()
	out := make([]DatabaseOperation, len(srv.fileOps))
	for n, op := range srv.fileOps {
		op.Files = slices.Clone(op.Files)
		out[n] = op
	}
	return out
}

var systemDatabases = []string{"master", "tempdb", "model", "msdb"}

func isSystemDatabase(name string) bool {
	return slices.ContainsFunc(systemDatabases, func(s string) bool { return strings.EqualFold(s, name) })
}

// findDBLocked finds a user database by name. srv.dbMu must be held.
func (srv *Server) findDBLocked(name string) (int, *userDatabase) {
	for n, db := range srv.userDBs {
		if strings.EqualFold(db.name, name) {
			return n, db
		}
	}
	return -1, nil
}

// mayControl reports CONTROL on db: its owner, or sysadmin. (dbcreator's CREATE
// ANY DATABASE gives no right over another login's database.)
func mayControl(login LoginConfig, db *userDatabase) bool {
	return login.IsSysadmin() || strings.EqualFold(login.Name, db.owner)
}

// createDatabase runs CREATE DATABASE.
func (srv *Server) createDatabase(ctx context.Context, login LoginConfig, s createDBStmt) *tds.SQLError {
	if !login.CanCreateDatabase() {
		return sqlErr(262, 14, 1, s.line, "CREATE DATABASE permission denied in database 'master'.")
	}
	exists := func() *tds.SQLError {
		_, db := srv.findDBLocked(s.name)
		if db != nil || isSystemDatabase(s.name) {
			return sqlErr(1801, 16, 3, s.line, "Database '%s' already exists. Choose a different database name.", s.name)
		}
		return nil
	}
	srv.dbMu.Lock()
	err := exists()
	srv.dbMu.Unlock()
	if err != nil {
		return err
	}
	data := &dbFile{name: s.name, physical: defaultDataDir + s.name + ".mdf", sizeKB: modelFileKB}
	if s.data != nil {
		data.name = s.data.name
		if s.data.filename != "" {
			data.physical = s.data.filename
		}
		if s.data.sizeKB > 0 {
			data.sizeKB = s.data.sizeKB
		}
	}
	if data.sizeKB < modelFileKB {
		return sqlErr(1803, 16, 1, s.line, "The CREATE DATABASE statement failed. The primary file must be at least %d MB to accommodate a copy of the model database.", modelFileKB>>10)
	}
	// Without LOG ON, the log is 25% of the data files' size, at least 512 KB
	// (CREATE DATABASE, "LOG ON"); with LOG ON and no SIZE, the model's 8 MB.
	log := &dbFile{name: s.name + "_log", physical: defaultDataDir + s.name + "_log.ldf", log: true, sizeKB: max(data.sizeKB/4, minLogKB)}
	if s.data != nil && s.log == nil && s.data.name == log.name {
		log.name = s.name + "_log1"
	}
	if s.log != nil {
		log.name, log.sizeKB = s.log.name, modelFileKB
		if s.log.filename != "" {
			log.physical = s.log.filename
		}
		if s.log.sizeKB > 0 {
			log.sizeKB = s.log.sizeKB
		}
	}
	if strings.EqualFold(data.name, log.name) {
		return sqlErr(1828, 16, 3, s.line, "The logical file name \"%s\" is already in use. Choose a different name.", log.name)
	}
	ifi := srv.inst.RunningIFI()
	op := DatabaseOperation{Statement: "CREATE DATABASE", Database: s.name, Login: login.Name, IFI: ifi,
		Files: []FileOperation{srv.fileCost(data, data.sizeKB, ifi, false), srv.fileCost(log, log.sizeKB, ifi, false)}}
	if err := srv.charge(ctx, &op); err != nil {
		return err
	}
	srv.dbMu.Lock()
	defer srv.dbMu.Unlock()
	if err := exists(); err != nil { // another session created it meanwhile
		return err
	}
	srv.userDBs = append(srv.userDBs, &userDatabase{id: srv.nextDB, name: s.name, owner: login.Name, files: []*dbFile{data, log}})
	srv.nextDB++
	srv.recordLocked(op)
	return nil
}

// alterFile runs ALTER DATABASE ... MODIFY FILE: a SIZE larger than the file's
// grows it (zeroed as a new file is); a smaller or equal one is error 5039.
func (srv *Server) alterFile(ctx context.Context, login LoginConfig, s alterFileStmt) *tds.SQLError {
	if isSystemDatabase(s.db) {
		return unsupported(s.line, "ALTER DATABASE on the files of system databases")
	}
	denied := sqlErr(5011, 14, 9, s.line, "User does not have permission to alter database '%s', the database does not exist, or the database is not in a state that allows access checks.", s.db)
	srv.dbMu.Lock()
	_, db := srv.findDBLocked(s.db)
	if db == nil || !mayControl(login, db) {
		srv.dbMu.Unlock()
		return denied
	}
	var f *dbFile
	for _, df := range db.files {
		if strings.EqualFold(df.name, s.file.name) {
			f = df
		}
	}
	if f == nil {
		srv.dbMu.Unlock()
		return sqlErr(5041, 16, 1, s.line, "MODIFY FILE failed. File '%s' does not exist.", s.file.name)
	}
	if s.file.sizeKB == 0 { // FILEGROWTH or MAXSIZE only: nothing is written
		srv.dbMu.Unlock()
		return nil
	}
	if s.file.sizeKB <= f.sizeKB {
		srv.dbMu.Unlock()
		return sqlErr(5039, 16, 1, s.line, "MODIFY FILE failed. Specified size is less than or equal to current size.")
	}
	growth, tde, name := s.file.sizeKB-f.sizeKB, db.tde, db.name
	srv.dbMu.Unlock()
	ifi := srv.inst.RunningIFI()
	op := DatabaseOperation{Statement: "ALTER DATABASE MODIFY FILE", Database: name, Login: login.Name, IFI: ifi,
		Files: []FileOperation{srv.fileCost(f, growth, ifi, tde)}}
	if err := srv.charge(ctx, &op); err != nil {
		return err
	}
	srv.dbMu.Lock()
	defer srv.dbMu.Unlock()
	f.sizeKB = max(f.sizeKB, s.file.sizeKB)
	srv.recordLocked(op)
	return nil
}

// dropDatabases runs DROP DATABASE: each name in turn, as SQL Server does.
func (srv *Server) dropDatabases(login LoginConfig, s dropDBStmt) *tds.SQLError {
	srv.dbMu.Lock()
	defer srv.dbMu.Unlock()
	for _, name := range s.names {
		if isSystemDatabase(name) {
			return sqlErr(3708, 16, 1, s.line, "Cannot drop the database '%s' because it is a system database.", name)
		}
		n, db := srv.findDBLocked(name)
		if db == nil && s.ifExists {
			continue
		}
		if db == nil || !mayControl(login, db) {
			return sqlErr(3701, 11, 1, s.line, "Cannot drop the database '%s', because it does not exist or you do not have permission.", name)
		}
		srv.userDBs = slices.Delete(srv.userDBs, n, n+1)
	}
	return nil
}

// DatabaseFile describes a user database's files for the snapshot.
type DatabaseFile struct {
	Name     string `json:"name"`
	Physical string `json:"physical_name"`
	Type     string `json:"type"` // "data" or "log"
	SizeMB   int64  `json:"size_mb"`
}

// UserDatabaseInfo returns a user database's owner and files; ok is false for a
// system database.
func (srv *Server) UserDatabaseInfo(id int) (owner string, files []DatabaseFile, ok bool) {
	srv.dbMu.Lock()
	defer srv.dbMu.Unlock()
	for _, db := range srv.userDBs {
		if db.id != id {
			continue
		}
		for _, f := range db.files {
			t := "data"
			if f.log {
				t = "log"
			}
			files = append(files, DatabaseFile{Name: f.name, Physical: f.physical, Type: t, SizeMB: int64(math.Ceil(float64(f.sizeKB) / 1024))})
		}
		return db.owner, files, true
	}
	return "", nil, false
}
