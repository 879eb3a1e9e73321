package remote

import (
	"fmt"
	"testing"
)

// Refused says which failures an apply rides through within its timeout
// (converge): a refused, reset or unrouted connection; never a name that does not
// resolve, an answer of the host, a timeout, or a possible man-in-the-middle.
func TestErrorRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		e    *Error
		want bool
	}{
		"refused":                    {&Error{Kind: KindUnreachable, Message: "cannot connect: connection refused"}, true},
		"name does not resolve":      {&Error{Kind: KindUnreachable, Setting: SettingHost}, false},
		"HTTP 503":                   {&Error{Kind: KindProtocol, HTTPStatus: 503}, false},
		"timeout":                    {&Error{Kind: KindTimeout}, false},
		"authentication":             {&Error{Kind: KindAuth, HTTPStatus: 401}, false},
		"possible man-in-the-middle": {&Error{Kind: KindUnreachable, Err: fmt.Errorf("reading: %w", ErrUnverifiedAnswer)}, false},
	} {
		if got := tc.e.Refused(); got != tc.want {
			t.Errorf("%s: Refused() = %v, want %v", name, got, tc.want)
		}
	}
}
