# The restart's marker: HKLM:\SOFTWARE\mssqlifi\Restart\<instance> (writable by
# administrators only) holds the running restart's Token, the process ids of its
# runner (WorkerProcessId, with its start time RunnerStart in UTC ticks) and guard
# (GuardProcessId and GuardStart; the guard writes its own when it starts, and when
# it takes over as the runner its id and start time as the runner's), the scheduled task that
# started the guard if one did (GuardTask, restart_guard.ps1), the dependents it
# stops (Dependents, a JSON array) and its State
# (RestartInstanceResult as JSON). Shared by restart_instance,
# restart_status and the worker (restart_worker.ps1).
$RestartMarkerRoot = 'HKLM:\SOFTWARE\mssqlifi\Restart'

# A restart's state as the marker holds it: the contract's RestartInstanceResult.
function New-RestartState {
    param([string] $RestartId, [string] $ServiceName, [string] $ServiceState)
    return [ordered]@{
        found              = $true
        restart_id         = $RestartId
        joined             = $false
        phase              = 'stopping'
        finished           = $false
        service_name       = $ServiceName
        error              = ''
        message            = ''
        win32_exit_code    = 0
        errorlog_tail      = @()
        start_attempts     = 0
        stopped            = @()
        started            = @()
        service_state      = $ServiceState
        process_start_time = $null
        started_at         = (Format-UtcTime -Time ([DateTime]::UtcNow))
        finished_at        = $null
    }
}

# Whether a restart process still runs (process ids are reused): 'gone' when no
# process has the id, or the one that has it is not powershell.exe or started at
# another time than the marker records (UTC ticks); 'alive' when it is that process;
# 'unknown' when a powershell.exe has the id but no start time was recorded (a guard
# not yet started) or its start time cannot be read.
function Get-RestartProcessState {
    param([int] $Id, [string] $StartTicks)
    if ($Id -le 0) {
        return 'gone'
    }
    $process = Get-Process -Id $Id -ErrorAction SilentlyContinue
    if (-not $process -or $process.ProcessName -ne 'powershell') {
        return 'gone'
    }
    try {
        $ticks = [string]$process.StartTime.ToUniversalTime().Ticks
    }
    catch {
        return 'unknown'
    }
    if (-not $StartTicks) {
        return 'unknown'
    }
    if ($ticks -ceq $StartTicks) {
        return 'alive'
    }
    return 'gone'
}

