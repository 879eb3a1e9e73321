package host

import "testing"

// The Engine's stop ends every session, and so every lock its T-SQL engine
// granted.
func TestAppLockEndsWithEngine(t *testing.T) {
	h := sqlHost(t)
	inst, _ := h.Instance("MSSQLSERVER")
	const getLock = `DECLARE @r int;
EXEC @r = master.sys.sp_getapplock @Resource = N'mssqlifi:ag:AG1', @LockMode = N'Exclusive', @LockOwner = N'Session', @LockTimeout = 0;
SELECT @r AS result`
	if got := batch(t, inst, "sa", getLock); got != "result:int\n0\n" {
		t.Fatalf("%q", got)
	}
	if got := h.AppLockHolders("MSSQLSERVER", "master", "mssqlifi:ag:AG1"); len(got) != 1 {
		t.Fatalf("holders before the Engine stopped: %v", got)
	}
	h.mu.Lock()
	inst.processEndedLocked(false)
	h.mu.Unlock()
	if got := h.AppLockHolders("MSSQLSERVER", "master", "mssqlifi:ag:AG1"); len(got) != 0 {
		t.Errorf("holders after the Engine stopped: %v", got)
	}
}
