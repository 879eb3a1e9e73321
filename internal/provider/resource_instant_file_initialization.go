package provider

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
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

// NewInstantFileInitializationResource is the mssqlifi_instant_file_initialization resource.
func NewInstantFileInitializationResource() resource.Resource { return &ifiResource{} }

// ifiResource is the resource; the work is the converge engine's (internal/converge).
type ifiResource struct {
	c *clients
}

func (r *ifiResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_instant_file_initialization"
	resp.ResourceBehavior.MutableIdentity = true // port, part of the identity, changes in place
}

func (r *ifiResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	attrs := map[string]schema.Attribute{
		"id": schema.StringAttribute{
			Computed:            true,
			MarkdownDescription: "`HOST/INSTANCE`. The import ID is this, or `HOST:PORT/INSTANCE` for a host on another WinRM port than the provider's.",
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
				"that is what makes IFI as asked, except on a failover cluster instance or the **primary** replica of an Always On availability " +
				"group, a replica whose role cannot be established, a replica of a group that is not healthy, or while a backup or restore runs: " +
				"the apply then refuses before changing anything (see Restart safety; secondaries restart as usual). " +
				"`if_needed_including_primary`: as `if_needed`, but also restart a primary replica or one whose role is unknown (its databases are " +
				"unavailable until it is back, unless the group fails over). `never`: change the right only; a pending restart is reported in `restart_pending` and a warning.",
			Validators: []validator.String{stringvalidator.OneOf(string(ifi.RestartIfNeeded), string(ifi.RestartIfNeededIncludingPrimary),
				string(ifi.RestartNever))},
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

	plan.ID = types.StringValue(importID(plan.Host.ValueString(), plan.Instance.ValueString()))
	r.apply(ctx, opCreate, plan, computedModel{}, plan.desired(), plan.target(), &resp.State, resp.Identity, resp.Private, &resp.Diagnostics)
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
	var ds diag.Diagnostics
	desired.IneffectiveRestart, ds = getIneffectiveRestart(ctx, req.Private)
	resp.Diagnostics.Append(ds...)
	t := plan.target()
	t.SQLPortHint, ds = getSQLPortHint(ctx, req.Private)
	resp.Diagnostics.Append(ds...)
	// The plan's refresh read the host moments ago, as a rule: the apply uses that
	// read while it is fresh (converge.DefaultReadFreshness).
	resp.Diagnostics.Append(getHostRead(ctx, req.Private, &t)...)
	plan.ID = prior.ID
	r.apply(ctx, opUpdate, plan, prior.computedModel, desired, t, &resp.State, resp.Identity, resp.Private, &resp.Diagnostics)
}

// Operations whose failure marks the resource unverified (privateUnverified).
const (
	opCreate = "create"
	opUpdate = "update"
)

// apply converges the instance to the plan and stores what the engine says is true.
// After a failure once the change was sent, it stores the plan's intent with what
// is known (the engine's read-back, else known: the prior state's computed
// attributes, or nothing after a create) and marks the resource unverified, so that
// the next plan verifies it; when nothing was sent, the state stays as it was. t
// is the plan's target with what the private state knows of the last observation
// (SQL port, the host's read).
func (r *ifiResource) apply(ctx context.Context, op string, plan ifiResourceModel, known computedModel, d ifi.Desired, t converge.Target,
	state *tfsdk.State, identity *tfsdk.ResourceIdentity, private privateSetter, diags *diag.Diagnostics) {
	out, err := r.c.engine().Apply(ctx, t, d)
	r.c.ntlmFallbackWarning(diags, t)
	if err != nil {
		addEngineError(diags, opApply, err, r.c.report())
	}
	addWarnings(diags, out.Warnings)
	if st := plan.withOutcome(out, known); st != nil {
		mark := ""
		if err != nil {
			mark = op
		}
		diags.Append(setUnverified(ctx, private, mark, time.Now(), err)...)
		diags.Append(state.Set(ctx, st)...)
		diags.Append(setIdentity(ctx, identity, *st)...)
		diags.Append(setDesired(ctx, private, plan.Enabled.ValueBool())...)
		diags.Append(setIneffectiveRestart(ctx, private, out.IneffectiveRestart)...)
		diags.Append(setSQLPortHint(ctx, private, out.SQLPort)...)
		diags.Append(setHostRead(ctx, private, t, out)...)
	}
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

	imported := state.Enabled.IsNull()
	desired := state.desired()
	if imported {
		desired = ifi.Desired{Enabled: true, Grantee: ifi.GranteeServiceSID, Restart: ifi.RestartIfNeeded}
		state.Grantee = types.StringValue(string(desired.Grantee))
		state.Restart = types.StringValue(string(desired.Restart))
	} else {
		var ds diag.Diagnostics
		desired.Enabled, ds = getDesired(ctx, req.Private, desired.Enabled)
		resp.Diagnostics.Append(ds...)
		desired.IneffectiveRestart, ds = getIneffectiveRestart(ctx, req.Private)
		resp.Diagnostics.Append(ds...)
	}
	t := state.target()
	var ds diag.Diagnostics
	t.SQLPortHint, ds = getSQLPortHint(ctx, req.Private)
	resp.Diagnostics.Append(ds...)
	out, err := r.c.engine().Read(ctx, t, desired)
	r.c.ntlmFallbackWarning(&resp.Diagnostics, t)
	if ce, ok := notFound(err); ok {
		resp.Diagnostics.AddWarning("SQL Server instance gone: removed from the state",
			notFoundDetail(t, ce.Instance)+" Terraform will plan to create the resource again; remove it from the configuration if the instance was uninstalled.")
		resp.State.RemoveResource(ctx)
		// The framework wants an identity after every read, a removal included.
		resp.Diagnostics.Append(setIdentity(ctx, resp.Identity, state)...)
		return
	}
	if err != nil {
		addEngineError(&resp.Diagnostics, opRead, err, r.c.report())
		return // the state stays as it was
	}
	a := out.Assessment
	st := state.withOutcome(out, state.computedModel)
	if imported {
		// An import adopts what the host has: enabled is whether the right is granted.
		st.Enabled = types.BoolValue(a.PrivilegeGranted)
		if st.Instance.IsNull() {
			st.Instance = types.StringValue(a.Instance)
		}
		st.ID = types.StringValue(importID(st.Host.ValueString(), st.Instance.ValueString()))
		resp.Diagnostics.Append(setDesired(ctx, resp.Private, a.PrivilegeGranted)...)
	}
	addWarnings(&resp.Diagnostics, out.Warnings)
	if u, ds := getUnverified(ctx, req.Private); u != nil && u.Op == opCreate {
		resp.Diagnostics.AddWarning(replaceAdvice(t, u, a, desired.Enabled))
	} else {
		resp.Diagnostics.Append(ds...)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, st)...)
	resp.Diagnostics.Append(setIdentity(ctx, resp.Identity, *st)...)
	resp.Diagnostics.Append(setSQLPortHint(ctx, resp.Private, out.SQLPort)...)
	resp.Diagnostics.Append(setHostRead(ctx, resp.Private, t, out)...)
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
	out, err := r.c.engine().Destroy(ctx, t, state.desired())
	r.c.ntlmFallbackWarning(&resp.Diagnostics, t)
	if ce, ok := notFound(err); ok {
		resp.Diagnostics.AddWarning("SQL Server instance already gone", notFoundDetail(t, ce.Instance)+" Nothing to revoke.")
		return
	}
	if err != nil {
		addEngineError(&resp.Diagnostics, opDestroy, err, r.c.report())
		return
	}
	// The stays-on warning was given by ModifyPlan when the destroy was planned.
	addWarnings(&resp.Diagnostics, out.Warnings, ifi.WarnStaysOnDestroy)
}

// ModifyPlan warns at plan time about what the apply will refuse or leave undone,
// from what the last refresh saw.
func (r *ifiResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if !req.Plan.Raw.IsNull() {
		r.claimInstance(ctx, req, resp)
		if resp.Diagnostics.HasError() {
			return
		}
	}
	if req.State.Raw.IsNull() {
		r.createWarnings(ctx, req, resp) // create: nothing read yet
		return
	}
	var state ifiResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	t := escapedTarget(state.target())
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
	r.verifyUnverified(ctx, req, resp, t)
	membershipChanges := !plan.Enabled.Equal(state.Enabled) || !plan.Grantee.Equal(state.Grantee)
	if state.GroupPolicyManaged.ValueBool() && membershipChanges {
		resp.Diagnostics.AddWarning("Group Policy owns the right",
			fmt.Sprintf("On %s a Group Policy defines who holds \"Perform volume maintenance tasks\" (%s). This plan changes the grantee's "+
				"membership; the apply refuses if the policy disagrees, because the policy would revert it within 90 minutes. Change the GPO instead.",
				t, ifi.GPOSetting))
	}
	if state.Clustered.ValueBool() && ifi.RestartPolicy(plan.Restart.ValueString()).Restarts() &&
		(membershipChanges || !plan.Restart.Equal(state.Restart)) {
		resp.Diagnostics.AddWarning("Clustered instance with restart = \"if_needed\"",
			fmt.Sprintf("%s is a failover cluster instance. If the change needs a restart, the apply refuses: the provider never restarts a "+
				"clustered instance through the service manager. Set restart = \"never\" and restart the role through Failover Cluster Manager.", t))
	}
	if !state.Clustered.ValueBool() {
		addWarnings(&resp.Diagnostics, ifi.PlanWarnings(priorFacts(ctx, req.Private, state), state.Host.ValueString(),
			state.Instance.ValueString(), plan.desired(), membershipChanges || !plan.Restart.Equal(state.Restart), r.sqlConfigured()))
	}
}

// verifyUnverified makes the plan of a resource whose last create or update failed
// part-way (privateUnverified) an update, which verifies the instance and finishes
// what is missing, and says so.
func (r *ifiResource) verifyUnverified(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse, t converge.Target) {
	u, ds := getUnverified(ctx, req.Private)
	resp.Diagnostics.Append(ds...)
	if u == nil {
		return
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("verified_by"), types.StringUnknown())...)
	resp.Diagnostics.AddWarning(fmt.Sprintf("Unverified change of %s: this update verifies it", t),
		fmt.Sprintf("The %s of %s at %s failed after its change was sent (%s). The state holds what was asked and what was known "+
			"then; this update reads the instance, finishes what is missing, and verifies it. It restarts SQL Server only if the "+
			"running Engine still lacks what was asked.", u.Op, t, u.At.Format(time.RFC3339), safetext.Escape(u.Error)))
}

