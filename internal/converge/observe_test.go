package converge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

// errEarlyPort is what SQL Server answers at a port it does not listen on.
var errEarlyPort = errors.New("connection refused")

// When the SQL port is known before the read, SQL Server is asked while the host is
// read; the early answer counts only when the host then reports a running Engine at
// that port.
func TestObserveOverlapsSQLCheck(t *testing.T) {
	for _, tc := range []struct {
		name     string
		target   Target
		setup    func(*world)
		overlap  bool // read_instance waits until the SQL check has started
		stale    int  // a check at this port fails (SQL Server is not there)
		wantErr  bool
		wantSrc  ifi.Source
		wantWarn string
		wantAt   []int // the ports SQL Server was asked at, in order
	}{
		{name: "configured sql_port", target: Target{SQLPort: 1433}, overlap: true,
			wantSrc: ifi.SourceSQLDMV, wantAt: []int{1433}},
		{name: "port from the last observation", target: Target{SQLPortHint: 1433}, overlap: true,
			wantSrc: ifi.SourceSQLDMV, wantAt: []int{1433}},
		{name: "the host reports another port: checked again there", target: Target{SQLPortHint: 1500}, overlap: true, stale: 1500,
			wantSrc: ifi.SourceSQLDMV, wantAt: []int{1500, 1433}},
		{name: "sql_port wins over the hint", target: Target{SQLPort: 1433, SQLPortHint: 1500}, overlap: true, stale: 1500,
			wantSrc: ifi.SourceSQLDMV, wantAt: []int{1433}},
		{name: "the Engine is stopped: the early answer is discarded", target: Target{SQLPortHint: 1433}, overlap: true, stale: 1433,
			setup:   func(w *world) { w.host.ri.ServiceState = contract.StateStopped },
			wantSrc: ifi.SourceNone, wantAt: []int{1433}},
		{name: "the host reports no port: the early answer is discarded", target: Target{SQLPortHint: 1433}, overlap: true,
			setup:   func(w *world) { w.host.ri.TCPPort = 0 },
			wantSrc: ifi.SourceErrorLog, wantWarn: WarnSQLPortUnknown, wantAt: []int{1433}},
		{name: "the early check fails", target: Target{SQLPortHint: 1433}, overlap: true,
			setup:   func(w *world) { w.checker.checkErr = errBoom },
			wantSrc: ifi.SourceErrorLog, wantWarn: WarnSQLCheck, wantAt: []int{1433}},
		{name: "read_instance fails", target: Target{SQLPortHint: 1433}, overlap: true,
			setup:   func(w *world) { w.host.readErr = func(int) error { return errBoom } },
			wantErr: true, wantAt: []int{1433}},
		{name: "no port known up front: the check follows the read", wantSrc: ifi.SourceSQLDMV, wantAt: []int{1433}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The bound only turns a missing overlap into a failure instead of a hang.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			w := newWorld(newFakeHost())
			w.host.ri.ErrorLog = contract.ErrorLogInfo{Found: true, Enabled: ptr(false)}
			if tc.setup != nil {
				tc.setup(w)
			}
			started := make(chan struct{})
			var once sync.Once
			w.checker.onCheck = func(_ context.Context, st contract.SQLTarget) error {
				once.Do(func() { close(started) })
				if st.Port == tc.stale {
					return errEarlyPort
				}
				return nil
			}
			w.host.beforeRead = func(ctx context.Context) error {
				if !tc.overlap {
					select {
					case <-started:
						return errors.New("SQL Server was asked before read_instance although no port was known")
					default:
						return nil
					}
				}
				select {
				case <-started:
					return nil
				case <-ctx.Done():
					return fmt.Errorf("the SQL check did not start before read_instance answered: %w", ctx.Err())
				}
			}
			tgt := defaultTarget
			tgt.SQLPort, tgt.SQLPortHint = tc.target.SQLPort, tc.target.SQLPortHint

			o, err := w.engine.Observe(ctx, tgt)
			if got := ports(w.checker); !slices.Equal(got, tc.wantAt) {
				t.Errorf("SQL Server asked at ports %v, want %v", got, tc.wantAt)
			}
			if tc.wantErr {
				var ce *Error
				if !errors.As(err, &ce) || ce.Kind != KindObserveFailed || !errors.Is(err, errBoom) {
					t.Errorf("error %v, want an observe_failed error carrying the host's error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := o.Observed.Verification.Source; got != tc.wantSrc {
				t.Errorf("verified by %s, want %s", got, tc.wantSrc)
			}
			if tc.wantWarn == "" {
				if len(o.Warnings) > 0 {
					t.Errorf("unexpected warnings %v", codes(o.Warnings))
				}
				return
			}
			wantWarning(t, o.Warnings, tc.wantWarn)
			if tc.wantWarn == WarnSQLCheck {
				if d := o.Warnings[0].Detail; !strings.Contains(d, tgt.Host+":1433") || !strings.Contains(d, tgt.Instance) {
					t.Errorf("warning %q does not name the instance, host and port", d)
				}
				if !errors.Is(o.Warnings[0].Err, errBoom) {
					t.Errorf("warning carries %v, want the check's error", o.Warnings[0].Err)
				}
			}
		})
	}
}

// An early check that is not used is cancelled, and Observe returns only once it
// has ended: nothing outlives the observation.
func TestObserveEndsDiscardedCheck(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := newWorld(newFakeHost())
	w.host.ri.ServiceState = contract.StateStopped
	started, ended := make(chan struct{}), make(chan error, 1)
	w.checker.onCheck = func(ctx context.Context, _ contract.SQLTarget) error {
		close(started)
		<-ctx.Done() // a connection to a stopped Engine that hangs
		ended <- ctx.Err()
		return ctx.Err()
	}
	w.host.beforeRead = func(ctx context.Context) error {
		select {
		case <-started:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	tgt := defaultTarget
	tgt.SQLPortHint = 1433
	if _, err := w.engine.Observe(ctx, tgt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the discarded check ended with %v, want it cancelled", err)
		}
	default:
		t.Error("Observe returned while the discarded check was still running")
	}
}

// Read reports the port the host reported, for the next read's hint.
func TestReadReportsSQLPort(t *testing.T) {
	w := newWorld(newFakeHost())
	w.host.ri.TCPPort = 1500
	out, err := w.engine.Read(context.Background(), defaultTarget, enable)
	if err != nil {
		t.Fatal(err)
	}
	if out.SQLPort != 1500 {
		t.Errorf("Outcome.SQLPort = %d, want 1500", out.SQLPort)
	}
}

func ports(c *fakeChecker) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ps []int
	for _, t := range c.targets {
		ps = append(ps, t.Port)
	}
	return ps
}
