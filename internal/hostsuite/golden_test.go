package hostsuite

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/hostsuite/transcript"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tsql"
)

// -update rewrites the golden files from this run's output.
var update = flag.Bool("update", false, "rewrite internal/hostsuite/testdata/*.golden")

// golden compares got with testdata/name.golden (or writes it with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/hostsuite/ -run %s -update to write it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from this run's output (go test ./internal/hostsuite/ -update rewrites it after a deliberate change):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func envMap(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestGoldenDryRun: the dry run prints every stage and what it would change, with
// every stage allowed and with the defaults, and contacts nothing (the host name
// does not resolve, and no credentials are set).
func TestGoldenDryRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		{"dryrun-all", map[string]string{
			EnvHost: "sql01.invalid", EnvDryRun: "true", EnvStages: "preflight,read,change,restart,seed",
			EnvDisposable: "SQL01.invalid/mssqlserver", EnvSQLUser: "mssqlifi_verify", EnvSQLPass: "x", EnvSeedUser: "mssqlifi_seed", EnvSeedPass: "x",
			EnvLocal: "true", EnvSeedMB: "10240",
		}},
		{"dryrun-defaults", map[string]string{EnvHost: "sql01.invalid", EnvDryRun: "true"}},
		// The SQL check by Kerberos from the credential cache, for a named SPN.
		{"dryrun-sql-kerberos", map[string]string{EnvHost: "sql01.invalid", EnvDryRun: "true", EnvSQLAuth: "kerberos",
			EnvSQLSPN: "MSSQLSvc/sql01.contoso.com:1433"}},
		// The optional cluster stage, with the consent to change the nodes.
		{"dryrun-cluster", map[string]string{
			EnvHost: "sql01.invalid", EnvDryRun: "true", EnvStages: "preflight,cluster", EnvFCINode: "sql03.invalid",
			EnvFCINodes: "SQL03=sql03.invalid,SQL04=10.0.0.14", EnvFCISQLHost: "sqlfci1.invalid", EnvFCIChange: "true",
		}},
		// Restart and seed need the instance named disposable, and seed a dbcreator login.
		{"dryrun-not-disposable", map[string]string{
			EnvHost: "sql01.invalid", EnvDryRun: "true", EnvStages: "preflight,read,change,restart,seed", EnvDisposable: "sql02.invalid/MSSQLSERVER",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := LoadConfig(envMap(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			rep := Run(context.Background(), cfg, Options{Out: &out, ProviderDir: t.TempDir(), Terraform: "no-such-terraform"})
			if !rep.OK() {
				t.Errorf("a dry run failed a check:\n%s", out.String())
			}
			for _, r := range rep.Results {
				if r.Status != Skip {
					t.Errorf("a dry run ran a check: %+v", r)
				}
			}
			golden(t, tc.name, out.String())
		})
	}
}

var (
	portRe = regexp.MustCompile(`127\.0\.0\.1:\d+`)
	hexRe  = regexp.MustCompile(`\b[0-9a-f]{32}\b`)
)

// normalise replaces what changes from run to run: ports and restart ids.
func normalise(s string) string {
	s = portRe.ReplaceAllString(s, "127.0.0.1:PORT")
	s = regexp.MustCompile(`port \d+`).ReplaceAllString(s, "port PORT")
	return hexRe.ReplaceAllString(s, "RESTART-ID")
}

