# Shared by read_cluster, cluster_move and cluster_restart: the failover cluster as
# the root\MSCluster WMI classes show it (design/cluster.md), never the
# FailoverClusters module, which is missing where the management tools were not
# installed. Names from the parameters are compared as data, never put into a WQL
# filter.

# ConvertTo-Int32: a cluster DWORD as a signed number. The classes declare some
# values uint32 whose "none" is -1 (0xFFFFFFFF: FailbackWindowStart/End,
# FailoverThreshold, State -1 Unknown), which [int] alone refuses.
function ConvertTo-Int32 {
    param($Value)
    if ($null -eq $Value) { return 0 }
    $n = [long]$Value
    if ($n -gt [int]::MaxValue) { $n = $n - 4294967296 }
    return [int]$n
}

# MSCluster_Node.State: 0 Up, 1 Down, 2 Paused, 3 Joining, -1 Unknown.
function ConvertTo-NodeState {
    param($State)
    switch (ConvertTo-Int32 -Value $State) {
        0 { return 'up' }
        1 { return 'down' }
        2 { return 'paused' }
        3 { return 'joining' }
    }
    return 'unknown'
}

# MSCluster_ResourceGroup.State: 0 Online, 1 Offline, 2 Failed, 3 PartialOnline, 4 Pending.
function ConvertTo-GroupState {
    param($State)
    switch (ConvertTo-Int32 -Value $State) {
        0 { return 'Online' }
        1 { return 'Offline' }
        2 { return 'Failed' }
        3 { return 'PartialOnline' }
        4 { return 'Pending' }
    }
    return 'Unknown'
}

# MSCluster_Resource.State: 1 Initializing, 2 Online, 3 Offline, 4 Failed, 128 Pending,
# 129 OnlinePending, 130 OfflinePending.
function ConvertTo-ResourceState {
    param($State)
    switch (ConvertTo-Int32 -Value $State) {
        1 { return 'Pending' }
        2 { return 'Online' }
        3 { return 'Offline' }
        4 { return 'Failed' }
        128 { return 'Pending' }
        129 { return 'OnlinePending' }
        130 { return 'OfflinePending' }
    }
    return 'Unknown'
}

function Test-ClusterNodeName {
    param([string] $Name)
    return ($Name -cmatch '^[A-Za-z0-9][A-Za-z0-9_-]{0,62}\z')
}

function Get-AssociatedName {
    param($InputObject, [string] $Association)
    $names = New-Object System.Collections.Generic.List[string]
    foreach ($node in @(Get-CimAssociatedInstance -InputObject $InputObject -Association $Association -ResultClassName 'MSCluster_Node')) {
        $names.Add([string]$node.Name)
    }
    return , $names.ToArray()
}

# Find-SqlRole: the group whose "SQL Server" resource serves the instance (private
# property InstanceName), with its resource objects. Ends the script with
# not_clustered when root\MSCluster does not answer or no such resource exists.
function Find-SqlRole {
    param([string] $InstanceName)
    try {
        $all = @(Get-CimInstance -Namespace 'root\MSCluster' -ClassName 'MSCluster_Resource')
    }
    catch {
        Exit-WithError -Code 3 -ErrorName 'not_clustered' -Message "root\MSCluster does not answer on $($env:COMPUTERNAME), so it is not a failover cluster node: $($_.Exception.Message)"
    }
    foreach ($resource in $all) {
        if ([string]$resource.Type -ceq 'SQL Server' -and [string]$resource.PrivateProperties.InstanceName -ieq $InstanceName) {
            $group = Get-CimAssociatedInstance -InputObject $resource -Association 'MSCluster_ResourceGroupToResource' -ResultClassName 'MSCluster_ResourceGroup'
            return [pscustomobject]@{ Group = $group; Sql = $resource }
        }
    }
    Exit-WithError -Code 3 -ErrorName 'not_clustered' -Message "No 'SQL Server' cluster resource serves instance $InstanceName on $($env:COMPUTERNAME)'s cluster: it is not a failover cluster instance."
}

# Get-RoleResource: the group's resources now, as contract.ClusterResource, and
# their objects.
function Get-RoleResource {
    param($Group)
    $out = New-Object System.Collections.Generic.List[object]
    foreach ($resource in @(Get-CimAssociatedInstance -InputObject $Group -Association 'MSCluster_ResourceGroupToResource' -ResultClassName 'MSCluster_Resource')) {
        $out.Add([ordered]@{
                name               = [string]$resource.Name
                type               = [string]$resource.Type
                state              = ConvertTo-ResourceState -State $resource.State
                possible_owners    = Get-AssociatedName -InputObject $resource -Association 'MSCluster_ResourceToPossibleOwner'
                pending_timeout_ms = ConvertTo-Int32 -Value $resource.PendingTimeout
                object             = $resource
            })
    }
    return , $out.ToArray()
}

# Get-ActionResult: where the role is now (contract.ClusterActionResult).
function Get-ActionResult {
    param([string] $GroupName, [string] $OwnerBefore, [string] $CallError)
    $group = Get-CimInstance -Namespace 'root\MSCluster' -ClassName 'MSCluster_ResourceGroup' | Where-Object { [string]$_.Name -ceq $GroupName } | Select-Object -First 1
    $resources = New-Object System.Collections.Generic.List[object]
    foreach ($resource in (Get-RoleResource -Group $group)) {
        $resource.Remove('object')
        $resources.Add($resource)
    }
    return [ordered]@{
        group        = $GroupName
        owner_before = $OwnerBefore
        owner_after  = [string]$group.OwnerNode
        state        = ConvertTo-GroupState -State $group.State
        resources    = $resources.ToArray()
        error        = $CallError
    }
}

# Wait-RoleSettled: re-reads the role until its group is Online (and every resource
# of a type in $Want is Online) or Failed, or the deadline passes.
function Wait-RoleSettled {
    param([string] $GroupName, [string] $OwnerBefore, [string] $CallError, [datetime] $Until, [string[]] $Want)
    while ($true) {
        $result = Get-ActionResult -GroupName $GroupName -OwnerBefore $OwnerBefore -CallError $CallError
        $waiting = @($result.resources | Where-Object { $Want -contains $_.type -and $_.state -ne 'Online' })
        if (($result.state -eq 'Online' -and $waiting.Count -eq 0) -or $result.state -eq 'Failed' -or [DateTime]::UtcNow -ge $Until) {
            return $result
        }
        Start-Sleep -Milliseconds 500
    }
}

# Assert-ClusterRequest: the instance name and timeout_s of cluster_move and
# cluster_restart, or the script ends with invalid_parameters. Returns the timeout.
function Assert-ClusterRequest {
    param([string] $InstanceName, $Timeout)
    if (-not (Test-SqlInstanceName -Name $InstanceName)) {
        Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "'$InstanceName' is not a SQL Server instance name."
    }
    $seconds = 0
    if (-not ([int]::TryParse([string]$Timeout, [ref]$seconds) -and $seconds -ge 1 -and $seconds -le 3600)) {
        Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message 'timeout_s must be a whole number of seconds between 1 and 3600.'
    }
    return $seconds
}
