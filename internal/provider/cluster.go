package provider

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
)

// Failover cluster instances (design/cluster.md): the glue between the
// resource and the engine's cluster path (converge.ReadCluster, ApplyCluster,
// DestroyCluster). What an FCI needs is decided in internal/ifi and done in
// internal/converge; this file maps arguments in and outcomes out.

// clusterTarget is the converge.ClusterTarget of the instance t with the nodes and
// sql_host arguments.
func clusterTarget(t converge.Target, nodes types.Map, sqlHost types.String) converge.ClusterTarget {
	addrs := nodeAddresses(nodes)
	ct := converge.ClusterTarget{Target: t, SQLHost: sqlHost.ValueString()}
	ct.Target.Read = nil // the cluster path reads every node itself
	for name := range addrs {
		ct.Named = append(ct.Named, name)
	}
	slices.Sort(ct.Named)
	if len(addrs) > 0 {
		ct.Resolve = func(node string) string {
			for name, a := range addrs {
				if strings.EqualFold(name, node) {
					return a
				}
			}
			return ""
		}
	}
	return ct
}

// clustered says whether t's instance is a failover cluster instance: what the
// last read of it said (t.Read, from the memo), else known (the state's
// `clustered`), else a read of the host now, which then primes t for the engine.
func (c *clients) clustered(ctx context.Context, t *converge.Target, known types.Bool, d ifi.Desired) (bool, error) {
	switch {
	case t.Read != nil:
		return t.Read.Clustered, nil
	case !known.IsNull() && !known.IsUnknown():
		return known.ValueBool(), nil
	}
	out, err := c.engine().ReadRiding(ctx, *t, d) // part of an apply: it rides through a refused connection
	if err != nil {
		return false, err
	}
	t.Read, t.ReadAt, t.SQLPortHint = out.Read, out.ReadAt, out.SQLPort
	return out.Read != nil && out.Read.Clustered, nil
}

// setCluster sets the computed attributes of an FCI from the engine's assessment:
// the running Engine's (the owner's, else the node reached), every node, and the
// roll-up.
func (m *computedModel) setCluster(ca *ifi.ClusterAssessment, reached string) {
	a := ca.OwnerAssessment
	if a == nil {
		a = ca.PerNode[reached]
	}
	if a != nil {
		m.set(a)
	}
	m.Clustered = types.BoolValue(true)
	nodes := make([]attr.Value, len(ca.Nodes))
	for i, n := range ca.Nodes {
		granted, policy := types.BoolNull(), types.BoolNull()
		if n.Reachable {
			granted = types.BoolValue(n.Granted)
			if n.GPOKnown {
				policy = types.BoolValue(n.GPODefines)
			}
		}
		nodes[i] = types.ObjectValueMust(clusterNodeType.AttrTypes, map[string]attr.Value{
			"name": types.StringValue(n.Name), "current_owner": types.BoolValue(n.Owner), "possible_owner": types.BoolValue(n.PossibleOwner),
			"privilege_granted": granted, "policy_defines_right": policy,
		})
	}
	m.ClusterNodes = types.ListValueMust(clusterNodeType, nodes)
	m.IFISurvivesFailover = types.BoolPointerValue(ca.IFISurvivesFailover)
}

// withClusterOutcome is withOutcome for an FCI: m with what the engine found on
// every node, or, when it could not read the nodes back after changing some, m's
// intent with the computed attributes of known (the caller marks it unverified).
func (m ifiResourceModel) withClusterOutcome(out *converge.ClusterOutcome, known computedModel) *ifiResourceModel {
	if out == nil {
		return nil
	}
	if out.Cluster == nil {
		if !out.Changed && !slices.ContainsFunc(out.Nodes, func(n converge.NodeResult) bool { return n.Changed }) {
			return nil
		}
		m.computedModel = known
		m.computedModel.nullUnknowns()
		m.computedModel.recordNodeResults(out.Nodes)
		return &m
	}
	reached := ""
	if out.Observed != nil && out.Observed.Cluster != nil {
		reached = out.Observed.Cluster.Node
	}
	m.computedModel.setCluster(out.Cluster, reached)
	m.Enabled = types.BoolValue(out.Enabled)
	return &m
}

