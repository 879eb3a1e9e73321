//go:build unix

package localfile

import (
	"os"
	"syscall"
)

// openNoWait opens path with O_NONBLOCK: opening a FIFO for reading then returns
// at once instead of waiting for a writer (a regular file ignores the flag).
func openNoWait(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
