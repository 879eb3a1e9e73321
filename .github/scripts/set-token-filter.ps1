# Sets or removes LocalAccountTokenFilterPolicy (HKLM\SOFTWARE\Microsoft\Windows\
# CurrentVersion\Policies\System). With UAC on (EnableLUA 1), a network logon of a
# local account other than the built-in Administrator gets a filtered token: the
# Administrators group deny-only, medium integrity ("User Account Control and remote
# restrictions", Microsoft Learn). WinRM then refuses it (its root SDDL allows
# Administrators and Remote Management Users), and the LSA and service calls would be
# denied anyway. The value 1 lets such an account log on with its full token.
# Writes the step outputs `uac` (on|off) and `previous` (the value found, or absent).
[CmdletBinding()]
param([Parameter(Mandatory = $true)][ValidateSet('Absent', '1')][string] $Value)
. "$PSScriptRoot\ci-common.ps1"

$key = 'HKLM:\SOFTWARE\Microsoft\Windows\CurrentVersion\Policies\System'
$properties = Get-ItemProperty -Path $key
$uac = 'on'
if ($null -ne $properties.EnableLUA -and [int]$properties.EnableLUA -eq 0) { $uac = 'off' }
$previous = 'absent'
if ($null -ne $properties.LocalAccountTokenFilterPolicy) { $previous = [string]$properties.LocalAccountTokenFilterPolicy }
if ($Value -eq 'Absent') {
    Remove-ItemProperty -Path $key -Name 'LocalAccountTokenFilterPolicy' -ErrorAction SilentlyContinue
} else {
    Set-ItemProperty -Path $key -Name 'LocalAccountTokenFilterPolicy' -Value 1 -Type DWord
}
Write-Host "UAC (EnableLUA) $uac; LocalAccountTokenFilterPolicy was $previous, now $Value"
Set-StepOutput -Name 'uac' -Value $uac
Set-StepOutput -Name 'previous' -Value $previous
if ($uac -eq 'off' -and $Value -eq 'Absent') {
    Add-JobSummary -Lines @('### UAC remote restrictions', '', 'UAC is off on this image (EnableLUA 0): no logon is filtered, so the preflight''s check of LocalAccountTokenFilterPolicy was not exercised.', '')
}
