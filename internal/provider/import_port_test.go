package provider

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
)

// providerConfigNoPort is the provider block without winrm.port: each resource
// names its host's port (the fleet guide's layout).
func (e *accEnv) providerConfigNoPort() string {
	cfg := e.providerConfig(true)
	out := strings.Replace(cfg, fmt.Sprintf("    port     = %d\n", e.httpsPort), "", 1)
	if out == cfg {
		e.t.Fatal("the provider block has no port line to remove")
	}
	return out
}

// An instance whose host listens on a non-default WinRM port is imported with
// HOST:PORT/INSTANCE; the state gets the port and keeps the id HOST/INSTANCE.
// HOST/INSTANCE alone reaches the default port, where nothing listens, and says so
// (issue 14: import ignored the resource's port).
func TestAccResource_importWithPort(t *testing.T) {
	e := startSim(t, nil)
	cfg := e.providerConfigNoPort() + resourceConfig(e.addr, fmt.Sprintf("port = %d", e.httpsPort))
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Factories,
		Steps: []resource.TestStep{
			{
				Config:        cfg,
				ResourceName:  resName,
				ImportState:   true,
				ImportStateId: e.addr + "/MSSQLSERVER",
				ExpectError:   regexp.MustCompile(`(?s)` + regexp.QuoteMeta(e.addr) + `.*5986`),
			},
			{
				Config:        cfg,
				ResourceName:  resName,
				ImportState:   true,
				ImportStateId: fmt.Sprintf("%s:%d/MSSQLSERVER", e.addr, e.httpsPort),
				ImportStateCheck: func(states []*terraform.InstanceState) error {
					if len(states) != 1 {
						return fmt.Errorf("imported %d resources, want 1", len(states))
					}
					a := states[0].Attributes
					if a["id"] != e.addr+"/MSSQLSERVER" || a["port"] != strconv.Itoa(e.httpsPort) || a["host"] != e.addr ||
						a["instance"] != "MSSQLSERVER" || a["service_name"] != "MSSQLSERVER" {
						return fmt.Errorf("imported state: id %q, host %q, port %q, instance %q, service_name %q",
							a["id"], a["host"], a["port"], a["instance"], a["service_name"])
					}
					return nil
				},
			},
			{
				Config:        cfg,
				ResourceName:  resName,
				ImportState:   true,
				ImportStateId: fmt.Sprintf("%s:http/MSSQLSERVER", e.addr),
				ExpectError:   regexp.MustCompile(`Invalid import ID[\s\S]*HOST:PORT/INSTANCE`),
			},
		},
	})
}

// identityCLI is the CLI harness with a CLI that knows resource identities in import
// blocks: Terraform or OpenTofu 1.12 and later. When TF_ACC_TERRAFORM_PATH is older
// (terraform 1.11.4 here), the OpenTofu that `make tofu` caches is used; without it
// the test skips and says how to run it. CI runs it under `make testacc-tofu`.
func identityCLI(t *testing.T) *cliWork {
	t.Helper()
	w := newCLI(t)
	if identityCLIVersion(t, w.bin) {
		return w
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	tofu := filepath.Join(cache, "mssqlifi", "tofu-1.12.6", "tofu")
	if _, err := os.Stat(tofu); err != nil || !identityCLIVersion(t, tofu) {
		t.Skipf("%s does not support identity in import blocks (Terraform or OpenTofu 1.12+ does), and no cached OpenTofu at %s: "+
			"run `make tofu` or `make testacc-tofu`", w.bin, tofu)
	}
	w.bin = tofu
	return w
}

// forwardTCP listens on a new loopback port and forwards each connection to addr,
// until the test ends; it returns the port.
func forwardTCP(t *testing.T, addr string) int {
	t.Helper()
	host, _, _ := net.SplitHostPort(addr)
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				defer u.Close()
				go func() { _, _ = io.Copy(u, c) }()
				_, _ = io.Copy(c, u)
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

var cliVersionRe = regexp.MustCompile(`^(Terraform|OpenTofu) v(\d+)\.(\d+)`)

func identityCLIVersion(t *testing.T, bin string) bool {
	t.Helper()
	cmd := exec.Command(bin, "-version")
	cmd.Env = append(os.Environ(), "CHECKPOINT_DISABLE=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s -version: %v", bin, err)
	}
	m := cliVersionRe.FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("%s -version printed %q", bin, out)
	}
	major, _ := strconv.Atoi(m[2])
	minor, _ := strconv.Atoi(m[3])
	return major > 1 || major == 1 && minor >= 12
}

