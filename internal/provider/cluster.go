package provider

import (
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

// Failover cluster instances (design/cluster.md): what an FCI needs is decided in
// internal/ifi and done in internal/converge, which chooses the cluster path; this
// file maps the cluster part of the engine's result into the state.

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
