# The restart's guard (design/restart.md): a powershell.exe outside the WinRM
# shell's job object that completes a restart left half-way. Its script is never on
# its command line and never in the registry: it is a file in a directory only
# Administrators and SYSTEM can write, whose owner is checked first. The process is
# started with a short -EncodedCommand loader ($RestartGuardLoader) that checks the
# file's owner and its SHA-256 (computed when the file was written) and runs the
# text it hashed as a script block: a Group Policy execution policy (AllSigned,
# Restricted), which overrides -ExecutionPolicy Bypass for -File, does not apply to
# it. It is started through WMI (Win32_Process.Create) or, where Microsoft Defender's
# attack surface reduction rule blocks processes created through WMI (or the guard
# WMI created never started), as a one-time scheduled task that runs as SYSTEM.
# Nothing is stopped before the guard's own start record (GuardStart and
# GuardProcessId in the marker, the guard's first write) is seen.
$RestartGuardDirectory = Join-Path -Path $env:ProgramData -ChildPath 'mssqlifi'
# "Block process creations originating from PSExec and WMI commands".
$RestartAsrRuleId = 'd1e49aac-8f56-4280-b9ba-993a6d77406c'
$RestartTaskPath = '\mssqlifi\'
$RestartTrustedOwners = @('S-1-5-32-544', 'S-1-5-18') # BUILTIN\Administrators, SYSTEM
# How long each launcher's guard has to write its start record.
$RestartGuardStartSeconds = 30
# The guard waits for the runner's go at most the go line's wait plus this margin
# (the marker's GoSeconds), then ends having changed nothing.
$RestartGuardGoMarginSeconds = 60
# The loader the guard's powershell.exe runs (-EncodedCommand): @FILE@, @HASH@,
# @TOKEN@ and @RUNNER@ are the file's path, its SHA-256 (lowercase hex), the restart's
# token and the runner's process id. The owner is read and the bytes hashed and run
# are the same bytes: a file changed after the check is not run. Exit 3: an owner
# other than Administrators or SYSTEM; 4: the content is not the one written.
$RestartGuardLoader = @'
$ErrorActionPreference = 'Stop'
$f = '@FILE@'
$o = [IO.File]::GetAccessControl($f).GetOwner([Security.Principal.SecurityIdentifier]).Value
if (@('S-1-5-32-544', 'S-1-5-18') -notcontains $o) { exit 3 }
$b = [IO.File]::ReadAllBytes($f)
if ([BitConverter]::ToString([Security.Cryptography.SHA256]::Create().ComputeHash($b)).Replace('-', '').ToLowerInvariant() -cne '@HASH@') { exit 4 }
& ([ScriptBlock]::Create([Text.Encoding]::UTF8.GetString($b).TrimStart([char]0xFEFF))) -Token '@TOKEN@' -RunnerId @RUNNER@
'@

function Test-TrustedOwner {
    param([string] $Path)
    $owner = (Get-Acl -LiteralPath $Path).GetOwner([System.Security.Principal.SecurityIdentifier]).Value
    return ($RestartTrustedOwners -contains $owner)
}

# The directory's security: owned by Administrators, protected (nothing inherited from
# ProgramData, where every user may create files), full control for Administrators
# and SYSTEM only.
function New-GuardSecurity {
    param([bool] $Directory)
    $security = New-Object System.Security.AccessControl.FileSecurity
    $inherit = 'None'
    if ($Directory) {
        $security = New-Object System.Security.AccessControl.DirectorySecurity
        $inherit = 'ContainerInherit, ObjectInherit'
    }
    $security.SetOwner((New-Object System.Security.Principal.SecurityIdentifier($RestartTrustedOwners[0])))
    $security.SetAccessRuleProtection($true, $false)
    foreach ($sid in $RestartTrustedOwners) {
        $identity = New-Object System.Security.Principal.SecurityIdentifier($sid)
        $security.AddAccessRule((New-Object System.Security.AccessControl.FileSystemAccessRule($identity, 'FullControl', $inherit, 'None', 'Allow')))
    }
    return $security
}

