package remote

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// A host that prints without end: the operation fails once the output passes
// maxOutput, naming the host, long before its deadline, and the provider's memory
// stays bounded (issue 14: such a host drove it to 6.2 GiB in 47 s).
func TestEndlessOutputIsCappedAndNamesTheHost(t *testing.T) {
	h := newTestHost(t, false, func(op contract.Operation, params json.RawMessage) answer {
		return answer{endless: true}
	})
	host, err := New(h.config("ntlm"))
	if err != nil {
		t.Fatal(err)
	}

	var (
		mu   sync.Mutex
		peak uint64
	)
	const heapLimit = 256 << 20
	const deadline = 2 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			mu.Lock()
			peak = max(peak, ms.HeapAlloc)
			mu.Unlock()
			if ms.HeapAlloc > heapLimit {
				cancel() // unbounded: no need to wait for the deadline
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()

	start := time.Now()
	_, err = host.ReadInstance(ctx, contract.ReadInstanceParams{Instance: "MSSQLSERVER", Right: contract.RightManageVolume})
	took := time.Since(start)
	close(stop)
	<-sampled

	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("ReadInstance against an endless host = %v, want an *Error", err)
	}
	if e.Kind != KindProtocol || !strings.Contains(e.Error(), "127.0.0.1") || !strings.Contains(e.Error(), "16 MiB") {
		t.Errorf("error = %v (kind %v), want a protocol error naming the host and the 16 MiB limit", err, e.Kind)
	}
	if ctx.Err() != nil {
		t.Errorf("the operation was stopped by its deadline (%v) or the heap limit, not by the output limit", deadline)
	}
	t.Logf("failed after %v, peak heap %d MiB", took.Round(time.Millisecond), peak>>20)
	if peak > heapLimit {
		t.Errorf("peak heap %d MiB while reading a capped output of 16 MiB", peak>>20)
	}
}
