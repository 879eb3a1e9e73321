//go:build unix

package localfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// What a setting may name: a small regular file is read (through a symbolic link
// too); a device, a FIFO without a writer, a directory or a file past the cap fails
// at once with an error naming the path and what it is, memory bounded.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "krb5.conf")
	if err := os.WriteFile(small, []byte("[libdefaults]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.conf")
	if err := os.Symlink(small, link); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, MaxSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want error
		says string
	}{
		{small, nil, ""},
		{link, nil, ""},
		{"/dev/zero", ErrNotRegular, "/dev/zero is a character device"},
		{fifo, ErrNotRegular, fifo + " is a named pipe (FIFO)"},
		{dir, ErrNotRegular, dir + " is a directory"},
		{big, ErrTooLarge, big + " has 4194305 bytes"},
		{filepath.Join(dir, "none"), os.ErrNotExist, "none"},
	} {
		start := time.Now()
		b, err := Read(tc.path)
		if d := time.Since(start); d > time.Second {
			t.Errorf("Read(%s) took %s", tc.path, d)
		}
		if tc.want == nil {
			if err != nil || string(b) != "[libdefaults]\n" {
				t.Errorf("Read(%s) = %q, %v", tc.path, b, err)
			}
			continue
		}
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) || b != nil {
			t.Errorf("Read(%s) = %d bytes, %v; want %v saying %q", tc.path, len(b), err, tc.want, tc.says)
		}
	}
}
