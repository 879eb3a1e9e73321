package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
)

// memPrivate is a private state held in a map, as the framework keeps it between
// operations (a nil value removes the key).
type memPrivate map[string][]byte

func (m memPrivate) SetKey(_ context.Context, k string, v []byte) diag.Diagnostics {
	if v == nil {
		delete(m, k)
	} else {
		m[k] = v
	}
	return nil
}

func (m memPrivate) GetKey(_ context.Context, k string) ([]byte, diag.Diagnostics) { return m[k], nil }

// The engine's memo goes through the private state under one key, and comes back
// only for its own instance.
func TestEngineMemoInPrivateState(t *testing.T) {
	ctx := context.Background()
	p := memPrivate{}
	tg := converge.Target{Host: "sql01", Instance: "MSSQLSERVER"}
	m := converge.NewMemo(tg)
	m.SQLPort = 1433
	if ds := setMemo(ctx, p, m); ds.HasError() || len(p) != 1 || p[privateEngine] == nil {
		t.Fatalf("private state %v (%v); want the one key %q", p, ds, privateEngine)
	}
	if got, _ := getMemo(ctx, p, tg); got.SQLPort != 1433 {
		t.Errorf("memo SQL port %d, want 1433", got.SQLPort)
	}
	if got, _ := getMemo(ctx, p, converge.Target{Host: "sql02", Instance: "MSSQLSERVER"}); got.SQLPort != 0 {
		t.Errorf("another host's memo gave port %d", got.SQLPort)
	}
}
