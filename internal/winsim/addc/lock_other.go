//go:build !unix

package addc

import (
	"errors"
	"time"
)

// lockFile: Samba's AD DC runs on Unix only.
func lockFile(string, time.Duration) (func(), error) {
	return nil, errors.New("the test AD DC needs a Unix host")
}