# Writes the guard's script (the worker's text after a param block) to its file and
# returns @{ path; hash } (hash: the SHA-256 of its bytes, lowercase hex); throws when the directory or the file has an owner other
# than Administrators or SYSTEM (someone else created it: its content cannot be trusted).
function Write-RestartGuardFile {
    param([string] $WorkerText)
    $text = "param([string] `$Token, [int] `$RunnerId)`r`n" +
    "if (`$Token -cnotmatch '^[0-9a-f]{32}\z') { exit 2 }`r`n" +
    "`$GuardProcessId = `$RunnerId`r`n`$Inline = `$false`r`n" +
    "`$RestartWorker = {" + $WorkerText + "}`r`n" +
    "try { & `$RestartWorker }`r`n" +
    "finally { Get-ScheduledTask -TaskPath '$RestartTaskPath' -TaskName ('restart_guard_*_' + `$Token) -ErrorAction SilentlyContinue | Unregister-ScheduledTask -Confirm:`$false -ErrorAction SilentlyContinue }`r`n"
    $bytes = (New-Object System.Text.UTF8Encoding($true)).GetBytes($text)
    $sha256 = [BitConverter]::ToString([System.Security.Cryptography.SHA256]::Create().ComputeHash($bytes)).Replace('-', '').ToLowerInvariant()
    $hash = $sha256.Substring(0, 16)
    $directory = $RestartGuardDirectory
    if (Test-Path -LiteralPath $directory) {
        if (-not (Test-TrustedOwner -Path $directory)) {
            throw "the directory $directory is owned by $((Get-Acl -LiteralPath $directory).Owner), not by Administrators or SYSTEM. Check who created it, then delete it; the provider creates it again with an ACL that lets only Administrators and SYSTEM write"
        }
        (Get-Item -LiteralPath $directory).SetAccessControl((New-GuardSecurity -Directory $true))
    }
    else {
        # Created with its ACL in one call: there is no moment when others may write.
        $null = [System.IO.Directory]::CreateDirectory($directory, (New-GuardSecurity -Directory $true))
    }
    $path = Join-Path -Path $directory -ChildPath ('restart_guard_' + $hash + '.ps1')
    if (Test-Path -LiteralPath $path) {
        if (-not (Test-TrustedOwner -Path $path)) {
            throw "the file $path is owned by $((Get-Acl -LiteralPath $path).Owner), not by Administrators or SYSTEM. Check who created it, then delete it"
        }
        if ([System.IO.File]::ReadAllText($path) -ceq $text) {
            return @{ path = $path; hash = $sha256 }
        }
    }
    [System.IO.File]::WriteAllBytes($path, $bytes)
    (Get-Item -LiteralPath $path).SetAccessControl((New-GuardSecurity -Directory $false))
    return @{ path = $path; hash = $sha256 }
}

# The loader's -EncodedCommand (Base64 of its UTF-16LE text, as powershell.exe -?
# describes it) for the guard's file, its hash, the restart's token and the runner.
function New-RestartGuardLoader {
    param([string] $File, [string] $Hash, [string] $Token, [int] $RunnerId)
    $text = $RestartGuardLoader.Replace("`r`n", "`n").Replace('@FILE@', $File.Replace("'", "''")).Replace('@HASH@', $Hash).Replace('@TOKEN@', $Token).Replace('@RUNNER@', [string]$RunnerId)
    return [Convert]::ToBase64String([Text.Encoding]::Unicode.GetBytes($text))
}

