package contract

import "testing"

// Issue 37: restart_worker.ps1 starts again every dependent it stopped that can
// start before it waits on one still Stop Pending (a dependent that would not stop)
// or on one that depends on it: those are held, and the runner hands them to the
// guard, which starts them once they have stopped. Before, the wait on the
// Stop-Pending dependent (up to 2 hours) came first, and SQL Server Agent stayed
// stopped all that time.
func TestWorkerStartsTheDependentsItCanBeforeWaitingOnOne(t *testing.T) {
	w := mustRead("restart_worker.ps1")
	wantInOrder(t, "restart_worker.ps1", w, []string{
		// The decision not to stop the Engine gives the dependents a deadline of their own.
		"$blocker = $dependent", "(the stop's is spent).\n                $deadline = [DateTime]::UtcNow.AddSeconds($timeoutSeconds)",
		"[array]::Reverse($running)", "$held = New-Object System.Collections.Generic.List[string]",
		"$dependent.ServicesDependedOn | Where-Object { $held -contains $_.Name }",
		"$held.Add($dependent.Name)\n                continue", "$dependent.Start()",
		"if ($held.Count -gt 0) {", "if ($Inline) {\n                return",
		"Wait-Status -Service $dependent -Status 'Stopped' -Until $lateLimit",
		"Complete-Restart -ErrorCode 'timeout' -Message $late",
	})
}
