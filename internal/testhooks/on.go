//go:build mssqlifi_testhooks

package testhooks

import (
	"fmt"
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