# The marker's state, or $null when the instance has none. A restart goes on while
# its runner or its guard is alive; one whose liveness is unknown counts as going on
# until its deadline plus the 2 hours a late stop is waited for (restart_worker.ps1),
# then as ended. A restart whose processes are both gone (or unknown past that time)
# before it finished is reported as failed (for example after a reboot).
function Read-RestartMarker {
    param([string] $Instance)
    $path = $RestartMarkerRoot + '\' + $Instance
    if (-not (Test-Path -LiteralPath $path)) {
        return $null
    }
    $key = Get-Item -LiteralPath $path
    $json = [string]$key.GetValue('State', '')
    if (-not $json) {
        return $null
    }
    $state = ConvertFrom-Json -InputObject $json
    $state | Add-Member -NotePropertyName found -NotePropertyValue $true -Force
    if ([string]$state.phase -ceq 'prepared') {
        # Prepared, not let go: nothing of it has happened. It holds the lease while
        # its runner (which alone can let it go) lives; once that has ended it is
        # no restart at all.
        $runner = Get-RestartProcessState -Id ([int]$key.GetValue('WorkerProcessId', 0)) -StartTicks ([string]$key.GetValue('RunnerStart', ''))
        if ($runner -eq 'gone') {
            return $null
        }
        # Until when its runner waits for its go (GoUntil), for a refusal to name.
        $state | Add-Member -NotePropertyName go_until -NotePropertyValue ([string]$key.GetValue('GoUntil', '')) -Force
        return $state
    }
    if (-not $state.finished) {
        # The runner (restart_instance's process, or the guard once it took over) and
        # the guard: the restart goes on while either lives.
        $workerId = [int]$key.GetValue('WorkerProcessId', 0)
        $guardId = [int]$key.GetValue('GuardProcessId', 0)
        $runner = Get-RestartProcessState -Id $workerId -StartTicks ([string]$key.GetValue('RunnerStart', ''))
        $guard = Get-RestartProcessState -Id $guardId -StartTicks ([string]$key.GetValue('GuardStart', ''))
        $alive = ($runner -eq 'alive' -or $guard -eq 'alive')
        if (-not $alive -and ($runner -eq 'unknown' -or $guard -eq 'unknown')) {
            $started = [DateTime]::MinValue
            $alive = ([DateTime]::TryParse([string]$state.started_at, [Globalization.CultureInfo]::InvariantCulture, [Globalization.DateTimeStyles]::AdjustToUniversal, [ref]$started) -and
                [DateTime]::UtcNow -lt $started.AddSeconds([int]$key.GetValue('TimeoutSeconds', 0)).AddHours(2))
        }
        if (-not $alive) {
            # Read again: the worker may have finished between the two reads.
            $state = ConvertFrom-Json -InputObject ([string](Get-Item -LiteralPath $path).GetValue('State', ''))
            $state | Add-Member -NotePropertyName found -NotePropertyValue $true -Force
            if (-not $state.finished) {
                $state.finished = $true
                $state.phase = 'done'
                $state | Add-Member -NotePropertyName error -NotePropertyValue 'failed' -Force
                $state | Add-Member -NotePropertyName message -NotePropertyValue "The restart processes (runner $workerId, guard $guardId) ended before it finished (was the host restarted?). Check the state of the service $($state.service_name)." -Force
            }
        }
    }
    return $state
}

# The host's restart lease (design/restart.md, one restart per host): the state
# of the restart in progress of an instance other than $Instance, with its instance
# name (instance), or $null when there is none. Call it holding Enter-RestartLock.
function Find-OtherRestart {
    param([string] $Instance)
    if (-not (Test-Path -LiteralPath $RestartMarkerRoot)) {
        return $null
    }
    foreach ($key in @(Get-ChildItem -LiteralPath $RestartMarkerRoot)) {
        if ($key.PSChildName -eq $Instance) {
            continue
        }
        $state = Read-RestartMarker -Instance $key.PSChildName
        if ($state -and -not $state.finished) {
            $state | Add-Member -NotePropertyName instance -NotePropertyValue $key.PSChildName -Force
            return $state
        }
    }
    return $null
}

# The lease's lock: the file restart.lock in the guard's directory (only
# Administrators and SYSTEM can write there), opened with FileShare.None, which
# refuses every other open until the handle is closed; Windows closes it when the
# process ends, so a crash never leaves it held. Held from the look at the other
# instances' markers until this restart's marker is written. Waits at most 30 s.
# A gated restart's progress lines (contract.ProgressPrefix), on stdout before the
# result: "prepared <id>" when it waits for the go line, "started <id>" when the
# Engine runs again.
$RestartProgressPrefix = '#mssqlifi-progress '

function Write-RestartProgress {
    param([string] $RestartEvent, [string] $RestartId)
    [Console]::Out.Write($RestartProgressPrefix + $RestartEvent + ' ' + $RestartId + "`r`n")
    [Console]::Out.Flush()
}

# The next line of stdin, without its line end, read within $Seconds; $null at the
# end of stdin, past the deadline or after 100 characters. Console.In cannot time
# out (its ReadLineAsync reads synchronously), so the standard input stream is read
# with Stream.ReadAsync, one byte at a time, and each read waited for with
# Task.Wait's timeout. The bootstrap read its frame through Console.In; nothing
# follows the frame but this line, which the provider sends only once it has read
# the prepared line.
function Read-GoLine {
    param([int] $Seconds)
    $stream = [Console]::OpenStandardInput()
    $bytes = New-Object System.Collections.Generic.List[byte]
    $buffer = New-Object byte[] 1
    $until = [DateTime]::UtcNow.AddSeconds($Seconds)
    while ($bytes.Count -lt 100) {
        $left = ($until - [DateTime]::UtcNow).TotalMilliseconds
        if ($left -le 0) {
            return $null
        }
        try {
            $task = $stream.ReadAsync($buffer, 0, 1)
            if (-not $task.Wait([int][Math]::Ceiling($left))) {
                return $null
            }
            if ($task.Result -eq 0) {
                return $null
            }
        }
        catch {
            return $null
        }
        if ($buffer[0] -eq 10) {
            return [Text.Encoding]::ASCII.GetString($bytes.ToArray()).TrimEnd([char]13)
        }
        $bytes.Add($buffer[0])
    }
    return $null
}

