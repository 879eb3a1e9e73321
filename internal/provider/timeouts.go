package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/testhooks"
)

var _ resource.ResourceWithValidateConfig = &ifiResource{}

// Bounds of the resource's timeouts. An apply may restart SQL Server: restart_instance
// needs at least converge.MinRestartTimeout and the read back after it a margin, so
// create and update need at least a minute; every operation does at least one WinRM
// round trip. Above converge.MaxOperationTimeout the restart's own limit (the host's
// 24 hours) would refuse the restart after the grant was made.
const (
	minApplyTimeout = time.Minute
	minOtherTimeout = 10 * time.Second
)

// timeoutBounds is the smallest value each timeouts attribute accepts.
var timeoutBounds = map[string]time.Duration{
	"create": minApplyTimeout,
	"update": minApplyTimeout,
	"read":   minOtherTimeout,
	"delete": minOtherTimeout,
}

// checkTimeout says why one timeouts value cannot be honoured ("" when it can).
func checkTimeout(name, value string) string {
	d, err := time.ParseDuration(value)
	if err != nil {
		return fmt.Sprintf("%q is not a duration such as \"20m\" or \"1h30m\"", value)
	}
	lo, hi := timeoutBounds[name], converge.MaxOperationTimeout
	if d < lo || d > hi {
		return fmt.Sprintf("%s = %q is outside what the provider can honour: give a duration from %s to %s "+
			"(%s needs at least %s; above %s the host's own limit on a restart would refuse it after the grant was made)",
			name, value, lo, hi, name, lo, hi)
	}
	return ""
}

// ValidateConfig refuses timeouts the provider cannot honour, at plan time.
func (r *ifiResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var block timeouts.Value
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("timeouts"), &block)...)
	if resp.Diagnostics.HasError() || block.IsNull() || block.IsUnknown() {
		return
	}
	for name, v := range block.Attributes() {
		s, ok := v.(types.String)
		if !ok || s.IsNull() || s.IsUnknown() {
			continue
		}
		if _, known := timeoutBounds[name]; !known {
			continue
		}
		if msg := checkTimeout(name, s.ValueString()); msg != "" {
			resp.Diagnostics.AddAttributeError(path.Root("timeouts").AtName(name), "Timeout out of range", msg)
		}
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
	// A release binary's DeadlineDivisor is 1; the provider's acceptance tests may
	// divide the deadline (never the timeout's value or bounds) in theirs.
	ctx, cancel = context.WithTimeout(ctx, d/time.Duration(testhooks.DeadlineDivisor()))
	return ctx, cancel, true
}
