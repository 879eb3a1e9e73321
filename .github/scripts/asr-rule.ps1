# Defender's ASR rule "Block process creations originating from PSExec and WMI
# commands" (d1e49aac-8f56-4280-b9ba-993a6d77406c; Microsoft Learn, "Attack surface
# reduction rules reference"), which blocks Win32_Process.Create, the restart guard's
# first launcher. -Mode Block turns it on where Defender's real-time protection runs
# (ASR rules need it) and writes the step output `active` (true|false) and the reason;
# -Mode Off puts the rule back to disabled.
[CmdletBinding()]
param([Parameter(Mandatory = $true)][ValidateSet('Block', 'Off')][string] $Mode)
. "$PSScriptRoot\ci-common.ps1"

$rule = 'd1e49aac-8f56-4280-b9ba-993a6d77406c'
if ($Mode -eq 'Off') {
    Remove-MpPreference -AttackSurfaceReductionRules_Ids $rule -ErrorAction SilentlyContinue
    Write-Host "ASR rule $rule removed"
    return
}
$active = 'false'
$reason = ''
try {
    $status = Get-MpComputerStatus
    if (-not $status.AMServiceEnabled) {
        $reason = 'the Defender antimalware service is not running on this image'
    } else {
        if (-not $status.RealTimeProtectionEnabled) {
            Set-MpPreference -DisableRealtimeMonitoring $false
            $status = Get-MpComputerStatus
        }
        if (-not $status.RealTimeProtectionEnabled) {
            $reason = 'Defender real-time protection is off on this image and could not be turned on'
        } else {
            Add-MpPreference -AttackSurfaceReductionRules_Ids $rule -AttackSurfaceReductionRules_Actions Enabled
            $preference = Get-MpPreference
            $index = [array]::IndexOf([string[]]@($preference.AttackSurfaceReductionRules_Ids), $rule)
            if ($index -ge 0 -and [int]@($preference.AttackSurfaceReductionRules_Actions)[$index] -eq 1) {
                $active = 'true'
                $reason = 'rule in block mode, real-time protection on'
            } else {
                $reason = 'the rule did not read back in block mode'
            }
        }
    }
} catch {
    $reason = "Defender could not be queried or set: $($_.Exception.Message)"
}
Write-Host "ASR rule $rule active: $active ($reason)"
Set-StepOutput -Name 'active' -Value $active
Set-StepOutput -Name 'reason' -Value $reason
if ($active -ne 'true') {
    Add-JobSummary -Lines @('### ASR rule', '', "Not proven on this image: $reason.", '')
}