# Waits at most $RestartGuardStartSeconds for the guard's start record in the marker
# (GuardStart and GuardProcessId, restart_worker.ps1) and returns the guard's process
# id, 0 when it did not start in time. $ProcessId (a process WMI created) that ends
# first ends the wait at once.
function Wait-RestartGuardStart {
    param([string] $Marker, [int] $ProcessId)
    $until = [DateTime]::UtcNow.AddSeconds($RestartGuardStartSeconds)
    while ($true) {
        $key = Get-Item -LiteralPath $Marker
        $guardId = [int]$key.GetValue('GuardProcessId', 0)
        if ($guardId -gt 0 -and [string]$key.GetValue('GuardStart', '')) {
            return $guardId
        }
        if ([DateTime]::UtcNow -ge $until) {
            return 0
        }
        if ($ProcessId -gt 0 -and -not (Get-Process -Id $ProcessId -ErrorAction SilentlyContinue)) {
            # Ended: one last look (it may have written its record, then ended).
            $key = Get-Item -LiteralPath $Marker
            if ([int]$key.GetValue('GuardProcessId', 0) -gt 0 -and [string]$key.GetValue('GuardStart', '')) {
                return [int]$key.GetValue('GuardProcessId', 0)
            }
            return 0
        }
        Start-Sleep -Milliseconds 100
    }
}

# Empties the marker's start record (GuardProcessId 0, GuardStart '') before a
# launcher starts its guard: Wait-RestartGuardStart then sees only that guard's.
function Reset-RestartGuardStart {
    param([string] $Marker)
    Set-ItemProperty -LiteralPath $Marker -Name 'GuardProcessId' -Value 0 -Type DWord
    Set-ItemProperty -LiteralPath $Marker -Name 'GuardStart' -Value ''
}

# What may have ended a guard that did not start: said in every such refusal.
$RestartGuardBlockers = 'a Group Policy execution policy, AMSI or an endpoint-protection product may have ended it'


# The mode Microsoft Defender applies the rule in, from its own settings
# (Get-MpPreference): 0 not configured or disabled, 1 block, 2 audit, 6 warn; -1 when
# Defender cannot be asked (not installed, another antivirus product).
function Get-RestartAsrMode {
    try {
        $preference = Get-MpPreference -ErrorAction Stop
    }
    catch {
        return -1
    }
    $ids = @($preference.AttackSurfaceReductionRules_Ids)
    $actions = @($preference.AttackSurfaceReductionRules_Actions)
    for ($i = 0; $i -lt $ids.Count -and $i -lt $actions.Count; $i++) {
        if ([string]$ids[$i] -eq $RestartAsrRuleId) {
            return [int]$actions[$i]
        }
    }
    return 0
}

# Win32_Process.Create's return values (its documentation).
function Get-ProcessCreateText {
    param([int] $Value)
    $texts = @{ 2 = 'access denied'; 3 = 'insufficient privilege'; 8 = 'unknown failure'; 9 = 'path not found'; 21 = 'invalid parameter' }
    if ($texts.ContainsKey($Value)) {
        return "$Value, $($texts[$Value])"
    }
    return [string]$Value
}

