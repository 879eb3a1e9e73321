package converge

import (
	"context"
	"slices"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
)

// The plan says what the apply will do, decided by ifi.Predict on the host's read
// (a create's own read at plan time, an update's refresh kept in the memo) with
// the same rules the apply follows (design/plan.md).

// PlanRequest is a plan's Request.
type PlanRequest struct {
	Request
	// Create: the resource is not in the state. A create's plan reads the host.
	Create bool
	// NameUnknown: the host or instance is not known until apply; ConfigUnknown:
	// the provider's configuration is not; ArgsUnknown: another argument is not.
	NameUnknown   bool
	ConfigUnknown bool
	ArgsUnknown   bool
	// Unverified is the mark of a failed create or update; nil: none.
	Unverified *Unverified
	// Drift: the arguments are as in the state, so a change is the host's drift.
	// GranteeChanged: the grantee argument is not. NodesUnchanged: nodes and
	// sql_host are as in the state (a cluster's refresh reached the nodes as the
	// plan would). Unchanged: nothing in the plan differs from the state.
	Drift, GranteeChanged, NodesUnchanged, Unchanged bool
}

// Prediction is what a plan shows.
type Prediction struct {
	// Action is what the apply will do; nil: not known (the apply may restart).
	Action *ifi.Action
	// KeepState: planned_action keeps the state's value (nothing to do, nothing
	// else changes: the plan is empty).
	KeepState bool
	// Clustered: a create's read found a failover cluster instance.
	Clustered bool
	// Replacement is what a create will ask, for the destroy half of a replace.
	Replacement *ifi.Replacement
	// MayChange are the facts the apply may change: unknown in the plan; every
	// other fact keeps the state's value.
	MayChange []ifi.Field
	// Known are the facts the apply changes to a value the plan can tell
	// (ifi.Assessment.After): known in the plan, each a bool, a string or nil for
	// null. The apply is held to them (Session.Apply).
	Known    map[ifi.Field]any
	Warnings []ifi.Warning
	// NTLMFallback is why auth "negotiate" reaches the host with NTLM, said by a plan
	// that changes the instance (once per host and run); "" otherwise.
	NTLMFallback string
}

func unknownPrediction(t Target, why string) *Prediction {
	p := &Prediction{MayChange: ifi.AllFields}
	if why != "" {
		p.Warnings = []ifi.Warning{ifi.UnknownPrediction(t.Host, t.Instance, why)}
	}
	return p
}

// Plan predicts what applying r does. A host that cannot be read within ctx's
// deadline is the error (naming it and what to check): a known prediction never
// turns unknown on a failed read, since Terraform plans a create again during its
// apply, and an unknown value where the plan knew one is its "inconsistent final
// plan". A second resource for one cluster role is refused (KindRefused).
func (s *Session) Plan(ctx context.Context, r PlanRequest) (*Prediction, error) {
	ctx = runWide(ctx) // a plan shows the host as the run found it (hostReads)
	t := r.Target
	switch {
	case r.NameUnknown:
		return unknownPrediction(t, ""), nil // no name to say it with
	case r.ConfigUnknown:
		return unknownPrediction(t, "the provider's configuration is not known until apply"), nil
	case r.ArgsUnknown:
		return unknownPrediction(t, "some of its arguments are not known until apply"), nil
	}
	m := r.memo()
	d := s.held(r.Desired)
	if r.Create {
		p, err := s.planCreate(ctx, r)
		if p != nil {
			s.sayFallbackOfChange(t, p)
		}
		return p, err
	}
	if u := r.Unverified; u != nil {
		verify := ifi.ActionVerify
		p := &Prediction{Action: &verify, MayChange: ifi.AllFields,
			Warnings: []ifi.Warning{ifi.UnverifiedUpdate(t.Host, t.Instance, u.Op, u.At, u.Error)}}
		if s != nil && s.HoldRestarts && r.Desired.Restart != ifi.RestartNever {
			// The verify may have restarted; this run holds restarts.
			p.Warnings = append(p.Warnings, ifi.RestartHeld(t.Host, t.Instance, verify))
		}
		s.sayFallbackOfChange(t, p) // the verify may change the host
		return p, nil
	}
	clustered := r.Clustered != nil && *r.Clustered
	if !clustered && (m.Read == nil || m.Verification == nil || m.Verification.Source == "") {
		return unknownPrediction(t, "the state holds no read of it (a plan with refresh records one)"), nil
	}
	m.Prime(&t, &d)
	var p *Prediction
	if clustered {
		var err error
		if p, err = s.planCluster(ctx, r, t, d, r.NodesUnchanged); err != nil {
			return nil, err
		}
	} else {
		p = s.predict(r, t, d, m.Read, m.Verification, false)
	}
	if r.Unchanged && p.Action != nil && *p.Action == ifi.ActionNone {
		p.KeepState = true
	}
	s.sayFallbackOfChange(t, p)
	return p, nil
}

