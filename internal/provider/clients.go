package provider

import (
	"context"
	"fmt"
	"net"
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
	// sqlOptional is sql.optional: a login SQL Server refuses is a warning.
	sqlOptional bool

	mu    sync.Mutex
	hosts map[hostKey]remote.Host
	// ntlmWarned: the hosts whose NTLM fallback this run has warned about.
	ntlmWarned map[hostKey]bool
	checker    sqlcheck.Checker
	// logonAdvised: hostKey → the instance whose error in this run carries the
	// advice for a failed logon on that host (given once per host).
	logonAdvised sync.Map
	// claims: the instances the resources of this run manage, each with how its
	// resource spells it. Terraform configures the provider anew for every run
	// (plan, apply), so the registry is per run.
	claims map[instanceKey]string
	// destroyed: the instances whose resource this run destroyed, each with what the
	// host had before (for the create of a replace: plan_prediction.go).
	destroyed map[instanceKey]*converge.Outcome
	// clusterSeen: the last read of each failover cluster instance in this run
	// (cluster.go).
	clusterSeen map[instanceKey]*converge.ClusterOutcome
}

// rememberDestroyed records what the host had before this run destroyed the
// resource of host/instance (out from the engine's Destroy).
func (c *clients) rememberDestroyed(host, instance string, out *converge.Outcome) {
	if out == nil || out.Read == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.destroyed == nil {
		c.destroyed = map[instanceKey]*converge.Outcome{}
	}
	c.destroyed[newInstanceKey(host, instance)] = out
}

// destroyedBefore is what the host had before this run destroyed the resource of
// host/instance; nil when it did not.
func (c *clients) destroyedBefore(host, instance string) *converge.Outcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.destroyed[newInstanceKey(host, instance)]
}

// instanceKey names one SQL Server instance whatever its spelling: the normalised
// host address and the upper-cased instance name.
type instanceKey struct {
	host     string
	instance string
}

// newInstanceKey normalises a host and an instance name: an IPv4-mapped IPv6
// address is its IPv4 address, an IPv6 address its canonical form, a DNS name is
// lower-cased without its trailing dot; instance names compare without case.
func newInstanceKey(host, instance string) instanceKey {
	h := strings.TrimSpace(host)
	if ip := net.ParseIP(strings.Trim(h, "[]")); ip != nil {
		if v4 := ip.To4(); v4 != nil {
			h = v4.String()
		} else {
			h = ip.String()
		}
	} else {
		h = strings.TrimSuffix(strings.ToLower(h), ".")
	}
	return instanceKey{host: h, instance: strings.ToUpper(strings.TrimSpace(instance))}
}

// claim records that a resource spelled by manages host/instance in this run. When
// another resource claimed the same instance first, it returns that one's spelling
// and false.
func (c *clients) claim(host, instance, by string) (string, bool) {
	k := newInstanceKey(host, instance)
	c.mu.Lock()
	defer c.mu.Unlock()
	if other, taken := c.claims[k]; taken {
		return other, false
	}
	if c.claims == nil {
		c.claims = map[instanceKey]string{}
	}
	c.claims[k] = by
	return "", true
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
	return &converge.Engine{Clients: c, Log: tflogLogger{}, Restarts: c.restarts, SQLOptional: c.sqlOptional}
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

// ntlmFallbackWarning adds, once per host and run, a warning that auth
// "negotiate" reached t's host with NTLM instead of Kerberos, and why. remote
// decides and says why; the provider names its arguments.
func (c *clients) ntlmFallbackWarning(diags *diag.Diagnostics, t converge.Target) {
	k := hostKey{strings.ToLower(t.Host), c.port(t.Port)}
	c.mu.Lock()
	h, ok := c.hosts[k].(remote.LogonReporter)
	if !ok || c.ntlmWarned[k] {
		c.mu.Unlock()
		return
	}
	lg := h.Logon()
	if !lg.Fallback {
		c.mu.Unlock()
		return
	}
	if c.ntlmWarned == nil {
		c.ntlmWarned = map[hostKey]bool{}
	}
	c.ntlmWarned[k] = true
	c.mu.Unlock()
	host := safetext.Escape(t.Host)
	diags.AddWarning(fmt.Sprintf("NTLM instead of Kerberos on %s", host),
		fmt.Sprintf(`winrm.auth = "negotiate" reached %s with NTLM because %s. Kerberos proves the host's identity before anything is sent; `+
			"NTLM over HTTP proves it only by sealing each answer with the logon's key, and over HTTPS the certificate is the only proof. "+
			"Anyone who can block port 88 or the KDC's answers can cause this fallback. Fix the cause (the user's realm as user@REALM "+
			`or DOMAIN\user, winrm.realm, winrm.krb5_conf naming reachable KDCs, winrm.spn), set winrm.allow_ntlm_fallback = false to make it an error, `+
			`or set winrm.auth = "ntlm" to choose NTLM knowingly.`, host, safetext.Escape(lg.Why)))
}

// report is what this run's engine errors need for their diagnostics: the WinRM
// user, and the advice for a failed logon given once per host.
func (c *clients) report() errorReport {
	var sqlAuth string
	if c.sql != nil {
		sqlAuth = c.sql.Auth
	}
	return errorReport{user: c.winrm.Username, sqlAuth: sqlAuth, logonAdvised: func(t converge.Target) string {
		first, loaded := c.logonAdvised.LoadOrStore(hostKey{strings.ToLower(t.Host), c.port(t.Port)}, t.Instance)
		if !loaded {
			return ""
		}
		instance, _ := first.(string)
		return instance
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
