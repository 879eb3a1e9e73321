package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
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

// The SQL port seen by one operation is the next one's hint; a host that reports
// no port, or an unreadable record, leaves no hint.
func TestSQLPortHint(t *testing.T) {
	ctx := context.Background()
	p := memPrivate{}
	if got, _ := getSQLPortHint(ctx, p); got != 0 {
		t.Errorf("hint %d before any operation, want 0", got)
	}
	setSQLPortHint(ctx, p, 1433)
	if got, _ := getSQLPortHint(ctx, p); got != 1433 {
		t.Errorf("hint %d, want 1433", got)
	}
	setSQLPortHint(ctx, p, 0)
	if got, _ := getSQLPortHint(ctx, p); got != 0 {
		t.Errorf("hint %d after the host reported no port, want 0", got)
	}
	for _, raw := range []string{`{"port":70000}`, `{"port":-1}`, `not json`} {
		p[privateSQLPort] = []byte(raw)
		if got, _ := getSQLPortHint(ctx, p); got != 0 {
			t.Errorf("hint %d from %s, want 0", got, raw)
		}
	}
}
