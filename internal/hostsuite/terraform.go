package hostsuite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// terraform drives the real terraform CLI in a working directory of its own, with
// the provider taken from Options.ProviderDir through dev_overrides (no registry, no
// terraform init), as demo/run.sh does.
type terraform struct {
	bin, dir string
	env      []string
	timeout  time.Duration
}

func (s *Suite) terraformCLI() (*terraform, error) {
	if s.tf != nil {
		return s.tf, nil
	}
	tf, err := s.newTerraform()
	s.tf = tf
	return tf, err
}

// newTerraform makes a terraform working directory of its own (its own state).
func (s *Suite) newTerraform() (*terraform, error) {
	bin := s.opt.Terraform
	if bin == "" {
		bin = "terraform"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("no terraform CLI (%s): put terraform on PATH or give -terraform: %w", bin, err)
	}
	pdir, err := filepath.Abs(s.opt.ProviderDir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(pdir, "terraform-provider-mssqlifi")); err != nil {
		if _, errExe := os.Stat(filepath.Join(pdir, "terraform-provider-mssqlifi.exe")); errExe != nil {
			return nil, fmt.Errorf("no provider binary in %s (build it with make build, or give -provider-dir): %w", pdir, err)
		}
	}
	dir, err := os.MkdirTemp("", "mssqlifi-hostsuite-")
	if err != nil {
		return nil, err
	}
	rc := fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"mssqlifi/mssqlifi\" = %q\n  }\n  direct {}\n}\n", filepath.ToSlash(pdir))
	if err := os.WriteFile(filepath.Join(dir, "cli.tfrc"), []byte(rc), 0o600); err != nil {
		return nil, err
	}
	env := []string{}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "TF_CLI_CONFIG_FILE", "TF_LOG", "TF_CLI_ARGS", "TF_DATA_DIR", "TF_IN_AUTOMATION", "CHECKPOINT_DISABLE":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "TF_CLI_CONFIG_FILE="+filepath.Join(dir, "cli.tfrc"), "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1")
	return &terraform{bin: path, dir: dir, env: env, timeout: s.opt.StepTimeout}, nil
}

func (t *terraform) close() { os.RemoveAll(t.dir) }

// write replaces the configuration.
func (t *terraform) write(config string) error {
	return os.WriteFile(filepath.Join(t.dir, "main.tf"), []byte(config), 0o600)
}

// run runs one terraform command and returns its combined output and exit code.
func (t *terraform) run(ctx context.Context, args ...string) (string, int, error) {
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	args = append([]string{"-chdir=" + t.dir}, args...)
	cmd := exec.CommandContext(ctx, t.bin, args...)
	cmd.Env = t.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0, nil
	case ctx.Err() != nil:
		return out.String(), -1, fmt.Errorf("terraform %s did not finish within %s", args[1], t.timeout)
	case errors.As(err, &ee):
		return out.String(), ee.ExitCode(), nil
	}
	return out.String(), -1, err
}

// tfOutcome says how a terraform run ended, for a failure's detail.
func tfOutcome(code int, err error, out string) string {
	msg := fmt.Sprintf("exited %d", code)
	if err != nil {
		msg += " (" + err.Error() + ")"
	}
	if t := tail(out); t != "" {
		return msg + ": " + t
	}
	return msg + ", printing nothing"
}

// tail is the last lines of terraform's output, for a failure's detail.
func tail(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) > 12 {
		lines = lines[len(lines)-12:]
	}
	return strings.Join(lines, " / ")
}

// resourceSpec is the resource block's settings a stage varies.
type resourceSpec struct {
	restart string
	enabled bool
}

// target is what the data source and the resource address: the tested host, or a
// node of a failover cluster instance.
type target struct {
	name     string // the blocks' name: "this", or "fci"
	host     string
	instance string
	sqlPort  int
	sqlHost  string
	nodes    map[string]string
}

// mainTarget is the host and instance of stages 1 to 5.
func (s *Suite) mainTarget() target {
	return target{name: "this", host: s.cfg.Host, instance: s.cfg.Instance, sqlPort: s.cfg.SQLPort}
}

// config is the provider block, the data source and (unless res is nil) the resource.
func (s *Suite) config(res *resourceSpec) string { return s.configFor(s.mainTarget(), res) }

