package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/sqlcheck"
)

// hostOpener makes the client of one host's WinRM listener (remote.New).
type hostOpener func(remote.Config) (remote.Host, error)

// checkerOpener makes the SQL Server checker (sqlcheck.New).
type checkerOpener func(sqlcheck.Config) (sqlcheck.Checker, error)

// clients is what Configure hands to resources and data sources: the settings, and
// the WinRM and SQL clients, created the first time they are needed and shared.
type clients struct {
	winrm       remote.Config    // Host and Port are set per host
	sql         *sqlcheck.Config // nil: no SQL credentials configured
	openHost    hostOpener
	openChecker checkerOpener

	mu      sync.Mutex
	hosts   map[hostKey]remote.Host
	checker sqlcheck.Checker
}

type hostKey struct {
	host string
	port int
}

func newClients(w remote.Config, s *sqlcheck.Config, oh hostOpener, oc checkerOpener) *clients {
	return &clients{winrm: w, sql: s, openHost: oh, openChecker: oc, hosts: map[hostKey]remote.Host{}}
}

// port is the WinRM port used for a resource whose port argument is p (0: unset):
// p, else the provider's, else remote's default for the scheme.
func (c *clients) port(p int) int {
	cfg := c.winrm
	if p != 0 {
		cfg.Port = p
	}
	cfg.SetDefaults()
	return cfg.Port
}

