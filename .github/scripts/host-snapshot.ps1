# What the provider could change on this host, as JSON: the holders of
# SeManageVolumePrivilege (secedit /export, read-only), the Engine's and its
# dependents' states and the Engine's process start time, the Application log entries
# of the source mssqlifi (1001 grant, 1002 revoke, 1003 restart), the restart markers
# (HKLM:\SOFTWARE\mssqlifi\Restart) and the scheduled tasks under \mssqlifi\.
# -Out writes the snapshot; -Compare also reads an earlier one and fails naming every
# difference ("nothing changes" for a run that must be refused).
[CmdletBinding()]
param(
    [Parameter(Mandatory = $true)][string] $Instance,
    [Parameter(Mandatory = $true)][string] $Out,
    [string] $Compare = ''
)
. "$PSScriptRoot\ci-common.ps1"

$engine = 'MSSQLSERVER'
if ($Instance -ne 'MSSQLSERVER') { $engine = "MSSQL`$$Instance" }

$exported = Join-Path -Path $env:RUNNER_TEMP -ChildPath 'user-rights.inf'
Invoke-Program -Path "$env:SystemRoot\System32\secedit.exe" -Arguments @('/export', '/areas', 'USER_RIGHTS', '/cfg', $exported, '/quiet') | Out-Null
$holders = ''
foreach ($line in Get-Content -LiteralPath $exported) {
    if ($line -match '^\s*SeManageVolumePrivilege\s*=\s*(.*)$') { $holders = $Matches[1].Trim() }
}
Remove-Item -LiteralPath $exported -Force

$services = [ordered]@{}
$engineService = Get-Service -Name $engine
foreach ($service in @($engineService) + @($engineService.DependentServices)) {
    $services[$service.Name] = [string]$service.Status
}
$processId = (Get-CimInstance -ClassName Win32_Service -Filter "Name = '$engine'").ProcessId
$engineStart = ''
if ($processId) { $engineStart = (Get-Process -Id $processId).StartTime.ToUniversalTime().ToString('o') }

$events = @(Get-WinEvent -FilterHashtable @{ LogName = 'Application'; ProviderName = 'mssqlifi' } -ErrorAction SilentlyContinue)
$markers = @(Get-ChildItem -Path 'HKLM:\SOFTWARE\mssqlifi\Restart' -ErrorAction SilentlyContinue | ForEach-Object { $_.PSChildName })
$tasks = @(Get-ScheduledTask -TaskPath '\mssqlifi\' -ErrorAction SilentlyContinue | ForEach-Object { $_.TaskName })

$snapshot = [ordered]@{
    se_manage_volume_privilege = $holders
    services                   = $services
    engine_process_start       = $engineStart
    mssqlifi_events            = $events.Count
    restart_markers            = ($markers -join ',')
    scheduled_tasks            = ($tasks -join ',')
}
$snapshot | ConvertTo-Json -Depth 4 | Set-Content -LiteralPath $Out -Encoding UTF8
Get-Content -LiteralPath $Out | Out-Host

if ($Compare) {
    $before = Get-Content -LiteralPath $Compare -Raw | ConvertFrom-Json
    $after = Get-Content -LiteralPath $Out -Raw | ConvertFrom-Json
    $differences = @()
    foreach ($name in @('se_manage_volume_privilege', 'engine_process_start', 'mssqlifi_events', 'restart_markers', 'scheduled_tasks')) {
        if ([string]$before.$name -ne [string]$after.$name) { $differences += "$name was '$($before.$name)', is '$($after.$name)'" }
    }
    foreach ($property in $before.services.PSObject.Properties) {
        if ([string]$after.services.($property.Name) -ne [string]$property.Value) {
            $differences += "service $($property.Name) was $($property.Value), is $($after.services.($property.Name))"
        }
    }
    if ($differences.Count -gt 0) {
        Add-JobSummary -Lines (@('Host changed during a run that had to change nothing:') + ($differences | ForEach-Object { "- $_" }) + @(''))
        throw "the host changed: $($differences -join '; ')"
    }
    Add-JobSummary -Lines @('Host unchanged by that run: holders of SeManageVolumePrivilege, the Engine''s process and its dependents'' states, mssqlifi events, restart markers and tasks all as before.', '')
}
