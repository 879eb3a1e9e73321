package sqlcheck

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A port where nothing listens ends WaitReady after RefusedLimit, naming the port,
// instead of waiting out the whole deadline.
func TestWaitReadyRefusedPortFailsFast(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, p, _ := net.SplitHostPort(l.Addr().String())
	l.Close() // nothing listens there now
	port, _ := strconv.Atoi(p)
	start := time.Now()
	err = New(plainConfig()).WaitReady(ctxFor(t, 60*time.Second), Target{Host: "127.0.0.1", Port: port, Instance: "MSSQLSERVER", RefusedLimit: 2 * time.Second})
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindUnreachable || e.Setting != SettingPort {
		t.Fatalf("WaitReady = %v; want a refused-port error", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("WaitReady took %s for a port that refuses, want about the 2 s limit", d)
	}
	if !strings.Contains(e.Message, "port "+p) {
		t.Fatalf("the message does not name port %s: %s", p, e.Message)
	}
}
