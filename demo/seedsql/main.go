// Command seedsql runs the seed measurement's statements for make demo: CREATE
// DATABASE with a data file of -data-mb and a fixed 8 MB log, then DROP DATABASE,
// through go-mssqldb against one SQL Server instance (in the demo, a simulated
// one). The login comes from MSSQLIFI_ACC_SEED_SQL_USERNAME and
// MSSQLIFI_ACC_SEED_SQL_PASSWORD (a dbcreator login), as the staged real-host suite
// takes it. It prints the wall-clock time of the CREATE; against the simulator the
// time that matters is the one it modelled, which demo/fleetctl.py reads from the
// control plane.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"time"

	_ "github.com/microsoft/go-mssqldb"
)

var validName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,99}$`)

func main() {
	server := flag.String("server", "", "the instance's SQL address, host:port")
	name := flag.String("database", "mssqlifi_seed", "the database to create and drop")
	dataMB := flag.Int("data-mb", 1024, "the data file's size in MB (the log stays 8 MB)")
	timeout := flag.Duration("timeout", 5*time.Minute, "the longest the CREATE and the DROP may take")
	flag.Parse()
	if err := run(*server, *name, *dataMB, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "seedsql:", err)
		os.Exit(1)
	}
}

func run(server, name string, dataMB int, timeout time.Duration) error {
	user, password := os.Getenv("MSSQLIFI_ACC_SEED_SQL_USERNAME"), os.Getenv("MSSQLIFI_ACC_SEED_SQL_PASSWORD")
	switch {
	case server == "":
		return errors.New("-server host:port is required")
	case user == "" || password == "":
		return errors.New("set MSSQLIFI_ACC_SEED_SQL_USERNAME and MSSQLIFI_ACC_SEED_SQL_PASSWORD to a login that may CREATE DATABASE (dbcreator)")
	case !validName.MatchString(name):
		return fmt.Errorf("-database %q: use letters, digits and _ only", name)
	case dataMB < 8:
		return fmt.Errorf("-data-mb %d: the primary file must be at least 8 MB", dataMB)
	}
	u := url.URL{Scheme: "sqlserver", User: url.UserPassword(user, password), Host: server, RawQuery: "encrypt=disable&dial+timeout=10"}
	db, err := sql.Open("sqlserver", u.String())
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	create := fmt.Sprintf("CREATE DATABASE [%[1]s] ON PRIMARY (NAME = [%[1]s], SIZE = %[2]dMB) LOG ON (NAME = [%[1]s_log], SIZE = 8MB)", name, dataMB)
	began := time.Now()
	if _, err := db.ExecContext(ctx, create); err != nil {
		return fmt.Errorf("CREATE DATABASE %s on %s as %s: %w", name, server, user, err)
	}
	took := time.Since(began)
	if _, err := db.ExecContext(ctx, "DROP DATABASE ["+name+"]"); err != nil {
		return fmt.Errorf("DROP DATABASE %s on %s as %s: %w (drop it by hand)", name, server, user, err)
	}
	fmt.Printf("  CREATE DATABASE %s (%d MB data, 8 MB log) answered after %.2f s by the wall clock; dropped again\n", name, dataMB, took.Seconds())
	return nil
}
