package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

var (
	_ datasource.DataSource              = &ifiDataSource{}
	_ datasource.DataSourceWithConfigure = &ifiDataSource{}
)

// NewInstantFileInitializationDataSource is the mssqlifi_instant_file_initialization data source.
func NewInstantFileInitializationDataSource() datasource.DataSource { return &ifiDataSource{} }

type ifiDataSource struct {
	c *clients
}

type ifiDataSourceModel struct {
	ID       types.String `tfsdk:"id"`
	Host     types.String `tfsdk:"host"`
	Instance types.String `tfsdk:"instance"`
	Port     types.Int64  `tfsdk:"port"`
	SQLPort  types.Int64  `tfsdk:"sql_port"`
	computedModel
}

func (d *ifiDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_instant_file_initialization"
}

func (d *ifiDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Reads the Instant File Initialization state of one SQL Server instance without changing anything: " +
			"who holds *Perform volume maintenance tasks*, whether the running Engine has IFI (verified through SQL Server or its " +
			"error log), and what would need a restart.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, MarkdownDescription: "`HOST/INSTANCE`."},
			"host": schema.StringAttribute{Required: true, Validators: []validator.String{hostValidator},
				MarkdownDescription: "DNS name or IP address of the Windows host, as WinRM reaches it."},
			"instance": schema.StringAttribute{Optional: true, Validators: []validator.String{instanceNameValidator},
				MarkdownDescription: "SQL Server instance name: `MSSQLSERVER` (the default instance, default) or a named instance's name."},
			"port": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.Between(1, 65535)},
				MarkdownDescription: "WinRM port of this host, overriding the provider's `winrm.port`."},
			"sql_port": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.Between(1, 65535)},
				MarkdownDescription: "TCP port of the instance's SQL endpoint, overriding the port the host reports."},
			"service_name": schema.StringAttribute{Computed: true,
				MarkdownDescription: "Windows service of the Database Engine: `MSSQLSERVER` or `MSSQL$NAME`."},
			"service_account": schema.StringAttribute{Computed: true,
				MarkdownDescription: "Account the Engine service starts as."},
			"service_sid": schema.StringAttribute{Computed: true,
				MarkdownDescription: "Per-service SID of the Engine (`NT SERVICE\\<service>`)."},
			"grantee_sid": schema.StringAttribute{Computed: true,
				MarkdownDescription: "SID SQL Server Setup grants the right to: the service SID."},
			"privilege_granted": schema.BoolAttribute{Computed: true,
				MarkdownDescription: "The service SID directly holds *Perform volume maintenance tasks*."},
			"ifi_enabled": schema.BoolAttribute{Computed: true,
				MarkdownDescription: "Whether the running Engine really has IFI; null when it cannot be verified."},
			"restart_pending": schema.BoolAttribute{Computed: true,
				MarkdownDescription: "The running Engine's IFI differs from what its next start will give; null when it cannot be verified."},
			"verified_by": schema.StringAttribute{Computed: true,
				MarkdownDescription: "How `ifi_enabled` was verified: `sql_dmv`, `errorlog` or `none`."},
			"sql_version": schema.StringAttribute{Computed: true, MarkdownDescription: "SQL Server build, e.g. `16.0.4135.4`."},
			"group_policy_managed": schema.BoolAttribute{Computed: true,
				MarkdownDescription: "A domain Group Policy defines who holds the right."},
			"tde_databases": schema.ListAttribute{Computed: true, ElementType: types.StringType,
				MarkdownDescription: "Databases with Transparent Data Encryption (IFI never applies to their data files); null when unknown."},
			"clustered": schema.BoolAttribute{Computed: true, MarkdownDescription: "The instance is a failover cluster instance."},
		},
	}
}

func (d *ifiDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	if c := configuredClients(req.ProviderData, &resp.Diagnostics); c != nil {
		d.c = c
	}
}

func (d *ifiDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	ctx = maskSecrets(ctx, d.c)
	var m ifiDataSourceModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if m.Instance.IsNull() {
		m.Instance = types.StringValue(DefaultInstance)
	}
	t := target{Host: m.Host.ValueString(), Instance: m.Instance.ValueString(),
		Port: int(m.Port.ValueInt64()), SQLPort: int(m.SQLPort.ValueInt64())}
	obs, ds := d.c.observe(ctx, t)
	resp.Diagnostics.Append(ds...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !obs.Instance.Found {
		resp.Diagnostics.AddAttributeError(path.Root("instance"), "SQL Server instance not found", notFoundDetail(t, obs.Instance))
		return
	}
	// What SQL Server Setup does is the reference: the service SID, no restart asked.
	a, err := ifi.Assess(ifi.Desired{Enabled: true, Grantee: ifi.GranteeServiceSID, Restart: ifi.RestartNever}, obs.Observed)
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("Cannot assess IFI on %s", t), err.Error())
		return
	}
	m.ID = types.StringValue(t.Host + "/" + t.Instance)
	m.computedModel.set(a)
	resp.Diagnostics.Append(obs.Warnings...)
	// Only what describes the instance; warnings about a wish belong to the resource.
	addWarnings(&resp.Diagnostics, a.Warnings, ifi.WarnRestartPending, ifi.WarnStaysOn, ifi.WarnSIDTypeNone)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
