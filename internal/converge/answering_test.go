package converge

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

// SQL Server's answer counts only from the Engine the host reported for the
// instance: the instance name, the process id and (when both give it) the start.
// Any other answer is a failed SQL check naming both instances and the port, and
// verification falls back to the error log.
func TestObserveCountsOnlyTheReportedEnginesAnswer(t *testing.T) {
	other := fakeBoot.Add(-36 * time.Hour)
	for _, tc := range []struct {
		name   string
		answer func(*contract.SQLReport)
		want   string // in the WrongInstanceError; "": the answer counts
	}{
		{name: "the reported Engine answers"},
		{name: "its start a few seconds after the process's", answer: func(r *contract.SQLReport) {
			at := fakeBoot.Add(3 * time.Second)
			r.LastStartup = &at
		}},
		{name: "the start unknown (no VIEW SERVER STATE)", answer: func(r *contract.SQLReport) { r.LastStartup = nil }},
		{name: "another instance of the host at the port", answer: func(r *contract.SQLReport) {
			r.InstanceName, r.ProcessID, r.LastStartup = "INST02", 5150, &other
		}, want: "instance INST02 answered at port 1433, not MSSQLSERVER"},
		{name: "another machine's default instance", answer: func(r *contract.SQLReport) { r.ProcessID = 5150 },
			want: "process 5150 answered at port 1433, not 4242"},
		{name: "the process id reused by a later Engine", answer: func(r *contract.SQLReport) { r.LastStartup = &other },
			want: "started 36h0m0s from the process the host reports"},
		{name: "SQL Server gives no process id", answer: func(r *contract.SQLReport) { r.ProcessID = 0 },
			want: "the process id could not be compared"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(newFakeHost())
			w.host.ri.ErrorLog = contract.ErrorLogInfo{Found: true, Enabled: ptr(false)}
			w.checker.answer = tc.answer
			o, err := w.engine.Observe(context.Background(), defaultTarget)
			if err != nil {
				t.Fatal(err)
			}
			var wrong *WrongInstanceError
			var warned *ifi.Warning
			for i, wn := range o.Warnings {
				if wn.Code == WarnSQLCheck {
					warned = &o.Warnings[i]
					errors.As(wn.Err, &wrong)
				}
			}
			if tc.want == "" {
				if warned != nil || o.Observed.Verification.Source != ifi.SourceSQLDMV {
					t.Fatalf("source %s, warning %+v; want SQL Server's answer counted", o.Observed.Verification.Source, warned)
				}
				return
			}
			if wrong == nil || o.Observed.Verification.Source != ifi.SourceErrorLog || o.SQLTarget.AnsweredTDS {
				t.Fatalf("source %s, warning %+v, answered TDS %v; want the answer refused and the error log used",
					o.Observed.Verification.Source, warned, o.SQLTarget.AnsweredTDS)
			}
			msg := wrong.Error()
			for _, s := range []string{tc.want, "SQL Server at sql01.example.com:1433", "instance MSSQLSERVER", "the TCP port instance MSSQLSERVER listens on"} {
				if !strings.Contains(msg, s) {
					t.Errorf("the error does not say %q:\n%s", s, msg)
				}
			}
		})
	}
}

// Another instance's answer is no answer: the restart that needed to know whether a
// backup runs is refused, nothing is changed, and the next apply refuses again.
func TestApplyRefusesTheRestartOnAnotherInstancesAnswer(t *testing.T) {
	h := newFakeHost()
	off := false
	h.ri.ErrorLog.Found, h.ri.ErrorLog.Enabled = true, &off
	d := enable
	d.Restart = ifi.RestartIfNeededIncludingPrimary
	w := newWorld(h)
	other := fakeBoot.Add(-time.Hour)
	w.checker.answer = func(r *contract.SQLReport) { r.InstanceName, r.ProcessID, r.LastStartup = "INST02", 5150, &other }
	for run := 1; run <= 3; run++ {
		_, err := w.engine.Apply(context.Background(), Target{Host: defaultTarget.Host, Instance: defaultTarget.Instance, SQLPort: 1433}, d)
		var ce *Error
		if !errors.As(err, &ce) || ce.Kind != KindRefused || ce.Refusal == nil || !strings.Contains(ce.Refusal.Summary, "Running backups unknown") {
			t.Fatalf("apply %d: %v; want the restart refused, running backups unknown", run, err)
		}
	}
	if h.restarts != 0 || h.setRights != 0 || w.checker.waits != 0 {
		t.Errorf("restarts %d, set_right changes %d, waits %d: want nothing done", h.restarts, h.setRights, w.checker.waits)
	}
}
