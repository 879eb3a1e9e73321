# The restart's marker: HKLM:\SOFTWARE\mssqlifi\Restart\<instance> (writable by
# administrators only) holds the running restart's Token, the process ids of its
# runner (WorkerProcessId, with its start time RunnerStart in ticks) and guard
# (GuardProcessId; the guard writes its own when it starts), the scheduled task that
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

# The marker's state, or $null when the instance has none. A restart whose worker
# process is gone before it finished is reported as failed (for example after a reboot).
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
    if (-not $state.finished) {
        # The runner (restart_instance's process, or the guard once it took over) and
        # the guard: the restart goes on while either lives.
        $workerId = [int]$key.GetValue('WorkerProcessId', 0)
        $guardId = [int]$key.GetValue('GuardProcessId', 0)
        $alive = $false
        foreach ($id in @($workerId, $guardId)) {
            if ($id -gt 0 -and (Get-Process -Id $id -ErrorAction SilentlyContinue)) {
                $alive = $true
            }
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

function Wait-RestartMarker {
    param([string] $Instance, [datetime] $Until)
    while ($true) {
        $state = Read-RestartMarker -Instance $Instance
        # A stop that ran past the deadline is reported before the worker is done.
        if (-not $state -or $state.finished -or $state.error -or [DateTime]::UtcNow -ge $Until) {
            return $state
        }
        Start-Sleep -Milliseconds 500
    }
}
