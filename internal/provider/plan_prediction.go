package provider

import (
	"context"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
)

// The plan says what the apply will do: ifi.Predict decides it from the host's read
// (a create's own read at plan time, an update's refresh kept in the private
// state), the same rules the apply follows; this file only renders it as the
// planned_action attribute and one warning per resource.

// plannedActionAttribute is the resource's planned_action.
func plannedActionAttribute() schema.StringAttribute {
	names := make([]string, len(ifi.Actions))
	for i, a := range ifi.Actions {
		names[i] = "`" + string(a) + "`"
	}
	return schema.StringAttribute{
		Computed: true,
		MarkdownDescription: "What the apply will do on the instance, known at plan time: one of " + strings.Join(names, ", ") + ". " +
			"`grant`/`revoke` change the right without restarting SQL Server; `*_and_restart` and `restart` restart the Database Engine " +
			"(and its running dependent services; on a failover cluster instance, the failover or cluster restart `restart` asks for, " +
			"and `grant`/`revoke` cover every possible owner); `refuse`: the apply refuses before changing anything (the plan's warning says why); " +
			"`verify`: the last apply failed part-way, and the apply verifies and finishes it (it may restart). Unknown at plan time " +
			"(the provider configuration, the host or an argument is not known yet) means the apply **may restart**; a host that " +
			"cannot be read within the read timeout fails the plan. " +
			"The apply stores the planned value; a refresh sets it to `none`. A `lifecycle { postcondition }` on it fails the plan " +
			"itself, for example to forbid restarts of primary replicas or outside a maintenance window.",
	}
}

// predictedAttributes are the computed attributes an apply that changes the instance
// may change: unknown in such a plan.
var predictedAttributes = []string{"grantee_sid", "privilege_granted", "ifi_enabled", "restart_pending", "verified_by", "sql_version",
	"availability_groups", "availability_role", "cluster_nodes", "ifi_survives_failover"}

// setPlannedAction puts act (nil: unknown) into the plan, and when it may change the
// instance, marks what the apply will read back unknown.
func setPlannedAction(ctx context.Context, plan *tfsdk.Plan, act *ifi.Action, diags *diag.Diagnostics) {
	v := types.StringUnknown()
	if act != nil {
		v = types.StringValue(string(*act))
	}
	diags.Append(plan.SetAttribute(ctx, path.Root("planned_action"), v)...)
	if act != nil && *act == ifi.ActionNone {
		return
	}
	for _, name := range predictedAttributes {
		switch computedAttributes[name].kind {
		case computedBool:
			diags.Append(plan.SetAttribute(ctx, path.Root(name), types.BoolUnknown())...)
		case computedStringList:
			diags.Append(plan.SetAttribute(ctx, path.Root(name), types.ListUnknown(types.StringType))...)
		case computedNodeList:
			diags.Append(plan.SetAttribute(ctx, path.Root(name), types.ListUnknown(clusterNodeType))...)
		default:
			diags.Append(plan.SetAttribute(ctx, path.Root(name), types.StringUnknown())...)
		}
	}
}

// predictCreate reads the host at plan time (one read_instance and one SQL check, as
// a refresh does) and predicts what creating the resource does.
func (r *ifiResource) predictCreate(ctx context.Context, plan ifiResourceModel, resp *resource.ModifyPlanResponse) {
	host, instance := plan.Host.ValueString(), plan.Instance.ValueString()
	if plan.Host.IsUnknown() || plan.Instance.IsUnknown() {
		setPlannedAction(ctx, &resp.Plan, nil, &resp.Diagnostics)
		return // no name to say it with; Terraform shows the value as known after apply
	}
	why := ""
	switch {
	case r.c == nil:
		why = "the provider's configuration is not known until apply"
	case plan.Enabled.IsUnknown() || plan.Grantee.IsUnknown() || plan.Restart.IsUnknown() || plan.Port.IsUnknown() || plan.SQLPort.IsUnknown():
		why = "some of its arguments are not known until apply"
	}
	if why != "" {
		setPlannedAction(ctx, &resp.Plan, nil, &resp.Diagnostics)
		addWarnings(&resp.Diagnostics, []ifi.Warning{ifi.UnknownPrediction(host, instance, why)})
		return
	}
	d := plan.desired()
	if before := r.c.destroyedBefore(host, instance); before != nil {
		// The create of a replace, planned again during the apply after this run's
		// destroy: Terraform wants the plan it approved, which predicted from the
		// host as it was before the destroy.
		r.predict(ctx, d, converge.Target{Host: host, Instance: instance}, before.Read, &before.Verification, false, resp)
		return
	}
	// The read rides through a refused connection within the read timeout
	// (converge.ReadRiding); a failure that persists is the plan's error, naming the
	// host and what to check. A known prediction never turns unknown on a failed
	// read: Terraform plans a create again during the apply, and an unknown value
	// where the plan knew one is its "inconsistent final plan".
	rctx, cancel, ok := withTimeout(ctx, plan.Timeouts.Read, defaultReadTimeout, &resp.Diagnostics)
	if !ok {
		return
	}
	defer cancel()
	out, err := r.c.engine().ReadRiding(rctx, plan.target(), d)
	if err != nil {
		addEngineError(&resp.Diagnostics, opRead, err, r.c.report())
		return
	}
	if out.Read != nil && out.Read.Clustered {
		// An FCI: the apply takes the cluster path without reading again to know it
		// (a standalone instance's apply reads it anyway).
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("clustered"), types.BoolValue(true))...)
		r.predictCluster(ctx, plan, d, plan.target(), false, false, resp)
		return
	}
	addWarnings(&resp.Diagnostics, out.Warnings) // what the apply would say of the instance
	// Should this create replace a resource (tainted after a failed create, or an
	// argument that forces replacement), its destroy half keeps a grant this create
	// grants again (private_state.go, privateReplacement).
	rep := ifi.Replacement{Host: host, Instance: instance, Enabled: d.Enabled, Grantee: d.Grantee}
	if out.Assessment != nil {
		rep.GranteeSID = out.Assessment.GranteeSID
	}
	resp.Diagnostics.Append(setReplacement(ctx, resp.Private, rep)...)
	// Terraform plans a create again during its apply, with nothing of this plan
	// (design/plan.md, "A create's final plan"): when the host reads
	// differently then, Terraform's own consistency check stops the apply before
	// anything is changed (the resource page says what that message means here).
	r.predict(ctx, d, converge.Target{Host: host, Instance: instance}, out.Read, &out.Verification, false, resp)
}

