// Package provider is the mssqlifi Terraform provider: it manages SQL Server Instant
// File Initialization (the Windows right SeManageVolumePrivilege) over WinRM and
// verifies it through SQL Server itself.
package provider

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/sqlcheck"
)

// Environment variables the provider reads when the configuration leaves a value out.
const (
	EnvWinRMUsername = "MSSQLIFI_WINRM_USERNAME"
	EnvWinRMPassword = "MSSQLIFI_WINRM_PASSWORD"
	EnvSQLUsername   = "MSSQLIFI_SQL_USERNAME"
	EnvSQLPassword   = "MSSQLIFI_SQL_PASSWORD"
	EnvSQLAuth       = "MSSQLIFI_SQL_AUTH"

	EnvWinRMAllowUnencrypted = "MSSQLIFI_WINRM_ALLOW_UNENCRYPTED"
	EnvWinRMSPN              = "MSSQLIFI_WINRM_SPN"

	// EnvMaxParallelRestarts is max_parallel_restarts when the configuration leaves it out.
	EnvMaxParallelRestarts = "MSSQLIFI_MAX_PARALLEL_RESTARTS"
	// EnvAllowRestarts is allow_restarts when the configuration leaves it out.
	EnvAllowRestarts = "MSSQLIFI_ALLOW_RESTARTS"
)

// defaultMaxParallelRestarts: a fleet apply restarts one instance at a time.
const defaultMaxParallelRestarts = 1

var (
	_ provider.Provider                  = &mssqlifiProvider{}
	_ provider.ProviderWithActions       = &mssqlifiProvider{}
	_ provider.ProviderWithListResources = &mssqlifiProvider{}
)

// mssqlifiProvider is the provider; openHost and openChecker make the real clients
// (tests may substitute their own constructors, never the protocols).
type mssqlifiProvider struct {
	version     string
	openHost    hostOpener
	openChecker checkerOpener
}

type providerModel struct {
	MaxParallelRestarts wholeNumber `tfsdk:"max_parallel_restarts"`
	AllowRestarts       types.Bool  `tfsdk:"allow_restarts"`
	WinRM               *winrmModel `tfsdk:"winrm"`
	SQL                 *sqlModel   `tfsdk:"sql"`
}

type winrmModel struct {
	Username      types.String `tfsdk:"username"`
	Password      types.String `tfsdk:"password"`
	Auth          types.String `tfsdk:"auth"`
	HTTPS         types.Bool   `tfsdk:"https"`
	Port          wholeNumber  `tfsdk:"port"`
	Insecure      types.Bool   `tfsdk:"insecure"`
	CACert        types.String `tfsdk:"ca_cert"`
	TLSServerName types.String `tfsdk:"tls_server_name"`
	Timeout       types.String `tfsdk:"timeout"`
	// AllowUnencrypted and SPN: see security.go.
	AllowUnencrypted types.Bool   `tfsdk:"allow_unencrypted"`
	SPN              types.String `tfsdk:"spn"`
	kerberosModel
}

type sqlModel struct {
	Auth                   types.String `tfsdk:"auth"`
	Username               types.String `tfsdk:"username"`
	Password               types.String `tfsdk:"password"`
	Encrypt                types.String `tfsdk:"encrypt"`
	CACert                 types.String `tfsdk:"ca_cert"`
	TrustServerCertificate types.Bool   `tfsdk:"trust_server_certificate"`
	// Keytab and SPN: Kerberos only (kerberos_config.go).
	Keytab types.String `tfsdk:"keytab"`
	SPN    types.String `tfsdk:"spn"`
	// Optional: a login SQL Server refuses is a warning (converge.Engine.SQLOptional).
	Optional types.Bool `tfsdk:"optional"`
}

// New returns the provider factory used by main and the tests.
func New(version string) func() provider.Provider {
	return func() provider.Provider {
		return &mssqlifiProvider{
			version:     version,
			openHost:    remote.New,
			openChecker: func(c sqlcheck.Config) (sqlcheck.Checker, error) { return sqlcheck.New(c), nil },
		}
	}
}

func (p *mssqlifiProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "mssqlifi"
	resp.Version = p.version
}

