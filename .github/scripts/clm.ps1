# Puts the WinRM user's PowerShell into Constrained Language Mode, or takes it out.
# -Method AppLocker (the real thing): a local AppLocker policy whose Script rules allow
#   %WINDIR% and %PROGRAMFILES% for Everyone and every path for the runner's own account
#   only, with the Application Identity service started. Windows PowerShell tests the
#   policy with a script in the user's %TEMP% when it starts ("Use App Control to
#   secure PowerShell", "Lockdown policy detection"), so the WinRM user (an
#   administrator, but not covered by an Allow rule there) runs ConstrainedLanguage
#   while the runner's later steps keep FullLanguage. No Executable, Installer or DLL
#   rules: nothing but scripts is enforced.
# -Method Hook: __PSLockdownPolicy=4, a test hook of PowerShell, not a security
#   boundary. Windows PowerShell reads it from the machine-wide environment only
#   (a service's own environment, where an earlier version of this script put it, is
#   not read), and machine-wide every new Windows PowerShell starts constrained, the
#   runner's later `shell: powershell` steps with it. So -Action Enable only records
#   the choice (MSSQLIFI_CLM_HOOK=true): clm-suite.ps1 sets the hook and puts it
#   back inside the suite's own step.
# -Action Enable writes MSSQLIFI_CLM_METHOD for later steps; -Action Disable undoes
# the named method (or both), and removes a hook a cancelled step may have left.
[CmdletBinding()]
param(
    [Parameter(Mandatory = $true)][ValidateSet('Enable', 'Disable')][string] $Action,
    [Parameter(Mandatory = $true)][ValidateSet('AppLocker', 'Hook', 'Both')][string] $Method
)
. "$PSScriptRoot\ci-common.ps1"

function Set-LocalAppLockerPolicy {
    param([Parameter(Mandatory = $true)][string] $Xml)
    $file = Join-Path -Path $env:RUNNER_TEMP -ChildPath 'applocker.xml'
    Set-Content -LiteralPath $file -Value $Xml -Encoding UTF8
    Set-AppLockerPolicy -XmlPolicy $file
    Remove-Item -LiteralPath $file -Force
}

$winrmKey = 'HKLM:\SYSTEM\CurrentControlSet\Services\WinRM'

# The WinRM service's own environment entries (NAME=value), without the hook's.
function Get-WinRMEnvironment {
    $value = (Get-ItemProperty -LiteralPath $winrmKey -Name 'Environment' -ErrorAction SilentlyContinue).Environment
    return @($value | Where-Object { $_ -and $_ -notlike '__PSLockdownPolicy=*' })
}

function Set-WinRMEnvironment {
    param([AllowEmptyCollection()][string[]] $Entries)
    if (@($Entries).Count -gt 0) {
        New-ItemProperty -LiteralPath $winrmKey -Name 'Environment' -PropertyType MultiString -Value $Entries -Force | Out-Null
    } else {
        Remove-ItemProperty -LiteralPath $winrmKey -Name 'Environment' -ErrorAction SilentlyContinue
    }
}

function Restart-WinRM {
    Restart-Service -Name WinRM -Force
    (Get-Service -Name WinRM).WaitForStatus('Running', (New-TimeSpan -Seconds 60))
}

function New-ScriptRule {
    param([string] $Name, [string] $Sid, [string] $Path)
    $id = [guid]::NewGuid().ToString()
    return "<FilePathRule Id=`"$id`" Name=`"$Name`" Description=`"mssqlifi real-host CI`" UserOrGroupSid=`"$Sid`" Action=`"Allow`"><Conditions><FilePathCondition Path=`"$Path`" /></Conditions></FilePathRule>"
}

if ($Action -eq 'Enable' -and $Method -eq 'AppLocker') {
    $runnerSid = [System.Security.Principal.WindowsIdentity]::GetCurrent().User.Value
    $rules = @(
        (New-ScriptRule -Name 'Windows folder' -Sid 'S-1-1-0' -Path '%WINDIR%\*'),
        (New-ScriptRule -Name 'Program Files' -Sid 'S-1-1-0' -Path '%PROGRAMFILES%\*'),
        (New-ScriptRule -Name 'The runner account' -Sid $runnerSid -Path '*')
    )
    Set-LocalAppLockerPolicy -Xml "<AppLockerPolicy Version=`"1`"><RuleCollection Type=`"Script`" EnforcementMode=`"Enabled`">$($rules -join '')</RuleCollection></AppLockerPolicy>"
    # The Application Identity service evaluates AppLocker rules; it is trigger-started
    # and may be stopped on a fresh image.
    # 1056: already running.
    Invoke-Program -Path "$env:SystemRoot\System32\sc.exe" -Arguments @('start', 'AppIDSvc') -Success @(0, 1056) | Out-Null
    $service = Get-Service -Name AppIDSvc
    $service.WaitForStatus('Running', (New-TimeSpan -Seconds 60))
    Set-JobEnv -Name 'MSSQLIFI_CLM_METHOD' -Value 'AppLocker script rules'
    Write-Host 'AppLocker: Script rules enforced; the WinRM user is not allowed scripts in its %TEMP%'
} elseif ($Action -eq 'Enable' -and $Method -eq 'Hook') {
    Set-JobEnv -Name 'MSSQLIFI_CLM_HOOK' -Value 'true'
    Set-JobEnv -Name 'MSSQLIFI_CLM_METHOD' -Value '__PSLockdownPolicy=4 machine-wide during the suite''s step (test hook; AppLocker did not take effect on this image)'
    Write-Host '__PSLockdownPolicy: the suite''s step sets it machine-wide and puts it back (clm-suite.ps1)'
} else {
    if ($Method -eq 'AppLocker' -or $Method -eq 'Both') {
        # Only a policy this script set has Script rules to remove; on an image where
        # setting one failed there is nothing to undo.
        $scriptRules = @((Get-AppLockerPolicy -Local -ErrorAction SilentlyContinue).RuleCollections | Where-Object { $_.RuleCollectionType -eq 'Script' -and $_.Count -gt 0 })
        if ($scriptRules.Count -gt 0) {
            Set-LocalAppLockerPolicy -Xml '<AppLockerPolicy Version="1"><RuleCollection Type="Script" EnforcementMode="NotConfigured" /></AppLockerPolicy>'
            Write-Host 'AppLocker: Script rules removed'
        }
    }
    if ($Method -eq 'Hook' -or $Method -eq 'Both') {
        $entries = @((Get-ItemProperty -LiteralPath $winrmKey -Name 'Environment' -ErrorAction SilentlyContinue).Environment)
        $machineWide = [Environment]::GetEnvironmentVariable('__PSLockdownPolicy', 'Machine')
        if (@($entries | Where-Object { $_ -like '__PSLockdownPolicy=*' }).Count -gt 0 -or $machineWide) {
            Set-WinRMEnvironment -Entries @(Get-WinRMEnvironment)
            if ($machineWide) {
                # Left by a suite's step that was cancelled before its clean-up.
                [Environment]::SetEnvironmentVariable('__PSLockdownPolicy', $null, 'Machine')
            }
            Restart-WinRM
            Write-Host '__PSLockdownPolicy removed and WinRM restarted'
        }
    }
}