// host returns the client of host:port, creating it on first use.
func (c *clients) host(host string, port int) (remote.Host, error) {
	k := hostKey{strings.ToLower(host), c.port(port)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if h, ok := c.hosts[k]; ok {
		return h, nil
	}
	cfg := c.winrm
	cfg.Host, cfg.Port = host, k.port
	h, err := c.openHost(cfg)
	if err != nil {
		return nil, err
	}
	c.hosts[k] = h
	return h, nil
}

// sqlChecker returns the SQL checker, or nil when no SQL credentials are configured.
func (c *clients) sqlChecker() (sqlcheck.Checker, error) {
	if c.sql == nil {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.checker == nil {
		ch, err := c.openChecker(*c.sql)
		if err != nil {
			return nil, err
		}
		c.checker = ch
	}
	return c.checker, nil
}

// target names one instance and how to reach it.
type target struct {
	Host     string
	Instance string
	Port     int // WinRM port override; 0: provider setting
	SQLPort  int // SQL port override; 0: what the host reports
}

func (t target) String() string { return fmt.Sprintf("instance %s on %s", t.Instance, t.Host) }

// observation is one refresh of an instance: one read_instance and at most one SQL
// connection.
type observation struct {
	Instance *contract.ReadInstanceResult
	Observed ifi.Observed
	// SQLTarget is where SQL Server listens; nil when SQL is not configured or the
	// port is unknown.
	SQLTarget *sqlcheck.Target
	Warnings  diag.Diagnostics
}

// observe reads the instance and verifies IFI. A non-nil error means the host could
// not be asked (the diagnostics say why and what to do); not finding the instance
// is not an error (Instance.Found is false).
func (c *clients) observe(ctx context.Context, t target) (*observation, diag.Diagnostics) {
	var diags diag.Diagnostics
	h, err := c.host(t.Host, t.Port)
	if err != nil {
		diags.AddError(fmt.Sprintf("Cannot set up WinRM for %s", t.Host), hostErrorDetail(t, err, c.winrm.Username))
		return nil, diags
	}
	tflog.Debug(ctx, "read_instance", map[string]any{"host": t.Host, "instance": t.Instance})
	ri, err := h.ReadInstance(ctx, contract.ReadInstanceParams{Instance: t.Instance, Right: contract.RightManageVolume})
	if err != nil {
		diags.AddError(fmt.Sprintf("Cannot read SQL Server instance %s on %s", t.Instance, t.Host), hostErrorDetail(t, err, c.winrm.Username))
		return nil, diags
	}
	o := &observation{Instance: ri, Observed: ifi.Observed{Host: t.Host, Instance: ri}}
	if !ri.Found {
		return o, diags
	}
	v := ifi.Verification{Source: ifi.SourceNone}
	var dmv *bool // what sys.dm_server_services says, when SQL Server answered
	running := ri.ServiceState == contract.StateRunning

	checker, err := c.sqlChecker()
	if err != nil {
		o.Warnings.AddWarning("SQL verification is not available",
			fmt.Sprintf("The SQL client could not be set up for %s: %v. Check the provider's sql block; verification falls back to the error log.", t, err))
	}
	if checker != nil {
		port := t.SQLPort
		if port == 0 {
			port = ri.TCPPort
		}
		if port == 0 {
			o.Warnings.AddWarning("SQL Server's port is unknown",
				fmt.Sprintf("The host does not report a TCP port for %s (dynamic ports or TCP disabled). Set sql_port on the resource "+
					"so SQL Server can be asked; verification falls back to the error log.", t))
		} else {
			o.SQLTarget = &sqlcheck.Target{Host: t.Host, Port: port, Instance: t.Instance}
			if running {
				tflog.Debug(ctx, "sql check", map[string]any{"host": t.Host, "instance": t.Instance, "sql_port": port})
				rep, err := checker.Check(ctx, *o.SQLTarget)
				if err != nil {
					o.Warnings.AddWarning("IFI could not be verified through SQL Server",
						fmt.Sprintf("Asking SQL Server for %s at %s:%d failed: %s. Check the sql block's login (it needs VIEW SERVER STATE), "+
							"encryption settings and sql_port; verification falls back to the error log.", t, t.Host, port, sqlErrorDetail(err)))
				} else {
					v.SQLVersion = rep.ProductVersion
					v.Clustered = rep.Clustered
					if rep.EncryptedDatabases != nil {
						v.TDEDatabases = slices.Sorted(slices.Values(rep.EncryptedDatabases))
					} else {
						v.TDEDatabases = []string{}
					}
					if rep.IFIColumnPresent {
						dmv = rep.IFIEnabled
					}
				}
			}
		}
	}
	v.Source, v.Enabled = ifi.Verify(ri, dmv)
	o.Observed.Verification = v
	return o, diags
}

// hostErrorDetail says what failed at the host and what to do next.
func hostErrorDetail(t target, err error, user string) string {
	var re *remote.Error
	if errors.As(err, &re) {
		msg := re.Error()
		if re.Kind == remote.KindAuth && !strings.Contains(strings.ToLower(msg), "authentication failed") {
			msg = fmt.Sprintf("WinRM authentication failed for %s at %s: %s", user, t.Host, msg)
		}
		// remote says what failed and what to check on the host; the provider's
		// arguments to change are ours to name.
		if adv := winrmAdvice(re); adv != "" {
			msg += ". " + adv
		} else if re.Hint == "" && (re.Kind == remote.KindUnreachable || re.Kind == remote.KindTimeout) {
			msg += ". Check that the host is up, WinRM listens on the configured port and no firewall blocks it; the Terraform state was not changed"
		}
		return fmt.Sprintf("%s (%s).", msg, t)
	}
	return fmt.Sprintf("%s: %v. Check the host and the provider's winrm settings, then retry.", t, err)
}

// notFoundDetail names the instances the host has.
func notFoundDetail(t target, ri *contract.ReadInstanceResult) string {
	inst := "none"
	if len(ri.InstalledInstances) > 0 {
		inst = strings.Join(ri.InstalledInstances, ", ")
	}
	name := t.Host
	if ri.ComputerName != "" {
		name = fmt.Sprintf("%s (%s)", t.Host, ri.ComputerName)
	}
	return fmt.Sprintf("SQL Server instance %q is not installed on %s; installed instances: %s. Check the instance argument.",
		t.Instance, name, inst)
}

// addWarnings adds the decision's warnings to diags.
func addWarnings(diags *diag.Diagnostics, ws []ifi.Warning, skip ...string) {
	for _, w := range ws {
		if slices.Contains(skip, w.Code) {
			continue
		}
		diags.AddWarning(w.Summary, w.Detail)
	}
}
