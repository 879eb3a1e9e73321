package winsim

import (
	"errors"
	"testing"

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
