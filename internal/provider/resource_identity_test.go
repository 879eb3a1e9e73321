package provider

import (
	"context"
	"math/big"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// An import identity's port that is not a whole number is refused, naming it, as
// the configuration's ports are (issue 36), not read as the framework's internal
// error.
func TestIdentityPortMustBeAWholeNumber(t *testing.T) {
	ctx := context.Background()
	var sr resource.IdentitySchemaResponse
	(&ifiResource{}).IdentitySchema(ctx, resource.IdentitySchemaRequest{}, &sr)
	typ := tftypes.Object{AttributeTypes: map[string]tftypes.Type{"host": tftypes.String, "port": tftypes.Number, "instance": tftypes.String}}
	identity := func(port string) *tfsdk.ResourceIdentity {
		f, _, _ := big.ParseFloat(port, 10, 128, big.ToNearestEven)
		return &tfsdk.ResourceIdentity{Schema: sr.IdentitySchema, Raw: tftypes.NewValue(typ, map[string]tftypes.Value{
			"host": tftypes.NewValue(tftypes.String, "sql01"), "port": tftypes.NewValue(tftypes.Number, f),
			"instance": tftypes.NewValue(tftypes.String, nil)})}
	}
	if _, p, _, err := identityTarget(ctx, identity("5986")); err != nil || p != 5986 {
		t.Fatalf("port 5986: %d, %v", p, err)
	}
	_, _, _, err := identityTarget(ctx, identity("5985.5"))
	if err == nil || !strings.Contains(err.Error(), "port takes a whole number; 5985.5 is not one") || strings.Contains(err.Error(), "always an error") {
		t.Fatalf("port 5985.5: %v; want it refused as not a whole number", err)
	}
}
