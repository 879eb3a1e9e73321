package kdc

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
)

// FreePorts returns n distinct loopback ports free on TCP and UDP (a KDC listens
// on both): the MIT KDC's and the AD DC's (addc) choice of ports. They are chosen
// below the kernel's range of ephemeral ports when it leaves room: a port taken
// from that range (as a listen on port 0 does) may be given to another process's
// outgoing connection before the KDC binds it, and a test run makes thousands of
// them. A port can still be taken by another process before the KDC binds it:
// the KDC then exits saying so, and its starter tries other ports.
func FreePorts(n int) ([]int, error) {
	low, high := 20000, ephemeralLow()
	if high-low < 1000 {
		low, high = 1024, 65535
	}
	var got []int
	var lastErr error
	for tries := 0; len(got) < n && tries < 200; tries++ {
		p := low + rand.IntN(high-low)
		if slices.Contains(got, p) {
			continue
		}
		if err := portFree(p); err != nil {
			lastErr = err
			continue
		}
		got = append(got, p)
	}
	if len(got) < n {
		return nil, errors.Join(fmt.Errorf("no %d ports free on both TCP and UDP after 200 tries", n), lastErr)
	}
	return got, nil
}

func portFree(p int) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	defer l.Close()
	u, err := net.ListenPacket("udp", addr)
	if err != nil {
		return err
	}
	return u.Close()
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux), 32768
// when it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return n
}

// Probe asks the KDC at addr (named for realm in the krb5.conf at krb5Conf) for a
// ticket of a principal the realm does not have: a KDC of the realm answers that
// it does not know it. It tells a KDC that started from a port that merely
// accepts connections (another process's listener).
func Probe(addr, krb5Conf, realm string) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	_ = c.Close()
	cfg, err := config.Load(krb5Conf)
	if err != nil {
		return err
	}
	cl := client.NewWithPassword("no-such-principal-probe", realm, "x", cfg, client.DisablePAFXFAST(true))
	defer cl.Destroy()
	err = cl.Login()
	if err != nil && strings.Contains(err.Error(), "KDC_ERR_C_PRINCIPAL_UNKNOWN") {
		return nil
	}
	if err == nil {
		return errors.New("the KDC issued a ticket for a principal never created")
	}
	return err
}

// TakenFirst wraps a choice of ports so that its first choice starts with a port
// another listener holds (for the test's duration): the tests of a KDC's start on
// other ports. It returns the wrapped choice, the taken port and the count of
// choices made.
func TakenFirst(t testing.TB, choose func(int) ([]int, error)) (func(int) ([]int, error), int, *int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	taken := l.Addr().(*net.TCPAddr).Port
	calls := 0
	return func(n int) ([]int, error) {
		calls++
		p, err := choose(n)
		if calls == 1 && err == nil {
			p[0] = taken
		}
		return p, err
	}, taken, &calls
}
