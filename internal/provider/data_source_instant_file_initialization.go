package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
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

func (d *ifiDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_instant_file_initialization"
}

func (d *ifiDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	attrs := map[string]schema.Attribute{
		"id": schema.StringAttribute{Computed: true, MarkdownDescription: "`HOST/INSTANCE`."},
		"host": schema.StringAttribute{Required: true, Validators: []validator.String{hostValidator},
			MarkdownDescription: "DNS name or IP address of the Windows host, as WinRM reaches it."},
		"instance": schema.StringAttribute{Optional: true, Computed: true, Validators: []validator.String{instanceNameValidator},
			MarkdownDescription: "SQL Server instance name: `MSSQLSERVER` (the default instance, default) or a named instance's name."},
		"grantee": granteeReportAttribute("`privilege_granted`"),
		"port": schema.Int64Attribute{CustomType: wholeNumberType{}, Optional: true, Validators: []validator.Int64{int64validator.Between(1, 65535)},
			MarkdownDescription: "WinRM port of this host (on a failover cluster instance, of every node), overriding the provider's `winrm.port`."},
		"sql_port": schema.Int64Attribute{CustomType: wholeNumberType{}, Optional: true, Validators: []validator.Int64{int64validator.Between(1, 65535)},
			MarkdownDescription: "TCP port of the instance's SQL endpoint, overriding the port the host reports."},
		"nodes": schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: nodesDescription,
			Validators: []validator.Map{nodesValidator{}}},
		"sql_host": schema.StringAttribute{Optional: true, MarkdownDescription: sqlHostDescription, Validators: []validator.String{hostValidator}},
	}
	for k, v := range computedDataSourceAttributes() {
		attrs[k] = v
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Reads the Instant File Initialization state of one SQL Server instance without changing anything: " +
			"who holds *Perform volume maintenance tasks*, whether the running Engine has IFI (verified through SQL Server or its " +
			"error log), and what would need a restart.",
		Attributes: attrs,
	}
}

// granteeReportAttribute is a data source's grantee argument: whose grant what
// (an attribute reference) reports, as the resource's grantee chooses.
func granteeReportAttribute(what string) schema.StringAttribute {
	return schema.StringAttribute{Optional: true, Computed: true,
		Validators: []validator.String{stringvalidator.OneOf(string(ifi.GranteeServiceSID), string(ifi.GranteeServiceAccount))},
		MarkdownDescription: "Whose grant " + what + " reports: `service_sid` (default, `NT SERVICE\\<service>`) or " +
			"`service_account` (the service's start account), as the resource's `grantee`."}
}

// reportGrantee is the grantee a data source reports for: its grantee argument, else
// the engine's (converge.SetupReference, SQL Server Setup's grantee).
func reportGrantee(v types.String) ifi.Grantee {
	if v.IsNull() || v.IsUnknown() {
		return converge.SetupReference.Grantee
	}
	return ifi.Grantee(v.ValueString())
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
	t := m.target()
	grantee := reportGrantee(m.Grantee)
	res, err := d.c.run().Describe(ctx, converge.Request{Target: t, Nodes: nodeAddresses(m.Nodes), SQLHost: m.SQLHost.ValueString()}, grantee)
	d.c.ntlmFallbackWarning(&resp.Diagnostics, t, res.NTLMFallback)
	if err != nil {
		addEngineError(&resp.Diagnostics, opRead, err, d.c.report())
		return
	}
	m.Instance = types.StringValue(t.Instance)
	m.Grantee = types.StringValue(string(grantee))
	m.ID = types.StringValue(importID(t.Host, t.Instance))
	m.computedModel.set(res.Assessment)
	if res.Clustered() {
		// A failover cluster instance: every node, as SQL Server Setup would have it.
		m.computedModel.setCluster(res.Cluster.Cluster, res.Cluster.Observed.Cluster.Node)
	}
	ws := res.Warnings
	addWarnings(&resp.Diagnostics, ws)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
