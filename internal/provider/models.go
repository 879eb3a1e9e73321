package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

// ifiResourceModel is the mssqlifi_instant_file_initialization resource's data.
type ifiResourceModel struct {
	ID       types.String `tfsdk:"id"`
	Host     types.String `tfsdk:"host"`
	Instance types.String `tfsdk:"instance"`
	Port     wholeNumber  `tfsdk:"port"`
	SQLPort  wholeNumber  `tfsdk:"sql_port"`
	Enabled  types.Bool   `tfsdk:"enabled"`
	// LockPagesInMemory is lock_pages_in_memory: null leaves the right alone.
	LockPagesInMemory types.Bool   `tfsdk:"lock_pages_in_memory"`
	Grantee           types.String `tfsdk:"grantee"`
	Restart           types.String `tfsdk:"restart"`
	Nodes             types.Map    `tfsdk:"nodes"`
	SQLHost           types.String `tfsdk:"sql_host"`
	// ReplicaAddresses maps availability replica names to host[:port].
	ReplicaAddresses types.Map      `tfsdk:"availability_replica_addresses"`
	Timeouts         timeouts.Value `tfsdk:"timeouts"`
	// PlannedAction is what the plan said the apply does (ifi.Action).
	PlannedAction types.String `tfsdk:"planned_action"`
	computedModel
}

// ifiDataSourceModel is the mssqlifi_instant_file_initialization data source's data.
type ifiDataSourceModel struct {
	ID       types.String `tfsdk:"id"`
	Host     types.String `tfsdk:"host"`
	Instance types.String `tfsdk:"instance"`
	Port     wholeNumber  `tfsdk:"port"`
	SQLPort  wholeNumber  `tfsdk:"sql_port"`
	Grantee  types.String `tfsdk:"grantee"`
	Nodes    types.Map    `tfsdk:"nodes"`
	SQLHost  types.String `tfsdk:"sql_host"`
	computedModel
}

// computedModel holds what the host and SQL Server report (computedAttributes);
// shared by the resource and the data source.
type computedModel struct {
	ServiceName        types.String `tfsdk:"service_name"`
	ServiceAccount     types.String `tfsdk:"service_account"`
	ServiceSID         types.String `tfsdk:"service_sid"`
	GranteeSID         types.String `tfsdk:"grantee_sid"`
	PrivilegeGranted   types.Bool   `tfsdk:"privilege_granted"`
	IFIEnabled         types.Bool   `tfsdk:"ifi_enabled"`
	RestartPending     types.Bool   `tfsdk:"restart_pending"`
	VerifiedBy         types.String `tfsdk:"verified_by"`
	SQLVersion         types.String `tfsdk:"sql_version"`
	GroupPolicyManaged types.Bool   `tfsdk:"group_policy_managed"`
	TDEDatabases       types.List   `tfsdk:"tde_databases"`
	Clustered          types.Bool   `tfsdk:"clustered"`
	AvailabilityGroups types.List   `tfsdk:"availability_groups"`
	AvailabilityRole   types.String `tfsdk:"availability_role"`
	// ClusterNodes and IFISurvivesFailover: null on an instance that is not clustered.
	ClusterNodes        types.List `tfsdk:"cluster_nodes"`
	IFISurvivesFailover types.Bool `tfsdk:"ifi_survives_failover"`
	// LockPagesGranted and MemoryModel: Lock Pages in Memory, reported whether or
	// not the resource manages it.
	LockPagesGranted types.Bool   `tfsdk:"lock_pages_in_memory_granted"`
	MemoryModel      types.String `tfsdk:"memory_model"`
}