function Enter-RestartLock {
    param([string] $Directory)
    $path = Join-Path -Path $Directory -ChildPath 'restart.lock'
    $until = [DateTime]::UtcNow.AddSeconds(30)
    while ($true) {
        try {
            return [System.IO.File]::Open($path, [System.IO.FileMode]::OpenOrCreate, [System.IO.FileAccess]::ReadWrite, [System.IO.FileShare]::None)
        }
        catch {
            if ([DateTime]::UtcNow -ge $until) {
                throw "the restart lock $path stayed held for 30 seconds ($($_.Exception.Message))"
            }
            Start-Sleep -Milliseconds 100
        }
    }
}

# Records the go of the prepared restart whose marker is $Marker (its token
# $Token), under the lease's lock: its phase becomes stopping, and from then on its
# guard completes the restart should the runner end. Returns '' when recorded, else
# why not (nothing was stopped): the marker is another request's now (one sent again
# replaced it), or the guard has ended (it gave up waiting, or died), which would
# leave the restart unguarded.
function Set-RestartGo {
    param([string] $Marker, [string] $Token, [string] $Directory)
    $lock = Enter-RestartLock -Directory $Directory
    try {
        $key = Get-Item -LiteralPath $Marker -ErrorAction SilentlyContinue
        if (-not $key -or [string]$key.GetValue('Token', '') -cne $Token) {
            return 'another request for this instance replaced this one before it was let go'
        }
        $guardId = [int]$key.GetValue('GuardProcessId', 0)
        if ((Get-RestartProcessState -Id $guardId -StartTicks ([string]$key.GetValue('GuardStart', ''))) -ne 'alive') {
            return "its guard process ($guardId) ended before the restart was let go"
        }
        $state = ConvertFrom-Json -InputObject ([string]$key.GetValue('State', ''))
        $state.phase = 'stopping'
        Set-ItemProperty -LiteralPath $Marker -Name 'State' -Value (ConvertTo-AsciiJson -Value $state)
        return ''
    }
    finally {
        $lock.Dispose()
    }
}

# Removes the marker of a restart prepared and never let go, under the lease's lock
# and only while it is still this request's ($Token): one sent again may have
# replaced it. Its guard, seeing the marker gone, ends having changed nothing.
function Remove-PreparedRestart {
    param([string] $Marker, [string] $Token, [string] $Directory)
    try {
        $lock = Enter-RestartLock -Directory $Directory
    }
    catch {
        return # left as it is: a prepared marker whose runner has ended is no restart
    }
    try {
        $key = Get-Item -LiteralPath $Marker -ErrorAction SilentlyContinue
        if ($key -and [string]$key.GetValue('Token', '') -ceq $Token -and [string](ConvertFrom-Json -InputObject ([string]$key.GetValue('State', ''))).phase -ceq 'prepared') {
            Remove-Item -LiteralPath $Marker -Recurse -Force
        }
    }
    finally {
        $lock.Dispose()
    }
}

function Wait-RestartMarker {
    param([string] $Instance, [datetime] $Until)
    while ($true) {
        $state = Read-RestartMarker -Instance $Instance
        # A stop that ran past the deadline is reported before the worker is done; a
        # restart prepared and not let go is reported as it is (it may never go).
        if (-not $state -or $state.finished -or $state.error -or [string]$state.phase -ceq 'prepared' -or [DateTime]::UtcNow -ge $Until) {
            return $state
        }
        Start-Sleep -Milliseconds 500
    }
}
