# Shared by every operation: result and error output in the contract's shapes, and the
# instance lookup that read_instance and restart_instance both need.
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'

# Windows PowerShell 5.1 gives System.Array an extended Count property; an array that
# travelled through the pipeline then serializes as {"value":[...],"Count":n}.
try { Remove-TypeData -TypeName System.Array } catch { $null = $_ }

function ConvertTo-AsciiJson {
    param([Parameter(Mandatory = $true)] $Value)
    $json = ConvertTo-Json -InputObject $Value -Depth 8 -Compress
    # stdout goes through the OEM code page under WinRM: keep it ASCII.
    return [regex]::Replace($json, '[^\x00-\x7F]', { param($m) '\u{0:x4}' -f [int][char]$m.Value })
}

function Write-Result {
    param([Parameter(Mandatory = $true)] $Value)
    [Console]::Out.Write((ConvertTo-AsciiJson -Value $Value))
    exit 0
}

function Exit-WithError {
    param(
        [Parameter(Mandatory = $true)] [int] $Code,
        [Parameter(Mandatory = $true)] [string] $ErrorName,
        [Parameter(Mandatory = $true)] [string] $Message
    )
    [Console]::Out.Write((ConvertTo-AsciiJson -Value ([ordered]@{ error = $ErrorName; message = $Message })))
    exit $Code
}

# The syntax of an instance name: contract.InstanceNamePattern in Go, the same text
# (a Go test holds the two together). MSSQLSERVER or 1-16 ASCII letters, digits, _
# and $, starting with a letter or _. -cmatch, because a case-insensitive match folds
# the Kelvin sign and the Turkish dotted I into ASCII letters.
function Test-SqlInstanceName {
    param([string] $Name)
    return ($Name -cmatch '^[A-Za-z_][A-Za-z0-9_$]{0,15}\z')
}

function Test-RightName {
    param([string] $Name)
    return ($Name -cmatch '^Se[A-Za-z]+Privilege\z')
}

# The rights the provider reads, grants and revokes: contract.ManagedRights in Go (a
# Go test holds the two together). set_right and restart_instance's changes refuse
# every other right, whoever sends the parameters: a stolen or relayed session must
# not grant anything else through these scripts. Exact spelling (-ccontains).
$ManagedRights = @('SeManageVolumePrivilege', 'SeLockMemoryPrivilege')
function Test-ManagedRight {
    param([string] $Name)
    return ($ManagedRights -ccontains $Name)
}

function Get-RegistryValue {
    param([string] $Path, [string] $Name)
    if (-not (Test-Path -LiteralPath $Path)) {
        return $null
    }
    return (Get-Item -LiteralPath $Path).GetValue($Name, $null)
}

function Format-UtcTime {
    param([datetime] $Time)
    return $Time.ToUniversalTime().ToString('o', [Globalization.CultureInfo]::InvariantCulture)
}

# ServiceControllerStatus (StartPending) as Win32_Service.State spells it (Start Pending).
function ConvertTo-ServiceState {
    param($Status)
    return ([string]$Status -creplace '([a-z])([A-Z])', '$1 $2')
}

# Looks an instance up in the registry. Returns $null when it is not installed.
function Find-SqlInstance {
    param([string] $Name)
    $namesKey = 'HKLM:\SOFTWARE\Microsoft\Microsoft SQL Server\Instance Names\SQL'
    $installed = New-Object System.Collections.Generic.List[string]
    $found = $null
    if (Test-Path -LiteralPath $namesKey) {
        $key = Get-Item -LiteralPath $namesKey
        foreach ($valueName in $key.GetValueNames()) {
            $installed.Add($valueName)
            if ($valueName -ieq $Name) {
                $found = $valueName
            }
        }
    }
    $installed.Sort()
    $result = [ordered]@{ Installed = $installed.ToArray(); Name = $found; Id = ''; Root = ''; ServiceName = '' }
    if ($found) {
        $result.Id = [string](Get-Item -LiteralPath $namesKey).GetValue($found)
        $result.Root = 'HKLM:\SOFTWARE\Microsoft\Microsoft SQL Server\' + $result.Id
        if ($found -ieq 'MSSQLSERVER') {
            $result.ServiceName = 'MSSQLSERVER'
        }
        else {
            $result.ServiceName = 'MSSQL$' + $found
        }
    }
    return [pscustomobject]$result
}

function Get-ServiceProcessStart {
    param([int] $ProcessId)
    if ($ProcessId -le 0) {
        return $null
    }
    try {
        return (Format-UtcTime -Time (Get-Process -Id $ProcessId).StartTime)
    }
    catch {
        return $null
    }
}
