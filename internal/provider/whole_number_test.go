package provider

import (
	"context"
	"math/big"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr/xattr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// A whole number reads as Int64 does; any other number reads as an unknown value
// that the attribute's validation refuses, naming the argument and the number.
func TestWholeNumberType(t *testing.T) {
	ctx := context.Background()
	num := func(s string) tftypes.Value {
		f, _, err := big.ParseFloat(s, 10, 512, big.ToNearestEven)
		if err != nil {
			t.Fatal(err)
		}
		return tftypes.NewValue(tftypes.Number, f)
	}
	for _, tc := range []struct {
		in      tftypes.Value
		want    string // the value's String(); "": refused
		refused string
	}{
		{in: num("5985"), want: "5985"},
		{in: num("-1"), want: "-1"},
		{in: tftypes.NewValue(tftypes.Number, nil), want: "<null>"},
		{in: tftypes.NewValue(tftypes.Number, tftypes.UnknownValue), want: "<unknown>"},
		{in: num("5985.5"), refused: "5985.5"},
		{in: num("1e30"), refused: "1e+30"},
		{in: num("9223372036854775808"), refused: "9.223372036854775808e+18"},
	} {
		v, err := wholeNumberType{}.ValueFromTerraform(ctx, tc.in)
		if err != nil {
			t.Fatalf("%v: %v", tc.in, err)
		}
		resp := &xattr.ValidateAttributeResponse{}
		asType[wholeNumber](t, v).ValidateAttribute(ctx, xattr.ValidateAttributeRequest{Path: path.Root("port")}, resp)
		if tc.refused == "" {
			if resp.Diagnostics.HasError() || v.String() != tc.want || !v.Type(ctx).Equal(wholeNumberType{}) {
				t.Errorf("%v: %s %v; want %s, accepted", tc.in, v, resp.Diagnostics, tc.want)
			}
			continue
		}
		if !v.IsUnknown() || !resp.Diagnostics.HasError() ||
			!strings.Contains(resp.Diagnostics[0].Detail(), "port takes a whole number; "+tc.refused+" is not one") {
			t.Errorf("%v: %s %v; want refused naming %s", tc.in, v, resp.Diagnostics, tc.refused)
		}
	}
}
