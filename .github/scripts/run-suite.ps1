# Runs the staged real-host suite (internal/hostsuite/cmd/hostsuite, built by the
# workflow into $env:HOSTSUITE, the provider into bin\) once against this runner, with the MSSQLIFI_* variables
# the job set, and appends its results table (-summary-md, the seed's measurement
# included) to the job's summary under $Label.
# -Expect pass: the suite must exit 0. -Expect fail: it must exit non-zero and its
# output must match $ExpectText (a run meant to be refused, e.g. under Constrained
# Language Mode): a refusal for another reason fails this step. -DryRun sets
# MSSQLIFI_ACC_DRY_RUN (the plan of stages, nothing contacted or changed).
[CmdletBinding()]
param(
    [Parameter(Mandatory = $true)][string] $Label,
    [string] $Stages = '',
    [switch] $Https,
    [switch] $DryRun,
    [ValidateSet('pass', 'fail')][string] $Expect = 'pass',
    [string] $ExpectText = ''
)
. "$PSScriptRoot\ci-common.ps1"

if ($Stages) { $env:MSSQLIFI_ACC_STAGES = $Stages }
$env:MSSQLIFI_ACC_HTTPS = 'false'
if ($Https) { $env:MSSQLIFI_ACC_HTTPS = 'true' }
if ($DryRun) { $env:MSSQLIFI_ACC_DRY_RUN = 'true' }
$slug = ($Label -replace '[^A-Za-z0-9]+', '-').Trim('-').ToLowerInvariant()
$out = Join-Path -Path $env:RUNNER_TEMP -ChildPath "hostsuite-$slug"
New-Item -ItemType Directory -Force -Path $out | Out-Null
$env:MSSQLIFI_ACC_RECORD = Join-Path -Path $out -ChildPath 'transcripts'
$markdown = Join-Path -Path $out -ChildPath 'summary.md'
$log = Join-Path -Path $out -ChildPath 'output.txt'

Write-Host "== $Label: stages $env:MSSQLIFI_ACC_STAGES, HTTPS $env:MSSQLIFI_ACC_HTTPS, expecting the suite to $Expect"
# The suite writes to stdout and stderr; both go to the log and the job's log.
$ErrorActionPreference = 'Continue'
& $env:HOSTSUITE -summary-md $markdown -provider-dir (Join-Path -Path $env:GITHUB_WORKSPACE -ChildPath 'bin') 2>&1 | ForEach-Object { [string]$_ } | Tee-Object -FilePath $log
$code = $LASTEXITCODE
$ErrorActionPreference = 'Stop'

$verdict = 'as expected'
$failed = $false
if ($Expect -eq 'pass' -and $code -ne 0) {
    $verdict = "FAILED: the suite exited with $code"
    $failed = $true
} elseif ($Expect -eq 'fail') {
    if ($code -eq 0) {
        $verdict = 'FAILED: the suite passed, but this run must be refused'
        $failed = $true
    } elseif ($ExpectText -and -not (Select-String -LiteralPath $log -Pattern $ExpectText -Quiet)) {
        $verdict = "FAILED: the suite was refused (exit $code), but its output does not say '$ExpectText'"
        $failed = $true
    } else {
        $verdict = "refused as expected (exit $code)"
    }
}
$lines = @("### $Label", '', "Stages allowed: $env:MSSQLIFI_ACC_STAGES; HTTPS $env:MSSQLIFI_ACC_HTTPS; expected to $Expect; $verdict.", '')
if (Test-Path -LiteralPath $markdown) {
    $lines += @(Get-Content -LiteralPath $markdown)
} else {
    $lines += 'The suite wrote no results table; its last lines:'
    $lines += '```'
    $lines += @(Get-Content -LiteralPath $log -Tail 20)
    $lines += '```'
}
Add-JobSummary -Lines ($lines + @(''))
if ($failed) { throw "$Label`: $verdict" }
# The runner ends a powershell step with `exit $LASTEXITCODE`: a refusal that was
# expected must not fail it.
$global:LASTEXITCODE = 0
