package hostsuite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readRepo reads a file of the repository from this package's folder.
func readRepo(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), "\r\n", "\n")
}

// Issue 37: the Windows job's Constrained Language Mode hook. Windows PowerShell
// reads __PSLockdownPolicy from the machine-wide environment only (FACTS.md), so
// the hook in the WinRM service's own environment never took: the suite's step sets
// it machine-wide and puts it back in a finally, around the suite alone; the step
// that chooses the hook only records the choice.
func TestCIConstrainedLanguageHookIsMachineWideInTheSuitesStep(t *testing.T) {
	wf := readRepo(t, ".github/workflows/windows-realhost.yml")
	if !strings.Contains(wf, "run: .github/scripts/clm-suite.ps1 -Instance $env:MSSQLIFI_ACC_INSTANCE -ExpectText $env:CLM_REFUSED -Hook:($env:MSSQLIFI_CLM_HOOK -eq 'true')") {
		t.Error("the workflow's CLM suite step does not run clm-suite.ps1 with the hook choice")
	}
	suite := readRepo(t, ".github/scripts/clm-suite.ps1")
	steps := []string{
		"$before = [Environment]::GetEnvironmentVariable($hookName, 'Machine')",
		"host-snapshot.ps1\" -Instance $Instance -Out $snapshot",
		"[Environment]::SetEnvironmentVariable($hookName, '4', 'Machine')",
		"try {", "run-suite.ps1\"", "finally {",
		"[Environment]::SetEnvironmentVariable($hookName, $before, 'Machine')",
		"-Compare $snapshot",
	}
	last := -1
	for _, s := range steps {
		i := strings.Index(suite, s)
		if i < 0 || i < last {
			t.Fatalf("clm-suite.ps1 lacks %q after the step before it", s)
		}
		last = i
	}
	clm := readRepo(t, ".github/scripts/clm.ps1")
	if strings.Contains(clm, "'__PSLockdownPolicy=4')") || !strings.Contains(clm, "Set-JobEnv -Name 'MSSQLIFI_CLM_HOOK' -Value 'true'") {
		t.Error("clm.ps1 -Method Hook still sets the hook in the WinRM service's environment, or does not record the choice")
	}
}

// Issue 37: the 10 GB seed may not fit a hosted runner's free disk: the job sizes
// it (seed-size.ps1) from the free space of the data folder's volume before any
// step reads MSSQLIFI_ACC_SEED_MB, which the job's env no longer fixes.
func TestCISeedSizedToTheFreeDisk(t *testing.T) {
	wf := readRepo(t, ".github/workflows/windows-realhost.yml")
	if strings.Contains(wf, "      "+EnvSeedMB+":") {
		t.Errorf("the workflow's env fixes %s; seed-size.ps1 must set it", EnvSeedMB)
	}
	size, suite := strings.Index(wf, "run: .github/scripts/seed-size.ps1"), strings.Index(wf, "run: .github/scripts/run-suite.ps1")
	if size < 0 || suite < 0 || size > suite {
		t.Errorf("seed-size.ps1 does not run before the first suite run (at %d, the suite at %d)", size, suite)
	}
	s := readRepo(t, ".github/scripts/seed-size.ps1")
	for _, want := range []string{"AvailableFreeSpace", "[Math]::Min($WantedMB, $fitMB)", "Set-JobEnv -Name '" + EnvSeedMB + "'",
		"$logMB = 8 # internal/hostsuite's seedLogSizeMB"} {
		if !strings.Contains(s, want) {
			t.Errorf("seed-size.ps1 lacks %q", want)
		}
	}
	if seedLogSizeMB != 8 {
		t.Errorf("seedLogSizeMB is %d; seed-size.ps1 counts 8", seedLogSizeMB)
	}
}
