package provider

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/testhooks"
)

// The CLI harness runs the real terraform (or OpenTofu) binary against a provider
// binary built from this module, through a CLI configuration with dev_overrides, and
// reads the machine-readable output (-json): the diagnostics a user sees, warnings
// included, which terraform-plugin-testing does not expose.

const cliProviderSource = "registry.terraform.io/mssqlifi/mssqlifi"

var cliBuild struct {
	once    sync.Once
	dir     string // holds terraform-provider-mssqlifi and terraform.rc
	cliConf string
	err     error
}

// buildCLIProvider builds the provider binary once per test run and writes the CLI
// configuration that points terraform at it. The binary has the test hooks
// (internal/testhooks, build tag mssqlifi_testhooks), which only a test's
// environment sets (cliWork.divideTimes): without them it runs as a release does.
func buildCLIProvider() (cliConf string, err error) {
	cliBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "mssqlifi-cli-")
		if err != nil {
			cliBuild.err = fmt.Errorf("creating a directory for the provider binary: %w", err)
			return
		}
		cliBuild.dir = dir
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-tags", "mssqlifi_testhooks", "-o", filepath.Join(dir, "terraform-provider-mssqlifi"),
			"github.com/mssqlifi/terraform-provider-mssqlifi")
		if out, err := cmd.CombinedOutput(); err != nil {
			cliBuild.err = fmt.Errorf("go build of the provider failed: %v\n%s", err, out)
			return
		}
		conf := filepath.Join(dir, "terraform.rc")
		text := fmt.Sprintf("provider_installation {\n  dev_overrides {\n    %q = %q\n  }\n  direct {}\n}\n", cliProviderSource, dir)
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			cliBuild.err = fmt.Errorf("writing the CLI configuration: %w", err)
			return
		}
		cliBuild.cliConf = conf
	})
	return cliBuild.cliConf, cliBuild.err
}

// removeCLIBuild deletes the provider binary; TestMain calls it after the run,
// once the build TestMain started has ended.
func removeCLIBuild() {
	cliBuild.once.Do(func() {}) // waits for a build under way
	if cliBuild.dir != "" {
		os.RemoveAll(cliBuild.dir)
	}
}

// terraformPath is TF_ACC_TERRAFORM_PATH, else /usr/local/bin/terraform.
func terraformPath() string {
	if p := os.Getenv("TF_ACC_TERRAFORM_PATH"); p != "" {
		return p
	}
	return "/usr/local/bin/terraform"
}

// cliRunLimit is how long one terraform command may run before the harness kills it
// as hung: the longest timeout a test configures (3 minutes) and the half minute
// after it, with room for a loaded machine.
const cliRunLimit = 5 * time.Minute

// cliWork is one terraform working directory.
type cliWork struct {
	t   *testing.T
	dir string
	env []string
	bin string
}

// newCLI skips the test unless TF_ACC is set, and prepares a working directory.
func newCLI(t *testing.T) *cliWork {
	t.Helper()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1 to run terraform")
	}
	bin := terraformPath()
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("terraform binary %s: %v (set TF_ACC_TERRAFORM_PATH to terraform or tofu)", bin, err)
	}
	conf, err := buildCLIProvider()
	if err != nil {
		t.Fatal(err)
	}
	env := []string{}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "TF_CLI_CONFIG_FILE" || k == "XDG_CACHE_HOME" || strings.HasPrefix(k, "TF_LOG") || k == "TF_WORKSPACE" || strings.HasPrefix(k, "MSSQLIFI_") {
			continue
		}
		env = append(env, kv)
	}
	// A cache directory of the test's own: a run never touches the user's.
	env = append(env, "TF_CLI_CONFIG_FILE="+conf, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1", "TF_INPUT=0", "XDG_CACHE_HOME="+t.TempDir())
	return &cliWork{t: t, dir: t.TempDir(), env: env, bin: bin}
}

// divideTimes has the provider of w's runs divide its fixed protocol waits by n
// (testhooks.TimeDivisor): the go line's wait of a gated restart (30 s) and its
// margin, and the wait for a gated restart's prepared line (90 s). A test that waits
// for one of them out plays the same sequence in 1/n of the time; the resource's
// timeouts are as configured.
func (w *cliWork) divideTimes(n int) {
	w.t.Helper()
	if n < 1 || n > testhooks.MaxTimeDivisor {
		w.t.Fatalf("divideTimes(%d): want 1 to %d", n, testhooks.MaxTimeDivisor)
	}
	w.env = append(w.env, fmt.Sprintf("%s=%d", testhooks.EnvTimeDivisor, n))
}

