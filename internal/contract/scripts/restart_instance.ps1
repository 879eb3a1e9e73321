# restart_instance: first the changes of the managed rights' holders it is given
# (Set-UserRight, right_change.ps1); then a restart of the Engine and
# the dependents that were running, as Restart-Service -Force does, and those
# dependents started again; last, when asked, the instance read back
# (Get-InstanceReport, instance_report.ps1). All in this one process.
# The restart (restart_worker.ps1) runs here, but only once a guard process
# (restart_guard.ps1: started through WMI, or a scheduled task where Defender blocks
# that), outside the WinRM shell's job object, watches it: should this process end
# half-way (the shell deleted, the connection lost), the guard completes the restart.
# The guard starts before anything changes and acts only once this process has
# recorded its go (Set-RestartGo), after its changes and, gated, the go line.
# A request that finds a restart in progress joins it and waits for its outcome at
# most wait_seconds (0: until it ends); one that finds a restart of another instance
# of the host in progress is refused before it changes anything (the host's restart
# lease, Find-OtherRestart). restart_status reports a restart later.
# The result says whether the restart finished and how (error, message); exit codes
# other than 0 are for requests that stop nothing (invalid, clustered, not found, a
# change that failed, restart_in_progress, restart_not_started; 6,
# changed_not_restarted: the changes were made, then the go was refused).
# Parameters: $Params.instance, $Params.timeout_seconds, $Params.restart_id,
# $Params.wait_seconds, $Params.changes (a list of { right, sid, grant }; right absent: SeManageVolumePrivilege), $Params.read_back,
# $Params.await_go and $Params.go_seconds (a gated restart: contract/restart_gate.go).
$instanceName = [string]$Params.instance
$timeoutSeconds = 0
$waitSeconds = 0
$restartId = [string]$Params.restart_id
if (-not (Test-SqlInstanceName -Name $instanceName)) {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "'$instanceName' is not a SQL Server instance name."
}
if (-not [int]::TryParse([string]$Params.timeout_seconds, [ref]$timeoutSeconds) -or $timeoutSeconds -lt 1 -or $timeoutSeconds -gt 86400) {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message 'timeout_seconds must be a whole number of seconds between 1 and 86400.'
}
if ($null -ne $Params.wait_seconds -and (-not [int]::TryParse([string]$Params.wait_seconds, [ref]$waitSeconds) -or $waitSeconds -lt 0 -or $waitSeconds -gt 86400)) {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message 'wait_seconds must be a whole number of seconds between 0 and 86400.'
}
if ($restartId -and $restartId -cnotmatch '^[0-9a-f]{32}\z') {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message 'restart_id must be 32 lowercase hexadecimal digits.'
}
if (-not $restartId) {
    $restartId = [guid]::NewGuid().ToString('N')
}
$changes = @()
if ($null -ne $Params.changes) {
    $changes = @($Params.changes)
}
if ($changes.Count -gt 8) {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message 'changes lists at most 8 changes.'
}
# Each change's right (absent or empty: SeManageVolumePrivilege), checked before
# anything changes.
foreach ($change in $changes) {
    $changeRight = [string]$change.right
    if ($changeRight -and -not (Test-ManagedRight -Name $changeRight)) {
        Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "restart_instance changes only $($ManagedRights -join ' and '); '$changeRight' is refused on $($env:COMPUTERNAME)."
    }
}
if ($null -ne $Params.read_back -and $Params.read_back -isnot [bool]) {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message 'read_back must be true or false.'
}
$readBack = [bool]$Params.read_back
if ($null -ne $Params.await_go -and $Params.await_go -isnot [bool]) {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message 'await_go must be true or false.'
}
$awaitGo = [bool]$Params.await_go
$goSeconds = 0
if ($awaitGo) {
    if (-not [string]$Params.restart_id) {
        Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message 'await_go needs a restart_id (the go line names it).'
    }
    if (-not [int]::TryParse([string]$Params.go_seconds, [ref]$goSeconds) -or $goSeconds -lt 1 -or $goSeconds -gt 86400) {
        Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message 'go_seconds must be a whole number of seconds between 1 and 86400.'
    }
}

