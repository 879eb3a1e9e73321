package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

func (r *ifiResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	attrs := map[string]schema.Attribute{
		"id": schema.StringAttribute{
			Computed:            true,
			MarkdownDescription: "`HOST/INSTANCE`. The import ID is this, or `HOST:PORT/INSTANCE` for a host on another WinRM port than the provider's.",
			PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
		},
		"host": schema.StringAttribute{
			Required: true,
			MarkdownDescription: "DNS name or IP address of the Windows host, as WinRM reaches it. Changing it replaces the resource " +
				"(the old host's grant is revoked).",
			Validators:    []validator.String{hostValidator},
			PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
		},
		"instance": schema.StringAttribute{
			Optional: true,
			Computed: true,
			Default:  stringdefault.StaticString(DefaultInstance),
			MarkdownDescription: "SQL Server instance name: `MSSQLSERVER` (the default instance, default) or a named instance's " +
				"name such as `REPORTING`. Changing it replaces the resource.",
			Validators:    []validator.String{instanceNameValidator},
			PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
		},
		"port": schema.Int64Attribute{CustomType: wholeNumberType{},
			Optional:            true,
			MarkdownDescription: "WinRM port of this host (on a failover cluster instance, of every node), overriding the provider's `winrm.port`.",
			Validators:          []validator.Int64{int64validator.Between(1, 65535)},
		},
		"sql_port": schema.Int64Attribute{CustomType: wholeNumberType{},
			Optional:            true,
			MarkdownDescription: "TCP port of the instance's SQL endpoint, overriding the port the host reports (use it with dynamic ports or port forwarding).",
			Validators:          []validator.Int64{int64validator.Between(1, 65535)},
		},
		"enabled": schema.BoolAttribute{
			Optional: true,
			Computed: true,
			Default:  booldefault.StaticBool(true),
			MarkdownDescription: "Whether IFI should be on (default `true`). `false` revokes the grantee's right. When the start account " +
				"is an administrator or LocalSystem, IFI stays on anyway; the provider warns instead of showing a diff forever.",
		},
		"lock_pages_in_memory": schema.BoolAttribute{
			Optional: true,
			MarkdownDescription: "Whether the grantee should hold *Lock pages in memory* (`SeLockMemoryPrivilege`), with which the Engine " +
				"allocates its buffer pool as locked pages that Windows never pages out. Unset (the default) leaves the right alone. It goes " +
				"to the same grantee as IFI's right, and when one apply changes both, SQL Server restarts **once**, after both are in place " +
				"(the plan says \"grants two rights and restarts once\"). The plan that grants it warns when `max server memory (MB)` is " +
				"SQL Server's default (no limit). Verified through `sys.dm_os_sys_info.sql_memory_model_desc` (SQL Server 2016 SP1 and " +
				"later), else the error log's startup line: see `memory_model`. Express and Web do not use locked pages; not yet managed on a " +
				"failover cluster instance (the apply refuses). A destroy revokes it when it was `true` (never restarting: the running " +
				"Engine keeps its locked pages until its next restart). An import leaves it unset: setting it then plans an update with " +
				"`planned_action = \"none\"` where the host already has the right, and the apply changes nothing on the host.",
		},
		"grantee": schema.StringAttribute{
			Optional: true,
			Computed: true,
			Default:  stringdefault.StaticString(string(ifi.GranteeServiceSID)),
			MarkdownDescription: "Who receives the right: `service_sid` (default, `NT SERVICE\\<service>`, as SQL Server Setup does) or " +
				"`service_account` (the service's start account). Changing it moves the grant in one apply.",
			Validators: []validator.String{stringvalidator.OneOf(string(ifi.GranteeServiceSID), string(ifi.GranteeServiceAccount))},
		},
		"restart": schema.StringAttribute{
			Optional: true,
			Computed: true,
			Default:  stringdefault.StaticString(string(ifi.RestartIfNeeded)),
			MarkdownDescription: "`if_needed` (default): restart the Database Engine (and the dependent services that were running) when " +
				"that is what makes IFI as asked, except on a failover cluster instance or the **primary** replica of an Always On availability " +
				"group, a replica whose role cannot be established, a replica of a group that is not healthy, or while a backup or restore runs: " +
				"the apply then refuses before changing anything (see Restart safety; secondaries restart as usual). " +
				"`if_needed_including_primary`: as `if_needed`, but also restart a primary replica or one whose role is unknown (its databases are " +
				"unavailable until it is back, unless the group fails over). `never`: change the right only; a pending restart is reported in `restart_pending` and a warning. " +
				"On a failover cluster instance only, restarts go through the cluster, once every possible owner holds the right: " +
				"`failover` moves the role to the best other possible owner (the first preferred owner, then the others, that is up, not paused " +
				"and holds the right), follows it to Online and verifies IFI through the virtual name. A move stops SQL Server on one node and " +
				"starts it on the other: **about a restart's downtime**, and the old node is then free to be patched. When the role allows " +
				"failback (`AutoFailbackType`) and the target is not its first preferred owner, the cluster moves it back later, within its " +
				"failback window: **a second outage** (the plan warns). `cluster_restart` takes the SQL Server resource offline and brings the " +
				"role online again on the node it runs on (a restart's downtime, no move), SQL Server Agent included. Both count as restarts for " +
				"`max_parallel_restarts`, and both are refused on an availability-group primary as `if_needed` is.",
			Validators: []validator.String{stringvalidator.OneOf(restartPolicyNames()...)},
		},
	}
	attrs["nodes"] = schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: nodesDescription,
		Validators: []validator.Map{nodesValidator{}}}
	attrs["sql_host"] = schema.StringAttribute{Optional: true, MarkdownDescription: sqlHostDescription, Validators: []validator.String{hostValidator}}
	attrs["availability_replica_addresses"] = schema.MapAttribute{Optional: true, ElementType: types.StringType,
		MarkdownDescription: replicaAddressesDescription, Validators: []validator.Map{replicaAddressesValidator{}}}
	attrs["planned_action"] = plannedActionAttribute()
	for k, v := range computedResourceAttributes() {
		attrs[k] = v
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Manages Instant File Initialization of one SQL Server instance: grants (or revokes) " +
			"*Perform volume maintenance tasks* (`SeManageVolumePrivilege`) and, with `restart = \"if_needed\"`, restarts the " +
			"Database Engine so the change takes effect, then verifies it through SQL Server. Destroying the resource revokes the " +
			"grant and never restarts.",
		Attributes: attrs,
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Update: true, Delete: true, Read: true}),
		},
	}
}