// clusterSeen keeps, for this run, the last read of each FCI: a plan refreshes
// the resource, then predicts its update from that read (predictCluster).
func (c *clients) rememberCluster(t converge.Target, out *converge.ClusterOutcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.clusterSeen == nil {
		c.clusterSeen = map[instanceKey]*converge.ClusterOutcome{}
	}
	c.clusterSeen[newInstanceKey(t.Host, t.Instance)] = out
}

func (c *clients) seenCluster(t converge.Target) *converge.ClusterOutcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clusterSeen[newInstanceKey(t.Host, t.Instance)]
}

// predictCluster predicts the apply of an FCI (ifi.PredictCluster) from this run's
// refresh of it when fromRefresh (the nodes are reached as the refresh reached
// them), else from a read now, and claims its cluster role for the resource; drift
// as predict's.
func (r *ifiResource) predictCluster(ctx context.Context, plan ifiResourceModel, d ifi.Desired, t converge.Target, drift, fromRefresh bool,
	resp *resource.ModifyPlanResponse) {
	var out *converge.ClusterOutcome
	if fromRefresh {
		out = r.c.seenCluster(t)
	}
	read := false
	if out == nil || out.Observed == nil {
		var err error
		rctx, cancel := context.WithTimeout(ctx, defaultReadTimeout)
		defer cancel()
		out, err = r.c.engine().ReadCluster(rctx, clusterTarget(t, plan.Nodes, plan.SQLHost), d)
		if err != nil || out.Observed == nil {
			setPlannedAction(ctx, &resp.Plan, nil, &resp.Diagnostics)
			why := "reading its failover cluster at plan time failed"
			if err != nil {
				why += ": " + safetext.Escape(err.Error())
			}
			addWarnings(&resp.Diagnostics, []ifi.Warning{ifi.UnknownPrediction(t.Host, t.Instance, why)})
			return
		}
		read = true
	}
	if read {
		addWarnings(&resp.Diagnostics, out.Warnings) // what the apply would say of the instance
	}
	if ca := out.Cluster; ca != nil && !r.claimRole(ca, plan, &resp.Diagnostics) {
		return
	}
	pred, err := ifi.PredictCluster(d, *out.Observed, drift)
	if err != nil {
		setPlannedAction(ctx, &resp.Plan, nil, &resp.Diagnostics)
		addWarnings(&resp.Diagnostics, []ifi.Warning{ifi.UnknownPrediction(t.Host, t.Instance, "its cluster cannot be assessed: "+
			safetext.Escape(err.Error()))})
		return
	}
	setPlannedAction(ctx, &resp.Plan, &pred.Action, &resp.Diagnostics)
	if pred.Action != ifi.ActionNone {
		addWarnings(&resp.Diagnostics, append(pred.PlanWarnings, pred.Warning))
	}
}

// claimRole refuses a second resource for one cluster role in this run (one on
// each node of an FCI, say), as claimInstance does for one instance.
func (r *ifiResource) claimRole(ca *ifi.ClusterAssessment, plan ifiResourceModel, diags *diag.Diagnostics) bool {
	by := fmt.Sprintf("host = %q, instance = %q", safetext.Escape(plan.Host.ValueString()), safetext.Escape(plan.Instance.ValueString()))
	other, ok := r.c.claim("cluster "+ca.Cluster, "role "+ca.Group, by)
	if ok || other == by {
		return true
	}
	diags.AddAttributeError(path.Root("host"), "Two resources manage one failover cluster instance",
		fmt.Sprintf("This resource (%s) and another mssqlifi_instant_file_initialization resource of this configuration (%s) both manage "+
			"the role %q of cluster %s (instance %s, virtual name %s): they reach it through different nodes. One resource manages the whole "+
			"instance, on every node; two undo each other's changes and restart it twice. Nothing was changed. Keep one resource per failover "+
			"cluster instance, addressed by any one node: remove the other (terraform state rm if it is already in the state).",
			by, other, safetext.Escape(ca.Group), safetext.Escape(ca.Cluster), safetext.Escape(ca.Instance), safetext.Escape(ca.VirtualName)))
	return false
}

