package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/attr"
	dschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	rschema "github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// computedAttr is one attribute the host and SQL Server report (computedModel). The
// resource and the data source build their schemas from the one table below.
type computedAttr struct {
	kind        computedKind
	description string
	// dataSourceDescription replaces description where the data source's value
	// is worded otherwise (it reports the grant of its `grantee`, changing nothing).
	dataSourceDescription string
}

type computedKind int

const (
	computedString computedKind = iota
	computedBool
	computedStringList
	computedNodeList // cluster_nodes: a list of clusterNodeAttributes objects
)

var computedAttributes = map[string]computedAttr{
	"service_name": {kind: computedString,
		description: "Windows service of the Database Engine: `MSSQLSERVER` or `MSSQL$NAME`."},
	"service_account": {kind: computedString,
		description: "Account the Engine service starts as (`Win32_Service.StartName`)."},
	"service_sid": {kind: computedString,
		description: "Per-service SID of the Engine (`NT SERVICE\\<service>`), computed from the service name."},
	"grantee_sid": {kind: computedString,
		description: "SID that receives the right, per `grantee`.",
		dataSourceDescription: "SID whose grant `privilege_granted` reports, per `grantee`: the service SID (the default, the one SQL Server " +
			"Setup grants the right to) or the SID of the service's start account."},
	"privilege_granted": {kind: computedBool,
		description:           "The grantee directly holds *Perform volume maintenance tasks*.",
		dataSourceDescription: "The `grantee` (`grantee_sid`) directly holds *Perform volume maintenance tasks*."},
	"ifi_enabled": {kind: computedBool,
		description: "Whether the running Engine really has IFI, as SQL Server reports it; null when it cannot be verified."},
	"restart_pending": {kind: computedBool,
		description: "The running Engine's IFI differs from what its next start will give; null when it cannot be verified."},
	"verified_by": {kind: computedString,
		description: "How `ifi_enabled` was verified: `sql_dmv` (`sys.dm_server_services`), `errorlog` (the startup line of the current error log) or `none`."},
	"sql_version": {kind: computedString,
		description: "SQL Server build, e.g. `16.0.4135.4`."},
	"group_policy_managed": {kind: computedBool,
		description: "A domain Group Policy defines who holds the right; the resource then refuses changes the policy would revert. " +
			"Null when the host cannot tell (RSoP has no data or cannot be read), with a warning."},
	"tde_databases": {kind: computedStringList,
		description: "Databases with Transparent Data Encryption, whose data files IFI never applies to; null when unknown (no SQL credentials)."},
	"availability_groups": {kind: computedStringList,
		description: "Names of the Always On availability groups the instance is a replica of, as SQL Server reports them, sorted; " +
			"null when it is in none, or when SQL Server cannot be asked (no `sql` block)."},
	"availability_role": {kind: computedString,
		description: "The instance's availability replica role: `primary`, `secondary` or `resolving` (`primary` when it is the primary of any " +
			"group); null when it is in no group, or when SQL Server cannot be asked. With `restart = \"if_needed\"` a primary (or resolving) replica is never restarted."},
	"lock_pages_in_memory_granted": {kind: computedBool,
		description: "The grantee directly holds *Lock pages in memory* (`SeLockMemoryPrivilege`); null when the host does not report it.",
		dataSourceDescription: "The `grantee` (`grantee_sid`) directly holds *Lock pages in memory* (`SeLockMemoryPrivilege`); null when " +
			"the host does not report it."},
	"memory_model": {kind: computedString,
		description: "The running Engine's memory model: `LOCK_PAGES` (Lock Pages in Memory in effect), `LARGE_PAGES` (large pages, locked " +
			"as well) or `CONVENTIONAL`, from `sys.dm_os_sys_info.sql_memory_model_desc` (SQL Server 2016 SP1 and later) or, without it, " +
			"the current error log's startup line (\"Using locked pages in the memory manager.\"); null when neither says."},
	"clustered": {kind: computedBool,
		description: "The instance is a failover cluster instance (FCI). It is never restarted through the service manager: " +
			"see `restart` for the ways through the cluster."},
	"cluster_nodes": {kind: computedNodeList,
		description: "On a failover cluster instance, one object per node of the cluster, as the cluster (`root\\MSCluster`) and " +
			"each node's own LSA report them; null on an instance that is not clustered. A node that is not a possible owner " +
			"is listed but not read (`privilege_granted` and `policy_defines_right` null)."},
	"ifi_survives_failover": {kind: computedBool,
		description: "On a failover cluster instance, whether **every possible owner** grants the right to the grantee, so that " +
			"the Engine has IFI on whichever node it runs after a failover; null on an instance that is not clustered, or when a " +
			"possible owner could not be read."},
}

