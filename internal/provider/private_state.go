package provider

import (
	"context"
	"encoding/json"

	"github.com/hashicorp/terraform-plugin-framework/diag"
)

// privateDesired is the private-state key holding what the user last applied: a
// refresh stores `enabled` as "not converged" on drift, so the wish itself lives here.
const privateDesired = "desired"

type desiredPrivate struct {
	Enabled bool `json:"enabled"`
}

// privateSetter and privateGetter are the parts of the framework's private state
// (resp.Private, req.Private) used here.
type privateSetter interface {
	SetKey(context.Context, string, []byte) diag.Diagnostics
}

type privateGetter interface {
	GetKey(context.Context, string) ([]byte, diag.Diagnostics)
}

// setDesired records the asked `enabled` in the private state.
func setDesired(ctx context.Context, p privateSetter, enabled bool) diag.Diagnostics {
	b, _ := json.Marshal(desiredPrivate{Enabled: enabled})
	return p.SetKey(ctx, privateDesired, b)
}

// getDesired is the asked `enabled` from the private state, or fallback when none
// is recorded.
func getDesired(ctx context.Context, p privateGetter, fallback bool) (bool, diag.Diagnostics) {
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
