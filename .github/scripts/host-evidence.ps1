# What the runs left where an administrator would look (docs/guides/
# first-real-host.md, "Watching it"), appended to the job's summary:
# - the SQL Server error log's "Database Instant File Initialization" lines (current
#   and archived logs, one per Engine start);
# - the System log's Service Control Manager entries 7036 ("entered the stopped /
#   running state") for the Engine and its dependents;
# - the Application log's entries of the source mssqlifi (1001 grant, 1002 revoke,
#   1003 restart);
# - the count of PowerShell's warning 4104 (script blocks with "suspicious" strings
#   such as DefinePInvokeMethod are logged even without script-block logging).
[CmdletBinding()]
param([Parameter(Mandatory = $true)][string] $Instance, [Parameter(Mandatory = $true)][datetime] $Since)
. "$PSScriptRoot\ci-common.ps1"

$lines = @('### Host evidence', '')
$logDirectory = Get-ChildItem -Path "$env:ProgramFiles\Microsoft SQL Server\MSSQL*.$Instance\MSSQL\Log" -Directory -ErrorAction SilentlyContinue | Select-Object -First 1
$ifi = @()
if ($logDirectory) {
    foreach ($file in Get-ChildItem -Path (Join-Path -Path $logDirectory.FullName -ChildPath 'ERRORLOG*') | Sort-Object -Property LastWriteTime) {
        foreach ($line in Read-SharedText -Path $file.FullName) {
            if ($line -match 'Database Instant File Initialization') { $ifi += "$($file.Name): $($line.Trim())" }
        }
    }
}
$lines += "Error-log lines ($($ifi.Count)):"
$lines += '```'
$lines += $ifi
$lines += '```'

$scm = @(Get-WinEvent -FilterHashtable @{ LogName = 'System'; ProviderName = 'Service Control Manager'; Id = 7036; StartTime = $Since } -ErrorAction SilentlyContinue |
        Where-Object { $_.Message -match 'SQL Server' } | Sort-Object -Property TimeCreated)
$lines += "System log, Service Control Manager 7036 for SQL Server services: $($scm.Count) entries"
$lines += '```'
$lines += @($scm | Select-Object -Last 40 | ForEach-Object { "$($_.TimeCreated.ToUniversalTime().ToString('HH:mm:ss')) $($_.Message)" })
$lines += '```'

$ours = @(Get-WinEvent -FilterHashtable @{ LogName = 'Application'; ProviderName = 'mssqlifi'; StartTime = $Since } -ErrorAction SilentlyContinue | Sort-Object -Property TimeCreated)
$lines += "Application log, source mssqlifi: $($ours.Count) entries (1001 grant, 1002 revoke, 1003 restart)"
$lines += '```'
$lines += @($ours | ForEach-Object { "$($_.TimeCreated.ToUniversalTime().ToString('HH:mm:ss')) $($_.Id) $(($_.Message -split "`n")[0])" })
$lines += '```'

$warnings = @(Get-WinEvent -FilterHashtable @{ LogName = 'Microsoft-Windows-PowerShell/Operational'; Id = 4104; Level = 3; StartTime = $Since } -ErrorAction SilentlyContinue)
$lines += "PowerShell/Operational warning 4104 (suspicious script block): $($warnings.Count) entries"
Add-JobSummary -Lines ($lines + @(''))
