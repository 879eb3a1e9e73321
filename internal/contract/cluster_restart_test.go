package contract

import (
	"strings"
	"testing"
)

// Issue 37: a slow offline left BringOnline max(1, left) seconds, and a false
// "failed" report. cluster_restart.ps1's TakeOffline waits at most half the time
// left; the script then waits for the offline's end, at most until half time. An
// offline still pending then is reported as such and BringOnline is not called on it
// (the cluster would refuse it or leave it pending); the guard, which waits while a
// resource of the role is pending, brings the role online once the offline ends. An
// offline that ended keeps BringOnline the other half.
func TestClusterRestartLeavesBringOnlineHalfTheTime(t *testing.T) {
	s := mustRead("cluster_restart.ps1")
	if strings.Contains(s, "TimeOut = [uint32]$timeout") {
		t.Errorf("cluster_restart.ps1 still gives a call the whole timeout")
	}
	wantInOrder(t, "cluster_restart.ps1", s, []string{
		"$half = [int][Math]::Max(1, [Math]::Floor(($until - [DateTime]::UtcNow).TotalSeconds / 2))",
		"$offlineUntil = [DateTime]::UtcNow.AddSeconds($half)",
		"-MethodName 'TakeOffline' -Arguments @{ TimeOut = [uint32]$half }",
		"$_.state -eq 'Pending' -or $_.state -eq 'OfflinePending' -or $_.state -eq 'OnlinePending'",
		"if (($pending.Count -eq 0 -and ($callError -or -not $sqlOnline)) -or [DateTime]::UtcNow -ge $offlineUntil) {\n            break",
		"$callError = '' # the call's wait ended first",
		"if ($pending.Count -gt 0) {\n    # The cluster runs the offline to its end",
		"did not finish in $half s ($($pending -join ', ')): BringOnline was not called; the cluster guard brings the role online once the offline ends",
		"Write-Result -Value $result\n}\n# Online again whatever the offline did",
		"$left = [int][Math]::Max(1, ($until - [DateTime]::UtcNow).TotalSeconds)",
		"-MethodName 'BringOnline' -Arguments @{ TimeOut = [uint32]$left }",
	})
	// The guard brings the role online only once no resource of it is pending.
	wantInOrder(t, "cluster_guard.ps1", mustRead("cluster_guard.ps1"), []string{
		"if (@($resources | Where-Object { [int]$_.State -ge 128 }).Count -gt 0) {\n                Start-Sleep -Seconds 1\n                continue",
		"-MethodName 'BringOnline'",
	})
}