$computerName = $env:COMPUTERNAME
$instance = Find-SqlInstance -Name $instanceName
if (-not $instance.Name) {
    Exit-WithError -Code 5 -ErrorName 'not_found' -Message "SQL Server instance $instanceName is not installed on $computerName."
}
$serviceName = $instance.ServiceName
if ($serviceName -notmatch '^[A-Za-z0-9_$]+\z') {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "'$serviceName' is not a SQL Server service name."
}
if (Test-Path -LiteralPath "$($instance.Root)\Cluster") {
    Exit-WithError -Code 3 -ErrorName 'clustered' -Message "$instanceName on $computerName is a failover cluster instance: it must not be stopped through the service control manager. Restart its SQL Server resource through the cluster (Failover Cluster Manager, or Stop-ClusterResource/Start-ClusterResource)."
}
$engine = Get-Service -Name $serviceName -ErrorAction SilentlyContinue
if (-not $engine) {
    Exit-WithError -Code 5 -ErrorName 'not_found' -Message "The service $serviceName of instance $instanceName does not exist on $computerName."
}

# The guard's script file first: a directory or file someone else owns refuses the
# restart before anything is written, changed or stopped.
try {
    $guardFile = Write-RestartGuardFile -WorkerText $RestartWorker.ToString()
    $guardPath = $guardFile.path
    $guardHash = $guardFile.hash
}
catch {
    Exit-WithError -Code 1 -ErrorName 'failed' -Message "The restart's guard cannot be prepared on ${computerName}: $($_.Exception.Message). Nothing was changed or stopped."
}

# The host's restart lease: one instance of a host restarts at a time, whichever run
# or state asks. Under the lock (held until this restart's marker is written; the
# process's end releases it), a restart of another instance in progress refuses this
# request before anything changes; one of this instance is joined.
try {
    $lock = Enter-RestartLock -Directory $RestartGuardDirectory
}
catch {
    Exit-WithError -Code 1 -ErrorName 'failed' -Message "The restart of $instanceName cannot begin on ${computerName}: $($_.Exception.Message). Nothing was changed or stopped; apply again."
}
$other = Find-OtherRestart -Instance $instance.Name
if ($other) {
    $lock.Dispose()
    if ([string]$other.phase -ceq 'prepared') {
        Exit-WithError -Code 3 -ErrorName 'restart_in_progress' -Message "The restart of $instanceName was refused: request $($other.restart_id) to restart instance $($other.instance) on $computerName is prepared (since $($other.started_at)) and waits for its go line until $($other.go_until); it holds the host until then, or until its process ends, and one instance of a host restarts at a time. Nothing was changed for $instanceName. Apply again after $($other.go_until)."
    }
    Exit-WithError -Code 3 -ErrorName 'restart_in_progress' -Message "The restart of $instanceName was refused: the restart of instance $($other.instance) on $computerName is in progress (since $($other.started_at), phase $($other.phase)), and one instance of a host restarts at a time. Nothing was changed for $instanceName. Apply again once that restart has finished."
}
$existing = Read-RestartMarker -Instance $instance.Name
# A restart prepared but not let go (phase prepared: its runner waits for its go
# line, its guard for the runner's go) is never joined: nothing of it has happened.
# This request's own (a request sent again after it ended before its go line) is
# replaced by this one: the old runner finds its token gone should a go line still
# come, and the old guard ends having changed nothing. Another request's refuses
# this one, as a restart in progress does.
$prepared = ($existing -and [string]$existing.phase -ceq 'prepared')
if ($prepared -and [string]$existing.restart_id -cne $restartId) {
    $lock.Dispose()
    Exit-WithError -Code 3 -ErrorName 'restart_in_progress' -Message "The restart of $instanceName was refused: request $($existing.restart_id) to restart it on $computerName is prepared (since $($existing.started_at)) and waits for its go line until $($existing.go_until); it holds the host until then, or until its process ends. Nothing was changed for $instanceName. Apply again after $($existing.go_until)."
}
$join = ($existing -and -not $prepared -and (-not $existing.finished -or [string]$existing.restart_id -ceq $restartId))
if ($join) {
    $lock.Dispose()
}
# The event source before anything it records: a write right after its registration
# can fail until the system has refreshed its list of sources, and the guard's start
# now lies between the two.
Register-ChangeEventSource