// clusterNodeAttributes are the attributes of one cluster_nodes object.
var clusterNodeAttributes = []struct {
	name, description string
	kind              computedKind
}{
	{"name", "The node's name, as the cluster lists it.", computedString},
	{"current_owner", "The instance's role runs on this node now.", computedBool},
	{"possible_owner", "The node is a possible owner of the instance (of every resource of its role): the role may fail over to it.", computedBool},
	{"privilege_granted", "The node's LSA grants the right to the grantee; null when the node was not read.", computedBool},
	{"policy_defines_right", "A domain Group Policy defines who holds the right on this node (it would revert a local grant); " +
		"null when the node was not read or cannot tell.", computedBool},
}

// clusterNodeType is the object type of one cluster_nodes element.
var clusterNodeType = func() types.ObjectType {
	at := map[string]attr.Type{}
	for _, a := range clusterNodeAttributes {
		at[a.name] = types.StringType
		if a.kind == computedBool {
			at[a.name] = types.BoolType
		}
	}
	return types.ObjectType{AttrTypes: at}
}()

// computedResourceAttributes are the resource's computed attributes. A plan keeps
// each one's state value (UseStateForUnknown) unless the engine says the apply
// changes it to a value it can tell (converge.Prediction.Known) or one it cannot
// (converge.Prediction.MayChange, unknown): the diff is exact.
func computedResourceAttributes() map[string]rschema.Attribute {
	attrs := make(map[string]rschema.Attribute, len(computedAttributes))
	for name, a := range computedAttributes {
		switch a.kind {
		case computedString:
			attrs[name] = rschema.StringAttribute{Computed: true, MarkdownDescription: a.description,
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}}
		case computedBool:
			attrs[name] = rschema.BoolAttribute{Computed: true, MarkdownDescription: a.description,
				PlanModifiers: []planmodifier.Bool{boolplanmodifier.UseStateForUnknown()}}
		case computedStringList:
			attrs[name] = rschema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: a.description,
				PlanModifiers: []planmodifier.List{listplanmodifier.UseStateForUnknown()}}
		case computedNodeList:
			nested := map[string]rschema.Attribute{}
			for _, n := range clusterNodeAttributes {
				nested[n.name] = rschema.StringAttribute{Computed: true, MarkdownDescription: n.description}
				if n.kind == computedBool {
					nested[n.name] = rschema.BoolAttribute{Computed: true, MarkdownDescription: n.description}
				}
			}
			attrs[name] = rschema.ListNestedAttribute{Computed: true, MarkdownDescription: a.description,
				NestedObject:  rschema.NestedAttributeObject{Attributes: nested},
				PlanModifiers: []planmodifier.List{listplanmodifier.UseStateForUnknown()}}
		}
	}
	return attrs
}

// computedDataSourceAttributes are the data source's computed attributes.
func computedDataSourceAttributes() map[string]dschema.Attribute {
	attrs := make(map[string]dschema.Attribute, len(computedAttributes))
	for name, a := range computedAttributes {
		desc := a.description
		if a.dataSourceDescription != "" {
			desc = a.dataSourceDescription
		}
		switch a.kind {
		case computedString:
			attrs[name] = dschema.StringAttribute{Computed: true, MarkdownDescription: desc}
		case computedBool:
			attrs[name] = dschema.BoolAttribute{Computed: true, MarkdownDescription: desc}
		case computedStringList:
			attrs[name] = dschema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: desc}
		case computedNodeList:
			nested := map[string]dschema.Attribute{}
			for _, n := range clusterNodeAttributes {
				nested[n.name] = dschema.StringAttribute{Computed: true, MarkdownDescription: n.description}
				if n.kind == computedBool {
					nested[n.name] = dschema.BoolAttribute{Computed: true, MarkdownDescription: n.description}
				}
			}
			attrs[name] = dschema.ListNestedAttribute{Computed: true, MarkdownDescription: desc,
				NestedObject: dschema.NestedAttributeObject{Attributes: nested}}
		}
	}
	return attrs
}