// An import block with identity = { host, port, instance } imports an instance
// behind a non-default WinRM port with no ID string; the apply imports it and
// grants the right, the next plan is empty, and the state holds the identity
// (issue 14).
func TestCLI_importBlockWithIdentity(t *testing.T) {
	t.Parallel()
	w := identityCLI(t)
	e := startSim(t, nil)
	res := resourceConfig(e.addr, fmt.Sprintf("port = %d", e.httpsPort))
	w.write(e.providerConfigNoPort() + res + fmt.Sprintf(`
import {
  to = mssqlifi_instant_file_initialization.this
  identity = {
    host     = %q
    port     = %d
    instance = "MSSQLSERVER"
  }
}
`, e.addr, e.httpsPort))
	r := w.mustApply()
	if got := r.errors(); len(got) != 0 {
		t.Fatalf("apply with an import block by identity: %v", got)
	}
	a := w.attrs()
	if a["id"] != e.addr+"/MSSQLSERVER" || fmt.Sprint(a["port"]) != strconv.Itoa(e.httpsPort) || a["enabled"] != true {
		t.Fatalf("imported state: %v", a)
	}
	show := w.run("show", "-json", "-no-color")
	if !strings.Contains(show.Stdout, `"identity"`) || !strings.Contains(show.Stdout, strconv.Itoa(e.httpsPort)) {
		t.Errorf("the state shows no identity with the port: %s", show.Stdout)
	}
	w.plan().wantPlanExit(t, 0)

	// The host moves to another WinRM port (here a forwarder to the same listener):
	// the port changes in place, and the identity with it.
	moved := forwardTCP(t, fmt.Sprintf("%s:%d", e.addr, e.httpsPort))
	w.write(e.providerConfigNoPort() + resourceConfig(e.addr, fmt.Sprintf("port = %d", moved)))
	r = w.mustApply()
	if got := r.errors(); len(got) != 0 {
		t.Fatalf("apply of the new port: %v", got)
	}
	show = w.run("show", "-json", "-no-color")
	if !strings.Contains(show.Stdout, fmt.Sprintf(`"port":%d`, moved)) {
		t.Errorf("after the port changed, the state shows no port %d: %s", moved, show.Stdout)
	}
	w.plan().wantPlanExit(t, 0)

	// An identity that is not one is refused before anything is read.
	w2 := identityCLI(t)
	w2.write(e.providerConfigNoPort() + res + `
import {
  to = mssqlifi_instant_file_initialization.this
  identity = {
    host = "sql 01"
  }
}
`)
	r = w2.plan()
	r.wantDiag(t, "error", "Invalid import identity", "identity host")

	// Nor is a port that is not a whole number (issue 36).
	w2.write(e.providerConfigNoPort() + res + fmt.Sprintf(`
import {
  to = mssqlifi_instant_file_initialization.this
  identity = {
    host = %q
    port = 5985.5
  }
}
`, e.addr))
	r = w2.plan()
	r.wantDiag(t, "error", "Invalid import identity", `port takes a whole number; 5985.5 is not one`)
	for _, d := range r.errors() {
		if strings.Contains(d.Detail, "always an error in the provider") {
			t.Errorf("the framework's internal error reached the user: %s", d)
		}
	}
}
