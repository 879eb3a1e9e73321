package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

// availability_groups is the list of the groups' names in the engine's (sorted)
// order, null outside any group; a model never set stores null, not a list of no
// type.
func TestAvailabilityGroupsList(t *testing.T) {
	var m computedModel
	m.set(&ifi.Assessment{AG: &ifi.AGMembership{Groups: []string{"AG1", "AG2"}, Role: ifi.RolePrimary}})
	want := types.ListValueMust(types.StringType, []attr.Value{types.StringValue("AG1"), types.StringValue("AG2")})
	if !m.AvailabilityGroups.Equal(want) || m.AvailabilityRole.ValueString() != ifi.RolePrimary {
		t.Errorf("two groups: availability_groups %v, availability_role %v; want %v, primary", m.AvailabilityGroups, m.AvailabilityRole, want)
	}
	for _, ag := range []*ifi.AGMembership{nil, {Groups: []string{}}} {
		m.set(&ifi.Assessment{AG: ag})
		if !m.AvailabilityGroups.Equal(types.ListNull(types.StringType)) || !m.AvailabilityRole.IsNull() {
			t.Errorf("no group (%v): availability_groups %v, availability_role %v; want null", ag, m.AvailabilityGroups, m.AvailabilityRole)
		}
	}
	var empty computedModel
	empty.nullUnknowns()
	if !empty.AvailabilityGroups.Equal(types.ListNull(types.StringType)) {
		t.Errorf("an unset model stores availability_groups %v, want a null list(string)", empty.AvailabilityGroups)
	}
	unknown := computedModel{AvailabilityGroups: types.ListUnknown(types.StringType)}
	unknown.nullUnknowns()
	if !unknown.AvailabilityGroups.Equal(types.ListNull(types.StringType)) {
		t.Errorf("an unknown availability_groups is stored as %v, want null", unknown.AvailabilityGroups)
	}
}

// Every fact the engine may say an apply changes (ifi.Field) is a computed
// attribute of the resource, which the plan can then mark unknown: a fact the
// schema lacks would fail every plan that changes it.
func TestFieldsAreComputedAttributes(t *testing.T) {
	ctx := context.Background()
	var sr resource.SchemaResponse
	(&ifiResource{}).Schema(ctx, resource.SchemaRequest{}, &sr)
	if sr.Diagnostics.HasError() {
		t.Fatal(sr.Diagnostics)
	}
	for _, f := range ifi.AllFields {
		a, ok := sr.Schema.Attributes[string(f)]
		if !ok || !a.IsComputed() || a.IsOptional() {
			t.Errorf("ifi.Field %q is not a computed-only attribute of the resource", f)
			continue
		}
		plan := tfsdk.Plan{Schema: sr.Schema, Raw: tftypes.NewValue(sr.Schema.Type().TerraformType(ctx), nil)}
		if d := plan.SetAttribute(ctx, path.Root(string(f)), unknownOf(computedAttributes[string(f)].kind)); d.HasError() {
			t.Errorf("ifi.Field %q: the plan cannot mark it unknown: %v", f, d)
		}
	}
}
