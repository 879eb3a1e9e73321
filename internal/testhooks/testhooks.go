// Package testhooks holds what the provider's own acceptance tests may set in the
// provider binary they build, and nothing a user can set: the hooks exist only in
// a binary built with the build tag mssqlifi_testhooks (internal/provider's CLI
// harness builds one so), and a binary built without it (every release, make
// build, go install) has none of them and reads no environment for them.
//
// TimeDivisor divides the provider's fixed protocol waits (the go line's wait of
// a gated restart and its margin, the wait for a gated restart's prepared line):
// a test that waits for one of them out (a hung answer abandoned, a killed run's
// prepared request let go) plays the same sequence of events in a tenth of the
// time.
//
// DeadlineDivisor divides an operation's deadline, the resource's timeout as
// configured (or its default) once it was checked against its bounds: a test of a
// fault that outlasts the deadline (connections refused past it) meets it after 20 s
// with timeouts of a minute and a divisor of 3, the same sequence as after a
// minute. The read-back after a step that failed at the deadline (the engine's
// recovery timeout, 20 s past it) is divided likewise, so the sequence after the
// deadline is the same one. What the configuration says, the timeouts' bounds and
// their defaults are not changed, nor any wait inside the operation.
//
// SQLLoginDivisor divides the SQL Server login's wait (internal/sqlcheck's
// LoginTimeout, 10 s, and WaitReady's 5 s per login): a test of a port that
// never answers TDS (every check waits the login's timeout out) plays the same
// sequence, each check ending in a timeout, in a fraction of the time. It is a
// divisor of its own because the time divisor's tests run a sql block whose
// logins must succeed on a loaded machine.
//
// EnvDNSServer sends every DNS query of the binary to a server the test runs on
// loopback: a test of KDCs found through DNS (dns_lookup_kdc, the realm's _kerberos
// SRV records) serves the records it means, where the machine's DNS has none.
package testhooks

// EnvTimeDivisor is the environment variable a test-hooked binary reads for
// TimeDivisor: an integer from 1 to MaxTimeDivisor.
const EnvTimeDivisor = "MSSQLIFI_TESTHOOK_TIME_DIVISOR"

// EnvDeadlineDivisor is the environment variable a test-hooked binary reads for
// DeadlineDivisor: an integer from 1 to MaxTimeDivisor.
const EnvDeadlineDivisor = "MSSQLIFI_TESTHOOK_DEADLINE_DIVISOR"

// EnvSQLLoginDivisor is the environment variable a test-hooked binary reads for
// SQLLoginDivisor: an integer from 1 to MaxTimeDivisor.
const EnvSQLLoginDivisor = "MSSQLIFI_TESTHOOK_SQL_LOGIN_DIVISOR"

// MaxTimeDivisor is the largest divisor any of the variables may give: the go line's 30 s wait stays at
// least a second (the host accepts go_seconds from 1).
const MaxTimeDivisor = 30

// EnvDNSServer is the environment variable a test-hooked binary reads at start for
// the DNS server to ask: a loopback host:port (UDP), which answers every query of the
// binary (SRV records of KDCs, and the addresses of their hosts).
const EnvDNSServer = "MSSQLIFI_TESTHOOK_DNS_SERVER"
