package testhooks

import "testing"

// A binary without the build tag (a release) ignores the variable: its waits are
// as written whatever the environment says. With the tag, the variable is read,
// and a value it cannot honour stops the binary rather than running at full time.
func TestTimeDivisor(t *testing.T) {
	t.Setenv(EnvTimeDivisor, "10")
	if !Enabled {
		if got := TimeDivisor(); got != 1 {
			t.Fatalf("without the mssqlifi_testhooks tag, TimeDivisor() = %d with %s=10; want 1", got, EnvTimeDivisor)
		}
		return
	}
	if got := TimeDivisor(); got != 10 {
		t.Fatalf("TimeDivisor() = %d with %s=10; want 10", got, EnvTimeDivisor)
	}
	t.Setenv(EnvTimeDivisor, "")
	if got := TimeDivisor(); got != 1 {
		t.Fatalf("TimeDivisor() = %d with %s empty; want 1", got, EnvTimeDivisor)
	}
	for _, v := range []string{"0", "31", "x", "2.5"} {
		t.Setenv(EnvTimeDivisor, v)
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("TimeDivisor() with %s=%q did not stop the binary", EnvTimeDivisor, v)
				}
			}()
			TimeDivisor()
		}()
	}
}
