package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
)

var (
	_ datasource.DataSource              = &instancesDataSource{}
	_ datasource.DataSourceWithConfigure = &instancesDataSource{}
)

// NewInstancesDataSource is the mssqlifi_instances data source: the discovery of a
// host's SQL Server instances.
func NewInstancesDataSource() datasource.DataSource { return &instancesDataSource{} }

type instancesDataSource struct {
	c *clients
}

// instancesDataSourceModel is the data source's configuration and what it found.
type instancesDataSourceModel struct {
	ID           types.String        `tfsdk:"id"`
	Host         types.String        `tfsdk:"host"`
	Port         wholeNumber         `tfsdk:"port"`
	Grantee      types.String        `tfsdk:"grantee"`
	ComputerName types.String        `tfsdk:"computer_name"`
	Instances    []hostInstanceModel `tfsdk:"instances"`
}

// hostInstanceModel is one instance of the host: its name, the resource's import
// ID, its TCP port, and what the instance's own data source reports of it.
type hostInstanceModel struct {
	Instance types.String `tfsdk:"instance"`
	ImportID types.String `tfsdk:"import_id"`
	TCPPort  types.Int64  `tfsdk:"tcp_port"`
	computedModel
}

func (d *instancesDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_instances"
}

func (d *instancesDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	nested := map[string]schema.Attribute{
		"instance": schema.StringAttribute{Computed: true,
			MarkdownDescription: "The instance's name: `MSSQLSERVER` for the default instance, else the named instance's name, as the registry lists it."},
		"import_id": schema.StringAttribute{Computed: true,
			MarkdownDescription: "The `id` of an `import` block for `mssqlifi_instant_file_initialization`: `HOST/INSTANCE` with `host` as configured here, or `HOST:PORT/INSTANCE` when `port` is set."},
		"tcp_port": schema.Int64Attribute{Computed: true,
			MarkdownDescription: "The instance's static TCP port as its SQL Server Network Configuration sets it; null where the host reports none (dynamic ports only, or TCP off)."},
	}
	for k, v := range computedDataSourceAttributes() {
		nested[k] = v
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Lists the SQL Server instances installed on a host, each with what the " +
			"`mssqlifi_instant_file_initialization` data source reports of it, read with one PowerShell process for the host. " +
			"Use it to manage every instance of a host with `for_each`, or to bring an existing fleet under management " +
			"with `import` blocks (Terraform 1.7 and later; OpenTofu). Changes nothing, and warns of nothing: it is read on " +
			"every plan, and the instance's resource or data source says what matters (an NTLM fallback included). A failover cluster instance is reported as this node has it " +
			"(`clustered` true; `cluster_nodes` null): the instance's own data source, with `nodes`, reads every node.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, MarkdownDescription: "The `host` argument."},
			"host": schema.StringAttribute{Required: true, Validators: []validator.String{hostValidator},
				MarkdownDescription: "DNS name or IP address of the Windows host, as WinRM reaches it."},
			"port": schema.Int64Attribute{CustomType: wholeNumberType{}, Optional: true, Validators: []validator.Int64{int64validator.Between(1, 65535)},
				MarkdownDescription: "WinRM port of this host, overriding the provider's `winrm.port`."},
			"grantee":       granteeReportAttribute("each instance's `privilege_granted`"),
			"computer_name": schema.StringAttribute{Computed: true, MarkdownDescription: "The host's computer name, as Windows reports it."},
			"instances": schema.ListNestedAttribute{Computed: true,
				MarkdownDescription: "Every instance installed on the host, in the registry's order (`HKLM\\SOFTWARE\\Microsoft\\Microsoft SQL Server\\Instance Names\\SQL`); empty when none is.",
				NestedObject:        schema.NestedAttributeObject{Attributes: nested}},
		},
	}
}

func (d *instancesDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	if c := configuredClients(req.ProviderData, &resp.Diagnostics); c != nil {
		d.c = c
	}
}

func (d *instancesDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	ctx = maskSecrets(ctx, d.c)
	var m instancesDataSourceModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	grantee := reportGrantee(m.Grantee)
	t := converge.Target{Host: m.Host.ValueString(), Port: int(m.Port.ValueInt64())}
	computer, found, err := d.c.run().DescribeHost(ctx, converge.Request{Target: t}, grantee)
	if err != nil {
		addEngineError(&resp.Diagnostics, opRead, err, d.c.report())
		return
	}
	m.ID = types.StringValue(t.Host)
	m.Grantee = types.StringValue(string(grantee))
	m.ComputerName = types.StringValue(computer)
	m.Instances = make([]hostInstanceModel, 0, len(found))
	for _, hi := range found {
		im := hostInstanceModel{Instance: types.StringValue(hi.Instance), ImportID: types.StringValue(formatImportID(t.Host, t.Port, hi.Instance)),
			TCPPort: types.Int64Null()}
		res := hi.Result
		im.set(res.Assessment)
		if res.Outcome != nil && res.Outcome.Read != nil && res.Outcome.Read.TCPPort > 0 {
			im.TCPPort = types.Int64Value(int64(res.Outcome.Read.TCPPort))
		}
		// No warnings: a list read on every plan says nothing of each instance (its
		// resource or data source says what matters) nor of the logon
		// (converge.Session.DescribeHost).
		m.Instances = append(m.Instances, im)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
