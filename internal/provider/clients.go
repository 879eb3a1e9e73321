package provider

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/sqlcheck"
)

// hostOpener makes the client of one host's WinRM listener (remote.New).
type hostOpener func(remote.Config) (remote.Host, error)

// checkerOpener makes the SQL Server checker (sqlcheck.New).
type checkerOpener func(sqlcheck.Config) (sqlcheck.Checker, error)

var _ converge.Clients = &clients{}

// clients is what Configure hands to resources and data sources: the settings, and
// the WinRM and SQL clients, created the first time they are needed and shared (the
// converge engine's converge.Clients); and the run's engine session, which keeps
// what the run's operations must know of each other (converge.Session). Terraform
// configures the provider anew for every run (plan, apply).
type clients struct {
	winrm       remote.Config    // Host and Port are set per host
	sql         *sqlcheck.Config // nil: no SQL credentials configured
	openHost    hostOpener
	openChecker checkerOpener
	session     *converge.Session

	mu      sync.Mutex
	hosts   map[hostKey]remote.Host
	checker sqlcheck.Checker
}

type hostKey struct {
	host string
	port int
}

// newClients is the clients of a run, whose restarts share the limiter restarts
// (max_parallel_restarts; nil: no limit).
func newClients(w remote.Config, s *sqlcheck.Config, oh hostOpener, oc checkerOpener, restarts *converge.RestartLimiter) *clients {
	c := &clients{winrm: w, sql: s, openHost: oh, openChecker: oc, hosts: map[hostKey]remote.Host{}}
	c.session = converge.NewSession(&converge.Engine{Clients: c, Log: tflogLogger{}, Restarts: restarts})
	return c
}

// run is the run's engine session; nil before the provider is configured (a
// nil session predicts only that it cannot know).
func (c *clients) run() *converge.Session {
	if c == nil {
		return nil
	}
	return c.session
}

// hostOnce is the key of advice given once per host and run.
func (c *clients) hostOnce(what string, t converge.Target) string {
	return fmt.Sprintf("%s %s:%d", what, strings.ToLower(t.Host), c.port(t.Port))
}

// port is the WinRM port used for a resource whose port argument is p (0: unset):
// p, else the provider's winrm.port, else remote's default for the scheme.
func (c *clients) port(p int) int {
	if p != 0 {
		return p
	}
	cfg := c.winrm
	cfg.SetDefaults()
	return cfg.Port
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

// ntlmFallbackWarning adds the warning that auth "negotiate" reached t's host with
// NTLM instead of Kerberos because of why, which the engine says when it is news
// (converge's news.go: once per host and run, in a refresh when it first appears or
// its cause changed, and in a plan or destroy that changes the host); "" adds
// nothing. remote decides and says why; the provider names its arguments.
func (c *clients) ntlmFallbackWarning(diags *diag.Diagnostics, t converge.Target, why string) {
	if why == "" {
		return
	}
	host := safetext.Escape(t.Host)
	diags.AddWarning(fmt.Sprintf("NTLM instead of Kerberos on %s", host),
		fmt.Sprintf(`winrm.auth = "negotiate" reached %s with NTLM because %s. Kerberos proves the host's identity before anything is sent; `+
			"NTLM over HTTP proves it only by sealing each answer with the logon's key, and over HTTPS the certificate is the only proof. "+
			"Anyone who can block port 88 or the KDC's answers can cause this fallback. Fix the cause (the user's realm as user@REALM "+
			`or DOMAIN\user, winrm.realm, winrm.krb5_conf naming reachable KDCs, winrm.spn), set winrm.allow_ntlm_fallback = false to make it an error, `+
			`or set winrm.auth = "ntlm" to choose NTLM knowingly.`, host, safetext.Escape(why)))
}

// report is what this run's engine errors need for their diagnostics: the WinRM
// user, and the advice for a failed logon given once per host.
func (c *clients) report() errorReport {
	var sqlAuth string
	if c.sql != nil {
		sqlAuth = c.sql.Auth
	}
	return errorReport{user: c.winrm.Username, sqlAuth: sqlAuth, logonAdvised: func(what string, t converge.Target) string {
		if what == logonSQL && c.sql != nil {
			what += " " + strings.ToLower(c.sql.Username) // per login and host
		}
		first, _ := c.session.Once(c.hostOnce(what, t), t.Instance)
		return first
	}}
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

// tflogLogger is the contract.Logger of remote, sqlcheck and the converge engine:
// tflog, with the masking the context carries (maskSecrets). The engine logs from
// more than one goroutine on one request's context (the SQL check runs beside the
// WinRM read), and tflog's masking writes the masked values back into the
// context's own field map (terraform-plugin-log v0.11.0, LoggerOpts.ApplyMask):
// each call therefore logs on a private copy of the context's logger options.
type tflogLogger struct{}

func (tflogLogger) Debug(ctx context.Context, msg string, fields map[string]any) {
	tflog.Debug(ownLoggerOpts(ctx), msg, fields)
}

func (tflogLogger) Info(ctx context.Context, msg string, fields map[string]any) {
	tflog.Info(ownLoggerOpts(ctx), msg, fields)
}

// ownLoggerOpts is ctx with a copy of its provider logger's options (tflog copies
// them whenever it derives a context), so that masking writes into that copy.
func ownLoggerOpts(ctx context.Context) context.Context {
	return tflog.MaskFieldValuesWithFieldKeys(ctx)
}

// configuredClients is what the provider's Configure handed to a resource or data
// source: nil before the provider is configured, or (with an error) if it is not
// *clients.
func configuredClients(providerData any, diags *diag.Diagnostics) *clients {
	if providerData == nil {
		return nil
	}
	c, ok := providerData.(*clients)
	if !ok {
		diags.AddError("Unexpected provider data",
			fmt.Sprintf("Expected *clients, got %T. This is a bug in the provider; please report it.", providerData))
		return nil
	}
	return c
}
