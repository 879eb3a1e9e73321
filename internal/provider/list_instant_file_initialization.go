package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/list/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
)

var (
	_ list.ListResource              = &ifiListResource{}
	_ list.ListResourceWithConfigure = &ifiListResource{}
)

// NewInstantFileInitializationListResource is the list resource of
// mssqlifi_instant_file_initialization: `terraform query` (Terraform 1.14 and
// later) finds every instance of the hosts a list block names.
func NewInstantFileInitializationListResource() list.ListResource { return &ifiListResource{} }

type ifiListResource struct {
	c *clients
}

// ifiListModel is a list block's configuration.
type ifiListModel struct {
	Hosts []types.String `tfsdk:"hosts"`
	Port  wholeNumber    `tfsdk:"port"`
}

func (l *ifiListResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_instant_file_initialization"
}

func (l *ifiListResource) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Finds every SQL Server instance installed on the hosts named, with one read per host (as the " +
			"`mssqlifi_instances` data source reads it), for `terraform query` (Terraform 1.14 and later). Each result has the " +
			"resource's identity (`host`, `port`, `instance`), the display name `HOST/INSTANCE` and, with `include_resource = true`, " +
			"the resource as an import would find it: `enabled` is whether the service SID holds the right, so that " +
			"`terraform query -generate-config-out=FILE` writes import blocks and resources whose plan, once imported, is empty " +
			"(but for an instance whose restart is pending: `restart = \"if_needed\"`, the default, plans it). Changes nothing.",
		Attributes: map[string]schema.Attribute{
			"hosts": schema.ListAttribute{
				Required:    true,
				ElementType: types.StringType,
				MarkdownDescription: "The Windows hosts, read in this order: each a DNS name or IP address as the resource's `host`, " +
					"or `HOST:PORT` (`[IPv6-ADDRESS]:PORT`) for a host whose WinRM port is another than `port`; that port is then its results' `port`.",
				Validators: []validator.List{listvalidator.SizeAtLeast(1), listvalidator.UniqueValues()},
			},
			"port": schema.Int64Attribute{
				CustomType: wholeNumberType{}, Optional: true,
				MarkdownDescription: "WinRM port of the hosts, overriding the provider's `winrm.port`; it is then the `port` of each result.",
				Validators:          []validator.Int64{int64validator.Between(1, 65535)},
			},
		},
	}
}

func (l *ifiListResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if c := configuredClients(req.ProviderData, &resp.Diagnostics); c != nil {
		l.c = c
	}
}

func (l *ifiListResource) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	ctx = maskSecrets(ctx, l.c)
	var m ifiListModel
	if ds := req.Config.Get(ctx, &m); ds.HasError() {
		stream.Results = list.ListResultsStreamDiagnostics(ds)
		return
	}
	targets := make([]converge.Target, 0, len(m.Hosts))
	ports := make([]wholeNumber, 0, len(m.Hosts))
	for i, h := range m.Hosts {
		host, port, _, err := parseImportID(h.ValueString() + "/" + DefaultInstance)
		if err != nil || h.IsNull() || h.IsUnknown() {
			var ds diag.Diagnostics
			ds.AddAttributeError(path.Root("hosts").AtListIndex(i), "Invalid host",
				fmt.Sprintf("hosts[%d] = %q is not HOST, HOST:PORT or [IPv6-ADDRESS]:PORT, a DNS name or IP address with an optional WinRM port.",
					i, safetext.Escape(h.ValueString())))
			stream.Results = list.ListResultsStreamDiagnostics(ds)
			return
		}
		targets = append(targets, converge.Target{Host: host, Port: port})
		ports = append(ports, m.Port)
		if port != 0 {
			ports[i] = int64Value(int64(port))
		} else {
			targets[i].Port = int(m.Port.ValueInt64())
		}
	}
	stream.Results = func(push func(list.ListResult) bool) {
		for i, t := range targets {
			found, err := l.c.run().ImportHost(ctx, converge.Request{Target: t})
			if err != nil {
				var ds diag.Diagnostics
				addEngineError(&ds, opRead, err, l.c.report())
				push(list.ListResult{Diagnostics: ds})
				return
			}
			for _, hi := range found {
				if !push(l.result(ctx, req, t, ports[i], hi)) {
					return
				}
			}
		}
	}
}

// result is one instance's result: its identity, display name and, when asked,
// the resource as its import stores it (the same engine read, converge.Session.Import,
// and the same state: importStart refreshed as ifiResource.Read refreshes an import).
func (l *ifiListResource) result(ctx context.Context, req list.ListRequest, t converge.Target, port wholeNumber, hi converge.HostInstance) list.ListResult {
	r := req.NewListResult(ctx)
	r.DisplayName = importID(t.Host, hi.Instance)
	m := importStart(t.Host, hi.Instance, port)
	r.Diagnostics.Append(setIdentity(ctx, r.Identity, m)...)
	if !req.IncludeResource {
		return r
	}
	r.Diagnostics.Append(r.Resource.Set(ctx, m.refreshed(hi.Result, true))...)
	return r
}

// nullTimeouts is the resource's timeouts block left out, as an import leaves it.
func nullTimeouts() timeouts.Value {
	return timeouts.Value{Object: types.ObjectNull(map[string]attr.Type{
		"create": types.StringType, "update": types.StringType, "delete": types.StringType, "read": types.StringType})}
}
