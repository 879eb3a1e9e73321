//go:build !mssqlifi_testhooks

package testhooks

// Enabled is false: this binary has no test hooks.
const Enabled = false

// TimeDivisor is 1 in a binary without test hooks: every wait is as written.
func TimeDivisor() int { return 1 }

// DeadlineDivisor is 1 in a binary without test hooks: every deadline is the
// configured timeout.
func DeadlineDivisor() int { return 1 }

// SQLLoginDivisor is 1 in a binary without test hooks: a SQL Server login waits
// as written.
func SQLLoginDivisor() int { return 1 }
