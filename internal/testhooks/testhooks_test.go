package testhooks

import "testing"

// A binary without the build tag (a release) ignores the variables: its waits and
// deadlines are as written whatever the environment says. With the tag, each
// variable is read, and a value it cannot honour stops the binary rather than
// running at full time.
func TestDivisors(t *testing.T) {
	for _, tc := range []struct {
		env string
		get func() int
	}{{EnvTimeDivisor, TimeDivisor}, {EnvDeadlineDivisor, DeadlineDivisor}, {EnvSQLLoginDivisor, SQLLoginDivisor}} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(EnvTimeDivisor, "")
			t.Setenv(EnvDeadlineDivisor, "")
			t.Setenv(EnvSQLLoginDivisor, "")
			t.Setenv(tc.env, "10")
			if !Enabled {
				if got := tc.get(); got != 1 {
					t.Fatalf("without the mssqlifi_testhooks tag, %s=10 gives %d; want 1", tc.env, got)
				}
				return
			}
			if got := tc.get(); got != 10 {
				t.Fatalf("%s=10 gives %d; want 10", tc.env, got)
			}
			t.Setenv(tc.env, "")
			if got := tc.get(); got != 1 {
				t.Fatalf("%s empty gives %d; want 1", tc.env, got)
			}
			for _, v := range []string{"0", "31", "x", "2.5"} {
				t.Setenv(tc.env, v)
				func() {
					defer func() {
						if recover() == nil {
							t.Errorf("%s=%q did not stop the binary", tc.env, v)
						}
					}()
					tc.get()
				}()
			}
		})
	}
}

// A test-hooked binary with EnvDNSServer sends its DNS queries (the Kerberos
// library's SRV lookups among them) to that server; an address that is not loopback
// stops it. Without the tag there is no hook: nothing to test.
func TestDNSServer(t *testing.T) {
	if !Enabled {
		t.Skip("the DNS server hook exists only with the mssqlifi_testhooks tag")
	}
	testDNSServer(t)
}
