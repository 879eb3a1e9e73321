# cluster_restart: take the instance's SQL Server resource offline
# (MSCluster_Resource.TakeOffline; SQL Server Agent's resource, which depends on it,
# goes with it), bring the whole group online (MSCluster_ResourceGroup.BringOnline,
# which brings Agent back too) and re-read it until the group and Agent are Online
# or timeout_s has passed. The offline has at most half the time left; the other
# half is BringOnline's. An offline still pending at half time is reported as such,
# BringOnline never called on it, and the guard brings the role online once the
# offline ends. Parameters: $Params.instance, $Params.timeout_s.
$instanceName = [string]$Params.instance
$timeout = Assert-ClusterRequest -InstanceName $instanceName -Timeout $Params.timeout_s
$until = [DateTime]::UtcNow.AddSeconds($timeout)
$role = Find-SqlRole -InstanceName $instanceName
$group = $role.Group
$groupName = [string]$group.Name
$owner = [string]$group.OwnerNode
if ((ConvertTo-GroupState -State $group.State) -ne 'Online') {
    Exit-WithError -Code 3 -ErrorName 'cluster_error' -Message "The role '$groupName' is $(ConvertTo-GroupState -State $group.State) on $owner, not Online; nothing was taken offline."
}

# The guard first (cluster_guard.ps1): should this process end before the role is
# Online again, it brings the role online. Nothing is taken offline before it runs.
Start-ClusterGuard -InstanceName $instanceName -GroupName $groupName
$callError = ''
# TakeOffline waits at most half the time left: a slow offline must not leave
# BringOnline a second and a false "failed" report. Its TimeOut bounds only the
# call's wait (mscluster-resource-takeoffline); the offline goes on.
$half = [int][Math]::Max(1, [Math]::Floor(($until - [DateTime]::UtcNow).TotalSeconds / 2))
$offlineUntil = [DateTime]::UtcNow.AddSeconds($half)
try {
    $null = Invoke-CimMethod -InputObject $role.Sql -MethodName 'TakeOffline' -Arguments @{ TimeOut = [uint32]$half }
}
catch {
    $callError = "TakeOffline: $($_.Exception.Message)"
}
# The offline's end (SQL Server's resource Offline or Failed and no resource of the
# role Pending: MSCluster_Resource.State 1, 128-130), awaited at most until half time;
# a call that failed with SQL Server still Online took nothing offline.
$pending = @()
try {
    while ($true) {
        $now = @(Get-RoleResource -Group $group)
        $pending = @($now | Where-Object { $_.state -eq 'Pending' -or $_.state -eq 'OfflinePending' -or $_.state -eq 'OnlinePending' } | ForEach-Object { "$($_.name) is $($_.state)" })
        $sqlOnline = @($now | Where-Object { $_.type -ceq 'SQL Server' -and $_.state -eq 'Online' }).Count -gt 0
        if (($pending.Count -eq 0 -and ($callError -or -not $sqlOnline)) -or [DateTime]::UtcNow -ge $offlineUntil) {
            break
        }
        Start-Sleep -Milliseconds 500
    }
    if ($pending.Count -eq 0 -and $callError -and @($now | Where-Object { $_.type -ceq 'SQL Server' -and $_.state -eq 'Offline' }).Count -gt 0) {
        $callError = '' # the call's wait ended first (ERROR_IO_PENDING); the offline has ended since
    }
    if ($pending.Count -gt 0) {
        $result = Get-ActionResult -GroupName $groupName -OwnerBefore $owner -CallError ''
    }
}
catch {
    Exit-WithError -Code 1 -ErrorName 'move_failed' -Message "The restart of '$groupName' ($callError) could not be followed on $($env:COMPUTERNAME): $($_.Exception.Message). The cluster guard brings the role online should it stay offline."
}
if ($pending.Count -gt 0) {
    # The cluster runs the offline to its end; a BringOnline now would be refused or
    # left pending. The guard, once this process ends, waits for the offline's end
    # and brings the role online.
    $result.error = "the offline of SQL Server did not finish in $half s ($($pending -join ', ')): BringOnline was not called; the cluster guard brings the role online once the offline ends$(if ($callError) { '. ' + $callError })"
    Write-Result -Value $result
}
# Online again whatever the offline did: no failure of ours may leave SQL Server offline.
$left = [int][Math]::Max(1, ($until - [DateTime]::UtcNow).TotalSeconds)
try {
    $null = Invoke-CimMethod -InputObject $group -MethodName 'BringOnline' -Arguments @{ TimeOut = [uint32]$left }
}
catch {
    $callError = (@($callError, "BringOnline: $($_.Exception.Message)") | Where-Object { $_ }) -join '; '
}
try {
    $result = Wait-RoleSettled -GroupName $groupName -OwnerBefore $owner -CallError $callError -Until $until -Want @('SQL Server', 'SQL Server Agent')
}
catch {
    Exit-WithError -Code 1 -ErrorName 'move_failed' -Message "The restart of '$groupName' ($callError) could not be followed on $($env:COMPUTERNAME): $($_.Exception.Message)"
}
$down = @($result.resources | Where-Object { ($_.type -ceq 'SQL Server' -or $_.type -ceq 'SQL Server Agent') -and $_.state -ne 'Online' } | ForEach-Object { "$($_.name) is $($_.state)" })
if (-not $result.error -and ($result.state -ne 'Online' -or $down.Count -gt 0)) {
    $result.error = "after $timeout s the role is $($result.state) on $($result.owner_after)$(if ($down.Count -gt 0) { ': ' + ($down -join ', ') })"
}
Write-Result -Value $result
