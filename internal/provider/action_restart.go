package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
)

var (
	_ action.Action              = &restartAction{}
	_ action.ActionWithConfigure = &restartAction{}
)

// defaultRestartActionTimeout bounds one invocation, as the resource's create does.
const defaultRestartActionTimeout = defaultCreateTimeout

// NewRestartAction is the mssqlifi_restart action (Terraform 1.14 and later).
func NewRestartAction() action.Action { return &restartAction{} }

// restartAction restarts one instance in a maintenance window; the work is the
// converge engine's (converge.Session.RestartNow).
type restartAction struct {
	c *clients
}

// restartActionModel is the action's configuration.
type restartActionModel struct {
	Host             types.String `tfsdk:"host"`
	Instance         types.String `tfsdk:"instance"`
	Port             wholeNumber  `tfsdk:"port"`
	SQLPort          wholeNumber  `tfsdk:"sql_port"`
	ReplicaAddresses types.Map    `tfsdk:"availability_replica_addresses"`
	Force            types.Bool   `tfsdk:"force"`
	Timeout          types.String `tfsdk:"timeout"`
}

func (a *restartAction) Metadata(_ context.Context, req action.MetadataRequest, resp *action.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_restart"
}

func (a *restartAction) Schema(_ context.Context, _ action.SchemaRequest, resp *action.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Restarts one SQL Server instance's Database Engine so that the rights the host already holds take effect: " +
			"the restart that `restart = \"never\"` (or `allow_restarts = false`) leaves pending, made in a maintenance window with " +
			"`terraform apply -invoke=action.mssqlifi_restart.NAME` or from a resource's `lifecycle { action_trigger … }` (Terraform 1.14 and later). " +
			"It goes through the same gate as the resource's restarts: `max_parallel_restarts`, one instance of a host at a time, the " +
			"host's restart lease and guard, the availability group's restart lock, and the same refusals (a primary replica, a group not " +
			"healthy, a backup or restore running, a role that cannot be told), each of which changes nothing. It reports its progress as it " +
			"waits and restarts. When no change is pending (the running Engine has IFI, and locked pages, as its next start gives it) it says " +
			"so and changes nothing, unless `force = true`. It changes no state: the resource's next plan reads the instance (`restart_pending = false`).",
		Attributes: map[string]schema.Attribute{
			"host": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "DNS name or IP address of the Windows host, as the resource's `host`.",
				Validators:          []validator.String{hostValidator},
			},
			"instance": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "SQL Server instance name, as the resource's `instance`; default `" + DefaultInstance + "`.",
				Validators:          []validator.String{instanceNameValidator},
			},
			"port": schema.Int64Attribute{
				CustomType: wholeNumberType{}, Optional: true,
				MarkdownDescription: "WinRM port of the host, overriding the provider's `winrm.port`, as the resource's `port`.",
				Validators:          []validator.Int64{int64validator.Between(1, 65535)},
			},
			"sql_port": schema.Int64Attribute{
				CustomType: wholeNumberType{}, Optional: true,
				MarkdownDescription: "TCP port of the instance's SQL endpoint, overriding the port the host reports, as the resource's `sql_port`.",
				Validators:          []validator.Int64{int64validator.Between(1, 65535)},
			},
			"availability_replica_addresses": schema.MapAttribute{
				Optional: true, ElementType: types.StringType,
				MarkdownDescription: "As the resource's `availability_replica_addresses`: " + replicaAddressesDescription,
				Validators:          []validator.Map{replicaAddressesValidator{}},
			},
			"force": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Restart even when no change is pending (or whether one is cannot be told). Default `false`: a restart " +
					"that is not needed is not made. The refusals apply whatever `force` says.",
			},
			"timeout": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: fmt.Sprintf("How long the invocation may take, waits for a restart slot included, as a duration such as "+
					"`\"30m\"`; default `\"%dm\"`.", int(defaultRestartActionTimeout/time.Minute)),
				Validators: []validator.String{durationValidator},
			},
		},
	}
}

func (a *restartAction) Configure(_ context.Context, req action.ConfigureRequest, resp *action.ConfigureResponse) {
	if c := configuredClients(req.ProviderData, &resp.Diagnostics); c != nil {
		a.c = c
	}
}

func (a *restartAction) Invoke(ctx context.Context, req action.InvokeRequest, resp *action.InvokeResponse) {
	ctx = maskSecrets(ctx, a.c)
	var m restartActionModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout := defaultRestartActionTimeout
	if !m.Timeout.IsNull() {
		d, err := time.ParseDuration(m.Timeout.ValueString())
		if err != nil || d <= 0 {
			resp.Diagnostics.AddAttributeError(path.Root("timeout"), "Invalid timeout", "timeout must be a positive duration such as \"30m\".")
			return
		}
		timeout = d
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	t := m.target()
	say := func(msg string) {
		if resp.SendProgress != nil {
			resp.SendProgress(action.InvokeProgressEvent{Message: msg})
		}
	}
	res, err := a.c.run().RestartNow(ctx, converge.RestartRequest{Target: t, Force: m.Force.ValueBool(), Progress: say})
	if err != nil {
		addEngineError(&resp.Diagnostics, opAction, err, a.c.report())
	}
	if res.Outcome != nil {
		addWarnings(&resp.Diagnostics, res.Outcome.Warnings)
	}
	if res.NotNeeded != "" {
		say(res.NotNeeded)
		resp.Diagnostics.AddWarning("No restart needed", res.NotNeeded)
	}
}

func (m *restartActionModel) target() converge.Target {
	return converge.InstanceTarget(m.Host.ValueString(), m.Instance.ValueString(), int(m.Port.ValueInt64()), int(m.SQLPort.ValueInt64()),
		stringMap(m.ReplicaAddresses))
}
