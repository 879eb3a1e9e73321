package provider

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

// privateSetter and privateGetter are the parts of the framework's private state
// (resp.Private, req.Private) used here.
type privateSetter interface {
	SetKey(context.Context, string, []byte) diag.Diagnostics
}

type privateGetter interface {
	GetKey(context.Context, string) ([]byte, diag.Diagnostics)
}

// privateEngine is the private-state key holding the engine's memo of the instance
// (converge.Memo, opaque here): what the next operation needs of this one.
const privateEngine = "engine"

// getMemo is the engine's memo of t's instance from the private state (an empty one
// when there is none).
func getMemo(ctx context.Context, p privateGetter, t converge.Target) (*converge.Memo, diag.Diagnostics) {
	b, ds := p.GetKey(ctx, privateEngine)
	if ds.HasError() {
		return converge.NewMemo(t), ds
	}
	return converge.DecodeMemo(b, t), ds
}

// setMemo records the engine's memo in the private state.
func setMemo(ctx context.Context, p privateSetter, m *converge.Memo) diag.Diagnostics {
	return p.SetKey(ctx, privateEngine, m.Encode())
}

// privateUnverified is the private-state key marking a resource whose last create
// or update failed once its change was sent: the state holds the new intent and
// what was known, not a verified outcome. The next plan of an update verifies and
// finishes it (ModifyPlan); a failed create is tainted by Terraform, and the
// refresh says whether its replace needs a restart (Read). A successful apply
// removes the mark.
const privateUnverified = "unverified"

type unverifiedPrivate struct {
	Op    string    `json:"op"` // "create" or "update"
	At    time.Time `json:"at"`
	Error string    `json:"error"` // the failure, for the plan's warning
}

// engine is the mark as the engine takes it; nil when there is none.
func (u *unverifiedPrivate) engine() *converge.Unverified {
	if u == nil {
		return nil
	}
	return &converge.Unverified{Op: u.Op, At: u.At.Format(time.RFC3339), Error: u.Error}
}

// setUnverified marks the resource unverified after a failed op; an empty op
// removes the mark.
func setUnverified(ctx context.Context, p privateSetter, op string, at time.Time, err error) diag.Diagnostics {
	if op == "" {
		return p.SetKey(ctx, privateUnverified, nil)
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	b, _ := json.Marshal(unverifiedPrivate{Op: op, At: at.UTC(), Error: msg})
	return p.SetKey(ctx, privateUnverified, b)
}

// getUnverified is the mark, nil when there is none (or it is unreadable).
func getUnverified(ctx context.Context, p privateGetter) (*unverifiedPrivate, diag.Diagnostics) {
	b, ds := p.GetKey(ctx, privateUnverified)
	if ds.HasError() || len(b) == 0 {
		return nil, ds
	}
	var u unverifiedPrivate
	if err := json.Unmarshal(b, &u); err != nil || u.Op == "" {
		return nil, ds
	}
	return &u, ds
}

// privateReplacement is the planned-private-state key of a create's plan: what the
// create will ask of the instance (ifi.Replacement). Terraform hands the planned
// private state of a replace to its destroy half (Delete's request), and nothing
// of the plan otherwise: a Delete that finds it is the first half of a replace, and
// the engine keeps a grant the create grants again (ifi.PlanDestroy). Only a
// create's plan writes it; Create starts from an empty private state and an
// update's never has it, so it never reaches the state, nor a destroy the user
// asked for (whose private state is the state's).
const privateReplacement = "replacement"

// setReplacement records, in a create's planned private state, what it will ask.
func setReplacement(ctx context.Context, p privateSetter, r ifi.Replacement) diag.Diagnostics {
	b, _ := json.Marshal(r)
	return p.SetKey(ctx, privateReplacement, b)
}

// getReplacement is the replacement a Delete's private state names, nil when none
// (a destroy the user asked for) or unreadable.
func getReplacement(ctx context.Context, p privateGetter) *ifi.Replacement {
	b, ds := p.GetKey(ctx, privateReplacement)
	if ds.HasError() || len(b) == 0 {
		return nil
	}
	var r ifi.Replacement
	if json.Unmarshal(b, &r) != nil || r.Host == "" {
		return nil
	}
	return &r
}
