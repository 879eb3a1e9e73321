# cluster_move: move the instance's role to another node through the cluster service
# (MSCluster_ResourceGroup.MoveToNewNode), then re-read it until the group is Online
# or Failed, or timeout_s has passed. The cluster finishes a move it accepted
# whatever happens to this process. Parameters: $Params.instance, $Params.group,
# $Params.target_node, $Params.timeout_s.
$instanceName = [string]$Params.instance
$groupName = [string]$Params.group
$target = [string]$Params.target_node
$timeout = Assert-ClusterRequest -InstanceName $instanceName -Timeout $Params.timeout_s
if (-not (Test-ClusterNodeName -Name $target)) {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "'$target' is not a cluster node name."
}
$until = [DateTime]::UtcNow.AddSeconds($timeout)
$role = Find-SqlRole -InstanceName $instanceName
$group = $role.Group
$before = [string]$group.OwnerNode
$refusal = ''
$possible = @((Get-RoleResource -Group $group) | ForEach-Object { , $_.possible_owners })
if ([string]$group.Name -cne $groupName) {
    $refusal = "instance $instanceName's role is '$($group.Name)', not '$groupName'"
}
elseif ($target -ieq $before) {
    $refusal = "the role '$groupName' is already on $target"
}
elseif ((ConvertTo-GroupState -State $group.State) -ne 'Online') {
    $refusal = "the role '$groupName' is $(ConvertTo-GroupState -State $group.State), not Online"
}
else {
    foreach ($owners in $possible) {
        if (-not ($owners -contains $target)) { $refusal = "$target is not a possible owner of every resource of '$groupName'" }
    }
}
if ($refusal) {
    Exit-WithError -Code 3 -ErrorName 'cluster_error' -Message "The cluster move was refused on $($env:COMPUTERNAME): $refusal. Nothing was moved."
}

# The guard first (cluster_guard.ps1): should this process end before the role is
# Online again, it brings the role online. Nothing is moved before it runs.
Start-ClusterGuard -InstanceName $instanceName -GroupName $groupName
$callError = ''
try {
    $null = Invoke-CimMethod -InputObject $group -MethodName 'MoveToNewNode' -Arguments @{ NodeName = $target; TimeOut = [uint32]$timeout }
}
catch {
    $callError = $_.Exception.Message
}
try {
    $result = Wait-RoleSettled -GroupName $groupName -OwnerBefore $before -CallError $callError -Until $until -Want @()
}
catch {
    Exit-WithError -Code 1 -ErrorName 'move_failed' -Message "The move of '$groupName' to $target ($callError) could not be followed on $($env:COMPUTERNAME): $($_.Exception.Message)"
}
if (-not $result.error -and $result.owner_after -ine $target) {
    $result.error = "the cluster left the role on $($result.owner_after), not on $target"
}
if (-not $result.error -and $result.state -ne 'Online') {
    $result.error = "the role is $($result.state) on $($result.owner_after) after $timeout s"
}
Write-Result -Value $result
