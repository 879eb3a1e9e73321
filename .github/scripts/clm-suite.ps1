# The suite under Constrained Language Mode: the host snapshotted before, the suite
# run (it must be refused, saying why), the host compared after (nothing may change).
# -Hook: the __PSLockdownPolicy test hook instead of AppLocker. Windows PowerShell
# reads it from the machine-wide environment only (the registry's
# HKLM\SYSTEM\CurrentControlSet\Control\Session Manager\Environment, read when a
# PowerShell starts; FACTS.md: "as a machine environment variable applies to
# every new Windows PowerShell process on the machine"), not from a service's own
# environment. So it is set machine-wide here, for this step only, and put back as it
# was whatever the suite did: this step's PowerShell, started before, keeps
# FullLanguage, and no later step's starts constrained.
[CmdletBinding()]
param(
    [Parameter(Mandatory = $true)][string] $Instance,
    [Parameter(Mandatory = $true)][string] $ExpectText,
    [switch] $Hook
)
. "$PSScriptRoot\ci-common.ps1"

$hookName = '__PSLockdownPolicy'
$before = [Environment]::GetEnvironmentVariable($hookName, 'Machine')
$snapshot = Join-Path -Path $env:RUNNER_TEMP -ChildPath 'before-clm.json'
& "$PSScriptRoot\host-snapshot.ps1" -Instance $Instance -Out $snapshot
if ($Hook) {
    [Environment]::SetEnvironmentVariable($hookName, '4', 'Machine')
    Write-Host "$hookName=4 set machine-wide for this step (it was '$before')"
}
try {
    & "$PSScriptRoot\run-suite.ps1" -Label "Constrained Language Mode ($env:MSSQLIFI_CLM_METHOD)" -Expect fail -ExpectText $ExpectText
}
finally {
    if ($Hook) {
        # $null removes the variable when there was none before.
        [Environment]::SetEnvironmentVariable($hookName, $before, 'Machine')
        Write-Host "$hookName put back as it was ('$before')"
    }
}
& "$PSScriptRoot\host-snapshot.ps1" -Instance $Instance -Out (Join-Path -Path $env:RUNNER_TEMP -ChildPath 'after-clm.json') -Compare $snapshot