func (m *computedModel) set(a *ifi.Assessment) {
	m.ServiceName = types.StringValue(a.ServiceName)
	m.ServiceAccount = types.StringValue(a.ServiceAccount)
	m.ServiceSID = types.StringValue(a.ServiceSID)
	m.GranteeSID = types.StringValue(a.GranteeSID)
	m.PrivilegeGranted = types.BoolValue(a.PrivilegeGranted)
	m.IFIEnabled = types.BoolPointerValue(a.RunningIFI)
	m.RestartPending = types.BoolPointerValue(a.RestartPending)
	m.VerifiedBy = types.StringValue(string(a.VerifiedBy))
	m.SQLVersion = types.StringValue(a.SQLVersion)
	m.GroupPolicyManaged = types.BoolValue(a.GroupPolicyManaged)
	if !a.GroupPolicyKnown {
		m.GroupPolicyManaged = types.BoolNull()
	}
	if a.TDEDatabases == nil {
		m.TDEDatabases = types.ListNull(types.StringType)
	} else {
		m.TDEDatabases = stringList(a.TDEDatabases)
	}
	m.LockPagesGranted, m.MemoryModel = types.BoolNull(), types.StringNull()
	if lp := a.LockPages; lp != nil {
		if lp.Known {
			m.LockPagesGranted = types.BoolValue(lp.Granted)
		}
		if lp.MemoryModel != "" {
			m.MemoryModel = types.StringValue(lp.MemoryModel)
		}
	}
	m.Clustered = types.BoolValue(a.Clustered)
	m.ClusterNodes, m.IFISurvivesFailover = types.ListNull(clusterNodeType), types.BoolNull()
	m.AvailabilityGroups, m.AvailabilityRole = types.ListNull(types.StringType), types.StringNull()
	if a.AG != nil && len(a.AG.Groups) > 0 {
		m.AvailabilityGroups = stringList(a.AG.Groups) // sorted by the engine (converge.observe)
		m.AvailabilityRole = types.StringValue(a.AG.Role)
	}
}

// stringList is a list(string) value of ss, in their order.
func stringList(ss []string) types.List {
	vals := make([]attr.Value, len(ss))
	for i, s := range ss {
		vals[i] = types.StringValue(s)
	}
	return types.ListValueMust(types.StringType, vals)
}

func (m *ifiResourceModel) target() converge.Target {
	return converge.Target{
		Host:             m.Host.ValueString(),
		Instance:         m.Instance.ValueString(),
		Port:             int(m.Port.ValueInt64()),
		SQLPort:          int(m.SQLPort.ValueInt64()),
		ReplicaAddresses: converge.NewReplicaAddresses(stringMap(m.ReplicaAddresses)),
	}
}

// request is the engine's request for the instance: the target, what the arguments
// ask, the memo m (nil: none) and clustered, what the state (or a create's plan)
// says of the instance.
func (m *ifiResourceModel) request(clustered types.Bool, memo *converge.Memo) converge.Request {
	return converge.Request{Target: m.target(), Desired: m.desired(), Memo: memo, Nodes: nodeAddresses(m.Nodes),
		SQLHost: m.SQLHost.ValueString(), Clustered: knownBool(clustered)}
}

// knownBool is v's value; nil when it is null or unknown (an unknown value is not
// false).
func knownBool(v types.Bool) *bool {
	if v.IsNull() || v.IsUnknown() {
		return nil
	}
	return v.ValueBoolPointer()
}

// withResult is m with what the engine's result says is true (withOutcome or, on a
// failover cluster instance, withClusterOutcome); nil when nothing is known to store.
func (m ifiResourceModel) withResult(res *converge.Result, known computedModel) *ifiResourceModel {
	if res.Clustered() {
		return m.withClusterOutcome(res.Cluster, known)
	}
	return m.withOutcome(res.Outcome, known)
}

// refreshed is m, the state a refresh started from, with what the engine's read
// res says: enabled keeps what was asked (for an import, what the host has), the
// computed attributes say what the host has, planned_action what the last apply
// did; an import (converge.Session.Import) also stores the arguments' defaults it
// was assessed against and the ID.
func (m ifiResourceModel) refreshed(res *converge.Result, imported bool) *ifiResourceModel {
	st := m.withResult(res, m.computedModel)
	st.Enabled = types.BoolValue(res.Enabled)
	st.LockPagesInMemory = types.BoolPointerValue(res.LockPages)
	st.PlannedAction = types.StringValue(string(res.Action))
	if imported {
		st.Grantee, st.Restart = types.StringValue(string(res.Desired.Grantee)), types.StringValue(string(res.Desired.Restart))
		if st.Instance.IsNull() {
			st.Instance = types.StringValue(res.Assessment.Instance)
		}
		st.ID = types.StringValue(importID(st.Host.ValueString(), st.Instance.ValueString()))
	}
	return st
}