// configFor is config for any target.
func (s *Suite) configFor(t target, res *resourceSpec) string {
	var b strings.Builder
	b.WriteString("terraform {\n  required_providers {\n    mssqlifi = { source = \"mssqlifi/mssqlifi\" }\n  }\n}\n\n")
	b.WriteString("provider \"mssqlifi\" {\n  winrm {\n")
	fmt.Fprintf(&b, "    https = %t\n    auth  = %q\n", s.cfg.HTTPS, s.cfg.Auth)
	if s.cfg.Port != 0 {
		fmt.Fprintf(&b, "    port  = %d\n", s.cfg.Port)
	}
	if s.cfg.Insecure {
		b.WriteString("    insecure = true\n")
	}
	if s.cfg.CACertPath != "" {
		fmt.Fprintf(&b, "    ca_cert = file(%q)\n", filepath.ToSlash(s.cfg.CACertPath))
	}
	b.WriteString("  }\n")
	if s.cfg.SQLUser != "" || s.cfg.sqlKerberos() {
		b.WriteString("  sql {\n")
		if s.cfg.SQLAuth != "" {
			fmt.Fprintf(&b, "    auth = %q\n", s.cfg.SQLAuth)
		}
		if s.cfg.SQLKeytab != "" {
			fmt.Fprintf(&b, "    keytab = %q\n", filepath.ToSlash(s.cfg.SQLKeytab))
		}
		if s.cfg.SQLSPN != "" {
			fmt.Fprintf(&b, "    spn = %q\n", s.cfg.SQLSPN)
		}
		if s.cfg.SQLEncrypt != "" {
			fmt.Fprintf(&b, "    encrypt = %q\n", s.cfg.SQLEncrypt)
		}
		if s.cfg.SQLCACertPath != "" {
			fmt.Fprintf(&b, "    ca_cert = file(%q)\n", filepath.ToSlash(s.cfg.SQLCACertPath))
		}
		if s.cfg.SQLTrustServerCert {
			b.WriteString("    trust_server_certificate = true\n")
		}
		b.WriteString("  }\n")
	}
	b.WriteString("}\n\n")
	common := fmt.Sprintf("  host     = %q\n  instance = %q\n", t.host, t.instance)
	if t.sqlPort != 0 {
		common += fmt.Sprintf("  sql_port = %d\n", t.sqlPort)
	}
	if t.sqlHost != "" {
		common += fmt.Sprintf("  sql_host = %q\n", t.sqlHost)
	}
	if len(t.nodes) > 0 {
		names := make([]string, 0, len(t.nodes))
		for n := range t.nodes {
			names = append(names, n)
		}
		sort.Strings(names)
		common += "  nodes = {\n"
		for _, n := range names {
			common += fmt.Sprintf("    %q = %q\n", n, t.nodes[n])
		}
		common += "  }\n"
	}
	fmt.Fprintf(&b, "data \"mssqlifi_instant_file_initialization\" %q {\n%s}\n", t.name, common)
	if res != nil {
		fmt.Fprintf(&b, "\nresource \"mssqlifi_instant_file_initialization\" %q {\n%s  restart  = %q\n  enabled  = %t\n", t.name, common, res.restart, res.enabled)
		fmt.Fprintf(&b, "  timeouts {\n    create = %q\n    update = %q\n    delete = %q\n  }\n}\n", s.opt.StepTimeout, s.opt.StepTimeout, s.opt.StepTimeout)
	}
	return b.String()
}

// planJSON is what the suite reads of `terraform show -json` of a saved plan.
type planJSON struct {
	PriorState struct {
		Values struct {
			RootModule struct {
				Resources []struct {
					Address string         `json:"address"`
					Values  map[string]any `json:"values"`
				} `json:"resources"`
			} `json:"root_module"`
		} `json:"values"`
	} `json:"prior_state"`
	ResourceChanges []struct {
		Address string `json:"address"`
		Change  struct {
			Actions []string       `json:"actions"`
			After   map[string]any `json:"after"`
		} `json:"change"`
	} `json:"resource_changes"`
}

const (
	dataAddr    = "data.mssqlifi_instant_file_initialization.this"
	resAddr     = "mssqlifi_instant_file_initialization.this"
	fciDataAddr = "data.mssqlifi_instant_file_initialization.fci"
	fciResAddr  = "mssqlifi_instant_file_initialization.fci"
)

// plan runs terraform plan with -detailed-exitcode and reads the saved plan.
// The exit code is 0 (no changes) or 2 (changes); 1 is an error.
func (t *terraform) plan(ctx context.Context) (*planJSON, int, string, error) {
	out, code, err := t.run(ctx, "plan", "-no-color", "-input=false", "-detailed-exitcode", "-out=tfplan")
	if err != nil || code == 1 {
		return nil, code, out, err
	}
	js, code2, err := t.run(ctx, "show", "-json", "-no-color", "tfplan")
	if err != nil || code2 != 0 {
		return nil, code, out, fmt.Errorf("terraform show -json tfplan %s", tfOutcome(code2, err, js))
	}
	var p planJSON
	if err := json.Unmarshal([]byte(js), &p); err != nil {
		return nil, code, out, fmt.Errorf("terraform show -json: %w", err)
	}
	return &p, code, out, nil
}

func (p *planJSON) data(addr string) map[string]any {
	for _, r := range p.PriorState.Values.RootModule.Resources {
		if r.Address == addr {
			return r.Values
		}
	}
	return nil
}

func (p *planJSON) change(addr string) ([]string, map[string]any) {
	for _, r := range p.ResourceChanges {
		if r.Address == addr {
			return r.Change.Actions, r.Change.After
		}
	}
	return nil, nil
}
