# The cluster actions' guard (issue 23): restart_guard.ps1's guard in its cluster
# mode, for cluster_restart and cluster_move. Started with the same loader and
# launchers, and confirmed by its start record before anything is taken offline or
# moved; it runs outside the WinRM shell's job object. Once the script's process has
# ended (it finished; or its shell ended: a Ctrl-C, a lost client), it waits while a
# resource of the role is pending and, unless the group is Online with its SQL
# Server and Agent resources Online, calls BringOnline, again after a pause that
# doubles each time, at most 3 times and for at most 2 hours (past the request's
# deadline if it must); a role taken offline after the guard saw it Online is left
# Offline (someone else's action). It records its progress at each turn, and its
# outcome, in its marker HKLM:\SOFTWARE\mssqlifi\Cluster\<instance> (value State,
# JSON: finished, group, brought_online, state, error).
$ClusterGuardRoot = 'HKLM:\SOFTWARE\mssqlifi\Cluster'
$ClusterGuardWorker = {
    $ErrorActionPreference = 'Stop'
    $ProgressPreference = 'SilentlyContinue'
    $root = 'HKLM:\SOFTWARE\mssqlifi\Cluster'
    $marker = $null
    foreach ($key in @(Get-ChildItem -LiteralPath $root)) {
        if ([string]$key.GetValue('Token', '') -ceq $Token) {
            $marker = $root + '\' + $key.PSChildName
        }
    }
    if (-not $marker) {
        return
    }
    # The start record first: the script takes nothing offline before it sees it.
    $ownStart = [string](Get-Process -Id $PID).StartTime.ToUniversalTime().Ticks
    Set-ItemProperty -LiteralPath $marker -Name 'GuardStart' -Value $ownStart
    Set-ItemProperty -LiteralPath $marker -Name 'GuardProcessId' -Value $PID -Type DWord
    $groupName = [string](Get-Item -LiteralPath $marker).GetValue('Group', '')
    $until = [DateTime]::UtcNow.AddHours(2)
    # The runner: the script's process (an id with another start time is not it).
    $runner = Get-Process -Id $GuardProcessId -ErrorAction SilentlyContinue
    if ($runner -and [string]$runner.StartTime.ToUniversalTime().Ticks -ne [string](Get-Item -LiteralPath $marker).GetValue('RunnerStart', '')) {
        $runner = $null
    }
    if ($runner) {
        $null = $runner.WaitForExit(7200000)
    }
    $outcome = [ordered]@{ finished = $false; group = $groupName; brought_online = 0; state = ''; error = '' }
    # MSCluster_ResourceGroup.State: 0 Online, 1 Offline, 2 Failed, 3 Partial Online, 4 Pending.
    $groupStates = @{ 0 = 'Online'; 1 = 'Offline'; 2 = 'Failed'; 3 = 'PartialOnline'; 4 = 'Pending' }
    # BringOnline again after a pause that doubles (from 2 s, at most 5 minutes), at
    # most 3 times (contract.ClusterGuardAttempts and friends): a role that will not
    # come online is not started again and again for 2 hours. Once its SQL Server
    # resource was seen Online, an Offline role was taken offline by someone (a DBA
    # repairing it): it is left so. The record is written at each turn.
    $attempts = 3
    $pause = 2
    $wasOnline = $false
    while ([DateTime]::UtcNow -lt $until) {
        try {
            $group = @(Get-CimInstance -Namespace 'root/MSCluster' -ClassName 'MSCluster_ResourceGroup' | Where-Object { [string]$_.Name -ceq $groupName })[0]
            $resources = @(Get-CimAssociatedInstance -InputObject $group -ResultClassName 'MSCluster_Resource')
            # MSCluster_Resource.State: 2 Online; 128 and above pending.
            if (@($resources | Where-Object { [int]$_.State -ge 128 }).Count -gt 0) {
                Start-Sleep -Seconds 1
                continue
            }
            $outcome.state = [string]$groupStates[[int]$group.State]
            $down = @($resources | Where-Object { ([string]$_.Type -ceq 'SQL Server' -or [string]$_.Type -ceq 'SQL Server Agent') -and [int]$_.State -ne 2 })
            if ([int]$group.State -eq 0 -and $down.Count -gt 0) {
                $outcome.state = 'PartialOnline' # the group, without its SQL Server or Agent
            }
            if ([int]$group.State -eq 0 -and $down.Count -eq 0) {
                $outcome.error = ''
                break
            }
            # MSCluster_Resource.State 3 is Offline: the cluster puts a resource that
            # fails into Failed (4), so an Offline one was taken offline by someone.
            if (@($resources | Where-Object { [string]$_.Type -ceq 'SQL Server' -and [int]$_.State -eq 2 }).Count -gt 0) {
                $wasOnline = $true # SQL Server came Online (its Agent, say, did not)
            }
            elseif ($wasOnline -and @($resources | Where-Object { [string]$_.Type -ceq 'SQL Server' -and [int]$_.State -eq 3 }).Count -gt 0) {
                $outcome.error = "the role '$groupName' was taken offline after it had come Online: someone else's action, left Offline"
                break
            }
            if ($outcome.brought_online -ge $attempts) {
                $outcome.error = "BringOnline did not bring the role '$groupName' online in $attempts attempts (it is $($outcome.state)): left as it is. $($outcome.error)"
                break
            }
            $outcome.brought_online++
            Set-ItemProperty -LiteralPath $marker -Name 'State' -Value (ConvertTo-Json -InputObject $outcome -Compress)
            $null = Invoke-CimMethod -InputObject $group -MethodName 'BringOnline' -Arguments @{ TimeOut = [uint32]60 }
            $outcome.error = ''
            $resources = @(Get-CimAssociatedInstance -InputObject $group -ResultClassName 'MSCluster_Resource')
            if (@($resources | Where-Object { [string]$_.Type -ceq 'SQL Server' -and [int]$_.State -eq 2 }).Count -gt 0) {
                $wasOnline = $true
            }
        }
        catch {
            $outcome.error = $_.Exception.Message
        }
        Set-ItemProperty -LiteralPath $marker -Name 'State' -Value (ConvertTo-Json -InputObject $outcome -Compress)
        Start-Sleep -Seconds $pause
        $pause = [Math]::Min(2 * $pause, 300)
    }
    $outcome.finished = $true
    Set-ItemProperty -LiteralPath $marker -Name 'State' -Value (ConvertTo-Json -InputObject $outcome -Compress)
}

