package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

var (
	_ resource.Resource                = &ifiResource{}
	_ resource.ResourceWithConfigure   = &ifiResource{}
	_ resource.ResourceWithImportState = &ifiResource{}
	_ resource.ResourceWithModifyPlan  = &ifiResource{}
)

// Default timeouts: an apply may restart SQL Server, which can take minutes on a busy
// instance (recovery of large databases).
const (
	defaultCreateTimeout = 20 * time.Minute
	defaultUpdateTimeout = 20 * time.Minute
	defaultDeleteTimeout = 5 * time.Minute
	defaultReadTimeout   = 5 * time.Minute
)

// privateDesired is the private-state key holding what the user last applied: a
// refresh stores `enabled` as "not converged" on drift, so the wish itself lives here.
const privateDesired = "desired"

type desiredPrivate struct {
	Enabled bool `json:"enabled"`
}

// NewInstantFileInitializationResource is the mssqlifi_instant_file_initialization resource.
func NewInstantFileInitializationResource() resource.Resource { return &ifiResource{} }

type ifiResource struct {
	c *clients
}

type ifiResourceModel struct {
	ID       types.String   `tfsdk:"id"`
	Host     types.String   `tfsdk:"host"`
	Instance types.String   `tfsdk:"instance"`
	Port     types.Int64    `tfsdk:"port"`
	SQLPort  types.Int64    `tfsdk:"sql_port"`
	Enabled  types.Bool     `tfsdk:"enabled"`
	Grantee  types.String   `tfsdk:"grantee"`
	Restart  types.String   `tfsdk:"restart"`
	Timeouts timeouts.Value `tfsdk:"timeouts"`
	computedModel
}

// computedModel holds what the host and SQL Server report; shared with the data source.
type computedModel struct {
	ServiceName        types.String `tfsdk:"service_name"`
	ServiceAccount     types.String `tfsdk:"service_account"`
	ServiceSID         types.String `tfsdk:"service_sid"`
	GranteeSID         types.String `tfsdk:"grantee_sid"`
	PrivilegeGranted   types.Bool   `tfsdk:"privilege_granted"`
	IFIEnabled         types.Bool   `tfsdk:"ifi_enabled"`
	RestartPending     types.Bool   `tfsdk:"restart_pending"`
	VerifiedBy         types.String `tfsdk:"verified_by"`
	SQLVersion         types.String `tfsdk:"sql_version"`
	GroupPolicyManaged types.Bool   `tfsdk:"group_policy_managed"`
	TDEDatabases       types.List   `tfsdk:"tde_databases"`
	Clustered          types.Bool   `tfsdk:"clustered"`
}

func (m *computedModel) set(a *ifi.Assessment) {
	m.ServiceName = types.StringValue(a.ServiceName)
	m.ServiceAccount = types.StringValue(a.ServiceAccount)
	m.ServiceSID = types.StringValue(a.ServiceSID)
	m.GranteeSID = types.StringValue(a.GranteeSID)
	m.PrivilegeGranted = types.BoolValue(a.PrivilegeGranted)
	m.IFIEnabled = types.BoolPointerValue(a.RunningIFI)
	m.RestartPending = types.BoolPointerValue(a.RestartPending)
	m.VerifiedBy = types.StringValue(string(a.VerifiedBy))
	m.SQLVersion = types.StringValue(a.SQLVersion)
	m.GroupPolicyManaged = types.BoolValue(a.GroupPolicyManaged)
	if a.TDEDatabases == nil {
		m.TDEDatabases = types.ListNull(types.StringType)
	} else {
		vals := make([]attr.Value, len(a.TDEDatabases))
		for i, d := range a.TDEDatabases {
			vals[i] = types.StringValue(d)
		}
		m.TDEDatabases = types.ListValueMust(types.StringType, vals)
	}
	m.Clustered = types.BoolValue(a.Clustered)
}