// replaceAdvice is the refresh's warning for a resource whose create failed part-way
// (Terraform marks it tainted and plans a replace): whether the replace needs a
// restart, as far as a is known, and how to keep the resource instead.
func replaceAdvice(t converge.Target, u *unverifiedPrivate, a *ifi.Assessment, enabled bool) (summary, detail string) {
	need := "whether it needs a restart is not known (SQL Server could not say whether the running Engine has IFI): " +
		"the apply restarts it only if SQL Server then reports that the Engine lacks IFI"
	summary = fmt.Sprintf("Failed create of %s: its replace may restart SQL Server", t)
	switch {
	case a.RunningIFI != nil && *a.RunningIFI == enabled:
		summary = fmt.Sprintf("Failed create of %s: its replace needs no restart", t)
		need = fmt.Sprintf("it needs no restart: the running Engine already has IFI %s (verified by %s), so the replace "+
			"revokes and grants the right again without restarting SQL Server", onOff(*a.RunningIFI), a.VerifiedBy)
	case a.RunningIFI != nil:
		summary = fmt.Sprintf("Failed create of %s: its replace restarts SQL Server", t)
		need = "it needs a restart: the running Engine lacks what was asked"
	}
	detail = fmt.Sprintf("The create of %s at %s failed after its change was sent (%s), so Terraform marks the resource tainted and "+
		"plans to replace it; %s. If you have checked the host yourself, run terraform untaint on the resource instead: "+
		"the next plan is then an update that verifies the instance.", t, u.At.Format(time.RFC3339), safetext.Escape(u.Error), need)
	return summary, detail
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// createWarnings are ifi's plan warnings for a resource not created yet, when its
// host, instance and restart are known.
func (r *ifiResource) createWarnings(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	var plan ifiResourceModel
	if ds := req.Plan.Get(ctx, &plan); ds.HasError() {
		return // the framework reports the plan's own problems
	}
	if r.c == nil || plan.Host.IsUnknown() || plan.Instance.IsUnknown() || plan.Restart.IsUnknown() {
		return
	}
	addWarnings(&resp.Diagnostics, ifi.PlanWarnings(nil, plan.Host.ValueString(), plan.Instance.ValueString(), plan.desired(), true, r.sqlConfigured()))
}

// sqlConfigured: the provider has a sql block, so SQL Server can be asked.
func (r *ifiResource) sqlConfigured() bool { return r.c != nil && r.c.sql != nil }

// priorFacts is what the state and the private state's last read say of the
// instance, for ifi.PlanWarnings: tde_databases is null exactly when SQL Server did
// not answer, and availability_group/role are then null too.
func priorFacts(ctx context.Context, p privateGetter, state ifiResourceModel) *ifi.PriorFacts {
	t := state.target()
	getHostRead(ctx, p, &t)
	pf := &ifi.PriorFacts{SQLAnswered: !state.TDEDatabases.IsNull(), Read: t.Read, RestartPending: state.RestartPending.ValueBoolPointer()}
	if pf.SQLAnswered && !state.AvailabilityRole.IsNull() {
		pf.AG = &ifi.AGMembership{Groups: strings.Split(state.AvailabilityGroup.ValueString(), ", "), Role: state.AvailabilityRole.ValueString()}
	}
	return pf
}

// claimInstance refuses a second resource for an instance another resource of this
// run already manages: the two would undo each other (one grants, one revokes, and
// SQL Server restarts on every apply) or restart it twice at once. Hosts and
// instance names are compared normalised (newInstanceKey).
func (r *ifiResource) claimInstance(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if r.c == nil {
		return // the provider is not configured yet (unknown provider settings)
	}
	var host, instance types.String
	var enabled types.Bool
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("host"), &host)...)
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("instance"), &instance)...)
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("enabled"), &enabled)...)
	if resp.Diagnostics.HasError() || host.IsUnknown() || host.IsNull() || instance.IsUnknown() || instance.IsNull() {
		return
	}
	by := fmt.Sprintf("host = %q, instance = %q", safetext.Escape(host.ValueString()), safetext.Escape(instance.ValueString()))
	if !enabled.IsUnknown() && !enabled.IsNull() {
		by += fmt.Sprintf(", enabled = %t", enabled.ValueBool())
	}
	other, ok := r.c.claim(host.ValueString(), instance.ValueString(), by)
	if ok {
		return
	}
	k := newInstanceKey(host.ValueString(), instance.ValueString())
	resp.Diagnostics.AddAttributeError(path.Root("instance"), "Two resources manage one SQL Server instance",
		fmt.Sprintf("This resource (%s) and another mssqlifi_instant_file_initialization resource of this configuration (%s) both "+
			"manage instance %s on %s (hosts are compared as addresses, so 127.0.2.2 and ::ffff:127.0.2.2 are one host, and DNS "+
			"names and instance names without case). Two resources for one instance undo each other's changes and restart SQL Server "+
			"on every apply. Nothing was changed. Keep one resource per instance: remove one of them (terraform state rm if it is "+
			"already in the state), or point it at the instance it was meant for.",
			by, other, safetext.Escape(k.instance), safetext.Escape(k.host)))
}
