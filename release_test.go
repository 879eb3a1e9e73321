package main

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"weak"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

type payloadKey struct{}

// payload stands for what an RPC's context holds (grpc's stream, the loggers).
type payload struct{ _ [64 << 10]byte }

// readWithPayload sends one ReadResource to s with a context holding a fresh payload,
// and returns a weak pointer to the payload.
func readWithPayload(t *testing.T, s tfprotov6.ProviderServer) weak.Pointer[payload] {
	t.Helper()
	p := &payload{}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), payloadKey{}, p))
	// An unknown type: the framework registers the context, then answers with an
	// error diagnostic.
	resp, err := s.ReadResource(ctx, &tfprotov6.ReadResourceRequest{TypeName: "mssqlifi_nonexistent"})
	cancel() // as grpc does when the RPC ends
	if err != nil || resp == nil || len(resp.Diagnostics) == 0 {
		t.Fatalf("ReadResource of an unknown type = %+v, %v; want an error diagnostic", resp, err)
	}
	return weak.Make(p)
}

func collected(ps []weak.Pointer[payload]) int {
	runtime.GC()
	runtime.GC()
	n := 0
	for _, p := range ps {
		if p.Value() == nil {
			n++
		}
	}
	return n
}

// The provider's server lets go of each RPC's context once the RPC is over, while the
// framework's own server keeps them all (terraform-plugin-framework v1.19.0): with
// 100 resources that was the largest part of the provider's memory in a fleet plan.
func TestServerReleasesRequestContexts(t *testing.T) {
	const calls = 20
	var ps []weak.Pointer[payload]
	s := newServer()
	for range calls {
		ps = append(ps, readWithPayload(t, s))
	}
	if n := collected(ps); n != calls {
		t.Errorf("%d of %d request contexts are still held after their RPCs ended", calls-n, calls)
	}
	runtime.KeepAlive(s)

	// If this part fails, the framework no longer keeps request contexts: the
	// wrapper in release.go can go.
	wrapped, ok := s.(releasingServer)
	if !ok {
		t.Fatalf("newServer returned a %T, want releasingServer", s)
	}
	raw := wrapped.frameworkServer
	ps = ps[:0]
	for range calls {
		ps = append(ps, readWithPayload(t, raw))
	}
	if n := collected(ps); n == calls {
		t.Errorf("the framework's own server released every request context: releaseContexts is no longer needed")
	}
	runtime.KeepAlive(raw)
}

// probe is a framework server whose ReadResource reports the context it was given.
type probe struct {
	frameworkServer
	during func(ctx context.Context)
	ctx    context.Context
}

func (p *probe) ReadResource(ctx context.Context, _ *tfprotov6.ReadResourceRequest) (*tfprotov6.ReadResourceResponse, error) {
	p.during(ctx)
	p.ctx = ctx
	return &tfprotov6.ReadResourceResponse{}, nil
}

// During the call the framework sees the RPC's values, deadline and cancellation;
// afterwards a cancelled context without values.
func TestCallContextForwardsUntilTheCallEnds(t *testing.T) {
	raw, ok := newServer().(releasingServer)
	if !ok {
		t.Fatal("newServer is not wrapped: the framework's server lacks an interface of terraform-plugin-go that releasingServer expects")
	}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), payloadKey{}, "value"))
	defer cancel()
	pr := &probe{frameworkServer: raw.frameworkServer}
	pr.during = func(ctx context.Context) {
		if ctx.Value(payloadKey{}) != "value" {
			t.Errorf("during the call Value = %v, want the RPC context's", ctx.Value(payloadKey{}))
		}
		if ctx.Err() != nil {
			t.Errorf("during the call Err = %v, want nil", ctx.Err())
		}
		derived, stop := context.WithCancel(ctx)
		defer stop()
		cancel()
		<-derived.Done() // the RPC's cancellation reaches contexts derived from it
		if !errors.Is(ctx.Err(), context.Canceled) {
			t.Errorf("after the RPC's cancellation Err = %v, want context.Canceled", ctx.Err())
		}
	}
	if _, err := releaseContexts(pr).ReadResource(parent, &tfprotov6.ReadResourceRequest{}); err != nil {
		t.Fatal(err)
	}
	if v := pr.ctx.Value(payloadKey{}); v != nil {
		t.Errorf("after the call Value = %v, want nil", v)
	}
	if !errors.Is(pr.ctx.Err(), context.Canceled) {
		t.Errorf("after the call Err = %v, want context.Canceled", pr.ctx.Err())
	}
	select {
	case <-pr.ctx.Done():
	default:
		t.Error("after the call Done is not closed")
	}
}

// The wrapper keeps the optional interfaces terraform-plugin-go looks for.
var (
	_ tfprotov6.ProviderServerWithListResource = releasingServer{} //nolint:staticcheck // SA1019: what tf6server asserts today
	_ tfprotov6.ProviderServerWithActions      = releasingServer{} //nolint:staticcheck // SA1019: what tf6server asserts today
	_ tfprotov6.ProviderServerWithStateStores  = releasingServer{} //nolint:staticcheck // SA1019: what tf6server asserts today
)