// divideDeadlines has the provider of w's runs divide each operation's deadline by n
// (testhooks.DeadlineDivisor): a timeout of 1m is met after 60/n s, and the
// read-back after a step failed at it is given 20/n s, not 20 s. For a test of a
// fault that outlasts the deadline; the configuration and the waits inside the
// operation are as written.
func (w *cliWork) divideDeadlines(n int) {
	w.t.Helper()
	if n < 1 || n > testhooks.MaxTimeDivisor {
		w.t.Fatalf("divideDeadlines(%d): want 1 to %d", n, testhooks.MaxTimeDivisor)
	}
	w.env = append(w.env, fmt.Sprintf("%s=%d", testhooks.EnvDeadlineDivisor, n))
}

// divideSQLLogins has the provider of w's runs divide its SQL Server login's wait
// by n (testhooks.SQLLoginDivisor): 10 s becomes 10/n s. For a test of a port that
// never answers TDS, where every check waits it out.
func (w *cliWork) divideSQLLogins(n int) {
	w.t.Helper()
	if n < 1 || n > testhooks.MaxTimeDivisor {
		w.t.Fatalf("divideSQLLogins(%d): want 1 to %d", n, testhooks.MaxTimeDivisor)
	}
	w.env = append(w.env, fmt.Sprintf("%s=%d", testhooks.EnvSQLLoginDivisor, n))
}

// mssqlifiSource matches the provider's source address in a required_providers block.
var mssqlifiSource = regexp.MustCompile(`(source\s*=\s*)"[^"]*/mssqlifi"`)

// write replaces the configuration (main.tf) with body, whose required_providers
// block (added when body has none) names the provider the dev override serves.
func (w *cliWork) write(body string) {
	w.t.Helper()
	var text string
	if strings.Contains(body, "required_providers") {
		text = mssqlifiSource.ReplaceAllString(body, fmt.Sprintf("${1}%q", cliProviderSource))
	} else {
		text = fmt.Sprintf("terraform {\n  required_providers {\n    mssqlifi = {\n      source = %q\n    }\n  }\n}\n%s", cliProviderSource, body)
	}
	if err := os.WriteFile(filepath.Join(w.dir, "main.tf"), []byte(text), 0o600); err != nil {
		w.t.Fatal(err)
	}
}

// tfDiag is one diagnostic of terraform's JSON output.
type tfDiag struct {
	Severity string `json:"severity"` // "warning" or "error"
	Summary  string `json:"summary"`
	Detail   string `json:"detail"`
	Address  string `json:"address"`
}

func (d tfDiag) String() string { return fmt.Sprintf("%s: %s: %s", d.Severity, d.Summary, d.Detail) }

// tfChange is one planned change or drift.
type tfChange struct {
	Addr   string
	Action string
}

// tfRun is one terraform command's outcome.
type tfRun struct {
	Args     []string
	Exit     int
	Stdout   string
	Stderr   string
	Diags    []tfDiag
	Changes  []tfChange // "planned_change"
	Drift    []tfChange // "resource_drift"
	Duration time.Duration
}

type tfLine struct {
	Level      string  `json:"@level"`
	Type       string  `json:"type"`
	Diagnostic *tfDiag `json:"diagnostic"`
	Change     *struct {
		Resource struct {
			Addr string `json:"addr"`
		} `json:"resource"`
		Action string `json:"action"`
	} `json:"change"`
}

// run runs terraform with args in the working directory, parsing -json lines.
func (w *cliWork) run(args ...string) *tfRun {
	w.t.Helper()
	return w.runWhile(nil, args...)
}

// runWhile is run; while terraform runs, during (if not nil) is called with its
// process (to signal it).
func (w *cliWork) runWhile(during func(*exec.Cmd), args ...string) *tfRun {
	w.t.Helper()
	// A hang guard, not a measure of speed: a run still going after cliRunLimit is
	// killed and the test fails saying so.
	ctx, cancel := context.WithTimeout(context.Background(), cliRunLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.bin, args...)
	cmd.Dir = w.dir
	cmd.Env = w.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its own group, which a test may kill whole
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Start()
	if err == nil {
		if during != nil {
			during(cmd)
		}
		err = cmd.Wait()
	}
	r := &tfRun{Args: args, Stdout: out.String(), Stderr: errb.String(), Duration: time.Since(start)}
	if ctx.Err() != nil {
		w.t.Errorf("terraform %s did not finish in %s: hang; it was killed", strings.Join(args, " "), cliRunLimit)
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.Exit = ee.ExitCode()
	default:
		w.t.Fatalf("running %s %s: %v\nstderr: %s", w.bin, strings.Join(args, " "), err, r.Stderr)
	}
	sc := bufio.NewScanner(strings.NewReader(r.Stdout))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var l tfLine
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		switch {
		case l.Type == "diagnostic" && l.Diagnostic != nil:
			r.Diags = append(r.Diags, *l.Diagnostic)
		case l.Type == "planned_change" && l.Change != nil:
			r.Changes = append(r.Changes, tfChange{l.Change.Resource.Addr, l.Change.Action})
		case l.Type == "resource_drift" && l.Change != nil:
			r.Drift = append(r.Drift, tfChange{l.Change.Resource.Addr, l.Change.Action})
		}
	}
	w.t.Logf("%s %s: exit %d in %s; %d diagnostics, changes %v, drift %v", filepath.Base(w.bin), strings.Join(args, " "),
		r.Exit, r.Duration.Round(time.Millisecond), len(r.Diags), r.Changes, r.Drift)
	return r
}