func (p *mssqlifiProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Manages SQL Server **Instant File Initialization** (IFI) on Windows hosts over WinRM: " +
			"grants or revokes the right *Perform volume maintenance tasks* (`SeManageVolumePrivilege`) through the LSA API, " +
			"restarts the Database Engine when that is needed and allowed, and verifies the result through SQL Server itself " +
			"(`sys.dm_server_services`) or its error log.",
		Attributes: map[string]schema.Attribute{
			"allow_restarts": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Whether this run may restart SQL Server at all. Default `true`. With `false` (outside a maintenance window, " +
					"say `allow_restarts = var.in_window`), every resource is planned and applied as with `restart = \"never\"`: the right is " +
					"granted or revoked now, `planned_action` says `grant` or `revoke`, `restart_pending` stays `true`, and the plan says that the " +
					"restart waits for a run that allows it, where `planned_action` is then `restart`. A provider setting, unlike the resource's " +
					"`restart`, changes no resource: a converged fleet's plan stays empty whichever the run. Defaults to the environment variable `" +
					EnvAllowRestarts + "`.",
			},
			"max_parallel_restarts": schema.Int64Attribute{CustomType: wholeNumberType{},
				Optional: true,
				MarkdownDescription: "How many SQL Server instances this provider restarts at once across every host of the run (the restart " +
					"and the wait until SQL Server accepts logins). Default `" + strconv.Itoa(defaultMaxParallelRestarts) + "`: a fleet apply rolls through its restarts one at a time, while " +
					"reads, and changes that need no restart, still run in parallel up to terraform's `-parallelism`. `0` means no limit. " +
					"Whatever the limit, instances of one host restart one at a time: within a run they queue. " +
					"A change that needs a restart is made with it, once a slot is free: a resource whose timeout passes while it waits " +
					"has changed nothing. Defaults to the environment variable `" + EnvMaxParallelRestarts + "`.",
				Validators: []validator.Int64{int64validator.AtLeast(0)},
			},
		},
		Blocks: map[string]schema.Block{
			"winrm": schema.SingleNestedBlock{
				MarkdownDescription: "How to reach the hosts' WinRM service. The account must be a local administrator of each host.",
				Attributes: withAttributes(map[string]schema.Attribute{
					"username": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "WinRM user, `Administrator` or `DOMAIN\\user`. Defaults to the environment variable `" +
							EnvWinRMUsername + "`.",
					},
					"password": schema.StringAttribute{
						Optional:            true,
						Sensitive:           true,
						MarkdownDescription: "WinRM password. Defaults to the environment variable `" + EnvWinRMPassword + "`.",
					},
					"auth": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "Authentication: `" + remote.AuthNegotiate + "` (default: HTTP Negotiate, as Windows clients use: Kerberos when a ticket can be had, " +
							"else NTLM; see \"Authentication and transport security\"), `kerberos` (domain accounts; the host proves its identity), `ntlm`, or " +
							"`basic` (a local account; the host must allow Basic, which Windows does not by default; over HTTP only with `allow_unencrypted`). " +
							"NTLM logons carry a MIC, the host's SPN and, over HTTPS, channel bindings, as Kerberos authenticators do; over HTTP every message is encrypted.",
						Validators: []validator.String{stringvalidator.OneOf(remote.AuthNegotiate, remote.AuthKerberos, remote.AuthNTLM, remote.AuthBasic)},
					},
					"allow_unencrypted": schema.BoolAttribute{
						Optional: true,
						MarkdownDescription: "Let `auth = \"basic\"` over plain HTTP send the password and every message in clear text, for a host " +
							"configured with `AllowUnencrypted=true` and `Basic=true`. Default `false` (or the environment variable `" +
							EnvWinRMAllowUnencrypted + "`); any other use is refused at plan, and this one warns.",
					},
					"spn": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "Service principal name of the hosts' WinRM service: Kerberos asks a ticket for it, and the NTLM logon is bound to it " +
							"(`MsvAvTargetName`), so that a host it was not meant for refuses it. Default `HTTP/<host>`; set it (for example " +
							"`HTTP/sql01.contoso.com`) when hosts are reached by IP address or alias. " +
							"Defaults to the environment variable `" + EnvWinRMSPN + "`.",
						Validators: []validator.String{spnValidator},
					},
					"https": schema.BoolAttribute{
						Optional: true,
						MarkdownDescription: fmt.Sprintf("Use the HTTPS listener. Default `%t`: the HTTP listener (port `%d`), every message "+
							"encrypted by the Negotiate, Kerberos or NTLM logon. With `true` (port `%d`), the listener's certificate is verified "+
							"against `ca_cert` or the system roots unless `insecure`.", remote.DefaultHTTPS, remote.DefaultHTTPPort, remote.DefaultHTTPSPort),
					},
					"port": schema.Int64Attribute{CustomType: wholeNumberType{},
						Optional: true,
						MarkdownDescription: fmt.Sprintf("WinRM port. Default `%d` with HTTPS, `%d` without. A resource's `port` overrides it.",
							remote.DefaultHTTPSPort, remote.DefaultHTTPPort),
						Validators: []validator.Int64{int64validator.Between(1, 65535)},
					},
					"insecure": schema.BoolAttribute{
						Optional:            true,
						MarkdownDescription: "Skip verification of the hosts' TLS certificates. Default `false`; use only for tests.",
					},
					"ca_cert": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "PEM certificate(s) of the CA that signed the hosts' WinRM certificates, for example `file(\"ca.pem\")`. Default: the system's roots.",
						Validators:          []validator.String{pemValidator},
					},
					"tls_server_name": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "Name to check in the hosts' certificates instead of the `host` argument (useful when connecting by IP address).",
						Validators:          []validator.String{hostValidator},
					},
					"timeout": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: fmt.Sprintf("Timeout of one WinRM request, as a duration such as `%s` (the default). "+
							"Restarts are bounded by the resource's timeouts instead.", seconds(remote.DefaultTimeout)),
						Validators: []validator.String{durationValidator},
					},
				}, kerberosAttributes()),
			},
			"sql": schema.SingleNestedBlock{
				MarkdownDescription: "Optional SQL login used to verify IFI through `sys.dm_server_services` and to find TDE databases. " +
					"It needs `VIEW SERVER STATE`. Without it, verification falls back to the SQL Server error log.",
				Attributes: map[string]schema.Attribute{
					"auth": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "Login kind: `" + sqlcheck.AuthSQL + "` (default; a SQL Server login), `" + sqlcheck.AuthNTLM + "` (a Windows account, `DOMAIN\\user`) or `" +
							sqlcheck.AuthKerberos + "` (a Windows account by Kerberos, for domains that restrict NTLM: `username` and `password`, `username` and `keytab`, or " +
							"neither, the credential cache of `KRB5CCNAME`; see `spn`; the KDCs come from `winrm.krb5_conf`). A user name with a backslash is a Windows logon, " +
							"so with `sql` it is refused at plan, and `ntlm` needs one. Defaults to the environment variable `" + EnvSQLAuth + "`.",
						Validators: []validator.String{stringvalidator.OneOf(sqlcheck.AuthSQL, sqlcheck.AuthNTLM, sqlcheck.AuthKerberos)},
					},
					"username": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "SQL login; with `auth = \"ntlm\"` or `\"kerberos\"` the Windows account (`DOMAIN\\user`, or `user@REALM` for Kerberos), " +
							"which Kerberos from the credential cache does not need. Defaults to the environment variable `" + EnvSQLUsername + "`.",
					},
					"password": schema.StringAttribute{
						Optional:            true,
						Sensitive:           true,
						MarkdownDescription: "SQL password. Defaults to the environment variable `" + EnvSQLPassword + "`.",
					},
					"encrypt": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "TDS encryption: `" + sqlcheck.EncryptStrict + "` (TDS 8.0, TLS first), `" + sqlcheck.EncryptTrue + "` or `" +
							sqlcheck.EncryptDisable + "`; default `" + sqlcheck.DefaultEncrypt + "`.",
						Validators: []validator.String{stringvalidator.OneOf(sqlcheck.EncryptStrict, sqlcheck.EncryptTrue, sqlcheck.EncryptDisable)},
					},
					"ca_cert": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "PEM certificate(s) of the CA that signed the instances' certificates. Default: the system's roots.",
						Validators:          []validator.String{pemValidator},
					},
					"trust_server_certificate": schema.BoolAttribute{
						Optional:            true,
						MarkdownDescription: "Accept any certificate from SQL Server. Default `false`.",
					},
					"keytab": sqlKeytabAttribute(),
					"spn":    sqlSPNAttribute(),
					"optional": schema.BoolAttribute{
						Optional: true,
						MarkdownDescription: "Whether verifying through SQL Server may be skipped when this login cannot log on. Default `false`: " +
							"a login SQL Server refuses (error 18456: wrong password, unknown or disabled login, a SQL login on an instance in Windows " +
							"authentication mode, a Windows account without a login; error 18452: a Windows logon refused; for Kerberos, the KDC " +
							"refusing the account or the ticket) fails the plan and the apply before anything is changed, naming the login, the host " +
							"and instance, and what to check. With `true` it is a warning, and verification falls back to the SQL Server error log, " +
							"as it does in any case when SQL Server cannot be reached or does not answer in time.",
					},
				},
			},
		},
	}
}

