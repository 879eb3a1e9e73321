package host

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/wsman"
)

func execOpCtx(t *testing.T, ctx context.Context, h *Host, op contract.Operation, params any) execResult {
	t.Helper()
	in, err := contract.EncodeInput(op, params)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := h.Execute(ctx, wsman.Command{User: "Administrator", Command: contract.Shell, Arguments: contract.CommandArgs(), Stdin: bytes.NewReader(in)}, &out, &errb)
	return execResult{out.String(), errb.String(), code}
}

// The shell of restart_instance ends (client gone, shell deleted) while the Engine is
// Stop Pending: the restart completes on the host, and restart_status reports it.
func TestRestartOutlivesTheShell(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.Instances[0].StartMS, cfg.Instances[0].StopMS = 200, 300
	h := newHost(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_ = h.WaitServiceState(context.Background(), "MSSQLSERVER", contract.StateStopPending)
		cancel() // what deleting the shell does to the command
	}()
	const id = "0123456789abcdef0123456789abcdef"
	r := execOpCtx(t, ctx, h, contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30, RestartID: id})
	if r.code != 1 {
		t.Fatalf("the terminated script exited %d: %+v", r.code, r)
	}
	st := restartResult(t, execOp(t, h, "Administrator", contract.OpRestartStatus, contract.RestartStatusParams{Instance: "MSSQLSERVER", WaitSeconds: 10}))
	if !st.Found || !st.Finished || st.Error != "" || st.RestartID != id || st.ServiceState != contract.StateRunning {
		t.Fatalf("restart_status after the shell ended: %+v", st)
	}
	if s, _ := h.ServiceState("MSSQLSERVER"); s != contract.StateRunning {
		t.Fatalf("the Engine is %s", s)
	}
	// The same request again reports that restart: no second restart.
	before, _ := h.Instance("MSSQLSERVER")
	pid := before.Process().PID
	again := restartResult(t, execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30, RestartID: id}))
	if !again.Joined || again.RestartID != id || before.Process().PID != pid {
		t.Fatalf("a repeated request restarted again or did not join: %+v", again)
	}
}

// A second request while a restart runs joins it: one stop, one start.
func TestRestartRequestsJoin(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.Instances[0].StartMS, cfg.Instances[0].StopMS = 300, 300
	h := newHost(t, cfg)
	if first := restartResult(t, execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30, WaitSeconds: 0})); !first.Finished || first.Error != "" {
		t.Fatalf("the first test restart: %+v", first)
	}
	// The first request runs its restart to the end; the second comes while it runs.
	firstDone := make(chan contract.RestartInstanceResult, 1)
	before := h.RestartStatus("MSSQLSERVER").RestartID
	go func() {
		firstDone <- restartResult(t, execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30, WaitSeconds: 1}))
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// "Runs" means let go (past its prepared phase): a restart only prepared refuses
	// another request (enterRestartLease) rather than letting it join.
	if err := h.waitFor(ctx, func() (bool, error) {
		j := h.restarts["MSSQLSERVER"]
		return j != nil && j.res.RestartID != before && j.res.Phase != contract.PhasePrepared && !j.res.Finished, nil
	}); err != nil {
		t.Fatalf("the first restart was not let go: %v", err)
	}
	b := restartResult(t, execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30}))
	a := <-firstDone
	if a.Joined || !a.Finished || a.Error != "" {
		t.Fatalf("first request: %+v", a)
	}
	if !b.Joined || b.RestartID != a.RestartID || !b.Finished || b.Error != "" {
		t.Fatalf("second request while the first ran: %+v (first %s)", b, a.RestartID)
	}
	stops := 0
	h.mu.Lock()
	for _, e := range h.events {
		if e.service == "MSSQLSERVER" && e.state == contract.StateStopPending {
			stops++
		}
	}
	h.mu.Unlock()
	if stops != 2 { // the first test restart above, and the joined one
		t.Fatalf("the Engine was stopped %d times for two restarts, want 2", stops)
	}
}

// A stop that takes longer than the restart's deadline is reported at the deadline;
// the host starts the Engine once it has stopped.
func TestRestartSlowStop(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	h := newHost(t, cfg)
	// The stop lasts until the test ends it, so "reported at the deadline" is an
	// order: the answer comes while the Engine is still Stop Pending.
	if err := h.SetStopDuration("MSSQLSERVER", time.Hour); err != nil {
		t.Fatal(err)
	}
	r := restartResult(t, execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 1, WaitSeconds: 5}))
	if r.Error != contract.RestartStopTimeout || r.Finished || !strings.Contains(r.Message, "starts it again as soon as it has stopped") {
		t.Fatalf("slow stop: %+v", r)
	}
	if s, _ := h.ServiceState("MSSQLSERVER"); s != contract.StateStopPending {
		t.Fatalf("the stop timeout was reported when the Engine was %s, want while it is still Stop Pending", s)
	}
	if err := h.EndStopNow("MSSQLSERVER"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.WaitServiceState(ctx, "MSSQLSERVER", contract.StateRunning); err != nil {
		t.Fatalf("the Engine was left down after a slow stop: %v", err)
	}
	// The Engine runs a moment before the guard records the end of its job: wait
	// for the job's end (restart_status returns at once once an error is set).
	h.mu.Lock()
	j := h.restarts["MSSQLSERVER"]
	h.mu.Unlock()
	select {
	case <-j.done:
	case <-ctx.Done():
		t.Fatal("the restart job never ended after the late start")
	}
	st := restartResult(t, execOp(t, h, "Administrator", contract.OpRestartStatus, contract.RestartStatusParams{Instance: "MSSQLSERVER", WaitSeconds: 5}))
	if !st.Finished || st.Error != contract.RestartStopTimeout || st.ServiceState != contract.StateRunning {
		t.Fatalf("status after the late start: %+v", st)
	}
}

// An injected start failure with its Windows error code: retried, then reported.
func TestRestartInjectedStartFailure(t *testing.T) {
	t.Parallel()
	h := newHost(t, baseConfig())
	if err := h.FailStarts("MSSQLSERVER", 1069, 2); err != nil {
		t.Fatal(err)
	}
	r := restartResult(t, execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30}))
	// Two failures, the third attempt succeeds.
	if r.Error != "" || r.StartAttempts != 3 || r.ServiceState != contract.StateRunning {
		t.Fatalf("two failed starts, then one that works: %+v", r)
	}
	if err := h.FailStarts("MSSQLSERVER", 1069, -1); err != nil {
		t.Fatal(err)
	}
	r = restartResult(t, execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30}))
	if r.Error != contract.RestartStartFailed || r.Win32ExitCode != 1069 || !strings.Contains(r.Message, "Windows error 1069") {
		t.Fatalf("every start failing: %+v", r)
	}
}