// nodesDescription is the `nodes` argument's, for the resource and the data source.
const nodesDescription = "On a failover cluster instance (FCI), the addresses WinRM reaches the cluster's nodes at, by node name " +
	"(`{ NODE1 = \"node1.contoso.com\", NODE2 = \"10.0.0.12\" }`), where the node names the cluster reports do not resolve from where " +
	"Terraform runs. A node left out is reached by its name. `host` is one node's address; WinRM goes to each node directly, " +
	"with the provider's settings (never to the virtual network name, never from one node to another). A node named here " +
	"that is not a possible owner of the instance is an error naming it. Ignored on an instance that is not clustered."

// sqlHostDescription is the `sql_host` argument's, for the resource and the data source.
const sqlHostDescription = "On a failover cluster instance, where SQL Server answers: its virtual network name (DNS name or IP " +
	"address) as reached from where Terraform runs. Default: the DNS name of the role's network name, as the cluster reports it. " +
	"`ifi_enabled` is what the Engine running on the current owner reports there. Ignored on an instance that is not clustered " +
	"(SQL Server is asked at `host`)."

// restartPolicyNames are the values `restart` accepts (ifi.RestartPolicies).
func restartPolicyNames() []string {
	names := make([]string, len(ifi.RestartPolicies))
	for i, p := range ifi.RestartPolicies {
		names[i] = string(p)
	}
	return names
}
