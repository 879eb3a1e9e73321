package provider

import (
	"context"
	"fmt"
	"math/big"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/attr/xattr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// wholeNumberType is the type of every integer argument (ports, counts): Int64's,
// except that a number in the configuration that is not a whole number (port =
// 5985.5), or lies beyond int64, becomes a plan-time error at its argument, where
// the framework's Int64Type fails to read the configuration ("This is always an
// error in the provider"). The arguments' validators then say the range.
type wholeNumberType struct {
	basetypes.Int64Type
}

var (
	_ basetypes.Int64Typable      = wholeNumberType{}
	_ basetypes.Int64Valuable     = wholeNumber{}
	_ xattr.ValidateableAttribute = wholeNumber{}
)

func (t wholeNumberType) Equal(o attr.Type) bool {
	_, ok := o.(wholeNumberType)
	return ok
}

func (t wholeNumberType) String() string { return "provider.wholeNumberType" }

func (t wholeNumberType) ValueType(context.Context) attr.Value { return wholeNumber{} }

func (t wholeNumberType) ValueFromInt64(_ context.Context, v basetypes.Int64Value) (basetypes.Int64Valuable, diag.Diagnostics) {
	return wholeNumber{Int64Value: v}, nil
}

// ValueFromTerraform reads a number; one that is not a whole number in int64's
// range becomes an unknown value that remembers it (wholeNumber.ValidateAttribute
// refuses it), so that reading the configuration does not fail.
func (t wholeNumberType) ValueFromTerraform(ctx context.Context, in tftypes.Value) (attr.Value, error) {
	if in.IsKnown() && !in.IsNull() {
		var f *big.Float
		if err := in.As(&f); err != nil {
			return nil, err
		}
		if _, acc := f.Int64(); !f.IsInt() || acc != big.Exact {
			return wholeNumber{Int64Value: basetypes.NewInt64Unknown(), given: f.Text('g', -1)}, nil
		}
	}
	v, err := t.Int64Type.ValueFromTerraform(ctx, in)
	if err != nil {
		return nil, err
	}
	i, ok := v.(basetypes.Int64Value)
	if !ok {
		return nil, fmt.Errorf("a whole number read as %T, not an Int64 value", v)
	}
	return wholeNumber{Int64Value: i}, nil
}

// wholeNumber is a value of wholeNumberType: an Int64 value, and the number the
// configuration gave when it is not a whole number in int64's range.
type wholeNumber struct {
	basetypes.Int64Value
	given string
}

// int64Value is v as a whole number argument's value.
func int64Value(v int64) wholeNumber { return wholeNumber{Int64Value: basetypes.NewInt64Value(v)} }

// int64Null is a whole number argument that is not set.
func int64Null() wholeNumber { return wholeNumber{Int64Value: basetypes.NewInt64Null()} }

func (v wholeNumber) Type(context.Context) attr.Type { return wholeNumberType{} }

func (v wholeNumber) Equal(o attr.Value) bool {
	other, ok := o.(wholeNumber)
	return ok && v.given == other.given && v.Int64Value.Equal(other.Int64Value)
}

// ValidateAttribute refuses a number that is not a whole number, naming it.
func (v wholeNumber) ValidateAttribute(_ context.Context, req xattr.ValidateAttributeRequest, resp *xattr.ValidateAttributeResponse) {
	if v.given == "" {
		return
	}
	resp.Diagnostics.AddAttributeError(req.Path, "Not a whole number",
		fmt.Sprintf("%s takes a whole number; %s is not one (or lies beyond what 64 bits hold). Write it without a fraction, such as 5985.", req.Path, v.given))
}