if (-not $join) {
    # The error log, for the last lines after a failed start: -e of the startup parameters.
    $errorLogPath = ''
    $parametersPath = "$($instance.Root)\MSSQLServer\Parameters"
    if (Test-Path -LiteralPath $parametersPath) {
        $parametersKey = Get-Item -LiteralPath $parametersPath
        foreach ($argName in @($parametersKey.GetValueNames() | Where-Object { $_ -match '^SQLArg\d+\z' })) {
            $value = [string]$parametersKey.GetValue($argName)
            if ($value.StartsWith('-e')) {
                $errorLogPath = $value.Substring(2)
            }
        }
    }

    # The marker, in phase prepared: the restart holds the host's lease from here,
    # but nothing is changed or stopped before this process records its go
    # (Set-RestartGo), after its changes and, gated, after the provider's go line.
    $token = [guid]::NewGuid().ToString('N')
    $state = New-RestartState -RestartId $restartId -ServiceName $serviceName -ServiceState (ConvertTo-ServiceState -Status $engine.Status)
    $state.phase = 'prepared'
    $markerPath = $RestartMarkerRoot + '\' + $instance.Name
    # A task the last restart's guard left behind (it removes its own when it ends).
    if (Test-Path -LiteralPath $markerPath) {
        $oldTask = [string](Get-Item -LiteralPath $markerPath).GetValue('GuardTask', '')
        if ($oldTask) {
            Unregister-ScheduledTask -TaskName $oldTask -TaskPath $RestartTaskPath -Confirm:$false -ErrorAction SilentlyContinue
        }
    }
    # How long the guard waits for the go at most (it then ends, changing nothing):
    # the go line's wait (an ungated request: the restart's), and a margin.
    $guardGoSeconds = $timeoutSeconds
    if ($awaitGo) {
        $guardGoSeconds = $goSeconds
    }
    $null = New-Item -Path $markerPath -Force
    Set-ItemProperty -LiteralPath $markerPath -Name 'Token' -Value $token
    Set-ItemProperty -LiteralPath $markerPath -Name 'TimeoutSeconds' -Value $timeoutSeconds -Type DWord
    Set-ItemProperty -LiteralPath $markerPath -Name 'GoSeconds' -Value ($guardGoSeconds + $RestartGuardGoMarginSeconds) -Type DWord
    # Until when this request waits for its go (a refusal of another request names it).
    Set-ItemProperty -LiteralPath $markerPath -Name 'GoUntil' -Value (Format-UtcTime -Time ([DateTime]::UtcNow.AddSeconds($guardGoSeconds)))
    Set-ItemProperty -LiteralPath $markerPath -Name 'ErrorLog' -Value $errorLogPath
    Set-ItemProperty -LiteralPath $markerPath -Name 'WorkerProcessId' -Value $PID -Type DWord
    Set-ItemProperty -LiteralPath $markerPath -Name 'RunnerStart' -Value ([string](Get-Process -Id $PID).StartTime.ToUniversalTime().Ticks)
    Set-ItemProperty -LiteralPath $markerPath -Name 'GuardProcessId' -Value 0 -Type DWord
    Set-ItemProperty -LiteralPath $markerPath -Name 'GuardStart' -Value ''
    Set-ItemProperty -LiteralPath $markerPath -Name 'GuardTask' -Value ''
    Set-ItemProperty -LiteralPath $markerPath -Name 'State' -Value (ConvertTo-AsciiJson -Value $state)
    $lock.Dispose() # the marker now holds the lease

    # The guard, before the go line and any change, so that its start (a
    # powershell.exe, waited for) is not on the restart's path. Its command line: the
    # loader (restart_guard.ps1) with its file, the file's hash, the token this
    # script made and this process's id; no script text and no user input. It waits,
    # changing nothing, until this process records its go; should this process end
    # first, it ends too (restart_worker.ps1).
    $guardLoader = New-RestartGuardLoader -File $guardPath -Hash $guardHash -Token $token -RunnerId $PID
    $guardArguments = '-NoProfile -NonInteractive -EncodedCommand ' + $guardLoader
    $guard = Start-RestartGuard -Arguments $guardArguments -Instance $instance.Name -Token $token -Marker $markerPath
    if (-not $guard.launcher) {
        Remove-PreparedRestart -Marker $markerPath -Token $token -Directory $RestartGuardDirectory
        Exit-WithError -Code 1 -ErrorName 'failed' -Message "The restart's guard process could not be started on ${computerName}: $($guard.why). Nothing was stopped or changed. Start the Task Scheduler service (Schedule), or let WMI create processes on this host (an ASR rule in audit mode blocks nothing); where a guard was started but did not start, look at the host's Group Policy execution policy (Get-ExecutionPolicy -List), its AMSI provider and endpoint protection's log for powershell.exe; then apply again."
    }

    # A gated restart (await_go): everything checked, the lease held and the guard
    # waiting, it waits for the provider's go line (sent once the provider holds its
    # restart slot) before it changes anything. No go line in time, the end of stdin
    # or another line: nothing was changed; the marker goes, and the guard ends.
    if ($awaitGo) {
        Write-RestartProgress -RestartEvent 'prepared' -RestartId $restartId
        $goLine = Read-GoLine -Seconds $goSeconds
        if ($goLine -cne "go $restartId") {
            Remove-PreparedRestart -Marker $markerPath -Token $token -Directory $RestartGuardDirectory
            Exit-WithError -Code 3 -ErrorName 'restart_not_started' -Message "The restart of $instanceName on $computerName did not start: the provider's go line did not come within $goSeconds seconds. Nothing was changed or stopped; apply again."
        }
    }
}

