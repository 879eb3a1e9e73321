//go:build mssqlifi_testhooks

package testhooks

import (
	"context"
	"net"
	"testing"
	"time"
)

func testDNSServer(t *testing.T) {
	for _, bad := range []string{"10.0.0.1:53", "dns.example:53", "127.0.0.1"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s=%q did not stop the binary", EnvDNSServer, bad)
				}
			}()
			useDNSServer(bad)
		}()
	}
	// A server that only notes the query it gets (the lookup then times out).
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	got := make(chan struct{}, 1)
	go func() {
		buf := make([]byte, 1500)
		if _, _, err := pc.ReadFrom(buf); err == nil {
			got <- struct{}{}
		}
	}()
	preferGo, dial := net.DefaultResolver.PreferGo, net.DefaultResolver.Dial
	t.Cleanup(func() { net.DefaultResolver.PreferGo, net.DefaultResolver.Dial = preferGo, dial })
	useDNSServer(pc.LocalAddr().String())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _, _ = net.DefaultResolver.LookupSRV(ctx, "kerberos", "tcp", "CONTOSO.TEST")
	}()
	defer func() { cancel(); <-done }() // the lookup ends before the resolver is restored
	select {
	case <-got:
	case <-ctx.Done():
		t.Fatalf("the SRV lookup did not reach %s", pc.LocalAddr())
	}
}
