package provider

import (
	"context"
	"math/big"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// The provider as Terraform calls it over protocol 6, without a CLI: the
// framework's provider server, its RPCs called directly. The kinds Terraform 1.14
// brought (actions, list resources) are tested this way in every run, and with the
// real CLI where one is at hand.

// protoProvider is one configured provider server.
type protoProvider struct {
	t      *testing.T
	s      tfprotov6.ProviderServer
	schema *tfprotov6.GetProviderSchemaResponse
}

// newProtoProvider starts a provider server and configures it for e's simulator
// (WinRM over HTTPS with its CA, and the sql block when withSQL).
func newProtoProvider(t *testing.T, e *accEnv, withSQL bool) *protoProvider {
	t.Helper()
	s, err := providerserver.NewProtocol6WithError(New("test")())()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	schema, err := s.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil || protoErrors(schema.Diagnostics) != "" {
		t.Fatalf("GetProviderSchema: %v %s", err, protoErrors(schema.Diagnostics))
	}
	p := &protoProvider{t: t, s: s, schema: schema}
	cfg := map[string]any{"winrm": map[string]any{
		"username": accUser, "password": accPassword, "auth": accAuth(), "https": true, "port": e.httpsPort,
		"ca_cert": string(e.sim.CACertPEM()),
	}}
	if withSQL {
		cfg["sql"] = map[string]any{"username": accSQLUser, "password": accSQLPass, "encrypt": "true", "ca_cert": string(e.sim.CACertPEM())}
	}
	resp, err := s.ConfigureProvider(ctx, &tfprotov6.ConfigureProviderRequest{TerraformVersion: "1.15.9",
		Config: dynamic(t, schema.Provider.ValueType(), cfg)})
	if err != nil || protoErrors(resp.Diagnostics) != "" {
		t.Fatalf("ConfigureProvider: %v %s", err, protoErrors(resp.Diagnostics))
	}
	return p
}

// invokeRestart calls InvokeAction of mssqlifi_restart with cfg and reads its
// stream: the progress messages in order and the completed event's diagnostics.
func (p *protoProvider) invokeRestart(cfg map[string]any) (progress []string, diags []*tfprotov6.Diagnostic) {
	p.t.Helper()
	const actionType = "mssqlifi_restart"
	as, ok := p.schema.ActionSchemas[actionType]
	if !ok {
		p.t.Fatalf("the provider has no action %s", actionType)
	}
	as6, ok := p.s.(tfprotov6.ProviderServerWithActions) //nolint:staticcheck // SA1019: what tf6server asserts today
	if !ok {
		p.t.Fatal("the provider server does not serve actions")
	}
	stream, err := as6.InvokeAction(context.Background(), &tfprotov6.InvokeActionRequest{ActionType: actionType,
		Config: dynamic(p.t, as.Schema.ValueType(), cfg)})
	if err != nil {
		p.t.Fatalf("InvokeAction: %v", err)
	}
	completed := false
	for ev := range stream.Events {
		switch e := ev.Type.(type) {
		case tfprotov6.ProgressInvokeActionEventType:
			progress = append(progress, e.Message)
		case tfprotov6.CompletedInvokeActionEventType:
			diags, completed = e.Diagnostics, true
		}
	}
	if !completed {
		p.t.Fatal("InvokeAction's stream ended without a completed event")
	}
	return progress, diags
}

// listIFI calls ListResource of mssqlifi_instant_file_initialization with cfg and
// collects its results.
func (p *protoProvider) listIFI(cfg map[string]any, includeResource bool) []tfprotov6.ListResourceResult {
	p.t.Helper()
	const typeName = "mssqlifi_instant_file_initialization"
	ls, ok := p.schema.ListResourceSchemas[typeName]
	if !ok {
		p.t.Fatalf("the provider has no list resource %s", typeName)
	}
	ls6, ok := p.s.(tfprotov6.ProviderServerWithListResource) //nolint:staticcheck // SA1019: what tf6server asserts today
	if !ok {
		p.t.Fatal("the provider server does not serve list resources")
	}
	stream, err := ls6.ListResource(context.Background(), &tfprotov6.ListResourceRequest{TypeName: typeName,
		Config: dynamic(p.t, ls.ValueType(), cfg), IncludeResource: includeResource, Limit: 100})
	if err != nil {
		p.t.Fatalf("ListResource: %v", err)
	}
	var out []tfprotov6.ListResourceResult
	for r := range stream.Results {
		out = append(out, r)
	}
	return out
}

// dynamic is v (nested maps and slices of Go values; absent attributes null) as a
// value of typ.
func dynamic(t *testing.T, typ tftypes.Type, v map[string]any) *tfprotov6.DynamicValue {
	t.Helper()
	dv, err := tfprotov6.NewDynamicValue(typ, toValue(t, typ, v))
	if err != nil {
		t.Fatalf("encoding %v: %v", v, err)
	}
	return &dv
}

func toValue(t *testing.T, typ tftypes.Type, v any) tftypes.Value {
	t.Helper()
	if v == nil {
		return tftypes.NewValue(typ, nil)
	}
	switch typ := typ.(type) {
	case tftypes.Object:
		m := asType[map[string]any](t, v)
		vals := map[string]tftypes.Value{}
		for k, at := range typ.AttributeTypes {
			vals[k] = toValue(t, at, m[k])
			delete(m, k)
		}
		for k := range m {
			t.Fatalf("no attribute %q in %s", k, typ)
		}
		return tftypes.NewValue(typ, vals)
	case tftypes.List:
		var elems []tftypes.Value
		for _, e := range asType[[]any](t, v) {
			elems = append(elems, toValue(t, typ.ElementType, e))
		}
		return tftypes.NewValue(typ, elems)
	case tftypes.Map:
		elems := map[string]tftypes.Value{}
		for k, e := range asType[map[string]any](t, v) {
			elems[k] = toValue(t, typ.ElementType, e)
		}
		return tftypes.NewValue(typ, elems)
	}
	switch {
	case typ.Is(tftypes.Number):
		return tftypes.NewValue(typ, new(big.Float).SetInt64(int64(asType[int](t, v))))
	default:
		return tftypes.NewValue(typ, v)
	}
}

// fromValue is a value as nested maps, slices and Go values (nil for null).
func fromValue(t *testing.T, v tftypes.Value) any {
	t.Helper()
	if v.IsNull() || !v.IsKnown() {
		return nil
	}
	switch v.Type().(type) {
	case tftypes.Object, tftypes.Map:
		var m map[string]tftypes.Value
		_ = v.As(&m)
		out := map[string]any{}
		for k, e := range m {
			out[k] = fromValue(t, e)
		}
		return out
	case tftypes.List, tftypes.Set:
		var l []tftypes.Value
		_ = v.As(&l)
		out := []any{}
		for _, e := range l {
			out = append(out, fromValue(t, e))
		}
		return out
	}
	switch typ := v.Type(); {
	case typ.Is(tftypes.String):
		var s string
		_ = v.As(&s)
		return s
	case typ.Is(tftypes.Bool):
		var b bool
		_ = v.As(&b)
		return b
	case typ.Is(tftypes.Number):
		var f big.Float
		_ = v.As(&f)
		n, _ := f.Int64()
		return n
	}
	t.Fatalf("no Go value for %s", v.Type())
	return nil
}

// decode is a dynamic value of typ as fromValue gives it.
func decode(t *testing.T, typ tftypes.Type, dv *tfprotov6.DynamicValue) map[string]any {
	t.Helper()
	if dv == nil {
		return nil
	}
	v, err := dv.Unmarshal(typ)
	if err != nil {
		t.Fatalf("decoding: %v", err)
	}
	m, _ := fromValue(t, v).(map[string]any)
	return m
}

// protoErrors is the error diagnostics as one text ("" for none).
func protoErrors(ds []*tfprotov6.Diagnostic) string {
	return protoDiags(ds, tfprotov6.DiagnosticSeverityError)
}

func protoDiags(ds []*tfprotov6.Diagnostic, sev tfprotov6.DiagnosticSeverity) string {
	var parts []string
	for _, d := range ds {
		if d.Severity == sev {
			parts = append(parts, d.Summary+": "+d.Detail)
		}
	}
	return strings.Join(parts, "\n")
}

// asType is v as a T, or the test's end naming what v is.
func asType[T any](t *testing.T, v any) T {
	t.Helper()
	x, ok := v.(T)
	if !ok {
		var want T
		t.Fatalf("a value of type %T where the test wants %T: %v", v, want, v)
	}
	return x
}