func (m *ifiResourceModel) target() target {
	return target{
		Host:     m.Host.ValueString(),
		Instance: m.Instance.ValueString(),
		Port:     int(m.Port.ValueInt64()),
		SQLPort:  int(m.SQLPort.ValueInt64()),
	}
}

func (m *ifiResourceModel) desired() ifi.Desired {
	return ifi.Desired{
		Enabled: m.Enabled.ValueBool(),
		Grantee: ifi.Grantee(m.Grantee.ValueString()),
		Restart: ifi.RestartPolicy(m.Restart.ValueString()),
	}
}

func (r *ifiResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_instant_file_initialization"
}

func (r *ifiResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	attrs := map[string]schema.Attribute{
		"id": schema.StringAttribute{
			Computed:            true,
			MarkdownDescription: "`HOST/INSTANCE`, the import ID.",
			PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
		},
		"host": schema.StringAttribute{
			Required: true,
			MarkdownDescription: "DNS name or IP address of the Windows host, as WinRM reaches it. Changing it replaces the resource " +
				"(the old host's grant is revoked).",
			Validators:    []validator.String{hostValidator},
			PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
		},
		"instance": schema.StringAttribute{
			Optional: true,
			Computed: true,
			Default:  stringdefault.StaticString(DefaultInstance),
			MarkdownDescription: "SQL Server instance name: `MSSQLSERVER` (the default instance, default) or a named instance's " +
				"name such as `REPORTING`. Changing it replaces the resource.",
			Validators:    []validator.String{instanceNameValidator},
			PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
		},
		"port": schema.Int64Attribute{
			Optional:            true,
			MarkdownDescription: "WinRM port of this host, overriding the provider's `winrm.port`.",
			Validators:          []validator.Int64{int64validator.Between(1, 65535)},
		},
		"sql_port": schema.Int64Attribute{
			Optional:            true,
			MarkdownDescription: "TCP port of the instance's SQL endpoint, overriding the port the host reports (use it with dynamic ports or port forwarding).",
			Validators:          []validator.Int64{int64validator.Between(1, 65535)},
		},
		"enabled": schema.BoolAttribute{
			Optional: true,
			Computed: true,
			Default:  booldefault.StaticBool(true),
			MarkdownDescription: "Whether IFI should be on (default `true`). `false` revokes the grantee's right. When the start account " +
				"is an administrator or LocalSystem, IFI stays on anyway; the provider warns instead of showing a diff forever.",
		},
		"grantee": schema.StringAttribute{
			Optional: true,
			Computed: true,
			Default:  stringdefault.StaticString(string(ifi.GranteeServiceSID)),
			MarkdownDescription: "Who receives the right: `service_sid` (default, `NT SERVICE\\<service>`, as SQL Server Setup does) or " +
				"`service_account` (the service's start account). Changing it moves the grant in one apply.",
			Validators: []validator.String{stringvalidator.OneOf(string(ifi.GranteeServiceSID), string(ifi.GranteeServiceAccount))},
		},
		"restart": schema.StringAttribute{
			Optional: true,
			Computed: true,
			Default:  stringdefault.StaticString(string(ifi.RestartIfNeeded)),
			MarkdownDescription: "`if_needed` (default): restart the Database Engine (and the dependent services that were running) when " +
				"that is what makes IFI as asked. `never`: change the right only; a pending restart is reported in `restart_pending` and a warning.",
			Validators: []validator.String{stringvalidator.OneOf(string(ifi.RestartIfNeeded), string(ifi.RestartNever))},
		},
	}
	for k, v := range computedResourceAttributes() {
		attrs[k] = v
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Manages Instant File Initialization of one SQL Server instance: grants (or revokes) " +
			"*Perform volume maintenance tasks* (`SeManageVolumePrivilege`) and, with `restart = \"if_needed\"`, restarts the " +
			"Database Engine so the change takes effect, then verifies it through SQL Server. Destroying the resource revokes the " +
			"grant and never restarts.",
		Attributes: attrs,
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Update: true, Delete: true, Read: true}),
		},
	}
}