func (w *cliWork) apply() *tfRun   { return w.run("apply", "-auto-approve", "-json", "-no-color") }
func (w *cliWork) plan() *tfRun    { return w.run("plan", "-json", "-detailed-exitcode", "-no-color") }
func (w *cliWork) destroy() *tfRun { return w.run("destroy", "-auto-approve", "-json", "-no-color") }

// mustApply applies and fails the test on a non-zero exit.
func (w *cliWork) mustApply() *tfRun {
	w.t.Helper()
	r := w.apply()
	if r.Exit != 0 {
		w.t.Fatalf("terraform apply failed (exit %d):\n%s", r.Exit, r.describe())
	}
	return r
}

// attrs returns the state's attributes of the resource resName (terraform show -json).
func (w *cliWork) attrs() map[string]any {
	w.t.Helper()
	return w.state()[resName]
}

// state is the state's resources' attributes by address (terraform show -json);
// empty when the state holds none.
func (w *cliWork) state() map[string]map[string]any {
	w.t.Helper()
	r := w.run("show", "-json", "-no-color")
	if r.Exit != 0 {
		w.t.Fatalf("terraform show failed (exit %d): %s", r.Exit, r.Stderr)
	}
	var st struct {
		Values struct {
			RootModule struct {
				Resources []struct {
					Address string         `json:"address"`
					Values  map[string]any `json:"values"`
				} `json:"resources"`
			} `json:"root_module"`
		} `json:"values"`
	}
	if r.Stdout != "" && strings.TrimSpace(r.Stdout) != "{}" {
		if err := json.Unmarshal([]byte(r.Stdout), &st); err != nil {
			w.t.Fatalf("terraform show -json: %v\n%s", err, r.Stdout)
		}
	}
	out := map[string]map[string]any{}
	for _, res := range st.Values.RootModule.Resources {
		out[res.Address] = res.Values
	}
	return out
}

// errors are the errors the provider raised (terraform's own notice about
// development overrides left out).
func (r *tfRun) errors() []tfDiag { return r.bySeverity("error") }

func (r *tfRun) bySeverity(sev string) []tfDiag {
	var out []tfDiag
	for _, d := range r.Diags {
		if d.Severity == sev && !strings.Contains(d.Summary, "development overrides") {
			out = append(out, d)
		}
	}
	return out
}

func (r *tfRun) describe() string {
	var b strings.Builder
	for _, d := range r.Diags {
		fmt.Fprintf(&b, "  %s\n", d)
	}
	if r.Stderr != "" {
		fmt.Fprintf(&b, "stderr: %s\n", r.Stderr)
	}
	return b.String()
}

// find returns the diagnostics of the severity whose summary and detail match.
func (r *tfRun) find(sev, summary, detail string) []tfDiag {
	sre, dre := regexp.MustCompile(summary), regexp.MustCompile(detail)
	var out []tfDiag
	for _, d := range r.bySeverity(sev) {
		if sre.MatchString(d.Summary) && dre.MatchString(d.Detail) {
			out = append(out, d)
		}
	}
	return out
}

// wantDiag fails unless a diagnostic of the severity matches summary and detail
// (regular expressions), and returns it.
func (r *tfRun) wantDiag(t *testing.T, sev, summary, detail string) tfDiag {
	t.Helper()
	ds := r.find(sev, summary, detail)
	if len(ds) == 0 {
		t.Fatalf("terraform %s: no %s matching %q / %q; diagnostics:\n%s", strings.Join(r.Args, " "), sev, summary, detail, r.describe())
	}
	return ds[0]
}

// wantNoDiag fails if a diagnostic of the severity matches summary.
func (r *tfRun) wantNoDiag(t *testing.T, sev, summary string) {
	t.Helper()
	if ds := r.find(sev, summary, ""); len(ds) > 0 {
		t.Errorf("terraform %s: unexpected %s %q:\n%s", strings.Join(r.Args, " "), sev, summary, r.describe())
	}
}

// wantPlanExit checks plan -detailed-exitcode's answer: 0 empty, 2 changes.
func (r *tfRun) wantPlanExit(t *testing.T, code int) {
	t.Helper()
	if r.Exit != code {
		t.Fatalf("terraform plan exit %d, want %d; changes %v, drift %v; diagnostics:\n%s", r.Exit, code, r.Changes, r.Drift, r.describe())
	}
}