func (p *mssqlifiProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	ctx = maskSecrets(ctx, nil)
	var cfg providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	w := cfg.winrm()
	for name, v := range map[string]interface{ IsUnknown() bool }{
		"username": w.Username, "password": w.Password, "auth": w.Auth, "https": w.HTTPS, "port": w.Port,
		"insecure": w.Insecure, "ca_cert": w.CACert, "tls_server_name": w.TLSServerName, "timeout": w.Timeout,
		"allow_unencrypted": w.AllowUnencrypted, "spn": w.SPN,
		"keytab": w.Keytab, "krb5_conf": w.Krb5Conf, "realm": w.Realm, "allow_ntlm_fallback": w.AllowNTLMFallback,
	} {
		if v.IsUnknown() {
			resp.Diagnostics.AddAttributeError(path.Root("winrm").AtName(name), "Unknown WinRM setting",
				"winrm."+name+" depends on a value known only after apply; the provider needs it to plan. Use a value known at plan time.")
		}
	}
	if resp.Diagnostics.HasError() {
		return
	}

	// remote decides the defaults and the rules; each finding becomes an error at its
	// argument (provider_security.go). ValidateConfig warned at plan already.
	rc := winrmConfig(w)
	rc.Port = int(w.Port.ValueInt64()) // 0: each resource's port, else remote's default for the scheme
	if !w.Timeout.IsNull() && !w.Timeout.IsUnknown() {
		d, err := time.ParseDuration(w.Timeout.ValueString())
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("winrm").AtName("timeout"), "Invalid WinRM timeout",
				"winrm.timeout must be a positive duration such as \"60s\".")
		}
		rc.Timeout = d
	}
	rc.SetDefaults()
	q := cfg.sql()
	resp.Diagnostics.Append(validateKerberos(rc, sqlUsesKerberos(q))...)
	resp.Diagnostics.Append(winrmDiagnostics(rc, false)...)
	if f := rc.CheckNTLMFallback(); f != nil {
		resp.Diagnostics.Append(kerberosDiagnostic(f))
	}

	var sc *sqlcheck.Config
	if s := sqlConfig(q, w); s.Username != "" || sqlUsesKerberos(q) {
		for _, f := range s.Problems() {
			resp.Diagnostics.Append(sqlDiagnostic(f, s, q, false))
		}
		s.SetDefaults()
		if !resp.Diagnostics.HasError() {
			resp.Diagnostics.Append(validateSQLKerberos(s)...)
		}
		sc = &s
	} else if cfg.SQL != nil && (!q.Password.IsNull() || !q.Encrypt.IsNull()) {
		resp.Diagnostics.AddAttributeError(path.Root("sql").AtName("username"), "Missing SQL username",
			"The sql block has no username: set sql.username or the environment variable "+EnvSQLUsername+
				", or remove the sql block to verify through the error log instead.")
	}
	maxRestarts := maxParallelRestarts(cfg.MaxParallelRestarts, &resp.Diagnostics)
	allow := allowRestarts(cfg.AllowRestarts, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}

	tflog.Debug(ctx, "configured mssqlifi", map[string]any{
		"winrm_username": rc.Username, "winrm_password": rc.Password, "winrm_auth": rc.Auth,
		"winrm_https": rc.HTTPS, "winrm_port": rc.Port, "sql_configured": sc != nil, "max_parallel_restarts": maxRestarts,
	})
	rc.UserAgent, sc = contract.UserAgent(p.version), sc.WithAppName(contract.UserAgent(p.version))
	rc.Log = tflogLogger{} // remote and sqlcheck log through tflog, with the masking the context carries
	if sc != nil {
		sc.Log = tflogLogger{}
	}
	c := newClients(rc, sc, p.openHost, p.openChecker, converge.NewRestartLimiter(maxRestarts))
	c.session.Engine.SQLOptional = boolOr(q.Optional, false) // a login SQL Server refuses is then a warning
	c.session.HoldRestarts = !allow                          // the run restarts nothing (allow_restarts = false)
	resp.ResourceData = c
	resp.DataSourceData = c
	resp.ActionData = c
	resp.ListResourceData = c
}