// refresh reads the instance for Read: a standalone instance with engine.Read, a
// failover cluster instance (so in the state, or found so by that read) with
// ReadCluster. It returns the state with what was found, the running Engine's
// assessment (empty when not known), the warnings, and the outcome for the memo
// (empty for an FCI, whose reads are not reused by the next operation).
func (r *ifiResource) refresh(ctx context.Context, state ifiResourceModel, d ifi.Desired, t converge.Target) (
	*ifiResourceModel, *ifi.Assessment, []ifi.Warning, *converge.Outcome, error) {
	if !state.Clustered.ValueBool() {
		out, err := r.c.engine().Read(ctx, t, d)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		if out.Read == nil || !out.Read.Clustered {
			return state.withOutcome(out, state.computedModel), out.Assessment, out.Warnings, out, nil
		}
	}
	out, err := r.c.engine().ReadCluster(ctx, clusterTarget(t, state.Nodes, state.SQLHost), d)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	r.c.rememberCluster(t, out)
	a := out.Cluster.OwnerAssessment
	if a == nil {
		a = &ifi.Assessment{Instance: t.Instance}
	}
	return state.withClusterOutcome(out, state.computedModel), a, out.Warnings, &converge.Outcome{}, nil
}

// destroy revokes what the resource granted: on the instance, or on every possible
// owner of a failover cluster instance. It returns the engine's warnings.
func (r *ifiResource) destroy(ctx context.Context, state ifiResourceModel, t converge.Target, d ifi.Desired) ([]ifi.Warning, error) {
	if state.Clustered.ValueBool() {
		out, err := r.c.engine().DestroyCluster(ctx, clusterTarget(t, state.Nodes, state.SQLHost), d)
		return out.Warnings, err
	}
	out, err := r.c.engine().Destroy(ctx, t, d)
	r.c.rememberDestroyed(t.Host, t.Instance, out)
	if out == nil {
		return nil, err
	}
	return out.Warnings, err
}

// recordNodeResults records in cluster_nodes what an apply that could not read the
// nodes back did on each: privilege_granted is the last step the node confirmed
// (a grant or a revoke). Nodes not in the known list are added with what else is
// unknown left null; ifi_survives_failover becomes unknown (null).
func (m *computedModel) recordNodeResults(results []converge.NodeResult) {
	var nodes []attr.Value
	if !m.ClusterNodes.IsNull() {
		nodes = slices.Clone(m.ClusterNodes.Elements())
	}
	changed := false
	for _, nr := range results {
		if len(nr.Done) == 0 {
			continue
		}
		changed = true
		granted := types.BoolValue(nr.Done[len(nr.Done)-1].Grant)
		i := slices.IndexFunc(nodes, func(v attr.Value) bool {
			o, ok := v.(types.Object)
			name, _ := o.Attributes()["name"].(types.String)
			return ok && strings.EqualFold(name.ValueString(), nr.Node)
		})
		vals := map[string]attr.Value{"name": types.StringValue(nr.Node), "current_owner": types.BoolNull(), "possible_owner": types.BoolValue(true),
			"privilege_granted": granted, "policy_defines_right": types.BoolNull()}
		if i < 0 {
			nodes = append(nodes, types.ObjectValueMust(clusterNodeType.AttrTypes, vals))
			continue
		}
		prior, _ := nodes[i].(types.Object)
		maps.Copy(vals, prior.Attributes())
		vals["privilege_granted"] = granted
		nodes[i] = types.ObjectValueMust(clusterNodeType.AttrTypes, vals)
	}
	if changed {
		m.ClusterNodes = types.ListValueMust(clusterNodeType, nodes)
		m.IFISurvivesFailover = types.BoolNull()
	}
}