// computedResourceAttributes are the attributes reported by the host.
func computedResourceAttributes() map[string]schema.Attribute {
	keep := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	keepBool := []planmodifier.Bool{boolplanmodifier.UseStateForUnknown()}
	return map[string]schema.Attribute{
		"service_name": schema.StringAttribute{Computed: true, PlanModifiers: keep,
			MarkdownDescription: "Windows service of the Database Engine: `MSSQLSERVER` or `MSSQL$NAME`."},
		"service_account": schema.StringAttribute{Computed: true, PlanModifiers: keep,
			MarkdownDescription: "Account the Engine service starts as (`Win32_Service.StartName`)."},
		"service_sid": schema.StringAttribute{Computed: true, PlanModifiers: keep,
			MarkdownDescription: "Per-service SID of the Engine (`NT SERVICE\\<service>`), computed from the service name."},
		"grantee_sid": schema.StringAttribute{Computed: true,
			MarkdownDescription: "SID that receives the right, per `grantee`."},
		"privilege_granted": schema.BoolAttribute{Computed: true,
			MarkdownDescription: "The grantee directly holds *Perform volume maintenance tasks*."},
		"ifi_enabled": schema.BoolAttribute{Computed: true,
			MarkdownDescription: "Whether the running Engine really has IFI, as SQL Server reports it; null when it cannot be verified."},
		"restart_pending": schema.BoolAttribute{Computed: true,
			MarkdownDescription: "The running Engine's IFI differs from what its next start will give; null when it cannot be verified."},
		"verified_by": schema.StringAttribute{Computed: true,
			MarkdownDescription: "How `ifi_enabled` was verified: `sql_dmv` (`sys.dm_server_services`), `errorlog` (the startup line of the current error log) or `none`."},
		"sql_version": schema.StringAttribute{Computed: true,
			MarkdownDescription: "SQL Server build, e.g. `16.0.4135.4`."},
		"group_policy_managed": schema.BoolAttribute{Computed: true, PlanModifiers: keepBool,
			MarkdownDescription: "A domain Group Policy defines who holds the right; the provider then refuses changes the policy would revert."},
		"tde_databases": schema.ListAttribute{Computed: true, ElementType: types.StringType,
			PlanModifiers:       []planmodifier.List{listplanmodifier.UseStateForUnknown()},
			MarkdownDescription: "Databases with Transparent Data Encryption, whose data files IFI never applies to; null when unknown (no SQL credentials)."},
		"clustered": schema.BoolAttribute{Computed: true, PlanModifiers: keepBool,
			MarkdownDescription: "The instance is a failover cluster instance; the provider never restarts it."},
	}
}

