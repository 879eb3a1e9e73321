package remote

import (
	"context"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// BenchmarkReadInstance is one read_instance round trip (shell, command, stdin,
// receive, delete) over NTLM to the simulated host: what one refresh costs.
func BenchmarkReadInstance(b *testing.B) {
	sim := newSimHost(b, simConfig())
	for _, auth := range []string{"ntlm", "basic"} {
		b.Run(auth, func(b *testing.B) {
			h, err := New(Config{Host: "127.0.0.1", Port: sim.port, Auth: auth, Username: testUser, Password: testPassword})
			if err != nil {
				b.Fatal(err)
			}
			p := contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume}
			ctx := context.Background()
			for b.Loop() {
				r, err := h.ReadInstance(ctx, p)
				if err != nil || !r.Found {
					b.Fatalf("read_instance = %+v, %v", r, err)
				}
			}
		})
	}
}
