# Sizes the suite's seed (stage 5: CREATE DATABASE with a data file of
# MSSQLIFI_ACC_SEED_MB, first without IFI, then with it, one at a time) to the free
# space of the volume that holds the instance's default data folder: $WantedMB (the
# article's 10 GB by default) when it fits beside the log, a 4 GB reserve for the
# rest of the job (tempdb, transcripts, event logs) and a tenth of the free space,
# less otherwise. Hosted runners' free disk varies by image. Writes
# MSSQLIFI_ACC_SEED_MB for the later steps and says what it chose in the job's
# summary; fails when not even 1 GB fits.
[CmdletBinding()]
param(
    [Parameter(Mandatory = $true)][string] $Instance,
    [Parameter(Mandatory = $true)][int] $WantedMB
)
. "$PSScriptRoot\ci-common.ps1"

$sqlRoot = 'HKLM:\SOFTWARE\Microsoft\Microsoft SQL Server'
$id = (Get-ItemProperty -LiteralPath "$sqlRoot\Instance Names\SQL" -Name $Instance).$Instance
$dataDir = (Get-ItemProperty -LiteralPath "$sqlRoot\$id\MSSQLServer" -Name 'DefaultData' -ErrorAction SilentlyContinue).DefaultData
if (-not $dataDir) {
    # No DefaultData value: Setup's data root holds the default data folder.
    $dataDir = Join-Path -Path (Get-ItemProperty -LiteralPath "$sqlRoot\$id\Setup" -Name 'SQLDataRoot').SQLDataRoot -ChildPath 'DATA'
}
$drive = New-Object System.IO.DriveInfo((Split-Path -Path $dataDir -Qualifier))
$freeMB = [long][Math]::Floor($drive.AvailableFreeSpace / 1048576)
$logMB = 8 # internal/hostsuite's seedLogSizeMB
$reserveMB = 4096
$fitMB = [long][Math]::Floor(($freeMB - $logMB - $reserveMB) * 0.9)
$seedMB = [long][Math]::Min($WantedMB, $fitMB)
if ($seedMB -lt 1024) {
    throw "The seed does not fit: $freeMB MB free on $($drive.Name) (the data folder $dataDir) leaves $fitMB MB after the log and a $reserveMB MB reserve; stage 5 needs at least 1024 MB"
}
Set-JobEnv -Name 'MSSQLIFI_ACC_SEED_MB' -Value ([string]$seedMB)
$line = "Seed: $seedMB MB (wanted $WantedMB MB; $freeMB MB free on $($drive.Name), the data folder $dataDir)"
if ($seedMB -lt $WantedMB) {
    $line += ": smaller than wanted, so its ratio does not compare with the article's 10 GB"
}
Write-Host $line
Add-JobSummary -Lines @($line, '')
