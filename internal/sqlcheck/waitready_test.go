package sqlcheck

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A port where nothing listens ends WaitReady after NoTDSLimit, naming the port,
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
	err = New(plainConfig()).WaitReady(ctxFor(t, 60*time.Second), Target{Host: "127.0.0.1", Port: port, Instance: "MSSQLSERVER", NoTDSLimit: 2 * time.Second})
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindUnreachable || e.Setting != SettingPort {
		t.Fatalf("WaitReady = %v; want a refused-port error", err)
	}
	// Before its 60 s deadline (an order, not a speed): waiting for the deadline would take it all.
	if d := time.Since(start); d >= 60*time.Second {
		t.Fatalf("WaitReady took %s for a port that refuses: it waited for its deadline, not the 2 s limit", d)
	}
	if !strings.Contains(e.Message, "port "+p) {
		t.Fatalf("the message does not name port %s: %s", p, e.Message)
	}
}

// A port that answers, but not as SQL Server (here an HTTP server, as when sql_port
// names the WinRM port), ends WaitReady after NoTDSLimit naming the port, and says
// that something else answers there; it never waits the whole deadline.
func TestWaitReadyNonTDSPortFailsFast(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = c.Read(make([]byte, 512))
				_, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
			}()
		}
	}()
	_, p, _ := net.SplitHostPort(l.Addr().String())
	port, _ := strconv.Atoi(p)
	for _, seen := range []bool{false, true} {
		start := time.Now()
		err = New(plainConfig()).WaitReady(ctxFor(t, 60*time.Second), Target{Host: "127.0.0.1", Port: port, Instance: "MSSQLSERVER",
			NoTDSLimit: 2 * time.Second, AnsweredTDS: seen})
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindUnreachable || e.Setting != SettingPort {
			t.Fatalf("seen before %v: WaitReady = %v; want a wrong-port error", seen, err)
		}
		// Before its 60 s deadline (an order, not a speed).
		if d := time.Since(start); d >= 60*time.Second {
			t.Fatalf("seen before %v: WaitReady took %s for a port that does not speak TDS: it waited for its deadline, not the 2 s limit", seen, d)
		}
		if !strings.Contains(e.Message, "port "+p) || !strings.Contains(e.Error(), "MSSQLSERVER") {
			t.Fatalf("seen before %v: the error does not name port %s and the instance: %s", seen, p, e.Error())
		}
	}
}

// A port that answered TDS before the restart is waited on until the deadline, even
// while it refuses connections (SQL Server not listening yet).
func TestWaitReadyWaitsForAPortSeenBefore(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, p, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	port, _ := strconv.Atoi(p)
	start := time.Now()
	err = New(plainConfig()).WaitReady(ctxFor(t, 3*time.Second), Target{Host: "127.0.0.1", Port: port, Instance: "MSSQLSERVER",
		NoTDSLimit: time.Second, AnsweredTDS: true})
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindTimeout {
		t.Fatalf("WaitReady = %v; want the deadline's error", err)
	}
	if d := time.Since(start); d < 2500*time.Millisecond {
		t.Fatalf("WaitReady gave up after %s, before the 3 s deadline", d)
	}
}
