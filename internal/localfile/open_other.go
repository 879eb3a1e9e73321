//go:build !unix

package localfile

import "os"

// openNoWait opens path; where there is no O_NONBLOCK, Read's deadline bounds an
// open that waits.
func openNoWait(path string) (*os.File, error) {
	return os.Open(path)
}
