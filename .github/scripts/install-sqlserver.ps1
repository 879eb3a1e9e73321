# Installs SQL Server 2022 Developer (Database Engine; SQL Server Agent set to start
# automatically, so the Engine has a running dependent) on a GitHub-hosted Windows
# runner, without any prompt, as Microsoft Learn's "Install SQL Server from the command
# prompt" describes (/Q, /ACTION=Install, /FEATURES=SQLEngine, /INSTANCENAME,
# /SQLSYSADMINACCOUNTS, /IACCEPTSQLSERVERLICENSETERMS, /SECURITYMODE, /TCPENABLED,
# /AGTSVCSTARTUPTYPE). The media come from Microsoft's installation bootstrapper
# (SSEI) in its documented download mode (/ACTION=Download /MEDIATYPE=CAB /QUIET);
# each file run is checked to carry Microsoft's Authenticode signature.
#
# The Engine runs as its virtual account NT SERVICE\<service> (Setup's default), not in
# Administrators, and Setup is not asked for instant file initialization
# (/SQLSVCINSTANTFILEINIT is left out): IFI starts off, as the suite expects to find it.
# Developer edition rather than Express: Express has no SQL Server Agent, and the
# restart's stop of a running dependent is one of the things this job proves.
[CmdletBinding()]
param(
    [Parameter(Mandatory = $true)][string] $Instance,
    [string] $WorkDir = ''
)
. "$PSScriptRoot\ci-common.ps1"
if (-not $WorkDir) { $WorkDir = Join-Path -Path $env:RUNNER_TEMP -ChildPath 'sqlsetup' }

# The bootstrapper behind the "Developer: Download now" link of Microsoft's SQL Server
# downloads page for SQL Server 2022.
$bootstrapperUrl = 'https://download.microsoft.com/download/c/c/9/cc9c6797-383c-4b24-8920-dc057c1de9d3/SQL2022-SSEI-Dev.exe'

New-Item -ItemType Directory -Force -Path $WorkDir | Out-Null
$bootstrapper = Join-Path -Path $WorkDir -ChildPath 'SQL2022-SSEI-Dev.exe'
Write-Host "downloading $bootstrapperUrl"
Invoke-WebRequest -Uri $bootstrapperUrl -OutFile $bootstrapper -UseBasicParsing
Assert-MicrosoftSigned -Path $bootstrapper

$media = Join-Path -Path $WorkDir -ChildPath 'media'
Invoke-Program -Path $bootstrapper -Arguments @('/ACTION=Download', "/MEDIAPATH=$media", '/MEDIATYPE=CAB', '/QUIET') | Out-Null
$package = Get-ChildItem -LiteralPath $media -Filter 'SQLServer2022-DEV-x64-*.exe' | Select-Object -First 1
if (-not $package) { throw "the bootstrapper left no SQLServer2022-DEV-x64-*.exe in $media" }
Assert-MicrosoftSigned -Path $package.FullName

$extracted = Join-Path -Path $WorkDir -ChildPath 'setup'
Invoke-Program -Path $package.FullName -Arguments @("/X:$extracted", '/Q') | Out-Null
$setup = Join-Path -Path $extracted -ChildPath 'setup.exe'
Assert-MicrosoftSigned -Path $setup

# SQL authentication is needed for the suite's SQL logins; sa gets a random password
# and is disabled once the logins exist (new-test-accounts.ps1).
$saPassword = New-TestPassword
$runner = "$env:USERDOMAIN\$env:USERNAME"
$setupArguments = @(
    '/Q', '/IACCEPTSQLSERVERLICENSETERMS', '/ACTION=Install', '/FEATURES=SQLEngine',
    "/INSTANCENAME=$Instance", "/SQLSYSADMINACCOUNTS=$runner",
    '/SECURITYMODE=SQL', "/SAPWD=$saPassword", '/TCPENABLED=1',
    '/AGTSVCSTARTUPTYPE=Automatic', '/UPDATEENABLED=False', '/SUPPRESSPRIVACYSTATEMENTNOTICE'
)
$shown = "setup.exe /Q /IACCEPTSQLSERVERLICENSETERMS /ACTION=Install /FEATURES=SQLEngine /INSTANCENAME=$Instance /SQLSYSADMINACCOUNTS=$runner /SECURITYMODE=SQL /SAPWD=*** /TCPENABLED=1 /AGTSVCSTARTUPTYPE=Automatic"
try {
    # 3010: installed, a reboot is recommended (not needed for the Engine to run).
    $code = Invoke-Program -Path $setup -Arguments $setupArguments -Success @(0, 3010) -Shown $shown
    Write-Host "setup exited with $code"
} catch {
    $summary = Get-ChildItem -Path "$env:ProgramFiles\Microsoft SQL Server\*\Setup Bootstrap\Log\Summary.txt" -ErrorAction SilentlyContinue | Select-Object -First 1
    if ($summary) { Get-Content -LiteralPath $summary.FullName | Out-Host }
    throw
}

$engine = 'MSSQLSERVER'
$agent = 'SQLSERVERAGENT'
if ($Instance -ne 'MSSQLSERVER') { $engine = "MSSQL`$$Instance"; $agent = "SQLAgent`$$Instance" }
foreach ($name in @($engine, $agent)) {
    $service = Get-Service -Name $name
    if ($service.Status -ne 'Running') {
        Start-Service -Name $name
        $service.WaitForStatus('Running', (New-TimeSpan -Minutes 2))
    }
}
$rows = foreach ($name in @($engine, $agent)) {
    $wmi = Get-CimInstance -ClassName Win32_Service -Filter "Name = '$name'"
    "| $name | $($wmi.State) | $($wmi.StartName) | $($wmi.StartMode) |"
}
$version = Invoke-LocalSql -Instance $Instance -Query "SELECT CAST(SERVERPROPERTY('ProductVersion') AS nvarchar(128)) AS v, CAST(SERVERPROPERTY('Edition') AS nvarchar(128)) AS e"
Add-JobSummary -Lines (@(
        "### SQL Server on $env:ImageOS",
        '',
        "SQL Server $($version.Rows[0].v) ($($version.Rows[0].e)), instance $Instance, installed by setup.exe /Q.",
        '',
        '| service | state | start account | start mode |',
        '|---|---|---|---|'
    ) + $rows + @(''))
