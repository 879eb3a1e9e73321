# Reports the WinRM shells the WinRM user still has open. The provider ends each
# operation by deleting its shell, without the Signal that MS-WSMV 3.1.4.14 asks for
# after a command's output was received (design/winrm-stdin-and-cost-model.md,
# "No Signal after Done"); if Windows did not end the command on Delete, shells would
# pile up here until WinRM's IdleTimeout. Reported in the job's summary, not failed:
# a shell can also be open because an operation is still running.
[CmdletBinding()]
param([Parameter(Mandatory = $true)][string] $User, [Parameter(Mandatory = $true)][string] $After)
. "$PSScriptRoot\ci-common.ps1"

$shells = @(Get-WSManInstance -ResourceURI 'shell' -Enumerate -ErrorAction SilentlyContinue | Where-Object { [string]$_.Owner -match "(^|\\)$([regex]::Escape($User))$" })
$line = "Open WinRM shells of $User after ${After}: $($shells.Count) (expected 0: each operation deletes its shell instead of sending a Signal after Done)."
Write-Host $line
Add-JobSummary -Lines @($line, '')
