# Helpers shared by the Windows real-host workflow's scripts (.github/workflows/
# windows-realhost.yml). Dot-source it: . "$PSScriptRoot\ci-common.ps1"
# Windows PowerShell 5.1; no Add-Type.

$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'

# A random password of letters and digits (24 characters, each class present), which
# meets Windows' complexity rule (three of four classes) and SQL Server's CHECK_POLICY,
# and needs no quoting on a command line or in T-SQL. It is masked in the job's log
# before anything else sees it.
function New-TestPassword {
    $alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789'
    $rng = New-Object System.Security.Cryptography.RNGCryptoServiceProvider
    try {
        while ($true) {
            $bytes = New-Object byte[] 24
            $rng.GetBytes($bytes)
            $chars = foreach ($b in $bytes) { $alphabet[$b % $alphabet.Length] }
            $password = -join $chars
            if ($password -cmatch '[A-Z]' -and $password -cmatch '[a-z]' -and $password -match '[0-9]') {
                Write-Host "::add-mask::$password"
                return $password
            }
        }
    } finally {
        $rng.Dispose()
    }
}

# Sets a variable for the job's later steps ($GITHUB_ENV). ASCII: Windows
# PowerShell's UTF8 puts a byte order mark before the first line of an empty file,
# and the values here (names, paths, generated passwords) are ASCII.
function Set-JobEnv {
    param([Parameter(Mandatory = $true)][string] $Name, [Parameter(Mandatory = $true)][string] $Value)
    Add-Content -LiteralPath $env:GITHUB_ENV -Value "$Name=$Value" -Encoding ASCII
}

# Sets an output of the current step ($GITHUB_OUTPUT), ASCII as above.
function Set-StepOutput {
    param([Parameter(Mandatory = $true)][string] $Name, [Parameter(Mandatory = $true)][string] $Value)
    Add-Content -LiteralPath $env:GITHUB_OUTPUT -Value "$Name=$Value" -Encoding ASCII
}

# Reads a text file that another process holds open for writing (SQL Server's error
# log), as the provider's read_instance does: FileShare.ReadWrite, the encoding from
# its byte order mark (the error log is UTF-16LE).
function Read-SharedText {
    param([Parameter(Mandatory = $true)][string] $Path)
    $stream = New-Object System.IO.FileStream($Path, [System.IO.FileMode]::Open, [System.IO.FileAccess]::Read, [System.IO.FileShare]::ReadWrite)
    try {
        $reader = New-Object System.IO.StreamReader($stream, $true)
        return $reader.ReadToEnd() -split "`r?`n"
    } finally {
        $stream.Dispose()
    }
}

# Appends Markdown lines to the job's summary ($GITHUB_STEP_SUMMARY).
function Add-JobSummary {
    param([Parameter(Mandatory = $true)][AllowEmptyString()][string[]] $Lines)
    Add-Content -LiteralPath $env:GITHUB_STEP_SUMMARY -Value $Lines -Encoding UTF8
}

# Runs a program, waits for it, and fails naming it and its exit code unless the code
# is one of $Success.
function Invoke-Program {
    param(
        [Parameter(Mandatory = $true)][string] $Path,
        [Parameter(Mandatory = $true)][string[]] $Arguments,
        [int[]] $Success = @(0),
        [string] $Shown = ''
    )
    if (-not $Shown) { $Shown = "$Path $($Arguments -join ' ')" }
    Write-Host "running: $Shown"
    $process = Start-Process -FilePath $Path -ArgumentList $Arguments -Wait -PassThru -NoNewWindow
    if ($Success -notcontains $process.ExitCode) {
        throw "$Shown exited with $($process.ExitCode)"
    }
    return $process.ExitCode
}

# Fails unless the file carries a valid Authenticode signature by Microsoft: the
# installers' hashes are not published, their signatures are.
function Assert-MicrosoftSigned {
    param([Parameter(Mandatory = $true)][string] $Path)
    $signature = Get-AuthenticodeSignature -LiteralPath $Path
    $subject = ''
    if ($signature.SignerCertificate) { $subject = $signature.SignerCertificate.Subject }
    if ($signature.Status -ne 'Valid' -or $subject -notmatch 'O=Microsoft Corporation') {
        throw "$Path is not signed by Microsoft (status $($signature.Status), signer '$subject'): not running it"
    }
    Write-Host "signature: $Path signed by $subject"
}

# Runs T-SQL on the local instance as the runner's own Windows account (a sysadmin
# since setup) and returns its first result set as a DataTable (-NonQuery: statements
# without a result set; returns nothing).
function Invoke-LocalSql {
    param([Parameter(Mandatory = $true)][string] $Instance, [Parameter(Mandatory = $true)][string] $Query, [switch] $NonQuery)
    $server = 'localhost'
    if ($Instance -ne 'MSSQLSERVER') { $server = "localhost\$Instance" }
    $connection = New-Object System.Data.SqlClient.SqlConnection("Server=$server;Database=master;Integrated Security=SSPI;Connect Timeout=30")
    try {
        $connection.Open()
        $command = $connection.CreateCommand()
        $command.CommandText = $Query
        $command.CommandTimeout = 120
        if ($NonQuery) {
            $command.ExecuteNonQuery() | Out-Null
            return
        }
        $table = New-Object System.Data.DataTable
        $reader = $command.ExecuteReader()
        try { $table.Load($reader) } finally { $reader.Dispose() }
        return , $table
    } finally {
        $connection.Dispose()
    }
}
