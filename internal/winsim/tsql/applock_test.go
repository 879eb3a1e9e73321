package tsql_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds/tdstest"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tsql"
)

const getLock = `DECLARE @r int;
EXEC @r = master.sys.sp_getapplock @Resource = N'mssqlifi:ag:AG1', @LockMode = N'Exclusive', @LockOwner = N'Session', @LockTimeout = %s;
SELECT @r AS result`

// lockResult runs the batch in session and returns its result status.
func lockResult(t *testing.T, h *host.Host, session int, batch string) string {
	t.Helper()
	inst, _ := h.Instance("MSSQLSERVER")
	sets, err := inst.TDSHandler().Batch(context.Background(), tds.Login{User: "sa", Password: "Sql!", Session: session}, batch)
	if err != nil {
		return "error " + err.Message
	}
	return strings.TrimSpace(tdstest.Render(sets[len(sets)-1:]))
}

// sp_getapplock as documented: 0 granted, -1 when another session holds it and the
// timeout passes, 1 when granted after waiting; a session's end releases its locks.
func TestAppLockSessionOwned(t *testing.T) {
	t.Parallel()
	h := sqlHost(t)
	inst, _ := h.Instance("MSSQLSERVER")
	at := func(ms string) string { return strings.Replace(getLock, "%s", ms, 1) }
	if got := lockResult(t, h, 51, at("0")); got != "result:int\n0" {
		t.Fatalf("first session: %q, want granted (0)", got)
	}
	if got := lockResult(t, h, 52, at("0")); got != "result:int\n-1" {
		t.Errorf("second session: %q, want timed out (-1)", got)
	}
	if got := h.AppLockHolders("MSSQLSERVER", "master", "mssqlifi:ag:AG1"); len(got) != 1 || got[0] != 51 {
		t.Errorf("holders %v, want [51]", got)
	}
	// Resource names compare as binary: another case is another lock.
	if got := lockResult(t, h, 52, strings.Replace(at("0"), "AG1", "ag1", 1)); got != "result:int\n0" {
		t.Errorf("lower-case resource: %q, want granted (0)", got)
	}
	done := make(chan string, 1)
	go func() { done <- lockResult(t, h, 53, at("10000")) }()
	for deadline := time.Now().Add(10 * time.Second); h.AppLockWaits("MSSQLSERVER") == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the third session never waited for the lock")
		}
		time.Sleep(tsql.AppLockPoll) // polling the model's own counter, not a timed guess
	}
	ender, ok := inst.TDSHandler().(tds.SessionEnder)
	if !ok {
		t.Fatalf("the instance's TDS handler, a %T, does not end sessions", inst.TDSHandler())
	}
	ender.SessionEnded(51)
	select {
	case got := <-done:
		if got != "result:int\n1" {
			t.Errorf("waiting session: %q, want granted after waiting (1)", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the waiting session was not granted the lock after the holder's session ended")
	}
	rel := `DECLARE @r int; EXEC @r = sp_releaseapplock @Resource = N'mssqlifi:ag:AG1', @LockOwner = 'Session'; SELECT @r AS result`
	if got := lockResult(t, h, 52, rel); !strings.Contains(got, "Cannot release the application lock") {
		t.Errorf("release by a session that does not hold it: %q, want error 1223", got)
	}
	if got := lockResult(t, h, 53, rel); got != "result:int\n0" {
		t.Errorf("release by the holder: %q, want 0", got)
	}
	if got := lockResult(t, h, 54, strings.Replace(at("0"), "N'Session'", "N'Transaction'", 1)); got != "result:int\n-999" {
		t.Errorf("a transaction-owned lock outside a transaction: %q, want -999", got)
	}
	if got := lockResult(t, h, 54, `EXEC sp_nosuch @a = 1`); !strings.Contains(got, "Could not find stored procedure 'sp_nosuch'") {
		t.Errorf("an unknown procedure: %q", got)
	}
}
