package provider

import (
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
	// The plan's read said whether the instance is clustered (converge.Session.Plan).
	ar := converge.ApplyRequest{Request: plan.request(plan.Clustered, nil), Create: true, Planned: plannedAction(plan.PlannedAction)}
	r.apply(ctx, ar, plan, computedModel{}, &resp.State, resp.Identity, resp.Private, &resp.Diagnostics)
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

	// The plan's refresh read the host moments ago, as a rule: the engine uses that
	// read (the memo) while it is fresh (converge.DefaultReadFreshness).
	m, ds := getMemo(ctx, req.Private, plan.target())
	resp.Diagnostics.Append(ds...)
	ar := converge.ApplyRequest{Request: plan.request(prior.Clustered, m), Planned: plannedAction(plan.PlannedAction)}
	ar.Desired.PriorGranteeSID = prior.GranteeSID.ValueString()
	plan.ID = prior.ID
	r.apply(ctx, ar, plan, prior.computedModel, &resp.State, resp.Identity, resp.Private, &resp.Diagnostics)
}

// Operations whose failure marks the resource unverified (privateUnverified).
const (
	opCreate = "create"
	opUpdate = "update"
)

// apply has the engine converge the instance and stores what it says is true.
// After a failure once the change was sent, it stores the plan's intent with what
// is known (the engine's read-back, else known: the prior state's computed
// attributes, or nothing after a create) and marks the resource unverified, so
// that the next plan verifies it; when nothing was sent, the state stays as it was.
func (r *ifiResource) apply(ctx context.Context, ar converge.ApplyRequest, plan ifiResourceModel, known computedModel, state *tfsdk.State,
	identity *tfsdk.ResourceIdentity, private privateSetter, diags *diag.Diagnostics) {
	res, err := r.c.session.Apply(ctx, ar)
	r.c.ntlmFallbackWarning(diags, ar.Target, res.NTLMFallback)
	if err != nil {
		addEngineError(diags, opApply, err, r.c.report())
	}
	addWarnings(diags, res.Warnings)
	st := plan.withResult(res, known)
	if st == nil {
		return
	}
	st.PlannedAction = types.StringValue(string(res.Action))
	mark := ""
	if err != nil {
		mark = opUpdate
		if ar.Create {
			mark = opCreate
		}
	}
	diags.Append(setUnverified(ctx, private, mark, time.Now(), err)...)
	diags.Append(state.Set(ctx, st)...)
	diags.Append(setIdentity(ctx, identity, *st)...)
	diags.Append(setMemo(ctx, private, res.Memo)...)
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

	m, ds := getMemo(ctx, req.Private, state.target())
	resp.Diagnostics.Append(ds...)
	u, ds := getUnverified(ctx, req.Private)
	resp.Diagnostics.Append(ds...)
	rr := converge.ReadRequest{Request: state.request(state.Clustered, m), Imported: state.Enabled.IsNull(), Unverified: u.engine(),
		Planned: ifi.Action(state.PlannedAction.ValueString())}
	var res *converge.Result
	var err error
	if rr.Imported {
		res, err = r.c.session.Import(ctx, rr.Request) // as a list resource's result reads it
	} else {
		res, err = r.c.session.Read(ctx, rr)
	}
	r.c.ntlmFallbackWarning(&resp.Diagnostics, rr.Target, res.NTLMFallback)
	if ce, ok := notFound(err); ok {
		resp.Diagnostics.AddWarning("SQL Server instance gone: removed from the state",
			notFoundDetail(rr.Target, ce.Instance)+" Terraform then plans to create the resource again, and that plan fails while the instance is not installed: remove the resource from the configuration if the instance was uninstalled, or correct the instance argument.")
		resp.State.RemoveResource(ctx)
		// The framework wants an identity after every read, a removal included.
		resp.Diagnostics.Append(setIdentity(ctx, resp.Identity, state)...)
		return
	}
	if err != nil {
		addEngineError(&resp.Diagnostics, opRead, err, r.c.report())
		return // the state stays as it was
	}
	st := state.refreshed(res, rr.Imported)
	addWarnings(&resp.Diagnostics, res.Warnings)
	resp.Diagnostics.Append(resp.State.Set(ctx, st)...)
	resp.Diagnostics.Append(setIdentity(ctx, resp.Identity, *st)...)
	resp.Diagnostics.Append(setMemo(ctx, resp.Private, res.Memo)...)
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

	// The refresh's read of this run, which the destroy decides from while fresh.
	m, ds := getMemo(ctx, req.Private, state.target())
	resp.Diagnostics.Append(ds...)
	dr := state.request(state.Clustered, m)
	// The destroy half of a replace: the replacing create's plan (its planned
	// private state, which Terraform gives this request) says what it asks.
	dr.Desired.Replacement = getReplacement(ctx, req.Private)
	res, err := r.c.session.Destroy(ctx, dr)
	r.c.ntlmFallbackWarning(&resp.Diagnostics, dr.Target, res.NTLMFallback)
	if ce, ok := notFound(err); ok {
		resp.Diagnostics.AddWarning("SQL Server instance already gone", notFoundDetail(dr.Target, ce.Instance)+" Nothing to revoke.")
		return
	}
	if err != nil {
		addEngineError(&resp.Diagnostics, opDestroy, err, r.c.report())
		return
	}
	// The stays-on warning was given by ModifyPlan when the destroy was planned.
	addWarnings(&resp.Diagnostics, res.Warnings, ifi.WarnStaysOnDestroy)
}

// ModifyPlan says what the apply will do (planned_action, the facts it may change
// and its warnings, as the engine predicts them: converge.Session.Plan), and what a
// destroy leaves in effect.
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
	if !req.State.Raw.IsNull() {
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
		if resp.Diagnostics.HasError() {
			return
		}
	}
	switch {
	case req.Plan.Raw.IsNull(): // a destroy: its plan contacts no host
		m, _ := getMemo(ctx, req.Private, state.target())
		addWarnings(&resp.Diagnostics, r.c.run().PlanDestroy(state.request(state.Clustered, m), state.ServiceName.ValueString(),
			knownBool(state.IFIEnabled)))
	case req.State.Raw.IsNull():
		r.plan(ctx, converge.PlanRequest{Request: plan.request(types.BoolNull(), nil), Create: true}, plan, nil, resp)
	default:
		m, ds := getMemo(ctx, req.Private, state.target())
		resp.Diagnostics.Append(ds...)
		u, ds := getUnverified(ctx, req.Private)
		resp.Diagnostics.Append(ds...)
		pr := converge.PlanRequest{Request: plan.request(state.Clustered, m), Unverified: u.engine(),
			Drift: plan.Enabled.Equal(state.Enabled) && plan.LockPagesInMemory.Equal(state.LockPagesInMemory) &&
				plan.Grantee.Equal(state.Grantee) && plan.Restart.Equal(state.Restart),
			GranteeChanged: !plan.Grantee.Equal(state.Grantee),
			NodesUnchanged: plan.Nodes.Equal(state.Nodes) && plan.SQLHost.Equal(state.SQLHost),
			Unchanged:      resp.Plan.Raw.Equal(req.State.Raw)}
		pr.Desired.PriorGranteeSID = state.GranteeSID.ValueString()
		r.plan(ctx, pr, plan, &state, resp)
	}
}
