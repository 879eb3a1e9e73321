//go:build unix

package kdc

import (
	"net"
	"strconv"
	"syscall"
	"testing"
)

// DeadAddr returns a loopback address where no KDC answers, for the test's
// duration: a TCP socket bound to a port below the ephemeral range and not
// listening, so that a connection to it is refused and no other process can take
// the port while the test runs (a port only found free could be bound by
// another test's listener, and a "KDC down" would answer).
func DeadAddr(t testing.TB) string {
	t.Helper()
	for tries := 0; tries < 20; tries++ {
		ports, err := FreePorts(1)
		if err != nil {
			t.Fatalf("a port for a KDC that does not answer: %v", err)
		}
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
		if err != nil {
			t.Fatalf("a socket for a KDC that does not answer: %v", err)
		}
		if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: ports[0], Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			_ = syscall.Close(fd)
			continue // taken since FreePorts saw it free
		}
		t.Cleanup(func() { _ = syscall.Close(fd) })
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	}
	t.Fatal("no loopback port could be held for a KDC that does not answer after 20 tries")
	return ""
}
