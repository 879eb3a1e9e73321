package host

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

// The host's restart lease (design/restart.md): while one instance restarts,
// a restart of another instance of the same host is refused before it changes
// anything; once the first finished, it runs.
func TestRestartLeaseOneInstancePerHost(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.Instances[0].StartMS, cfg.Instances[0].StopMS = 200, 200
	cfg.Instances = append(cfg.Instances, InstanceConfig{Name: "ETL"})
	h := newHost(t, cfg)
	if err := h.SetStopDuration("MSSQLSERVER", time.Hour); err != nil { // held until EndStopNow
		t.Fatal(err)
	}
	etlSID := winsid.ServiceSID("MSSQL$ETL")
	etl, _ := h.Instance("ETL")
	etlPID := etl.Process().PID

	first := make(chan execResult, 1)
	go func() {
		first <- execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "MSSQLSERVER", TimeoutSeconds: 30})
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.WaitServiceState(ctx, "MSSQLSERVER", contract.StateStopPending); err != nil {
		t.Fatalf("the first restart did not stop the Engine: %v", err)
	}
	grant := contract.RestartInstanceParams{Instance: "ETL", TimeoutSeconds: 30, Changes: []contract.RightChange{{SID: etlSID, Grant: true}}}
	se := wantScriptError(t, execOp(t, h, "Administrator", contract.OpRestartInstance, grant), contract.ExitRefused, contract.CodeRestartInProgress)
	for _, want := range []string{"ETL", "instance MSSQLSERVER on SQL01", "since ", "phase stopping", "Nothing was changed for ETL", "Apply again once"} {
		if !strings.Contains(se.Message, want) {
			t.Errorf("the refusal %q does not say %q", se.Message, want)
		}
	}
	if holders, _ := h.RightHolders(contract.RightManageVolume); slices.Contains(holders, etlSID) {
		t.Errorf("the refused request granted the right: holders %v", holders)
	}
	if p := etl.Process(); p == nil || p.PID != etlPID {
		t.Errorf("the refused request restarted ETL")
	}
	if err := h.EndStopNow("MSSQLSERVER"); err != nil {
		t.Fatal(err)
	}
	a := restartResult(t, <-first)
	if !a.Finished || a.Error != "" {
		t.Fatalf("the first restart: %+v", a)
	}
	b := restartResult(t, execOp(t, h, "Administrator", contract.OpRestartInstance, grant))
	if !b.Finished || b.Error != "" || b.Joined || !b.Changed {
		t.Fatalf("ETL's restart once the first finished: %+v", b)
	}
	if p := etl.Process(); p == nil || p.PID == etlPID {
		t.Errorf("ETL did not restart")
	}
}

// A marker left by a restart that never finished holds the lease only while its
// processes may live: gone, or a reused id (another start time), frees it at once;
// a process whose liveness is unknown holds it until the restart's deadline plus the
// late-stop limit, then no longer.
func TestRestartLeaseStaleMarker(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		how     string
		ago     time.Duration
		refused bool
	}{
		{LeftProcessesGone, time.Minute, false},
		{LeftProcessReused, time.Minute, false},
		{LeftProcessUnknown, time.Minute, true},
		{LeftProcessUnknown, restartUnknownGrace + 2*time.Minute, false},
	} {
		t.Run(c.how+" "+c.ago.String(), func(t *testing.T) {
			cfg := baseConfig()
			cfg.Instances[0].StartMS, cfg.Instances[0].StopMS = 50, 50
			cfg.Instances = append(cfg.Instances, InstanceConfig{Name: "ETL", StartMS: 50, StopMS: 50})
			h := newHost(t, cfg)
			if err := h.LeaveRestartMarker("MSSQLSERVER", c.how, c.ago, time.Minute); err != nil {
				t.Fatal(err)
			}
			r := execOp(t, h, "Administrator", contract.OpRestartInstance, contract.RestartInstanceParams{Instance: "ETL", TimeoutSeconds: 30})
			if c.refused {
				wantScriptError(t, r, contract.ExitRefused, contract.CodeRestartInProgress)
				return
			}
			if res := restartResult(t, r); !res.Finished || res.Error != "" {
				t.Fatalf("ETL's restart beside a stale marker: %+v", res)
			}
			st := restartResult(t, execOp(t, h, "Administrator", contract.OpRestartStatus, contract.RestartStatusParams{Instance: "MSSQLSERVER"}))
			if !st.Finished || st.Error != contract.RestartFailed || !strings.Contains(st.Message, "ended before it finished") {
				t.Errorf("restart_status of the stale marker: %+v", st)
			}
		})
	}
}

// A gated request prepared on one instance whose provider went away (killed: no go
// line, no shell deletion) holds the host's lease only for its go line's wait: a
// request for another instance is refused naming the prepared request and until
// when it waits, and once that wait has passed its runner has ended and the host
// is free (issue 37).
func TestPreparedRequestOfAnotherInstanceHoldsTheHostForItsGoWaitOnly(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.Instances[0].StartMS, cfg.Instances[0].StopMS = 15, 15
	cfg.Instances = append(cfg.Instances, InstanceConfig{Name: "ETL", StartMS: 15, StopMS: 15})
	h := newHost(t, cfg)
	pw, out, code := gatedRun(t, context.Background(), h, 5) // go_seconds 5
	defer pw.Close()
	id := strings.Repeat("ab", 16)
	if l := nextLine(t, out); l != contract.ProgressPrefix+"prepared "+id {
		t.Fatalf("first line %q", l)
	}
	etl := contract.RestartInstanceParams{Instance: "ETL", TimeoutSeconds: 30}
	se := wantScriptError(t, execOp(t, h, "Administrator", contract.OpRestartInstance, etl), contract.ExitRefused, contract.CodeRestartInProgress)
	for _, want := range []string{"request " + id + " to restart instance MSSQLSERVER on SQL01 is prepared", "waits for its go line until ", "Apply again after "} {
		if !strings.Contains(se.Message, want) {
			t.Errorf("the refusal %q does not say %q", se.Message, want)
		}
	}
	// The prepared request's runner gives up at its go line's wait: the host is
	// then free.
	if c := <-code; c != contract.ExitRefused || !strings.Contains(out.String(), contract.CodeRestartNotStarted) {
		t.Fatalf("the prepared request: exit %d %s", c, out.String())
	}
	b := restartResult(t, execOp(t, h, "Administrator", contract.OpRestartInstance, etl))
	if !b.Finished || b.Error != "" || b.Joined {
		t.Fatalf("ETL's restart once the prepared request ended: %+v", b)
	}
}