# The changes first: one that fails ends this request before anything is stopped
# (its go never recorded, the guard ends having changed nothing).
$changed = $false
$made = @()
foreach ($change in $changes) {
    $changeRight = [string]$change.right
    if (-not $changeRight) { $changeRight = 'SeManageVolumePrivilege' }
    if ((Set-UserRight -Right $changeRight -SidText $change.sid -Grant $change.grant -Instance $instanceName).changed) {
        $changed = $true
        if ($change.grant) { $made += "granted $changeRight to $($change.sid)" } else { $made += "revoked $changeRight from $($change.sid)" }
    }
}

# A restart that ran is reported with exit 0 whether it succeeded or not: its error
# and message are in the result, with the facts of a failed start.
function Write-RestartOutcome {
    param($State, [bool] $Joined)
    $State | Add-Member -NotePropertyName joined -NotePropertyValue $Joined -Force
    $State | Add-Member -NotePropertyName changed -NotePropertyValue $changed -Force
    if ($EventLogNotes.warning) { $State | Add-Member -NotePropertyMembers @{ event_log_warning = $EventLogNotes.warning } -Force }
    if ($readBack -and $State.finished) {
        $State | Add-Member -NotePropertyName instance -NotePropertyValue (Get-InstanceReport -InstanceName $instanceName -Right 'SeManageVolumePrivilege') -Force
    }
    Write-Result -Value $State
}

# One restart at a time per instance: a request joins the restart in progress, and a
# request whose id is the last restart's gets that restart's outcome.
if ($join) {
    $until = [DateTime]::UtcNow.AddSeconds($timeoutSeconds + 10)
    if ($waitSeconds -gt 0) {
        $until = [DateTime]::UtcNow.AddSeconds($waitSeconds)
    }
    Write-RestartOutcome -State (Wait-RestartMarker -Instance $instance.Name -Until $until) -Joined $true
}

# The go, recorded under the lease's lock: from here the guard completes the restart
# should this process end. Refused, nothing stopped, when another request replaced
# this one's marker or the guard ended first.
$notGone = Set-RestartGo -Marker $markerPath -Token $token -Directory $RestartGuardDirectory
if ($notGone) {
    if ($changed) {
        # The changes were made: its own code (exit 6), so that the provider records
        # them, naming what changed.
        Exit-WithError -Code 6 -ErrorName 'changed_not_restarted' -Message "The restart of $instanceName on $computerName did not start: $notGone. The right's holders were changed ($($made -join '; ')), and nothing was stopped: the change takes effect at the Engine's next start; apply again to restart it."
    }
    Exit-WithError -Code 3 -ErrorName 'restart_not_started' -Message "The restart of $instanceName on $computerName did not start: $notGone. Nothing was stopped; apply again."
}

# The restart, in this process. It returns when it finished, or early with a
# stop_timeout error while the Engine is still stopping (the guard takes over).
Write-ChangeEvent -Instance $instance.Name -Sid (@($changes | ForEach-Object { [string]$_.sid }) -join ',') -Change 'restart' -Agent ([string]$Params.agent)
$Token = $token
$GuardProcessId = 0
$Inline = $true
$AnnounceStarted = $awaitGo
& $RestartWorker
Write-RestartOutcome -State (Read-RestartMarker -Instance $instance.Name) -Joined $false
