package provider

import (
	"context"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

// The plan says what the apply will do: the engine decides it (converge.Session.Plan,
// by ifi.Predict on the host's read, the same rules the apply follows); this file
// only renders it as the planned_action attribute, the facts that may change and
// the warnings.

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
			"The apply stores the planned value and a refresh keeps it: in the state, and in a plan where this resource has no " +
			"change, it is what the last apply did (none after an import), so the plan after an apply is empty whatever references it. " +
			"A `lifecycle { postcondition }` on it fails the plan itself, for example when the apply would refuse; gate restarts by a " +
			"maintenance window with the provider's `allow_restarts`, or in a policy on the plan's JSON that looks at changes only.",
	}
}

// plan has the engine predict the apply (converge.Session.Plan) and puts its
// prediction into the plan: planned_action (unknown when it cannot be known, which
// means the apply may restart; the state's value when nothing changes, so that the
// plan is empty), the facts the apply may change as unknown (every other one keeps
// the state's value), clustered when a create found a failover cluster instance,
// and what a create will ask, for the destroy half of a replace (privateReplacement).
// state is nil for a create.
func (r *ifiResource) plan(ctx context.Context, pr converge.PlanRequest, plan ifiResourceModel, state *ifiResourceModel, resp *resource.ModifyPlanResponse) {
	pr.NameUnknown = plan.Host.IsUnknown() || plan.Instance.IsUnknown()
	pr.ConfigUnknown = r.c == nil
	pr.ArgsUnknown = plan.Enabled.IsUnknown() || plan.Grantee.IsUnknown() || plan.Restart.IsUnknown() || plan.Port.IsUnknown() ||
		plan.SQLPort.IsUnknown() || plan.Nodes.IsUnknown() || plan.SQLHost.IsUnknown() || plan.ReplicaAddresses.IsUnknown()
	ctx, cancel, ok := withTimeout(ctx, plan.Timeouts.Read, defaultReadTimeout, &resp.Diagnostics)
	if !ok {
		return
	}
	defer cancel()
	p, err := r.c.run().Plan(ctx, pr)
	if err != nil {
		addEngineError(&resp.Diagnostics, opRead, err, r.c.report())
		return
	}
	act := types.StringUnknown()
	switch {
	case p.KeepState && state != nil:
		act = state.PlannedAction
	case p.Action != nil:
		act = types.StringValue(string(*p.Action))
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("planned_action"), act)...)
	for _, f := range p.MayChange {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root(string(f)), unknownOf(computedAttributes[string(f)].kind))...)
	}
	for f, v := range p.Known {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root(string(f)), knownOf(computedAttributes[string(f)].kind, v))...)
	}
	if p.Clustered {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("clustered"), types.BoolValue(true))...)
	}
	if p.Replacement != nil {
		resp.Diagnostics.Append(setReplacement(ctx, resp.Private, *p.Replacement)...)
	}
	r.c.ntlmFallbackWarning(&resp.Diagnostics, pr.Target, p.NTLMFallback)
	addWarnings(&resp.Diagnostics, p.Warnings)
}

// unknownOf is the unknown value of a computed attribute of kind k.
func unknownOf(k computedKind) attr.Value {
	switch k {
	case computedBool:
		return types.BoolUnknown()
	case computedStringList:
		return types.ListUnknown(types.StringType)
	case computedNodeList:
		return types.ListUnknown(clusterNodeType)
	}
	return types.StringUnknown()
}

// knownOf is the value v (a bool, a string, or nil for null) of a computed
// attribute of kind k.
func knownOf(k computedKind, v any) attr.Value {
	switch x := v.(type) {
	case bool:
		return types.BoolValue(x)
	case string:
		return types.StringValue(x)
	}
	switch k {
	case computedBool:
		return types.BoolNull()
	case computedStringList:
		return types.ListNull(types.StringType)
	case computedNodeList:
		return types.ListNull(clusterNodeType)
	}
	return types.StringNull()
}

// plannedAction is the plan's planned_action for the engine; nil when unknown.
func plannedAction(v types.String) *ifi.Action {
	if v.IsUnknown() || v.IsNull() {
		return nil
	}
	a := ifi.Action(v.ValueString())
	return &a
}
