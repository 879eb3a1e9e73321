package provider

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-log/tflog"
	"github.com/hashicorp/terraform-plugin-log/tflogtest"
)

// syncBuffer is a bytes.Buffer that goroutines may write to at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The engine logs from two goroutines on one request's context (the SQL check
// beside the WinRM read). tflog's masking writes into the context's field map, so
// without a private copy per call the provider dies of "concurrent map iteration
// and map write", as an OpenTofu acceptance run did. With masking on and a field
// on the context, many concurrent log calls must neither crash nor leak the secret.
func TestLoggerIsSafeFromManyGoroutines(t *testing.T) {
	const secret = "S3cret-pw"
	var out syncBuffer
	ctx := tflogtest.RootLogger(context.Background(), &out)
	ctx = tflog.SetField(ctx, "tf_req_id", "a-request")
	for i := range 32 { // a larger map makes a concurrent write more likely to be caught
		ctx = tflog.SetField(ctx, fmt.Sprintf("field_%02d", i), "value")
	}
	ctx = maskSecrets(ctx, &clients{})
	ctx = tflog.MaskAllFieldValuesStrings(ctx, secret)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				tflogLogger{}.Debug(ctx, "sql check", map[string]any{"host": "sql01", "error": "login for " + secret + " failed", "n": g*1000 + i})
			}
		}()
	}
	wg.Wait()
	logs := out.String()
	if strings.Contains(logs, secret) {
		t.Error("a log line carries the password")
	}
	if n := strings.Count(logs, `"tf_req_id":"a-request"`); n != 16*1000 {
		t.Errorf("%d log lines carry the context's field, want %d", n, 16*1000)
	}
}
