package provider

import (
	"errors"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

func nodeObject(name string, owner, granted types.Bool) attr.Value {
	return types.ObjectValueMust(clusterNodeType.AttrTypes, map[string]attr.Value{"name": types.StringValue(name), "current_owner": owner,
		"possible_owner": types.BoolValue(true), "privilege_granted": granted, "policy_defines_right": types.BoolValue(false)})
}

// An apply that granted on one node, failed on the next and could not read the
// nodes back records the grant it made in cluster_nodes, keeps what else was known,
// and no longer claims to know whether IFI survives a failover.
func TestHalfDoneNodeResultsAreRecorded(t *testing.T) {
	grant := ifi.Step{Grant: true, SID: defaultSvcSID}
	results := []converge.NodeResult{
		{Node: "NODE1", Planned: []ifi.Step{grant}, Done: []ifi.Step{grant}, Changed: true},
		{Node: "NODE2", Planned: []ifi.Step{grant}, Err: errors.New("HTTP 500")},
	}
	out := &converge.ClusterOutcome{Changed: true, Nodes: results}
	plan := ifiResourceModel{Enabled: types.BoolValue(true)}

	// After a failed create nothing else is known: the node granted is listed alone.
	st := plan.withClusterOutcome(out, computedModel{})
	if st == nil {
		t.Fatal("a half-done apply stored nothing")
	}
	want := types.ListValueMust(clusterNodeType, []attr.Value{
		types.ObjectValueMust(clusterNodeType.AttrTypes, map[string]attr.Value{"name": types.StringValue("NODE1"), "current_owner": types.BoolNull(),
			"possible_owner": types.BoolValue(true), "privilege_granted": types.BoolValue(true), "policy_defines_right": types.BoolNull()}),
	})
	if !st.ClusterNodes.Equal(want) || !st.IFISurvivesFailover.IsNull() {
		t.Errorf("after a failed create: cluster_nodes %v, ifi_survives_failover %v; want %v, null", st.ClusterNodes, st.IFISurvivesFailover, want)
	}

	// After a failed update the prior state's nodes stay, with NODE1's grant recorded.
	var known computedModel
	known.ClusterNodes = types.ListValueMust(clusterNodeType, []attr.Value{
		nodeObject("node1", types.BoolValue(true), types.BoolValue(false)), nodeObject("NODE2", types.BoolValue(false), types.BoolValue(false))})
	known.IFISurvivesFailover = types.BoolValue(false)
	st = plan.withClusterOutcome(out, known)
	want = types.ListValueMust(clusterNodeType, []attr.Value{
		nodeObject("node1", types.BoolValue(true), types.BoolValue(true)), nodeObject("NODE2", types.BoolValue(false), types.BoolValue(false))})
	if !st.ClusterNodes.Equal(want) || !st.IFISurvivesFailover.IsNull() {
		t.Errorf("after a failed update: cluster_nodes %v, ifi_survives_failover %v; want %v, null", st.ClusterNodes, st.IFISurvivesFailover, want)
	}

	// Nothing done on any node and nothing sent: nothing to store.
	if st := plan.withClusterOutcome(&converge.ClusterOutcome{Nodes: results[1:]}, known); st != nil {
		t.Errorf("an apply that changed nothing stored %v", st)
	}
}