func (r *ifiResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if c := configuredClients(req.ProviderData, &resp.Diagnostics); c != nil {
		r.c = c
	}
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

func (r *ifiResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	ctx = maskSecrets(ctx, r.c)
	var plan ifiResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel, ok := withTimeout(ctx, plan.Timeouts.Create, defaultCreateTimeout, &resp.Diagnostics)
	if !ok {
		return
	}
	defer cancel()

	plan.ID = types.StringValue(plan.Host.ValueString() + "/" + plan.Instance.ValueString())
	state, diags := r.apply(ctx, plan, plan.desired())
	resp.Diagnostics.Append(diags...)
	if state != nil {
		resp.Diagnostics.Append(resp.State.Set(ctx, state)...)
		resp.Diagnostics.Append(setDesired(ctx, resp.Private, plan.Enabled.ValueBool())...)
	}
}

func (r *ifiResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	ctx = maskSecrets(ctx, r.c)
	var plan, prior ifiResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel, ok := withTimeout(ctx, plan.Timeouts.Update, defaultUpdateTimeout, &resp.Diagnostics)
	if !ok {
		return
	}
	defer cancel()

	desired := plan.desired()
	desired.PriorGranteeSID = prior.GranteeSID.ValueString()
	plan.ID = prior.ID
	state, diags := r.apply(ctx, plan, desired)
	resp.Diagnostics.Append(diags...)
	if state != nil {
		resp.Diagnostics.Append(resp.State.Set(ctx, state)...)
		resp.Diagnostics.Append(setDesired(ctx, resp.Private, plan.Enabled.ValueBool())...)
	}
}

// apply converges the instance to the plan. It returns the state to save (nil: keep
// the prior state, nothing changed) and the diagnostics. When something fails after
// a change was made, the state returned reflects what the host reports now.
func (r *ifiResource) apply(ctx context.Context, plan ifiResourceModel, d ifi.Desired) (*ifiResourceModel, diag.Diagnostics) {
	var diags diag.Diagnostics
	t := plan.target()
	obs, ds := r.c.observe(ctx, t)
	diags.Append(ds...)
	if diags.HasError() {
		return nil, diags
	}
	if !obs.Instance.Found {
		diags.AddAttributeError(path.Root("instance"), "SQL Server instance not found", notFoundDetail(t, obs.Instance))
		return nil, diags
	}
	a, p, err := ifi.PlanApply(d, obs.Observed)
	if err != nil {
		var ref *ifi.Refusal
		if errors.As(err, &ref) {
			diags.AddError(ref.Summary, ref.Detail)
		} else {
			diags.AddError(fmt.Sprintf("Cannot decide how to apply IFI on %s", t), err.Error())
		}
		return nil, diags
	}
	tflog.Info(ctx, "applying IFI", map[string]any{
		"host": t.Host, "instance": t.Instance, "steps": fmt.Sprintf("%+v", p.Steps), "restart": p.Restart, "reason": p.RestartReason,
	})

	h, err := r.c.host(t.Host, t.Port)
	if err != nil {
		diags.AddError(fmt.Sprintf("Cannot set up WinRM for %s", t.Host), hostErrorDetail(t, err, r.c.winrm.Username))
		return nil, diags
	}
	changed := false
	// failed re-reads the instance after a failure and returns the state that says
	// what now is (or keeps the prior state when nothing changed).
	failed := func(summary, detail string) (*ifiResourceModel, diag.Diagnostics) {
		diags.AddError(summary, detail)
		if !changed {
			return nil, diags
		}
		st, ds := r.refreshAfterFailure(ctx, plan, d)
		diags.Append(ds...)
		return st, diags
	}

	for _, s := range p.Steps {
		verb := "revoke"
		if s.Grant {
			verb = "grant"
		}
		tflog.Debug(ctx, "set_right", map[string]any{"host": t.Host, "instance": t.Instance, "sid": s.SID, "grant": s.Grant})
		res, err := h.SetRight(ctx, contract.SetRightParams{Right: contract.RightManageVolume, SID: s.SID, Grant: s.Grant})
		if err != nil {
			return failed(fmt.Sprintf("Cannot %s the right on %s", verb, t.Host),
				fmt.Sprintf("Could not %s %s to %s: %s", verb, contract.RightManageVolume, s.SID, hostErrorDetail(t, err, r.c.winrm.Username)))
		}
		if res.Changed {
			changed = true
		}
	}

	restarted := false
	if p.Restart {
		secs := restartSeconds(ctx)
		tflog.Info(ctx, "restarting SQL Server", map[string]any{"host": t.Host, "instance": t.Instance, "timeout_seconds": secs})
		_, err := h.RestartInstance(ctx, contract.RestartInstanceParams{Instance: t.Instance, TimeoutSeconds: secs})
		changed = true // a failed restart may have stopped services
		if err != nil {
			return failed(fmt.Sprintf("Cannot restart SQL Server %s on %s", t.Instance, t.Host),
				fmt.Sprintf("The restart of %s (%s) failed: %s The right was changed as asked; run terraform apply again once the "+
					"service can restart, or restart it yourself.", a.ServiceName, p.RestartReason, hostErrorDetail(t, err, r.c.winrm.Username)))
		}
		restarted = true
		if checker, _ := r.c.sqlChecker(); checker != nil && obs.SQLTarget != nil {
			if err := checker.WaitReady(ctx, *obs.SQLTarget); err != nil {
				return failed(fmt.Sprintf("SQL Server %s on %s did not accept connections after the restart", t.Instance, t.Host),
					fmt.Sprintf("Waiting for %s at %s:%d: %s. Check the service and its error log on the host; raise the timeouts "+
						"if recovery takes long, then run terraform apply again.", t, t.Host, obs.SQLTarget.Port, sqlErrorDetail(err)))
			}
		}
	}

	// Read back what now is.
	final := plan
	if len(p.Steps) > 0 || restarted {
		obs2, ds := r.c.observe(ctx, t)
		if ds.HasError() {
			diags.Append(ds...)
			if changed {
				// Nothing better to save: the prior state is kept, the error says the host could not be read back.
				diags.AddError("The change was made but could not be read back",
					fmt.Sprintf("On %s the right was changed%s, but reading the instance back failed. Run terraform refresh once the host answers.",
						t, map[bool]string{true: " and SQL Server restarted", false: ""}[restarted]))
			}
			return nil, diags
		}
		if !obs2.Instance.Found {
			diags.AddError("SQL Server instance disappeared", notFoundDetail(t, obs2.Instance))
			return nil, diags
		}
		obs = obs2
		a, err = ifi.Assess(d, obs.Observed)
		if err != nil {
			diags.AddError(fmt.Sprintf("Cannot assess IFI on %s", t), err.Error())
			return nil, diags
		}
	}
	diags.Append(obs.Warnings...)
	addWarnings(&diags, a.Warnings)
	final.computedModel.set(a)
	if restarted {
		if err := ifi.Check(a); err != nil {
			if !a.Converged {
				final.Enabled = types.BoolValue(!d.Enabled)
			}
			diags.AddError(fmt.Sprintf("IFI is not as asked on %s after the restart", t), err.Error())
			return &final, diags
		}
	}
	return &final, diags
}

// refreshAfterFailure reads the instance after a failed step and returns the state
// that says what now is: `enabled` holds the asked value only when converged.
func (r *ifiResource) refreshAfterFailure(ctx context.Context, plan ifiResourceModel, d ifi.Desired) (*ifiResourceModel, diag.Diagnostics) {
	var diags diag.Diagnostics
	// The operation's own context may have run out; give the read back a short one.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	t := plan.target()
	obs, ds := r.c.observe(rctx, t)
	if ds.HasError() || !obs.Instance.Found {
		diags.AddWarning("State may be out of date",
			fmt.Sprintf("After the failure, %s could not be read back; the Terraform state keeps its previous values. "+
				"Run terraform plan once the host answers to see what changed.", t))
		return nil, diags
	}
	a, err := ifi.Assess(d, obs.Observed)
	if err != nil {
		return nil, diags
	}
	st := plan
	st.computedModel.set(a)
	// enabled holds the asked value only when the instance is as asked.
	st.Enabled = types.BoolValue(d.Enabled == a.Converged)
	return &st, diags
}

// withTimeout bounds ctx by an operation's timeout: the one set in the timeouts
// block, read by timeout, or def. ok is false when the block cannot be read; diags
// then say why.
func withTimeout(ctx context.Context, timeout func(context.Context, time.Duration) (time.Duration, diag.Diagnostics),
	def time.Duration, diags *diag.Diagnostics) (_ context.Context, cancel context.CancelFunc, ok bool) {
	d, ds := timeout(ctx, def)
	diags.Append(ds...)
	if diags.HasError() {
		return ctx, func() {}, false
	}
	ctx, cancel = context.WithTimeout(ctx, d)
	return ctx, cancel, true
}

// restartSeconds is the time left for restart_instance: the context's deadline minus
// a margin for reading back, at least 30 seconds.
func restartSeconds(ctx context.Context) int {
	dl, ok := ctx.Deadline()
	if !ok {
		return 600
	}
	left := time.Until(dl) - 30*time.Second
	if left < 30*time.Second {
		left = 30 * time.Second
	}
	return int(left / time.Second)
}

func (r *ifiResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	ctx = maskSecrets(ctx, r.c)
	var state ifiResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel, ok := withTimeout(ctx, state.Timeouts.Read, defaultReadTimeout, &resp.Diagnostics)
	if !ok {
		return
	}
	defer cancel()

	t := state.target()
	obs, ds := r.c.observe(ctx, t)
	resp.Diagnostics.Append(ds...)
	if resp.Diagnostics.HasError() {
		return // the state stays as it was
	}
	if !obs.Instance.Found {
		resp.Diagnostics.AddWarning("SQL Server instance gone: removed from the state",
			notFoundDetail(t, obs.Instance)+" Terraform will plan to create the resource again; remove it from the configuration if the instance was uninstalled.")
		resp.State.RemoveResource(ctx)
		return
	}

	imported := state.Enabled.IsNull()
	desired := state.desired()
	if imported {
		desired = ifi.Desired{Enabled: true, Grantee: ifi.GranteeServiceSID, Restart: ifi.RestartIfNeeded}
		state.Grantee = types.StringValue(string(ifi.GranteeServiceSID))
		state.Restart = types.StringValue(string(ifi.RestartIfNeeded))
	} else {
		desired.Enabled, ds = getDesired(ctx, req.Private, desired.Enabled)
		resp.Diagnostics.Append(ds...)
	}
	a, err := ifi.Assess(desired, obs.Observed)
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("Cannot assess IFI on %s", t), err.Error())
		return
	}
	if imported {
		state.Enabled = types.BoolValue(a.PrivilegeGranted)
		if state.Instance.IsNull() {
			state.Instance = types.StringValue(a.Instance)
		}
		state.ID = types.StringValue(state.Host.ValueString() + "/" + state.Instance.ValueString())
		resp.Diagnostics.Append(setDesired(ctx, resp.Private, a.PrivilegeGranted)...)
	} else {
		// Drift shows as a change of enabled: it holds the asked value only when converged.
		state.Enabled = types.BoolValue(desired.Enabled == a.Converged)
	}
	tflog.Debug(ctx, "read IFI", map[string]any{
		"host": t.Host, "instance": t.Instance, "converged": a.Converged, "privilege_granted": a.PrivilegeGranted,
		"verified_by": string(a.VerifiedBy),
	})
	state.computedModel.set(a)
	resp.Diagnostics.Append(obs.Warnings...)
	addWarnings(&resp.Diagnostics, a.Warnings)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *ifiResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	ctx = maskSecrets(ctx, r.c)
	var state ifiResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel, ok := withTimeout(ctx, state.Timeouts.Delete, defaultDeleteTimeout, &resp.Diagnostics)
	if !ok {
		return
	}
	defer cancel()

	t := state.target()
	obs, ds := r.c.observe(ctx, t)
	resp.Diagnostics.Append(ds...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !obs.Instance.Found {
		resp.Diagnostics.AddWarning("SQL Server instance already gone", notFoundDetail(t, obs.Instance)+" Nothing to revoke.")
		return
	}
	desired := state.desired()
	_, p, ws, err := ifi.PlanDestroy(desired, obs.Observed)
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("Cannot decide how to remove IFI from %s", t), err.Error())
		return
	}
	h, err := r.c.host(t.Host, t.Port)
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("Cannot set up WinRM for %s", t.Host), hostErrorDetail(t, err, r.c.winrm.Username))
		return
	}
	for _, s := range p.Steps {
		tflog.Debug(ctx, "set_right", map[string]any{"host": t.Host, "instance": t.Instance, "sid": s.SID, "grant": s.Grant})
		if _, err := h.SetRight(ctx, contract.SetRightParams{Right: contract.RightManageVolume, SID: s.SID, Grant: s.Grant}); err != nil {
			resp.Diagnostics.AddError(fmt.Sprintf("Cannot revoke the right on %s", t.Host),
				fmt.Sprintf("Could not revoke %s from %s: %s The resource stays in the state; run terraform destroy again.",
					contract.RightManageVolume, s.SID, hostErrorDetail(t, err, r.c.winrm.Username)))
			return
		}
	}
	// The stays-on warning was given by ModifyPlan when the destroy was planned.
	addWarnings(&resp.Diagnostics, ws, ifi.WarnStaysOnDestroy)
}

