package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
)

// verifyUnverified makes the plan of a resource whose last create or update failed
// part-way (privateUnverified) an update, which verifies the instance and finishes
// what is missing, and says so.
func (r *ifiResource) verifyUnverified(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse, t converge.Target) bool {
	u, ds := getUnverified(ctx, req.Private)
	resp.Diagnostics.Append(ds...)
	if u == nil {
		return false
	}
	verify := ifi.ActionVerify
	setPlannedAction(ctx, &resp.Plan, &verify, &resp.Diagnostics)
	resp.Diagnostics.AddWarning(fmt.Sprintf("Unverified change of %s: this update verifies it", t),
		fmt.Sprintf("The %s of %s at %s failed after its change was sent (%s). The state holds what was asked and what was known "+
			"then; this update reads the instance, finishes what is missing, and verifies it. It restarts SQL Server only if the "+
			"running Engine still lacks what was asked.", u.Op, t, u.At.Format(time.RFC3339), safetext.Escape(u.Error)))
	return true
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
			"only verifies the instance", onOff(*a.RunningIFI), a.VerifiedBy)
	case a.RunningIFI != nil:
		summary = fmt.Sprintf("Failed create of %s: its replace restarts SQL Server", t)
		need = "it needs a restart: the running Engine lacks what was asked"
	}
	detail = fmt.Sprintf("The create of %s at %s failed after its change was sent (%s), so Terraform marks the resource tainted and "+
		"plans to replace it; %s. The replace takes away nothing the host holds as configured: its destroy keeps a grant its create "+
		"grants again, and the create adopts it. If you have checked the host yourself, run terraform untaint on the resource instead: "+
		"the next plan is then an update that verifies the instance.", t, u.At.Format(time.RFC3339), safetext.Escape(u.Error), need)
	return summary, detail
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
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
