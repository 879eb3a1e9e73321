package localfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A read that does not end (a stalled network mount) fails at its deadline.
func TestReadDeadline(t *testing.T) {
	path := filepath.Join(t.TempDir(), "krb5.conf")
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	defer close(release)
	hang := func(p string) (*os.File, error) { <-release; return openNoWait(p) }
	_, err := read(path, MaxSize, 50*time.Millisecond, hang)
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), path) {
		t.Fatalf("a read that hangs: %v, want ErrTimeout naming %s", err, path)
	}
}
