package winsim

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/masterzen/winrm"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// A fault names a request the provider's exchange sends; a Signal (which it never
// sends) or an operation on a request that precedes stdin could never fire, so the
// control plane refuses them.
func TestWinRMFaultRefusesFaultsThatCannotFire(t *testing.T) {
	f := &faultSet{ops: map[string]string{}}
	for _, w := range []WinRMFault{
		{Fault: FaultReset, Request: "Signal"},
		{Fault: FaultReset, Request: "Command", Operation: "restart_instance"},
		{Fault: FaultReset, Request: "Create", Operation: "read_instance"},
	} {
		if err := f.add(w); !errors.Is(err, ErrBadAction) {
			t.Errorf("add(%+v) = %v; want ErrBadAction", w, err)
		}
	}
	if err := f.add(WinRMFault{Fault: FaultReset, Request: "delete", Operation: "restart_instance"}); err != nil {
		t.Fatalf("a Delete fault for an operation: %v", err)
	}
}

// The Send of a command teaches its operation, for its Receives and for the Delete
// of its shell (which names only the shell); another command's Delete does not match.
func TestWinRMFaultMatchesTheOperationsRequests(t *testing.T) {
	f := &faultSet{ops: map[string]string{}}
	if err := f.add(WinRMFault{Fault: FaultHTTP500, Request: "Delete", Operation: "restart_status", Count: -1}); err != nil {
		t.Fatal(err)
	}
	params := winrm.DefaultParameters
	stdin, err := contract.EncodeInput(contract.OpRestartStatus, contract.RestartStatusParams{Instance: "MSSQLSERVER"})
	if err != nil {
		t.Fatal(err)
	}
	const url = "http://sql01:5985/wsman"
	send := winrm.NewSendInputRequest(url, "SHELL-1", "CMD-1", stdin, true, params)
	if action, key := f.requestInfo([]byte(send.String())); action != "Send" || key != "CMD-1" || f.match(action, key) != nil {
		t.Fatalf("Send: action %q key %q", action, key)
	}
	receive := winrm.NewGetOutputRequest(url, "SHELL-1", "CMD-1", "stdout stderr", params)
	if action, key := f.requestInfo([]byte(receive.String())); action != "Receive" || f.match(action, key) != nil {
		t.Fatalf("Receive: action %q key %q, or a Delete fault matched it", action, key)
	}
	other := winrm.NewDeleteShellRequest(url, "SHELL-2", params)
	if action, key := f.requestInfo([]byte(other.String())); f.match(action, key) != nil {
		t.Fatal("the Delete of another shell matched")
	}
	del := winrm.NewDeleteShellRequest(url, "SHELL-1", params)
	if action, key := f.requestInfo([]byte(del.String())); action != "Delete" || key != "SHELL-1" || f.match(action, key) == nil {
		t.Fatalf("Delete of restart_status's shell: action %q key %q, no fault", action, key)
	}
}

// A "refuse" fault closes the WinRM listener for its duration: a connection
// attempt is refused (ECONNREFUSED, not a reset or a timeout) and a connection open
// when it began is reset; then the listener answers on the same port again.
func TestWinRMFaultRefuseClosesTheListenerForAWhile(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := newGateListener(l)
	defer g.Close()
	go func() {
		for {
			c, err := g.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	open, err := net.Dial("tcp", g.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	f := &faultSet{ops: map[string]string{}, gates: []*gateListener{g}}
	if err := f.add(WinRMFault{Fault: FaultRefuse, DurationMS: 1500}); err != nil {
		t.Fatal(err)
	}
	// The open connection is reset when the refusal begins.
	_ = open.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := open.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) {
		t.Fatalf("reading the connection open when the refusal began: %v; want a reset", err)
	}
	if _, err := net.Dial("tcp", g.addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("a connection during the refusal: %v; want ECONNREFUSED", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", g.addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the listener did not open again: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // poll interval while waiting on the listener, with a deadline
	}
	for _, w := range []WinRMFault{{Fault: FaultRefuse}, {Fault: FaultRefuse, DurationMS: 1, Request: "Receive"}} {
		if err := f.add(w); !errors.Is(err, ErrBadAction) {
			t.Errorf("add(%+v) = %v; want ErrBadAction", w, err)
		}
	}
}

// A "refuse" fault armed by an operation fires at that operation's after+1-th
// command, not before; with no delay that command's own Send is lost.
func TestWinRMFaultRefuseArmedByAnOperation(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := newGateListener(l)
	defer g.Close()
	go func() {
		for {
			c, err := g.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	f := &faultSet{ops: map[string]string{}, gates: []*gateListener{g}}
	defer f.clear()
	if err := f.add(WinRMFault{Fault: FaultRefuse, Operation: "read_instance", After: 1, DurationMS: 5000}); err != nil {
		t.Fatal(err)
	}
	if f.armedRefusal("set_right") || f.armedRefusal("read_instance") {
		t.Fatal("the refusal fired before the second read_instance")
	}
	c, err := net.Dial("tcp", g.addr)
	if err != nil {
		t.Fatalf("a connection before the refusal fired: %v", err)
	}
	c.Close()
	if !f.armedRefusal("read_instance") {
		t.Fatal("the second read_instance's Send was not lost")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", g.addr)
		if errors.Is(err, syscall.ECONNREFUSED) {
			break
		}
		if err == nil {
			c.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("the listener still accepts after the refusal fired: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // poll interval while the refusal begins, with a deadline
	}
	if f.armedRefusal("read_instance") {
		t.Error("the refusal fired twice; it fires once")
	}
	for _, w := range []WinRMFault{{Fault: FaultRefuse, DurationMS: 1, Operation: "read_instance", Service: "MSSQLSERVER", State: "Running"}} {
		if err := f.add(w); !errors.Is(err, ErrBadAction) {
			t.Errorf("add(%+v) = %v; want ErrBadAction", w, err)
		}
	}
}