// planCreate reads the host (one read_instance and one SQL check, as a refresh
// does, riding through a refused connection within ctx's deadline) and predicts
// creating the resource. The create of a replace, planned again during the apply
// after this run's destroy, predicts from the host as the destroy found it:
// Terraform wants the plan it approved.
func (s *Session) planCreate(ctx context.Context, r PlanRequest) (*Prediction, error) {
	t, d := r.Target, s.held(r.Desired)
	if before := s.destroyedBefore(t); before != nil {
		return s.predict(r, Target{Host: t.Host, Instance: t.Instance}, d, before.Read, &before.Verification, true), nil
	}
	out, err := s.Engine.ReadRiding(ctx, t, d)
	if err != nil {
		return nil, err
	}
	if out.Read != nil && out.Read.Clustered {
		// The apply takes the cluster path without reading again to know it.
		p, err := s.planCluster(ctx, r, t, d, false)
		if p != nil {
			p.Clustered = true
		}
		return p, err
	}
	// Should this create replace a resource (tainted after a failed create, or an
	// argument that forces replacement), its destroy half keeps a grant this create
	// grants again.
	rep := &ifi.Replacement{Host: t.Host, Instance: t.Instance, Enabled: d.Enabled, LockPages: d.LockPages, Grantee: d.Grantee}
	if out.Assessment != nil {
		rep.GranteeSID = out.Assessment.GranteeSID
	}
	// When the host reads differently when Terraform plans the create again during
	// the apply, its own consistency check stops the apply before anything changes.
	p := s.predict(r, Target{Host: t.Host, Instance: t.Instance}, d, out.Read, &out.Verification, true)
	p.Replacement = rep
	p.Warnings = append(broughtAbout(p, out.Warnings), p.Warnings...) // what the apply would say of the instance
	return p, nil
}

// broughtAbout is ws, the warnings of a create's read, without the pending restart
// that the create itself brings about (a grant or a revoke without a restart): its
// prediction says that the apply does not restart, and the apply, which makes the
// restart pending, says it as news (Memo.told). Terraform plans a create again
// during the apply (design/plan.md, "A create's final plan") in the apply's provider
// process, which cannot tell that plan from a new one: said by the plan, it would be
// said again by the final plan and by the apply.
func broughtAbout(p *Prediction, ws []ifi.Warning) []ifi.Warning {
	if p.Action == nil || (*p.Action != ifi.ActionGrant && *p.Action != ifi.ActionRevoke) {
		return ws
	}
	return slices.DeleteFunc(slices.Clone(ws), func(w ifi.Warning) bool { return w.Code == ifi.WarnRestartPending })
}

// predict is ifi.Predict on the read ri and verification v.
func (s *Session) predict(r PlanRequest, t Target, d ifi.Desired, ri *contract.ReadInstanceResult, v *ifi.Verification, create bool) *Prediction {
	o := ifi.Observed{Host: t.Host, Instance: ri, Verification: *v}
	pred, err := ifi.Predict(d, o, r.Drift)
	if err != nil {
		return unknownPrediction(t, "its read cannot be assessed: "+safetext.Escape(err.Error()))
	}
	p := s.prediction(pred, false, r, create)
	s.sayHeld(r, t, d, pred.Action, p, func(a ifi.Desired) (ifi.Prediction, error) { return ifi.Predict(a, o, r.Drift) })
	return p
}

// sayFallbackOfChange says the NTLM fallback in a plan that changes the instance
// (the apply then sends its changes over that logon).
func (s *Session) sayFallbackOfChange(t Target, p *Prediction) {
	if p.Action != nil && *p.Action != ifi.ActionNone && *p.Action != ifi.ActionRefuse {
		p.NTLMFallback = s.sayFallback(t)
	}
}

// sayHeld adds to p, when this run's held restarts changed what applying r does
// (act, as held from d), the restart that waits: predict decides with r's own
// restart policy, on the same observation, for either topology.
func (s *Session) sayHeld(r PlanRequest, t Target, d ifi.Desired, act ifi.Action, p *Prediction, predict func(ifi.Desired) (ifi.Prediction, error)) {
	if !s.holds(r, act) {
		return
	}
	d.Restart = r.Desired.Restart
	if asked, err := predict(d); err == nil && asked.Action.Restarts() {
		p.Warnings = append(p.Warnings, ifi.RestartHeld(t.Host, t.Instance, asked.Action))
	}
}

