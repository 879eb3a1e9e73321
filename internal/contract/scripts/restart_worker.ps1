# The restart itself (design/restart.md), in one of two roles:
# - the runner, in restart_instance's own process ($Inline true): the restart starts
#   at once, without waiting for another powershell.exe to start;
# - the guard, a process restart_instance started (restart_guard.ps1, through WMI or
#   a scheduled task) before it stopped anything, outside the job object of the WinRM
#   shell, so it lives on when the shell ends. It runs this script block's text from
#   a file, with $Token (a GUID the script made, never user input) and
#   $GuardProcessId (the runner's process id) as its parameters. Started before
#   anything changes, it first waits for the runner's go (the prepared phase: the
#   runner ending without it, the marker gone or another request's, or its own
#   deadline end the guard having changed nothing); then it waits until the restart finished or the runner's process ended, and
#   completes a restart left half-way (the shell deleted, the connection lost, a
#   late stop handed over) from the phase it reached.
# Everything else it reads from the marker key HKLM:\SOFTWARE\mssqlifi\Restart\<instance>
# whose Token value is $Token; it writes its progress there (value State, the
# contract's RestartInstanceResult as JSON) for restart_instance and restart_status.
$RestartWorker = {
    $ErrorActionPreference = 'Stop'
    $ProgressPreference = 'SilentlyContinue'
    try { Remove-TypeData -TypeName System.Array } catch { $null = $_ }
    # ServiceController's assembly, loaded by name (no Add-Type: nothing is compiled).
    $null = [Reflection.Assembly]::Load('System.ServiceProcess, Version=4.0.0.0, Culture=neutral, PublicKeyToken=b03f5f7f11d50a3a')
    $markerRoot = 'HKLM:\SOFTWARE\mssqlifi\Restart'
    $marker = $null
    foreach ($key in @(Get-ChildItem -LiteralPath $markerRoot)) {
        if ([string]$key.GetValue('Token', '') -ceq $Token) {
            $marker = 'HKLM:\SOFTWARE\mssqlifi\Restart\' + $key.PSChildName
        }
    }
    if (-not $marker) {
        return
    }
    if ($GuardProcessId -gt 0) {
        # The guard's start record, its first write: restart_instance stops nothing
        # before it sees it (Wait-RestartGuardStart). Its start time too: the lease
        # (Read-RestartMarker) trusts an id only with it.
        $ownStart = [string](Get-Process -Id $PID).StartTime.ToUniversalTime().Ticks
        Set-ItemProperty -LiteralPath $marker -Name 'GuardStart' -Value $ownStart
        Set-ItemProperty -LiteralPath $marker -Name 'GuardProcessId' -Value $PID -Type DWord
    }
    function Read-State {
        return (ConvertFrom-Json -InputObject ([string](Get-Item -LiteralPath $marker).GetValue('State')))
    }
    $state = Read-State
    $timeoutSeconds = [int](Get-Item -LiteralPath $marker).GetValue('TimeoutSeconds')
    $errorLogPath = [string](Get-Item -LiteralPath $marker).GetValue('ErrorLog')
    $serviceName = [string]$state.service_name
    if ($serviceName -notmatch '^[A-Za-z0-9_$]+\z') {
        return # restart_instance wrote a checked name; anything else is not our marker
    }
    $resume = $false
    if ($GuardProcessId -gt 0) {
        # The guard. A process with the runner's id but another start time is not the
        # runner (ids are reused).
        $runner = Get-Process -Id $GuardProcessId -ErrorAction SilentlyContinue
        if ($runner -and [string]$runner.StartTime.ToUniversalTime().Ticks -ne [string](Get-Item -LiteralPath $marker).GetValue('RunnerStart', '')) {
            $runner = $null
        }
        # First the prepared phase: started before the runner may restart, the guard
        # does nothing until the runner records its go (the marker's phase leaves
        # prepared). The marker gone or another request's (one sent again replaced
        # it), the runner ended without its go, or the guard's own deadline passed
        # (GoSeconds): it ends having changed nothing (its task, if one started it,
        # removed on the way out). At its deadline it gives up under the lease's lock
        # (GuardProcessId 0), so that no go can be recorded after it (Set-RestartGo).
        $goLimit = [DateTime]::UtcNow.AddSeconds([int](Get-Item -LiteralPath $marker).GetValue('GoSeconds', 0))
        while ($true) {
            $key = Get-Item -LiteralPath $marker -ErrorAction SilentlyContinue
            if (-not $key -or [string]$key.GetValue('Token', '') -cne $Token) {
                return
            }
            if ([string](ConvertFrom-Json -InputObject ([string]$key.GetValue('State', ''))).phase -cne 'prepared') {
                break
            }
            if (-not $runner -or $runner.HasExited) {
                # Ended: one last look (it may have recorded its go, then ended).
                $key = Get-Item -LiteralPath $marker -ErrorAction SilentlyContinue
                if ($key -and [string]$key.GetValue('Token', '') -ceq $Token -and [string](ConvertFrom-Json -InputObject ([string]$key.GetValue('State', ''))).phase -cne 'prepared') {
                    break
                }
                return
            }
            if ([DateTime]::UtcNow -ge $goLimit) {
                $lockPath = Join-Path -Path (Join-Path -Path $env:ProgramData -ChildPath 'mssqlifi') -ChildPath 'restart.lock'
                $lockUntil = [DateTime]::UtcNow.AddSeconds(30)
                $lock = $null
                while (-not $lock -and [DateTime]::UtcNow -lt $lockUntil) {
                    try {
                        $lock = [System.IO.File]::Open($lockPath, [System.IO.FileMode]::OpenOrCreate, [System.IO.FileAccess]::ReadWrite, [System.IO.FileShare]::None)
                    }
                    catch {
                        Start-Sleep -Milliseconds 100
                    }
                }
                if ($lock) {
                    try {
                        $key = Get-Item -LiteralPath $marker -ErrorAction SilentlyContinue
                        if (-not $key -or [string]$key.GetValue('Token', '') -cne $Token) {
                            return
                        }
                        if ([string](ConvertFrom-Json -InputObject ([string]$key.GetValue('State', ''))).phase -ceq 'prepared') {
                            Set-ItemProperty -LiteralPath $marker -Name 'GuardProcessId' -Value 0 -Type DWord
                            return
                        }
                    }
                    finally {
                        $lock.Dispose()
                    }
                    break # let go just before the deadline: guard it
                }
                # The lock stayed held (the runner records its go under it): look again.
                $goLimit = [DateTime]::UtcNow.AddSeconds(5)
                continue
            }
            $null = $runner.WaitForExit(250)
        }
        # The runner let it go: wait for it to finish the restart, or to end.
        while ($runner -and -not $runner.WaitForExit(250)) {
            if ((Read-State).finished) {
                return
            }
        }
        $state = Read-State
        if ($state.finished) {
            return
        }
        # The runner ended half-way: this process completes the restart.
        Set-ItemProperty -LiteralPath $marker -Name 'RunnerStart' -Value $ownStart
        Set-ItemProperty -LiteralPath $marker -Name 'WorkerProcessId' -Value $PID -Type DWord
        $resume = $true
    }
    $deadline = [DateTime]::UtcNow.AddSeconds($timeoutSeconds)
    # After a stop that ran past the deadline, the Engine is started once it has
    # stopped, for at most this long: SQL Server is never left down on purpose.
    $lateLimit = [DateTime]::UtcNow.AddHours(2)

    function Format-Time {
        param([datetime] $Time)
        return $Time.ToUniversalTime().ToString('o', [Globalization.CultureInfo]::InvariantCulture)
    }
    function Save-State {
        $json = ConvertTo-Json -InputObject $state -Depth 4 -Compress
        Set-ItemProperty -LiteralPath $marker -Name 'State' -Value $json
    }
    function Get-StateName {
        param($Status)
        return ([string]$Status -creplace '([a-z])([A-Z])', '$1 $2')
    }
    function Get-TimeLeft {
        param([datetime] $Until)
        $left = $Until - [DateTime]::UtcNow
        if ($left -lt [TimeSpan]::Zero) {
            return [TimeSpan]::Zero
        }
        return $left
    }
    function Wait-Status {
        param($Service, [string] $Status, [datetime] $Until)
        try {
            $Service.WaitForStatus($Status, (Get-TimeLeft -Until $Until))
        }
        catch {
            $null = $_
        }
        $Service.Refresh()
        return ([string]$Service.Status -eq $Status)
    }
    function Get-ErrorLogTail {
        # The last lines of the error log, from at most its last 64 KiB.
        $lines = @()
        if (-not $errorLogPath) {
            return $lines
        }
        try {
            $stream = New-Object System.IO.FileStream($errorLogPath, [System.IO.FileMode]::Open, [System.IO.FileAccess]::Read, [System.IO.FileShare]::ReadWrite)
            try {
                $length = [Math]::Min($stream.Length, 65536)
                $null = $stream.Seek(-$length, [System.IO.SeekOrigin]::End)
                $buffer = New-Object byte[] $length
                $read = $stream.Read($buffer, 0, $length)
                $text = [Text.Encoding]::Unicode.GetString($buffer, 0, $read - ($read % 2))
                $lines = @($text -split "`r?`n" | Where-Object { $_.Trim() } | Select-Object -Last 10)
            }
            finally {
                $stream.Dispose()
            }
        }
        catch {
            $lines = @("(the error log $errorLogPath could not be read: $($_.Exception.Message))")
        }
        return $lines
    }
    function Complete-Restart {
        param([string] $ErrorCode, [string] $Message)
        $engine.Refresh()
        $state.service_state = Get-StateName -Status $engine.Status
        if ($ErrorCode) {
            $state.error = $ErrorCode
            $state.message = $Message
        }
        $state.phase = 'done'
        $state.finished = $true
        Save-State
    }

    # Waits while a service is starting, pausing or continuing, at most until $Until.
    function Wait-Settled {
        param($Service, [datetime] $Until)
        $Service.Refresh()
        while (@('StartPending', 'PausePending', 'ContinuePending') -contains [string]$Service.Status -and [DateTime]::UtcNow -lt $Until) {
            Start-Sleep -Milliseconds 250
            $Service.Refresh()
        }
    }
    # ControlService(SERVICE_CONTROL_STOP) for one service, through sc.exe, whose exit
    # code is the Windows error (1051: dependents still run; 1061: the service cannot
    # take the control now; 1062: it is not started). Never ServiceController.Stop():
    # it first stops each dependent that is not Stopped itself, waits 30 s for each,
    # and throws at once for one that is Stop Pending.
    # A service that stopped between its read and the control (1062,
    # ERROR_SERVICE_NOT_ACTIVE) is what the stop wanted. One in a pending state (1061,
    # ERROR_SERVICE_CANNOT_ACCEPT_CTRL: an Engine still Start Pending) is waited for
    # until it settles, at most until $Until, and asked again once it is Running or
    # Paused; one that settled Stopped or Stop Pending needs no control.
    function Send-StopControl {
        param($Service, [datetime] $Until)
        $name = $Service.Name
        while ($true) {
            $null = & sc.exe stop $name
            $code = $LASTEXITCODE
            if ($code -eq 0 -or $code -eq 1062) {
                return
            }
            if ($code -eq 1061 -and [DateTime]::UtcNow -lt $Until) {
                Wait-Settled -Service $Service -Until $Until
                if (@('Stopped', 'StopPending') -contains [string]$Service.Status) {
                    return
                }
                if (@('Running', 'Paused') -contains [string]$Service.Status) {
                    Start-Sleep -Milliseconds 250
                    continue
                }
            }
            $Service.Refresh()
            throw "sc.exe stop $name failed with Windows error ${code}: $((New-Object System.ComponentModel.Win32Exception($code)).Message) (it is $(Get-StateName -Status $Service.Status))"
        }
    }

    $running = @()
    try {
        $engine = New-Object System.ServiceProcess.ServiceController($serviceName)
        # The dependents this restart stops and starts again, those Running or Paused,
        # kept in the marker for a resumed restart (a JSON array of names; foreach
        # enumerates what ConvertFrom-Json returns, which Windows PowerShell 5.1
        # writes as one array object). DependentServices lists the indirect ones too,
        # each after those that depend on it (EnumDependentServices).
        if ($resume) {
            $running = @(foreach ($name in (ConvertFrom-Json -InputObject ([string](Get-Item -LiteralPath $marker).GetValue('Dependents', '[]')))) {
                    New-Object System.ServiceProcess.ServiceController([string]$name)
                })
        }
        else {
            $all = @($engine.DependentServices)
            foreach ($dependent in $all) {
                Wait-Settled -Service $dependent -Until $deadline
            }
            $running = @($all | Where-Object { $_.Status -eq 'Running' -or $_.Status -eq 'Paused' })
            $names = New-Object System.Collections.Generic.List[string]
            foreach ($dependent in $running) {
                $names.Add($dependent.Name)
            }
            Set-ItemProperty -LiteralPath $marker -Name 'Dependents' -Value (ConvertTo-Json -InputObject $names.ToArray() -Compress)
        }
        if ($state.phase -eq 'stopping') {
            Save-State
            # One at a time, each after those that depend on it; the wait is bounded
            # (Stop-Service waits without a limit). A resumed stop does not ask again
            # what is already stopping.
            foreach ($dependent in $running) {
                $dependent.Refresh()
                if ($dependent.Status -eq 'Running' -or $dependent.Status -eq 'Paused') {
                    Send-StopControl -Service $dependent -Until $deadline
                }
                if (-not (Wait-Status -Service $dependent -Status 'Stopped' -Until $deadline)) {
                    break
                }
                if ($state.stopped -notcontains $dependent.Name) {
                    $state.stopped += $dependent.Name
                }
            }
            # Just before the Engine: every dependent again. One that is not Stopped
            # stops the restart here; the dependents it stopped are started again.
            $blocker = $null
            foreach ($dependent in @((New-Object System.ServiceProcess.ServiceController($serviceName)).DependentServices)) {
                if ($dependent.Status -eq 'StopPending') {
                    # Stopping by someone else: it may still stop in time.
                    $null = Wait-Status -Service $dependent -Status 'Stopped' -Until $deadline
                }
                if (-not $blocker -and $dependent.Status -ne 'Stopped') {
                    $blocker = $dependent
                }
            }
            if ($blocker) {
                $state.error = 'stop_timeout'
                $state.message = "$serviceName was not stopped: its dependent $($blocker.Name) is $(Get-StateName -Status $blocker.Status) when the Engine was to stop (the restart allows $timeoutSeconds seconds). Nothing more was stopped; the dependents this restart stopped are started again. Look at why $($blocker.Name) does not stop, then apply again."
                $state.phase = 'dependents'
                Save-State
                # The dependents start again with a deadline of their own (the stop's is spent).
                $deadline = [DateTime]::UtcNow.AddSeconds($timeoutSeconds)
            }
            else {
                # An Engine starting (or pausing, continuing) cannot take the stop yet
                # (1061): wait, bounded, for it to settle first.
                Wait-Settled -Service $engine -Until $deadline
                if ($engine.Status -ne 'Stopped' -and $engine.Status -ne 'StopPending') {
                    Send-StopControl -Service $engine -Until $deadline
                }
                if (-not (Wait-Status -Service $engine -Status 'Stopped' -Until $deadline)) {
                    $now = Get-StateName -Status $engine.Status
                    $state.error = 'stop_timeout'
                    $state.message = "$serviceName did not stop within $timeoutSeconds seconds (it is $now). The host starts it again as soon as it has stopped; look at what SQL Server is doing (long rollback or checkpoint)."
                    $state.service_state = $now
                    Save-State
                    if ($Inline) {
                        # restart_instance reports this now; the guard, once this process
                        # has ended, starts the Engine as soon as it has stopped.
                        return
                    }
                    if (Wait-Status -Service $engine -Status 'Stopped' -Until $lateLimit) {
                        $deadline = [DateTime]::UtcNow.AddSeconds($timeoutSeconds)
                    }
                    else {
                        # Still not stopped after hours: the dependents run again.
                        $state.phase = 'dependents'
                        $deadline = [DateTime]::UtcNow.AddSeconds($timeoutSeconds)
                    }
                }
                if ($state.phase -eq 'stopping') {
                    $state.stopped += $serviceName
                    $state.phase = 'starting'
                }
                Save-State
            }
        }
        if ($state.phase -eq 'starting') {
            $startError = ''
            for ($attempt = [int]$state.start_attempts + 1; $attempt -le 3; $attempt++) {
                $state.start_attempts = $attempt
                Save-State
                $engine.Refresh()
                if ($engine.Status -eq 'Stopped') {
                    try {
                        $engine.Start()
                    }
                    catch {
                        $startError = $_.Exception.Message
                    }
                }
                if (Wait-Status -Service $engine -Status 'Running' -Until $deadline) {
                    break
                }
                if ($engine.Status -ne 'Stopped' -or [DateTime]::UtcNow -ge $deadline) {
                    break
                }
                Start-Sleep -Seconds 2
            }
            $engine.Refresh()
            if ($engine.Status -eq 'StartPending') {
                $null = Wait-Status -Service $engine -Status 'Running' -Until $deadline
            }
            if ($engine.Status -ne 'Running') {
                $now = Get-StateName -Status $engine.Status
                if ($now -eq 'Stopped') {
                    $service = Get-CimInstance -ClassName Win32_Service -Filter "Name = '$serviceName'" | Select-Object -First 1
                    $state.win32_exit_code = [int]$service.ExitCode
                    $state.errorlog_tail = @(Get-ErrorLogTail)
                    $why = "Windows error $($service.ExitCode)"
                    if ($startError) {
                        $why += "; $startError"
                    }
                    Complete-Restart -ErrorCode 'start_failed' -Message "$serviceName stopped but did not start after $($state.start_attempts) attempts: it is Stopped ($why). The last lines of its error log say why; fix the cause and start the service."
                    return
                }
                Complete-Restart -ErrorCode 'timeout' -Message "$serviceName did not reach Running within $timeoutSeconds seconds (it is $now). Look at the service's event log and the SQL Server error log."
                return
            }
            if ($state.started -notcontains $serviceName) {
                $state.started += $serviceName
            }
            $state.finished_at = Format-Time -Time ([DateTime]::UtcNow)
            $service = Get-CimInstance -ClassName Win32_Service -Filter "Name = '$serviceName'" | Select-Object -First 1
            if ([int]$service.ProcessId -gt 0) {
                $state.process_start_time = Format-Time -Time (Get-Process -Id ([int]$service.ProcessId)).StartTime
            }
            $state.phase = 'dependents'
            Save-State
            if ($Inline -and $AnnounceStarted) {
                # A gated restart: the Engine runs again (its provider's slot can go).
                Write-RestartProgress -RestartEvent 'started' -RestartId ([string]$state.restart_id)
            }
        }
        # The dependents this restart stopped, the last stopped first; one left Paused
        # or Running (never reached) stays as it is. First every one that can start
        # now; then those still Stop Pending (a dependent that would not stop) and
        # those that depend on one, once it has stopped: by the guard, when this is
        # the runner. Nothing waits on a dependent that will not stop before the
        # others run again (SQL Server Agent is back at once).
        [array]::Reverse($running)
        $held = New-Object System.Collections.Generic.List[string]
        $late = ''
        foreach ($dependent in $running) {
            $dependent.Refresh()
            $after = @($dependent.ServicesDependedOn | Where-Object { $held -contains $_.Name })
            if ($dependent.Status -eq 'StopPending' -or $after.Count -gt 0) {
                $held.Add($dependent.Name)
                continue
            }
            if ($dependent.Status -eq 'Paused') {
                continue
            }
            if ($dependent.Status -eq 'Stopped') {
                $dependent.Start()
                $state.started += $dependent.Name
            }
            if (-not $late -and -not (Wait-Status -Service $dependent -Status 'Running' -Until $deadline)) {
                $late = "$serviceName runs again, but its dependent $($dependent.Name) did not reach Running within $timeoutSeconds seconds (it is $(Get-StateName -Status $dependent.Status)). Look at that service's event log."
            }
        }
        if ($held.Count -gt 0) {
            Save-State
            if ($Inline) {
                return
            }
            foreach ($dependent in $running) {
                if ($held -notcontains $dependent.Name) {
                    continue
                }
                $dependent.Refresh()
                if ($dependent.Status -eq 'StopPending') {
                    if (Wait-Status -Service $dependent -Status 'Stopped' -Until $lateLimit) {
                        $deadline = [DateTime]::UtcNow.AddSeconds($timeoutSeconds)
                    }
                }
                if ($dependent.Status -eq 'Stopped') {
                    $dependent.Start()
                    $state.started += $dependent.Name
                }
                if (-not $late -and -not (Wait-Status -Service $dependent -Status 'Running' -Until $deadline)) {
                    $late = "$serviceName runs again, but its dependent $($dependent.Name) did not reach Running within $timeoutSeconds seconds (it is $(Get-StateName -Status $dependent.Status)). Look at that service's event log."
                }
            }
        }
        if ($late) {
            Complete-Restart -ErrorCode 'timeout' -Message $late
            return
        }
        # A restart that stopped at a dependent keeps its stop_timeout.
        Complete-Restart -ErrorCode '' -Message ''
    }
    catch {
        # Whatever failed, what this restart stopped is started again before it reports.
        $message = "The restart of $serviceName failed: $($_.Exception.Message)"
        try {
            $engine.Refresh()
            if ($engine.Status -eq 'Stopped') {
                $engine.Start()
                $null = Wait-Status -Service $engine -Status 'Running' -Until $deadline
            }
            [array]::Reverse($running)
            foreach ($dependent in $running) {
                $dependent.Refresh()
                if ($dependent.Status -eq 'Stopped') {
                    $dependent.Start()
                    $null = Wait-Status -Service $dependent -Status 'Running' -Until $deadline
                }
            }
            $message += ' What it had stopped was started again.'
        }
        catch {
            $message += " Starting again what it had stopped failed too: $($_.Exception.Message). Start $serviceName and its dependents."
        }
        Complete-Restart -ErrorCode 'failed' -Message $message
    }
}