# Starts the cluster guard for the instance's role and returns once its start record
# is seen; refuses (exit 3, cluster_error) with nothing taken offline when it cannot.
function Start-ClusterGuard {
    param([string] $InstanceName, [string] $GroupName)
    try {
        $guardFile = Write-RestartGuardFile -WorkerText $ClusterGuardWorker.ToString()
    }
    catch {
        Exit-WithError -Code 3 -ErrorName 'cluster_error' -Message "The cluster action's guard cannot be prepared on $($env:COMPUTERNAME): $($_.Exception.Message). Nothing was taken offline."
    }
    $token = [guid]::NewGuid().ToString('N')
    $markerPath = $ClusterGuardRoot + '\' + $InstanceName
    $null = New-Item -Path $markerPath -Force
    Set-ItemProperty -LiteralPath $markerPath -Name 'Token' -Value $token
    Set-ItemProperty -LiteralPath $markerPath -Name 'Group' -Value $GroupName
    Set-ItemProperty -LiteralPath $markerPath -Name 'RunnerStart' -Value ([string](Get-Process -Id $PID).StartTime.ToUniversalTime().Ticks)
    Set-ItemProperty -LiteralPath $markerPath -Name 'GuardProcessId' -Value 0 -Type DWord
    Set-ItemProperty -LiteralPath $markerPath -Name 'GuardStart' -Value ''
    Set-ItemProperty -LiteralPath $markerPath -Name 'GuardTask' -Value ''
    Set-ItemProperty -LiteralPath $markerPath -Name 'State' -Value (ConvertTo-Json -InputObject ([ordered]@{ finished = $false; group = $GroupName }) -Compress)
    $guardLoader = New-RestartGuardLoader -File $guardFile.path -Hash $guardFile.hash -Token $token -RunnerId $PID
    $guard = Start-RestartGuard -Arguments ('-NoProfile -NonInteractive -EncodedCommand ' + $guardLoader) -Instance ('cluster_' + $InstanceName) -Token $token -Marker $markerPath
    if (-not $guard.launcher) {
        Remove-Item -LiteralPath $markerPath -Recurse -Force
        Exit-WithError -Code 3 -ErrorName 'cluster_error' -Message "The cluster action's guard process could not be started on $($env:COMPUTERNAME): $($guard.why). Nothing was taken offline."
    }
}
