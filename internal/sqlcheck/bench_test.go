package sqlcheck

import (
	"context"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds"
)

// BenchmarkSQLCheck is one Check: a new connection, login, the three queries, close.
func BenchmarkSQLCheck(b *testing.B) {
	ep := serve(b, &sqlServer{engineIFI: "Y"}, tds.Options{}, nil)
	c := New(plainConfig())
	ctx := context.Background()
	for b.Loop() {
		r, err := c.Check(ctx, ep.target())
		if err != nil || r.IFIEnabled == nil {
			b.Fatalf("Check = %+v, %v", r, err)
		}
	}
}
