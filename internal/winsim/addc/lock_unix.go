//go:build unix

package addc

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockFile takes an exclusive lock on path (created if need be), waiting at most
// budget for another process to release it; the lock ends with the process at the
// latest. It returns the function that releases it.
func lockFile(path string, budget time.Duration) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(budget)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); _ = f.Close() }, nil
		}
		if err != syscall.EWOULDBLOCK {
			_ = f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			_ = f.Close()
			return nil, fmt.Errorf("%s still locked by another test process after %s", path, budget)
		}
		time.Sleep(100 * time.Millisecond) // polling a lock another process holds, bounded by the deadline
	}
}