// predictUpdate predicts the update of a resource in the state from the refresh's
// read (the engine's memo in the private state). Without one, the action is unknown.
func (r *ifiResource) predictUpdate(ctx context.Context, req resource.ModifyPlanRequest, state, plan ifiResourceModel,
	resp *resource.ModifyPlanResponse) {
	t := state.target()
	m, ds := getMemo(ctx, req.Private, t)
	resp.Diagnostics.Append(ds...)
	clustered := state.Clustered.ValueBool()
	if !clustered && (m.Read == nil || m.Verification == nil || m.Verification.Source == "") {
		setPlannedAction(ctx, &resp.Plan, nil, &resp.Diagnostics)
		addWarnings(&resp.Diagnostics, []ifi.Warning{ifi.UnknownPrediction(t.Host, t.Instance,
			"the state holds no read of it (a plan with refresh records one)")})
		return
	}
	d := plan.desired()
	d.PriorGranteeSID = state.GranteeSID.ValueString()
	d.IneffectiveRestart, d.LastRestart = m.IneffectiveRestart, m.LastRestart
	drift := plan.Enabled.Equal(state.Enabled) && plan.Grantee.Equal(state.Grantee) && plan.Restart.Equal(state.Restart)
	unchanged := resp.Plan.Raw.Equal(req.State.Raw)
	if clustered {
		// An FCI: from this run's refresh of every node, else a read now.
		r.predictCluster(ctx, plan, d, t, drift, plan.Nodes.Equal(state.Nodes) && plan.SQLHost.Equal(state.SQLHost), resp)
	} else {
		r.predict(ctx, d, t, m.Read, m.Verification, drift, resp)
	}
	var act types.String
	resp.Diagnostics.Append(resp.Plan.GetAttribute(ctx, path.Root("planned_action"), &act)...)
	if unchanged && act.Equal(types.StringValue(string(ifi.ActionNone))) {
		// Nothing to do and nothing else changes: the plan keeps the state's value (the
		// last apply's, when the plan did not refresh), so that it is empty.
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("planned_action"), state.PlannedAction)...)
	}
}

// predict renders ifi.Predict on the read ri and verification v: planned_action and
// the plan's warnings.
func (r *ifiResource) predict(ctx context.Context, d ifi.Desired, t converge.Target, ri *contract.ReadInstanceResult, v *ifi.Verification,
	drift bool, resp *resource.ModifyPlanResponse) {
	pred, err := ifi.Predict(d, ifi.Observed{Host: t.Host, Instance: ri, Verification: *v}, drift)
	if err != nil {
		setPlannedAction(ctx, &resp.Plan, nil, &resp.Diagnostics)
		addWarnings(&resp.Diagnostics, []ifi.Warning{ifi.UnknownPrediction(t.Host, t.Instance, "its read cannot be assessed: "+
			safetext.Escape(err.Error()))})
		return
	}
	setPlannedAction(ctx, &resp.Plan, &pred.Action, &resp.Diagnostics)
	if pred.Action != ifi.ActionNone {
		addWarnings(&resp.Diagnostics, append(pred.PlanWarnings, pred.Warning))
	}
}