# Starts the guard: `powershell.exe <Arguments>`, and waits for its start record.
# Returns @{ launcher; process_id; task; why }: launcher '' when no launcher's guard
# started, and why says what each one answered. A guard WMI created that did not
# start in time is ended (if it still runs) before the scheduled task is tried. The
# scheduled task is named after the instance and the restart's token, so the next
# restart of the instance removes one left behind (value GuardTask of the marker),
# and the guard removes its own when it ends.
function Start-RestartGuard {
    param([string] $Arguments, [string] $Instance, [string] $Token, [string] $Marker)
    $why = New-Object System.Collections.Generic.List[string]
    $mode = Get-RestartAsrMode
    if ($mode -eq 1 -or $mode -eq 6) {
        $modeName = 'block'
        if ($mode -eq 6) {
            $modeName = 'warn (which blocks where nobody can answer the prompt)'
        }
        $why.Add("Microsoft Defender's attack surface reduction rule $RestartAsrRuleId (Block process creations originating from PSExec and WMI commands) is in $modeName mode, so Win32_Process.Create was not used")
    }
    else {
        # CREATE_BREAKAWAY_FROM_JOB (0x01000000): out of the WMI provider host's job
        # too, whose quotas would otherwise apply; without it if that job refuses.
        # An exception from WMI itself (a CimException: access denied on root\cimv2,
        # a quota, the WMI service not answering) is this launcher's failure, not
        # the request's: the scheduled task is tried next.
        try {
            Reset-RestartGuardStart -Marker $Marker
            $commandLine = 'powershell.exe ' + $Arguments
            $startup = New-CimInstance -ClassName Win32_ProcessStartup -ClientOnly -Property @{ CreateFlags = [uint32]0x01000000; ShowWindow = [uint16]0 }
            $created = Invoke-CimMethod -ClassName Win32_Process -MethodName Create -Arguments @{ CommandLine = $commandLine; ProcessStartupInformation = $startup }
            if ($created.ReturnValue -ne 0) {
                $created = Invoke-CimMethod -ClassName Win32_Process -MethodName Create -Arguments @{ CommandLine = $commandLine }
            }
            if ($created.ReturnValue -eq 0) {
                $createdId = [int]$created.ProcessId
                $guardId = Wait-RestartGuardStart -Marker $Marker -ProcessId $createdId
                if ($guardId -gt 0) {
                    return @{ launcher = 'wmi'; process_id = $guardId; task = ''; why = '' }
                }
                $left = 'ended'
                $process = Get-Process -Id $createdId -ErrorAction SilentlyContinue
                if ($process -and $process.ProcessName -eq 'powershell') {
                    $left = 'still ran and was ended'
                    Stop-Process -Id $createdId -Force -ErrorAction SilentlyContinue
                }
                $why.Add("the guard Win32_Process.Create started (process $createdId) did not start within $RestartGuardStartSeconds s: it $left without its start record ($RestartGuardBlockers)")
            }
            else {
                $why.Add("Win32_Process.Create returned $(Get-ProcessCreateText -Value ([int]$created.ReturnValue))")
            }
        }
        catch {
            $why.Add("Win32_Process.Create failed: $($_.Exception.Message)")
        }
    }
    # A one-time task, started at once, that runs as SYSTEM (registering it needs an
    # administrator): Task Scheduler creates its process, outside the shell's job.
    $taskName = 'restart_guard_' + $Instance + '_' + $Token
    try {
        $system = (New-Object System.Security.Principal.SecurityIdentifier($RestartTrustedOwners[1])).Translate([System.Security.Principal.NTAccount]).Value
        $action = New-ScheduledTaskAction -Execute 'powershell.exe' -Argument $Arguments
        $principal = New-ScheduledTaskPrincipal -UserId $system -LogonType ServiceAccount -RunLevel Highest
        $settings = New-ScheduledTaskSettingsSet -AllowStartIfOnBatteries -DontStopIfGoingOnBatteries -MultipleInstances IgnoreNew -Priority 4
        # A guard WMI started and that was ended may have written its record late:
        # the task's guard is waited for with the record empty.
        Reset-RestartGuardStart -Marker $Marker
        Set-ItemProperty -LiteralPath $Marker -Name 'GuardTask' -Value $taskName
        $null = Register-ScheduledTask -TaskName $taskName -TaskPath $RestartTaskPath -Action $action -Principal $principal -Settings $settings -Force -ErrorAction Stop
        Start-ScheduledTask -TaskName $taskName -TaskPath $RestartTaskPath -ErrorAction Stop
        $guardId = Wait-RestartGuardStart -Marker $Marker -ProcessId 0
        if ($guardId -gt 0) {
            return @{ launcher = 'scheduled_task'; process_id = $guardId; task = $taskName; why = '' }
        }
        $info = Get-ScheduledTaskInfo -TaskName $taskName -TaskPath $RestartTaskPath -ErrorAction SilentlyContinue
        Stop-ScheduledTask -TaskName $taskName -TaskPath $RestartTaskPath -ErrorAction SilentlyContinue
        $why.Add("the guard the scheduled task $RestartTaskPath$taskName started did not start within $RestartGuardStartSeconds s (last result $($info.LastTaskResult); $RestartGuardBlockers)")
    }
    catch {
        $why.Add("the scheduled task $RestartTaskPath$taskName could not be started: $($_.Exception.Message)")
    }
    Unregister-ScheduledTask -TaskName $taskName -TaskPath $RestartTaskPath -Confirm:$false -ErrorAction SilentlyContinue
    return @{ launcher = ''; process_id = 0; task = ''; why = ($why -join '; ') }
}
