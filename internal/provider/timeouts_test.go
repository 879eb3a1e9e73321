package provider

import (
	"fmt"
	"strings"
	"testing"
)

func TestCheckTimeout(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, value string
		ok          bool
	}{
		{"create", "20m", true},
		{"create", "1m", true},
		{"create", "24h", true},
		{"update", "24h0m1s", false},
		{"create", "24h0m31s", false},
		{"create", "0s", false},
		{"create", "0", false},
		{"create", "1ns", false},
		{"create", "-5m", false},
		{"create", "59s", false},
		{"read", "10s", true},
		{"read", "9s", false},
		{"delete", "-1s", false},
		{"delete", "five minutes", false},
	}
	for _, c := range cases {
		msg := checkTimeout(c.name, c.value)
		if (msg == "") != c.ok {
			t.Errorf("checkTimeout(%s, %q) = %q; want ok %v", c.name, c.value, msg, c.ok)
		}
		if msg != "" && !strings.Contains(msg, c.value) {
			t.Errorf("checkTimeout(%s, %q): the message does not quote the value: %q", c.name, c.value, msg)
		}
	}
}

// Timeouts the provider cannot honour fail the plan, before anything reaches a host.
func TestCLI_timeoutsRefusedAtPlan(t *testing.T) {
	t.Parallel()
	w := newCLI(t)
	e := startSim(t, nil)
	for _, v := range []string{"0s", "1ns", "-1m", "24h0m31s"} {
		n := len(e.operations())
		w.write(e.providerConfig(false) + resourceConfig(e.addr, fmt.Sprintf("timeouts {\n    create = %q\n  }", v)))
		p := w.plan()
		p.wantPlanExit(t, 1)
		p.wantDiag(t, "error", `^Timeout out of range$`, `create = "`+v+`" is outside what the provider can honour`)
		if ops := e.opsSince(n); len(ops) > 0 {
			t.Errorf("create = %q: the plan ran %v on the host", v, ops)
		}
	}
}