func (r *ifiResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	host, instance, err := parseImportID(req.ID)
	if err != nil {
		resp.Diagnostics.AddError("Invalid import ID", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), host+"/"+instance)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("host"), host)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("instance"), instance)...)
}

// parseImportID splits HOST/INSTANCE and checks both parts.
func parseImportID(id string) (host, instance string, err error) {
	parts := strings.Split(id, "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return "", "", fmt.Errorf("the import ID %q must be HOST/INSTANCE, for example sql01.example.com/MSSQLSERVER "+
			"or sql01.example.com/REPORTING", id)
	}
	if err := checkHost(parts[0]); err != nil {
		return "", "", fmt.Errorf("the import ID %q must be HOST/INSTANCE: host: %v", id, err)
	}
	if err := checkInstanceName(parts[1]); err != nil {
		return "", "", fmt.Errorf("the import ID %q must be HOST/INSTANCE: instance: %v", id, err)
	}
	return parts[0], parts[1], nil
}

// ModifyPlan warns at plan time about what the apply will refuse or leave undone,
// from what the last refresh saw.
func (r *ifiResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.State.Raw.IsNull() {
		return // create: nothing known yet
	}
	var state ifiResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	t := state.target()
	if req.Plan.Raw.IsNull() {
		if !state.IFIEnabled.Equal(types.BoolValue(false)) {
			resp.Diagnostics.AddWarning("IFI stays on until the next restart",
				fmt.Sprintf("Destroying the resource revokes the grant on %s but never restarts SQL Server; the running service %s keeps IFI until its next restart. "+
					"Restart the service in a maintenance window for the revoke to take effect.",
					t, state.ServiceName.ValueString()))
		}
		return
	}
	var plan ifiResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	membershipChanges := !plan.Enabled.Equal(state.Enabled) || !plan.Grantee.Equal(state.Grantee)
	if state.GroupPolicyManaged.ValueBool() && membershipChanges {
		resp.Diagnostics.AddWarning("Group Policy owns the right",
			fmt.Sprintf("On %s a Group Policy defines who holds \"Perform volume maintenance tasks\" (%s). This plan changes the grantee's "+
				"membership; the apply refuses if the policy disagrees, because the policy would revert it within 90 minutes. Change the GPO instead.",
				t, ifi.GPOSetting))
	}
	if state.Clustered.ValueBool() && plan.Restart.ValueString() == string(ifi.RestartIfNeeded) &&
		(membershipChanges || !plan.Restart.Equal(state.Restart)) {
		resp.Diagnostics.AddWarning("Clustered instance with restart = \"if_needed\"",
			fmt.Sprintf("%s is a failover cluster instance. If the change needs a restart, the apply refuses: the provider never restarts a "+
				"clustered instance through the service manager. Set restart = \"never\" and restart the role through Failover Cluster Manager.", t))
	}
}

func setDesired(ctx context.Context, p interface {
	SetKey(context.Context, string, []byte) diag.Diagnostics
}, enabled bool) diag.Diagnostics {
	b, _ := json.Marshal(desiredPrivate{Enabled: enabled})
	return p.SetKey(ctx, privateDesired, b)
}

func getDesired(ctx context.Context, p interface {
	GetKey(context.Context, string) ([]byte, diag.Diagnostics)
}, fallback bool) (bool, diag.Diagnostics) {
	b, ds := p.GetKey(ctx, privateDesired)
	if ds.HasError() || len(b) == 0 {
		return fallback, ds
	}
	var dp desiredPrivate
	if err := json.Unmarshal(b, &dp); err != nil {
		return fallback, ds
	}
	return dp.Enabled, ds
}
