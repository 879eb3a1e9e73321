package provider

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/resource"
)

// Every integer argument of every schema the provider serves (the provider's own,
// its resource, data sources, action and list resource, nested blocks included) is
// a wholeNumberType, so that 5985.5 is refused at its argument with the range
// rather than failing in the framework ("This is always an error in the provider").
// A new Int64 attribute without it fails here, naming the schema and the path.
func TestEveryIntegerArgumentIsAWholeNumber(t *testing.T) {
	ctx := context.Background()
	p := New("test")()
	schemas := map[string]any{}
	var ps provider.SchemaResponse
	p.Schema(ctx, provider.SchemaRequest{}, &ps)
	schemas["provider"] = ps.Schema
	pa, ok := p.(interface {
		Resources(context.Context) []func() resource.Resource
		DataSources(context.Context) []func() datasource.DataSource
		Actions(context.Context) []func() action.Action
		ListResources(context.Context) []func() list.ListResource
	})
	if !ok {
		t.Fatal("the provider serves no resources, data sources, actions or list resources")
	}
	for _, f := range pa.Resources(ctx) {
		r := f()
		var m resource.MetadataResponse
		r.Metadata(ctx, resource.MetadataRequest{ProviderTypeName: "mssqlifi"}, &m)
		var s resource.SchemaResponse
		r.Schema(ctx, resource.SchemaRequest{}, &s)
		schemas["resource "+m.TypeName] = s.Schema
		if ri, ok := r.(resource.ResourceWithIdentity); ok {
			var is resource.IdentitySchemaResponse
			ri.IdentitySchema(ctx, resource.IdentitySchemaRequest{}, &is)
			schemas["identity of "+m.TypeName] = is.IdentitySchema
		}
	}
	for _, f := range pa.DataSources(ctx) {
		d := f()
		var m datasource.MetadataResponse
		d.Metadata(ctx, datasource.MetadataRequest{ProviderTypeName: "mssqlifi"}, &m)
		var s datasource.SchemaResponse
		d.Schema(ctx, datasource.SchemaRequest{}, &s)
		schemas["data source "+m.TypeName] = s.Schema
	}
	for _, f := range pa.Actions(ctx) {
		a := f()
		var m action.MetadataResponse
		a.Metadata(ctx, action.MetadataRequest{ProviderTypeName: "mssqlifi"}, &m)
		var s action.SchemaResponse
		a.Schema(ctx, action.SchemaRequest{}, &s)
		schemas["action "+m.TypeName] = s.Schema
	}
	for _, f := range pa.ListResources(ctx) {
		l := f()
		var m resource.MetadataResponse
		l.Metadata(ctx, resource.MetadataRequest{ProviderTypeName: "mssqlifi"}, &m)
		var s list.ListResourceSchemaResponse
		l.ListResourceConfigSchema(ctx, list.ListResourceSchemaRequest{}, &s)
		schemas["list resource "+m.TypeName] = s.Schema
	}
	ints := 0
	for name, s := range schemas {
		walkInt64Attributes(reflect.ValueOf(s), name, func(where string, custom reflect.Value, computedOnly bool) {
			if computedOnly {
				return
			}
			ints++
			if !custom.IsValid() || custom.IsNil() || custom.Elem().Type() != reflect.TypeOf(wholeNumberType{}) {
				t.Errorf("%s is an Int64 argument without CustomType: wholeNumberType{}", where)
			}
		})
	}
	if ints < 8 {
		t.Errorf("found %d integer arguments in %d schemas; the walk misses some (ports, sql_port, max_parallel_restarts...)", ints, len(schemas))
	}
}

// walkInt64Attributes calls found for each Int64 attribute under v (a schema, its
// attribute maps, nested attributes and blocks), with its path, its CustomType and
// whether it is computed only (not an argument).
func walkInt64Attributes(v reflect.Value, where string, found func(string, reflect.Value, bool)) {
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if !v.IsNil() {
			walkInt64Attributes(v.Elem(), where, found)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			walkInt64Attributes(v.MapIndex(k), where+"."+k.String(), found)
		}
	case reflect.Struct:
		if strings.HasSuffix(v.Type().Name(), "Int64Attribute") {
			computed := v.FieldByName("Computed")
			optional, required := v.FieldByName("Optional"), v.FieldByName("Required")
			computedOnly := computed.IsValid() && computed.Bool() && !(optional.IsValid() && optional.Bool()) && !(required.IsValid() && required.Bool())
			found(where, v.FieldByName("CustomType"), computedOnly)
			return
		}
		for _, f := range []string{"Attributes", "Blocks", "NestedObject"} {
			if fv := v.FieldByName(f); fv.IsValid() {
				walkInt64Attributes(fv, where, found)
			}
		}
	}
}
