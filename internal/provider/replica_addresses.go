package provider

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
)

const replicaAddressesDescription = "Where the provider reaches the SQL Server of availability replicas whose names (as SQL Server reports " +
	"them: `SQL01`, or `SQL01\\INST` for a named instance) do not resolve from where Terraform runs: replica name → `host` or " +
	"`host:port` (a bare host uses this instance's SQL port). Before restarting a secondary replica the provider asks its group's " +
	"primary (which alone sees every replica's health) and takes the group's restart lock there; by default it connects to the " +
	"computer part of the primary's name at this instance's SQL port."

// replicaAddressesValidator checks availability_replica_addresses at plan time:
// each key a replica name, once (SQL Server compares server names without case),
// each value host or host:port.
type replicaAddressesValidator struct{}

var _ validator.Map = replicaAddressesValidator{}

func (replicaAddressesValidator) Description(context.Context) string {
	return "keys must be availability replica names (SQL01 or SQL01\\INST), each once; values host or host:port"
}

func (v replicaAddressesValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (replicaAddressesValidator) ValidateMap(_ context.Context, req validator.MapRequest, resp *validator.MapResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	seen := map[string]string{}
	elems := req.ConfigValue.Elements()
	for _, name := range slices.Sorted(maps.Keys(elems)) {
		p := req.Path.AtMapKey(name)
		if err := converge.CheckReplicaName(name); err != nil {
			resp.Diagnostics.AddAttributeError(p, "Invalid availability replica name", err.Error()+".")
			continue
		}
		if other, dup := seen[strings.ToUpper(name)]; dup {
			resp.Diagnostics.AddAttributeError(p, "Availability replica named twice",
				fmt.Sprintf("%q and %q name the same replica (SQL Server compares server names without case): keep one of them.", other, name))
		}
		seen[strings.ToUpper(name)] = name
		s, ok := elems[name].(types.String)
		if !ok || s.IsUnknown() {
			continue
		}
		if s.IsNull() {
			resp.Diagnostics.AddAttributeError(p, "Invalid availability replica address", fmt.Sprintf("replica %q has no address: give host or host:port.", name))
			continue
		}
		if _, _, err := converge.ParseReplicaAddress(s.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeError(p, "Invalid availability replica address", fmt.Sprintf("replica %q: %v", name, err))
		}
	}
}