// startSim starts the rehearsal's simulated host (testdata/sim.json), changed by
// edit, and returns the suite's environment for it.
func startSim(t *testing.T, edit func(*winsim.Config)) map[string]string {
	t.Helper()
	cfg, err := winsim.LoadConfig(filepath.Join("testdata", "sim.json"))
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(cfg)
	}
	sim, err := winsim.Start(cfg, winsim.Options{CertDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	info := sim.Info()
	h := info.Hosts[0]
	_, port, _ := strings.Cut(h.WinRM, ":")
	if _, err := strconv.Atoi(port); err != nil {
		t.Fatalf("winsim's WinRM address %q", h.WinRM)
	}
	return map[string]string{
		EnvHost: h.Address, EnvPort: port, EnvAuth: "ntlm", EnvHTTPS: "false",
		EnvSimControl: "http://" + info.Control, EnvSQLCACert: info.CACert, EnvSQLEncrypt: "strict",
		EnvWinRMUser: "mssqlifi_admin", EnvWinRMPass: "Rehearsal-WinRM-Pa55!",
		EnvSQLUser: "mssqlifi_verify", EnvSQLPass: "Rehearsal-SQL-Pa55!",
		EnvStages: "preflight",
	}
}

// TestGoldenPreflight: the preflight's report against the rehearsal host, against a
// host whose local administrator is filtered by UAC's remote restrictions, and
// against one whose PowerShell runs in ConstrainedLanguage mode.
func TestGoldenPreflight(t *testing.T) {
	no := false
	for _, tc := range []struct {
		name   string
		edit   func(*winsim.Config)
		wantOK bool
	}{
		{"preflight", nil, true},
		// Stage read is allowed too: it is skipped, as the preflight failed.
		{"preflight-uac-filtered", func(c *winsim.Config) { c.Hosts[0].WinRM.Users[0].Administrator = &no }, false},
		{"preflight-constrained-language", func(c *winsim.Config) { c.Hosts[0].PowerShellLanguageMode = "ConstrainedLanguage" }, false},
		// A WinRM service that allows unencrypted messages accepts the unsealed probe.
		{"preflight-allow-unencrypted", func(c *winsim.Config) { c.Hosts[0].WinRM.AllowUnencrypted = true }, false},
		// A secondary replica: the DMVs list its group, the catalog views hide it from
		// a login without VIEW ANY DEFINITION.
		{"preflight-ag-secondary", func(c *winsim.Config) {
			c.Hosts[0].Instances[0].AvailabilityGroup = &host.AvailabilityGroupConfig{Name: "AG1", Role: "secondary"}
		}, true},
		// SQL Server 2014 Enterprise whose service SID holds Lock Pages in Memory's
		// right: locked pages by the error log, no sql_memory_model_desc (207, the
		// suite falls back to max server memory alone), max server memory set.
		{"preflight-lock-pages-2014", func(c *winsim.Config) {
			ic := &c.Hosts[0].Instances[0]
			mb := 8192
			ic.Version, ic.Edition, ic.MaxServerMemoryMB = "12.0.6024.0", "Enterprise Edition: Core-based Licensing (64-bit)", &mb
			c.Hosts[0].Rights = map[string][]string{"SeLockMemoryPrivilege": {`NT SERVICE\` + ic.Name}}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := startSim(t, tc.edit)
			if tc.name == "preflight-uac-filtered" {
				env[EnvStages] = "preflight,read"
			}
			cfg, err := LoadConfig(envMap(env))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			rep := Run(ctx, cfg, Options{Out: &out, ProviderDir: t.TempDir(), StepTimeout: time.Minute})
			if rep.OK() != tc.wantOK {
				t.Errorf("OK() = %t, want %t:\n%s", rep.OK(), tc.wantOK, out.String())
			}
			golden(t, tc.name, normalise(out.String()))
		})
	}
}

// TestLoadConfigNamesEveryProblem: wrong settings are refused before anything is
// contacted, each naming its variable.
func TestLoadConfigNamesEveryProblem(t *testing.T) {
	_, err := LoadConfig(envMap(map[string]string{
		EnvStages: "preflight,reboot", EnvAuth: "basic", EnvSeedUser: "seed", EnvHTTPS: "yes please",
	}))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{EnvHost, `"reboot"`, EnvAuth, EnvSeedPass, EnvHTTPS, EnvWinRMUser} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %s:\n%v", want, err)
		}
	}
}

// TestLocalNonBuiltin: which accounts UAC's remote restrictions filter.
func TestLocalNonBuiltin(t *testing.T) {
	for _, tc := range []struct {
		user           string
		local, builtin bool
	}{
		{"Administrator", true, true},
		{`.\Administrator`, true, true},
		{`WINCI01\ci`, true, false},
		{"ci", true, false},
		{`CONTOSO\svc`, false, false},
		{"svc@CONTOSO.COM", false, false},
	} {
		local, builtin := localNonBuiltin(tc.user, "WINCI01")
		if local != tc.local || builtin != tc.builtin {
			t.Errorf("localNonBuiltin(%q) = %t, %t; want %t, %t", tc.user, local, builtin, tc.local, tc.builtin)
		}
	}
}

// TestRecordPreflight: with a recorder, the preflight's raw answers, SQL rows and
// the clear-text probe's shape land in a redacted transcript, without the
// passwords or the user names.
func TestRecordPreflight(t *testing.T) {
	env := startSim(t, nil)
	cfg, err := LoadConfig(envMap(env))
	if err != nil {
		t.Fatal(err)
	}
	rec := NewRecorder(cfg)
	var out bytes.Buffer
	if rep := Run(context.Background(), cfg, Options{Out: &out, ProviderDir: t.TempDir(), Recorder: rec, StepTimeout: time.Minute}); !rep.OK() {
		t.Fatalf("the preflight failed:\n%s", out.String())
	}
	path, err := rec.WriteFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tr := rec.Transcript()
	kinds := map[string]int{}
	for _, e := range tr.Entries {
		kinds[e.Kind+" "+e.Operation]++
		if e.Kind == "sql" && e.Error == "" && len(e.Columns) == 0 {
			t.Errorf("a SQL entry without columns: %+v", e)
		}
	}
	for _, want := range []string{"operation read_instance", "error " + transcript.ProbeClearText, "sql "} {
		if kinds[want] == 0 {
			t.Errorf("no %q entry in the transcript: %v", want, kinds)
		}
	}
	if tr.PowerShell == "" || tr.Facts.Instance != "MSSQLSERVER" || tr.Source != "simulator" {
		t.Errorf("header: powershell %q, instance %q, source %q", tr.PowerShell, tr.Facts.Instance, tr.Source)
	}
	for _, secret := range []string{env[EnvWinRMPass], env[EnvSQLPass], env[EnvWinRMUser], "WINCI01"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the transcript holds %q", secret)
		}
	}
}

// TestDisposableConsentNamesHostAndInstance: the restart consent names the host and
// the instance (HOST/INSTANCE, either case); an instance name alone (a value left
// from a lab run) is a configuration error, and another host's consent allows
// nothing here.
func TestDisposableConsentNamesHostAndInstance(t *testing.T) {
	base := map[string]string{EnvHost: "sql01.contoso.com", EnvDryRun: "true", EnvStages: "preflight,read,change,restart"}
	with := func(v string) map[string]string {
		m := map[string]string{EnvDisposable: v}
		for k, x := range base {
			m[k] = x
		}
		return m
	}
	if _, err := LoadConfig(envMap(with("MSSQLSERVER"))); err == nil || !strings.Contains(err.Error(), "sql01.contoso.com/MSSQLSERVER") {
		t.Errorf("an instance name alone: %v, want an error naming sql01.contoso.com/MSSQLSERVER", err)
	}
	for v, want := range map[string]bool{
		"SQL01.contoso.com/mssqlserver": true,
		"sql02.contoso.com/MSSQLSERVER": false,
		"sql01.contoso.com/OTHER":       false,
		"":                              false,
	} {
		cfg, err := LoadConfig(envMap(with(v)))
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		s := &Suite{cfg: cfg}
		if runs := s.notRunning(StageRestart, true) == ""; runs != want {
			t.Errorf("%s=%q: the restart stage runs %t, want %t (%s)", EnvDisposable, v, runs, want, cfg.consent())
		}
	}
}

// TestArticleFiguresAreTheSimulators: the suite's article figures are the ones the
// simulator's zeroing model follows, and its default seed is the article's size.
func TestArticleFiguresAreTheSimulators(t *testing.T) {
	if articleSeedMB != tsql.ArticleSizeMB || articleOff != tsql.ArticleWithoutIFISeconds*time.Second || articleOn != tsql.ArticleWithIFISeconds*time.Second {
		t.Errorf("the suite's article: %d MB, %s, %s; the simulator's: %d MB, %d s, %d s", articleSeedMB, articleOff, articleOn,
			tsql.ArticleSizeMB, tsql.ArticleWithoutIFISeconds, tsql.ArticleWithIFISeconds)
	}
	if DefaultSeedMB != articleSeedMB {
		t.Errorf("DefaultSeedMB = %d; want the article's %d MB", DefaultSeedMB, articleSeedMB)
	}
}