func (p *mssqlifiProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{NewInstantFileInitializationResource}
}

// Actions: Terraform 1.14 and later; older CLIs and OpenTofu never ask for them.
func (p *mssqlifiProvider) Actions(context.Context) []func() action.Action {
	return []func() action.Action{NewRestartAction}
}

// ListResources: for terraform query (Terraform 1.14 and later).
func (p *mssqlifiProvider) ListResources(context.Context) []func() list.ListResource {
	return []func() list.ListResource{NewInstantFileInitializationListResource}
}

func (p *mssqlifiProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{NewInstantFileInitializationDataSource, NewInstancesDataSource}
}

// maskSecrets keeps passwords out of the logs: fields named like one, and the
// configured passwords' values wherever they would appear (in a message or any field,
// for example inside an error text from a library).
func maskSecrets(ctx context.Context, c *clients) context.Context {
	ctx = tflog.MaskFieldValuesWithFieldKeys(ctx, "password", "winrm_password", "sql_password")
	if c == nil {
		return ctx
	}
	var secrets []string
	if c.winrm.Password != "" {
		secrets = append(secrets, c.winrm.Password)
	}
	if c.sql != nil && c.sql.Password != "" {
		secrets = append(secrets, c.sql.Password)
	}
	if len(secrets) > 0 {
		ctx = tflog.MaskMessageStrings(ctx, secrets...)
		ctx = tflog.MaskAllFieldValuesStrings(ctx, secrets...)
	}
	return ctx
}