// holds reports whether this run's held restarts may have changed what applying r
// does (act, as held): the plan then says which restart waits.
func (s *Session) holds(r PlanRequest, act ifi.Action) bool {
	return s.HoldRestarts && r.Desired.Restart != ifi.RestartNever && !act.Restarts() && act != ifi.ActionRefuse && act != ifi.ActionNone
}

// prediction is what a plan shows of pred.
func (s *Session) prediction(pred ifi.Prediction, clustered bool, r PlanRequest, create bool) *Prediction {
	act := pred.Action
	p := &Prediction{Action: &act, MayChange: ifi.MayChange(act, clustered, r.GranteeChanged || create)}
	if pred.ChangesLockPages || (r.GranteeChanged || create) && r.Desired.LockPages != nil {
		p.MayChange = append(p.MayChange, ifi.FieldLockPagesGranted)
	}
	if !clustered && !create && pred.After != nil {
		// An update's plan shows what the apply leaves where it can tell.
		p.MayChange = slices.DeleteFunc(slices.Clone(p.MayChange), func(f ifi.Field) bool {
			v, ok := pred.After[f]
			if ok {
				if p.Known == nil {
					p.Known = map[ifi.Field]any{}
				}
				p.Known[f] = v
			}
			return ok
		})
	}
	if act != ifi.ActionNone {
		p.Warnings = append(slices.Clone(pred.PlanWarnings), pred.Warning)
	}
	return p
}

// plannedAfter is what an update's plan showed known of t (Prediction.Known and
// the facts it kept), predicted again as the plan did, from the read of its
// refresh the memo holds (d primed by it, d.Planned its planned_action); nil
// when that plan showed none.
func (m *Memo) plannedAfter(t Target, d ifi.Desired) map[ifi.Field]any {
	if m == nil || m.Read == nil || m.Verification == nil || m.Verification.Source == "" {
		return nil
	}
	pred, err := ifi.Predict(d, ifi.Observed{Host: t.Host, Instance: m.Read, Verification: *m.Verification}, false)
	if err != nil || d.Planned == "" || pred.Action != d.Planned {
		return nil // not this plan's prediction (a verify, an unknown action)
	}
	return pred.After
}

// planCluster predicts the apply of a failover cluster instance (ifi.PredictCluster)
// from this run's refresh of it when fromRefresh (the nodes are reached as the
// refresh reached them), else from a read now, and claims its cluster role.
func (s *Session) planCluster(ctx context.Context, r PlanRequest, t Target, d ifi.Desired, fromRefresh bool) (*Prediction, error) {
	var out *ClusterOutcome
	if fromRefresh {
		out = s.seenCluster(t)
	}
	var read []ifi.Warning
	if out == nil || out.Observed == nil {
		var err error
		out, err = s.Engine.ReadCluster(ctx, r.clusterTarget(t), d)
		if err != nil || out.Observed == nil {
			why := "reading its failover cluster at plan time failed"
			if err != nil {
				why += ": " + safetext.Escape(err.Error())
			}
			return unknownPrediction(t, why), nil
		}
		read = out.Warnings // what the apply would say of the instance
	}
	if ca := out.Cluster; ca != nil {
		if err := s.claimRole(t, ca); err != nil {
			return nil, err
		}
	}
	pred, err := ifi.PredictCluster(d, *out.Observed, r.Drift)
	if err != nil {
		return unknownPrediction(t, "its cluster cannot be assessed: "+safetext.Escape(err.Error())), nil
	}
	p := s.prediction(pred.Prediction, true, r, r.Create)
	s.sayHeld(r, t, d, pred.Action, p, func(a ifi.Desired) (ifi.Prediction, error) {
		cp, err := ifi.PredictCluster(a, *out.Observed, r.Drift)
		return cp.Prediction, err
	})
	p.Warnings = append(read, p.Warnings...)
	return p, nil
}

// PlanDestroy is what a planned destroy leaves in effect (Memo.DestroyPlanWarnings):
// a destroy's plan contacts no host. service names the Engine's service and
// ifiEnabled is what the state says (nil: unknown).
func (s *Session) PlanDestroy(r Request, service string, ifiEnabled *bool) []ifi.Warning {
	return r.memo().DestroyPlanWarnings(r.Desired, service, ifiEnabled, r.Clustered != nil && *r.Clustered)
}
