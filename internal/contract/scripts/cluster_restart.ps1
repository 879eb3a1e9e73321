# cluster_restart: take the instance's SQL Server resource offline
# (MSCluster_Resource.TakeOffline; SQL Server Agent's resource, which depends on it,
# goes with it), bring the whole group online (MSCluster_ResourceGroup.BringOnline,
# which brings Agent back too) and re-read it until the group and Agent are Online
# or timeout_s has passed. Parameters: $Params.instance, $Params.timeout_s.
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
try {
    $null = Invoke-CimMethod -InputObject $role.Sql -MethodName 'TakeOffline' -Arguments @{ TimeOut = [uint32]$timeout }
}
catch {
    $callError = "TakeOffline: $($_.Exception.Message)"
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
