//go:build mssqlifi_testhooks

package testhooks

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
)

// Enabled is true: this binary was built for the provider's acceptance tests.
const Enabled = true

// TimeDivisor is EnvTimeDivisor's value, 1 when it is unset.
func TimeDivisor() int { return divisor(EnvTimeDivisor) }

// DeadlineDivisor is EnvDeadlineDivisor's value, 1 when it is unset.
func DeadlineDivisor() int { return divisor(EnvDeadlineDivisor) }

// SQLLoginDivisor is EnvSQLLoginDivisor's value, 1 when it is unset.
func SQLLoginDivisor() int { return divisor(EnvSQLLoginDivisor) }

// divisor reads env. A value that is not an integer from 1 to MaxTimeDivisor stops
// the binary: a test that set it wrong would otherwise wait the full times and pass
// for the wrong reason.
func divisor(env string) int {
	v, ok := os.LookupEnv(env)
	if !ok || v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxTimeDivisor {
		panic(fmt.Sprintf("%s=%q: want an integer from 1 to %d", env, v, MaxTimeDivisor))
	}
	return n
}

// The DNS server hook is set at start, before anything resolves a name: the
// Kerberos library looks KDCs up through net's default resolver itself, so there is
// no call of the provider's to pass a resolver to.
func init() { useDNSServer(os.Getenv(EnvDNSServer)) }

// useDNSServer has net's default resolver (Go's own, not the C library's) send
// every query to addr, a loopback host:port; "" leaves it as it is. Anything else
// stops the binary: a test that set it wrong would otherwise ask the machine's DNS.
func useDNSServer(addr string) {
	if addr == "" {
		return
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		panic(fmt.Sprintf("%s=%q: want a loopback address and port, such as 127.0.0.1:5353", EnvDNSServer, addr))
	}
	net.DefaultResolver.PreferGo = true
	net.DefaultResolver.Dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}