// importStart is the state an import of host/instance starts from (ImportState
// stores it): the identity (port null when unset) and the ID, every other
// attribute null.
func importStart(host, instance string, port wholeNumber) ifiResourceModel {
	return ifiResourceModel{ID: types.StringValue(importID(host, instance)), Host: types.StringValue(host), Instance: types.StringValue(instance),
		Port: port, SQLPort: int64Null(), Enabled: types.BoolNull(), LockPagesInMemory: types.BoolNull(), Grantee: types.StringNull(),
		Restart: types.StringNull(), Nodes: types.MapNull(types.StringType), SQLHost: types.StringNull(),
		ReplicaAddresses: types.MapNull(types.StringType), Timeouts: nullTimeouts(), PlannedAction: types.StringNull()}
}

// stringMap is a map(string) attribute's known elements.
func stringMap(v types.Map) map[string]string {
	if v.IsNull() || v.IsUnknown() {
		return nil
	}
	out := map[string]string{}
	for k, e := range v.Elements() {
		if s, ok := e.(types.String); ok && !s.IsNull() && !s.IsUnknown() {
			out[k] = s.ValueString()
		}
	}
	return out
}

func (m *ifiResourceModel) desired() ifi.Desired {
	return ifi.Desired{
		Enabled:   m.Enabled.ValueBool(),
		LockPages: knownBool(m.LockPagesInMemory),
		Grantee:   ifi.Grantee(m.Grantee.ValueString()),
		Restart:   ifi.RestartPolicy(m.Restart.ValueString()),
	}
}

// withOutcome is m with what the engine found: the computed attributes and
// `enabled`. When the engine could not say what is true although it changed the
// host (out.Changed), it is m's intent with the computed attributes of known (the
// prior state's, or null after a failed create): the change is recorded, and marked
// unverified by the caller. A nil result means nothing is known to store.
func (m ifiResourceModel) withOutcome(out *converge.Outcome, known computedModel) *ifiResourceModel {
	if out == nil {
		return nil
	}
	if out.Assessment == nil {
		if !out.Changed {
			return nil
		}
		m.computedModel = known
		m.computedModel.nullUnknowns()
		return &m
	}
	m.computedModel.set(out.Assessment)
	m.Enabled = types.BoolValue(out.Enabled)
	m.LockPagesInMemory = types.BoolPointerValue(out.LockPages)
	return &m
}

// nullUnknowns stores null for what is not known: a state holds no unknown value.
func (m *computedModel) nullUnknowns() {
	for _, s := range []*types.String{&m.ServiceName, &m.ServiceAccount, &m.ServiceSID, &m.GranteeSID, &m.VerifiedBy,
		&m.SQLVersion, &m.AvailabilityRole, &m.MemoryModel} {
		if s.IsUnknown() {
			*s = types.StringNull()
		}
	}
	for _, b := range []*types.Bool{&m.PrivilegeGranted, &m.IFIEnabled, &m.RestartPending, &m.GroupPolicyManaged, &m.Clustered,
		&m.IFISurvivesFailover, &m.LockPagesGranted} {
		if b.IsUnknown() {
			*b = types.BoolNull()
		}
	}
	for _, l := range []*types.List{&m.TDEDatabases, &m.AvailabilityGroups} {
		if l.IsUnknown() || l.ElementType(context.Background()) == nil {
			*l = types.ListNull(types.StringType)
		}
	}
	if m.ClusterNodes.IsUnknown() || m.ClusterNodes.ElementType(context.Background()) == nil {
		m.ClusterNodes = types.ListNull(clusterNodeType)
	}
}

func (m *ifiDataSourceModel) target() converge.Target {
	return instanceTarget(m.Host, m.Instance, m.Port, m.SQLPort)
}

// instanceTarget is the engine's target of a host's instance as the data source
// and the restart action name it (the instance DefaultInstance when unset).
func instanceTarget(host, instance types.String, port, sqlPort wholeNumber) converge.Target {
	return converge.InstanceTarget(host.ValueString(), instance.ValueString(), int(port.ValueInt64()), int(sqlPort.ValueInt64()), nil)
}

// importID is the resource's ID and the import ID: HOST/INSTANCE.
func importID(host, instance string) string { return host + "/" + instance }

// nodeAddresses is the `nodes` argument n as node name → address; nil when unset.
func nodeAddresses(n types.Map) map[string]string {
	if n.IsNull() || n.IsUnknown() {
		return nil
	}
	out := make(map[string]string, len(n.Elements()))
	for name, v := range n.Elements() {
		if s, ok := v.(types.String); ok && !s.IsNull() && !s.IsUnknown() {
			out[name] = s.ValueString()
		}
	}
	return out
}