// allowRestarts is allow_restarts: the configured value, else the environment
// variable, else true.
func allowRestarts(v types.Bool, diags *diag.Diagnostics) bool {
	if !v.IsNull() && !v.IsUnknown() {
		return v.ValueBool()
	}
	if v.IsUnknown() {
		diags.AddAttributeError(path.Root("allow_restarts"), "Unknown allow_restarts",
			"allow_restarts depends on a value known only after apply; use a value known at plan time.")
		return false
	}
	env := os.Getenv(EnvAllowRestarts)
	if env == "" {
		return true
	}
	b, err := strconv.ParseBool(env)
	if err != nil {
		diags.AddAttributeError(path.Root("allow_restarts"), "Invalid "+EnvAllowRestarts,
			fmt.Sprintf("%s = %q is not true or false.", EnvAllowRestarts, env))
		return false
	}
	return b
}

// maxParallelRestarts is max_parallel_restarts: the configured value, else the
// environment variable, else the default.
func maxParallelRestarts(v wholeNumber, diags *diag.Diagnostics) int {
	if v.IsUnknown() {
		diags.AddAttributeError(path.Root("max_parallel_restarts"), "Unknown max_parallel_restarts",
			"max_parallel_restarts depends on a value known only after apply; use a value known at plan time.")
		return 0
	}
	if !v.IsNull() {
		return int(v.ValueInt64())
	}
	env := strings.TrimSpace(os.Getenv(EnvMaxParallelRestarts))
	if env == "" {
		return defaultMaxParallelRestarts
	}
	n, err := strconv.Atoi(env)
	if err != nil || n < 0 {
		diags.AddAttributeError(path.Root("max_parallel_restarts"), "Invalid "+EnvMaxParallelRestarts,
			fmt.Sprintf("The environment variable %s is %s, not a whole number of 0 or more: set it to the number of instances "+
				"to restart at once (0 = no limit), or unset it for the default of %d.", EnvMaxParallelRestarts, safetext.Escape(env), defaultMaxParallelRestarts))
		return 0
	}
	return n
}

func stringOrEnv(v types.String, env string) string {
	if v.IsNull() || v.IsUnknown() || v.ValueString() == "" {
		return os.Getenv(env)
	}
	return v.ValueString()
}

func boolOr(v types.Bool, def bool) bool {
	if v.IsNull() || v.IsUnknown() {
		return def
	}
	return v.ValueBool()
}

// withAttributes returns base with the attributes of extra added.
func withAttributes(base, extra map[string]schema.Attribute) map[string]schema.Attribute {
	for name, attr := range extra {
		base[name] = attr
	}
	return base
}

// seconds writes d as a whole number of seconds, "60s" (the form the docs use;
// time.Duration's own String gives "1m0s").
func seconds(d time.Duration) string { return strconv.Itoa(int(d/time.Second)) + "s" }
