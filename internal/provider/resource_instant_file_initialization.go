package provider

import (
	"cmp"
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
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

func (r *ifiResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if c := configuredClients(req.ProviderData, &resp.Diagnostics); c != nil {
		r.c = c
	}
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
	r.apply(ctx, opCreate, plan, computedModel{}, plan.desired(), plan.target(), converge.NewMemo(plan.target()), &resp.State, resp.Identity,
		resp.Private, &resp.Diagnostics)
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
	t := plan.target()
	// The plan's refresh read the host moments ago, as a rule: the apply uses that
	// read while it is fresh (converge.DefaultReadFreshness).
	m, ds := getMemo(ctx, req.Private, t)
	resp.Diagnostics.Append(ds...)
	m.Prime(&t, &desired)
	plan.ID = prior.ID
	r.apply(ctx, opUpdate, plan, prior.computedModel, desired, t, m, &resp.State, resp.Identity, resp.Private, &resp.Diagnostics)
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
// and d are primed with the engine's memo m, which keeps what this apply tells the
// next operation.
func (r *ifiResource) apply(ctx context.Context, op string, plan ifiResourceModel, known computedModel, d ifi.Desired, t converge.Target,
	m *converge.Memo, state *tfsdk.State, identity *tfsdk.ResourceIdentity, private privateSetter, diags *diag.Diagnostics) {
	// The apply does what the plan said, or nothing; the create of a replace was
	// planned as a whole, before this run's destroy (plan_prediction.go).
	if !plan.PlannedAction.IsUnknown() && (op != opCreate || r.c.destroyedBefore(t.Host, t.Instance) == nil) {
		d.Planned = ifi.Action(plan.PlannedAction.ValueString())
	}
	hint := known.Clustered
	if op == opCreate {
		hint = plan.Clustered // the plan's read said it (predictCreate)
	}
	clustered, err := r.c.clustered(ctx, &t, hint, d)
	if err != nil {
		addEngineError(diags, opApply, err, r.c.report()) // nothing was changed
		return
	}
	var st *ifiResourceModel
	var act ifi.Action
	var ws []ifi.Warning
	if clustered {
		out, cerr := r.c.engine().ApplyCluster(ctx, clusterTarget(t, plan.Nodes, plan.SQLHost), d)
		st, act, ws, err = plan.withClusterOutcome(out, known), out.Action, out.Warnings, cerr
	} else {
		out, aerr := r.c.engine().Apply(ctx, t, d)
		st, act, ws, err = plan.withOutcome(out, known), out.Action, out.Warnings, aerr
		m.Remember(out)
	}
	r.c.ntlmFallbackWarning(diags, t)
	if err != nil {
		addEngineError(diags, opApply, err, r.c.report())
	}
	addWarnings(diags, ws)
	if st != nil {
		if plan.PlannedAction.IsUnknown() { // the plan could not tell: the state says what was done
			st.PlannedAction = types.StringValue(string(cmp.Or(act, ifi.ActionNone)))
		}
		mark := ""
		if err != nil {
			mark = op
		}
		diags.Append(setUnverified(ctx, private, mark, time.Now(), err)...)
		diags.Append(state.Set(ctx, st)...)
		diags.Append(setIdentity(ctx, identity, *st)...)
		m.Enabled = plan.Enabled.ValueBoolPointer()
		diags.Append(setMemo(ctx, private, m)...)
	}
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
	t := state.target()
	m, ds := getMemo(ctx, req.Private, t)
	resp.Diagnostics.Append(ds...)
	if imported {
		desired = ifi.Desired{Enabled: true, Grantee: ifi.GranteeServiceSID, Restart: ifi.RestartIfNeeded}
		state.Grantee = types.StringValue(string(desired.Grantee))
		state.Restart = types.StringValue(string(desired.Restart))
	} else if m.Enabled != nil {
		desired.Enabled = *m.Enabled // what was applied, whatever the state says
	}
	m.Prime(&t, &desired)
	t.Read = nil // a refresh reads the host
	st, a, ws, out, err := r.refresh(ctx, state, desired, t)
	r.c.ntlmFallbackWarning(&resp.Diagnostics, t)
	if ce, ok := notFound(err); ok {
		resp.Diagnostics.AddWarning("SQL Server instance gone: removed from the state",
			notFoundDetail(t, ce.Instance)+" Terraform then plans to create the resource again, and that plan fails while the instance is not installed: remove the resource from the configuration if the instance was uninstalled, or correct the instance argument.")
		resp.State.RemoveResource(ctx)
		// The framework wants an identity after every read, a removal included.
		resp.Diagnostics.Append(setIdentity(ctx, resp.Identity, state)...)
		return
	}
	if err != nil {
		addEngineError(&resp.Diagnostics, opRead, err, r.c.report())
		return // the state stays as it was
	}
	// enabled keeps what the user asked; the computed attributes say what the host
	// has, and the plan's planned_action what the apply will do about it.
	st.Enabled = types.BoolValue(desired.Enabled)
	st.PlannedAction = types.StringValue(string(ifi.ActionNone))
	if imported {
		// An import adopts what the host has: enabled is whether the right is granted.
		st.Enabled = types.BoolValue(a.PrivilegeGranted)
		if st.Instance.IsNull() {
			st.Instance = types.StringValue(a.Instance)
		}
		st.ID = types.StringValue(importID(st.Host.ValueString(), st.Instance.ValueString()))
		m.Enabled = &a.PrivilegeGranted
	}
	addWarnings(&resp.Diagnostics, ws)
	if u, ds := getUnverified(ctx, req.Private); u != nil && u.Op == opCreate {
		resp.Diagnostics.AddWarning(replaceAdvice(t, u, a, desired.Enabled))
	} else {
		resp.Diagnostics.Append(ds...)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, st)...)
	resp.Diagnostics.Append(setIdentity(ctx, resp.Identity, *st)...)
	m.Remember(out)
	resp.Diagnostics.Append(setMemo(ctx, resp.Private, m)...)
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
	d := state.desired()
	// The destroy half of a replace: the replacing create's plan (its planned
	// private state, which Terraform gives this request) says what it asks.
	d.Replacement = getReplacement(ctx, req.Private)
	ws, err := r.destroy(ctx, state, t, d)
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
	addWarnings(&resp.Diagnostics, ws, ifi.WarnStaysOnDestroy)
}

// ModifyPlan says what the apply will do (planned_action and one warning per
// resource, decided by ifi.Predict), and what a destroy leaves in effect.
func (r *ifiResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	ctx = maskSecrets(ctx, r.c)
	if !req.Plan.Raw.IsNull() {
		r.claimInstance(ctx, req, resp)
		if resp.Diagnostics.HasError() {
			return
		}
	}
	var plan, state ifiResourceModel
	if !req.Plan.Raw.IsNull() {
		if ds := req.Plan.Get(ctx, &plan); ds.HasError() {
			return // the framework reports the plan's own problems
		}
	}
	if req.State.Raw.IsNull() {
		if !req.Plan.Raw.IsNull() {
			r.predictCreate(ctx, plan, resp)
		}
		return
	}
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	t := state.target()
	if req.Plan.Raw.IsNull() {
		r.planDestroyWarnings(ctx, req, state, t, resp)
		return
	}
	if r.verifyUnverified(ctx, req, resp, t) {
		return
	}
	r.predictUpdate(ctx, req, state, plan, resp)
}

// planDestroyWarnings says what a planned destroy leaves in effect, as the engine
// decides it from its memo and the state (converge.Memo.DestroyPlanWarnings); a
// destroy's plan contacts no host.
func (r *ifiResource) planDestroyWarnings(ctx context.Context, req resource.ModifyPlanRequest, state ifiResourceModel, t converge.Target, resp *resource.ModifyPlanResponse) {
	var ifiEnabled *bool
	if !state.IFIEnabled.IsNull() && !state.IFIEnabled.IsUnknown() {
		v := state.IFIEnabled.ValueBool()
		ifiEnabled = &v
	}
	m, _ := getMemo(ctx, req.Private, t)
	addWarnings(&resp.Diagnostics, m.DestroyPlanWarnings(state.desired(), state.ServiceName.ValueString(), ifiEnabled, state.Clustered.ValueBool()))
}
