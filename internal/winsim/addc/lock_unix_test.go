//go:build unix

package addc

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A second taker of the template's lock waits for the first to release it, and
// gives up at its deadline saying the lock is held.
func TestTheTemplateLockIsHeldUntilReleased(t *testing.T) {
	path := filepath.Join(t.TempDir(), "addc.lock")
	unlock, err := lockFile(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockFile(path, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "still locked") {
		t.Fatalf("second lock while the first is held: %v, want it to give up saying it is still locked", err)
	}
	unlock()
	again, err := lockFile(path, time.Second)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	again()
}
