// Package localfile reads the files a configuration names on the machine running
// Terraform (krb5.conf, a keytab, a credential cache): the one place that decides
// what such a read accepts. A setting can name anything a path names, and a path
// that is not a small regular file must fail with an error that says so, at once,
// not take the provider's memory (/dev/zero) or hang the plan (a FIFO with no
// writer, a stalled network mount).
package localfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// MaxSize bounds a file read here. The files are a few kilobytes (a krb5.conf, a
// keytab of a few keys, a credential cache of a few tickets); 4 MiB leaves room
// for the largest of them.
const MaxSize = 4 << 20

// Timeout bounds a read here: a regular local file reads in microseconds, one on
// a network mount in well under a second.
const Timeout = 5 * time.Second

// Errors a read returns wrapped, for errors.Is.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("larger than the provider reads")
	ErrTimeout    = errors.New("not read in time")
)

// Read returns the contents of path, a regular file (a symbolic link to one is
// followed) of at most MaxSize bytes, read within Timeout. Otherwise the error
// names path and says what it is instead (a directory, a character device, a named
// pipe ...), its size, or that it was not read in time; a read that did not end in
// time is left to end on its own, its result discarded.
func Read(path string) ([]byte, error) {
	return read(path, MaxSize, Timeout, openNoWait)
}

// read is Read with its cap, deadline and way to open (a stub in tests of the
// deadline).
func read(path string, limit int64, timeout time.Duration, open func(string) (*os.File, error)) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := readNow(path, limit, open)
		done <- result{b, err}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-done:
		return r.b, r.err
	case <-t.C:
		return nil, fmt.Errorf("%s was %w (within %s): a file on a stalled network mount, or a special file", path, ErrTimeout, timeout)
	}
}

func readNow(path string, limit int64, open func(string) (*os.File, error)) ([]byte, error) {
	// Stat first: a device or a FIFO is refused without being opened.
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := regular(path, st, limit); err != nil {
		return nil, err
	}
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// And again on what was opened, should the path have changed in between.
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := regular(path, st, limit); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s grew past %d bytes while it was read: %w", path, limit, ErrTooLarge)
	}
	return b, nil
}

// regular checks st, the file at path: a regular file of at most limit bytes.
func regular(path string, st fs.FileInfo, limit int64) error {
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is %s, %w", path, kind(st.Mode()), ErrNotRegular)
	}
	if st.Size() > limit {
		return fmt.Errorf("%s has %d bytes, %w (at most %d)", path, st.Size(), ErrTooLarge, limit)
	}
	return nil
}

// kind names what a file that is not regular is.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "a special file"
}
