package provider

import (
	"context"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/sqlcheck"
)

// hostOpener makes the client of one host's WinRM listener (remote.New).
type hostOpener func(remote.Config) (remote.Host, error)

// checkerOpener makes the SQL Server checker (sqlcheck.New).
type checkerOpener func(sqlcheck.Config) (sqlcheck.Checker, error)

var _ converge.Clients = &clients{}

// clients is what Configure hands to resources and data sources: the settings, and
// the WinRM and SQL clients, created the first time they are needed and shared. It
// is the converge engine's converge.Clients.
type clients struct {
	winrm       remote.Config    // Host and Port are set per host
	sql         *sqlcheck.Config // nil: no SQL credentials configured
	openHost    hostOpener
	openChecker checkerOpener
	// restarts bounds concurrent restarts across every resource of the run
	// (max_parallel_restarts); nil: no limit.
	restarts *converge.RestartLimiter

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

// engine is the converge engine over these clients, logging through tflog.
func (c *clients) engine() *converge.Engine {
	return &converge.Engine{Clients: c, Log: tflogLogger{}, Restarts: c.restarts}
}

// port is the WinRM port used for a resource whose port argument is p (0: unset).
func (c *clients) port(p int) int {
	switch {
	case p != 0:
		return p
	case c.winrm.Port != 0:
		return c.winrm.Port
	case c.winrm.HTTPS:
		return 5986
	}
	return 5985
}

// Host returns the client of host:port, creating it on first use.
func (c *clients) Host(host string, port int) (converge.Host, error) {
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

// SQLChecker returns the SQL checker, or nil when no SQL credentials are configured.
func (c *clients) SQLChecker() (sqlcheck.Checker, error) {
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

// tflogLogger is the engine's converge.Logger: tflog, with the masking the context
// carries (maskSecrets).
type tflogLogger struct{}

func (tflogLogger) Debug(ctx context.Context, msg string, fields map[string]any) {
	tflog.Debug(ctx, msg, fields)
}

func (tflogLogger) Info(ctx context.Context, msg string, fields map[string]any) {
	tflog.Info(ctx, msg, fields)
}
