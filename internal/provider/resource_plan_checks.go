package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// claimInstance has the engine refuse a second resource for an instance another
// resource of this run already manages (converge.Session.Claim).
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
	var on *bool
	if !enabled.IsUnknown() && !enabled.IsNull() {
		on = enabled.ValueBoolPointer()
	}
	if err := r.c.run().Claim(host.ValueString(), instance.ValueString(), on); err != nil {
		addEngineError(&resp.Diagnostics, opRead, err, r.c.report())
	}
}
