# read_cluster: the failover cluster as root\MSCluster shows it from this node, and
# the role of one SQL Server instance (Find-SqlRole, cluster_common.ps1). Reads only.
# Parameters: $Params.instance.
$instanceName = [string]$Params.instance
if (-not (Test-SqlInstanceName -Name $instanceName)) {
    Exit-WithError -Code 2 -ErrorName 'invalid_parameters' -Message "'$instanceName' is not a SQL Server instance name."
}
$role = Find-SqlRole -InstanceName $instanceName
$group = $role.Group

$nodes = New-Object System.Collections.Generic.List[object]
foreach ($node in @(Get-CimInstance -Namespace 'root\MSCluster' -ClassName 'MSCluster_Node')) {
    $nodes.Add([ordered]@{ name = [string]$node.Name; state = ConvertTo-NodeState -State $node.State })
}

# Possible owners of the role: the intersection over its resources.
$resources = New-Object System.Collections.Generic.List[object]
$possible = $null
$virtualName = [string]$role.Sql.PrivateProperties.VirtualServerName
foreach ($resource in (Get-RoleResource -Group $group)) {
    if ($resource.type -ceq 'Network Name' -and $resource.object.PrivateProperties.DnsName) {
        $virtualName = [string]$resource.object.PrivateProperties.DnsName
    }
    $owners = $resource.possible_owners
    if ($null -eq $possible) { $possible = $owners } else { $possible = @($possible | Where-Object { $owners -contains $_ }) }
    $resource.Remove('object')
    $resources.Add($resource)
}
if ($null -eq $possible) { $possible = @() }

# What the guard of the last cluster action started from this node recorded
# (cluster_guard.ps1): the follow-up read after a lost connection reports it. A
# record of another role, or one that does not parse, is left out.
$guard = $null
$markerPath = 'HKLM:\SOFTWARE\mssqlifi\Cluster\' + $instanceName
if (Test-Path -LiteralPath $markerPath) {
    $recorded = [string](Get-Item -LiteralPath $markerPath).GetValue('State', '')
    $parsed = $null
    try {
        $parsed = ConvertFrom-Json -InputObject $recorded
    }
    catch {
        $parsed = $null
    }
    if ($null -ne $parsed -and [string]$parsed.group -ceq [string]$group.Name) {
        $guard = [ordered]@{
            finished       = [bool]$parsed.finished
            group          = [string]$parsed.group
            brought_online = [int]$parsed.brought_online
            state          = [string]$parsed.state
            error          = [string]$parsed.error
        }
    }
}

Write-Result -Value ([ordered]@{
        cluster         = [string](Get-CimInstance -Namespace 'root\MSCluster' -ClassName 'MSCluster_Cluster' | Select-Object -First 1).Name
        node            = [string]$env:COMPUTERNAME
        nodes           = $nodes.ToArray()
        group           = [ordered]@{
            name                  = [string]$group.Name
            owner_node            = [string]$group.OwnerNode
            state                 = ConvertTo-GroupState -State $group.State
            preferred_owners      = Get-AssociatedName -InputObject $group -Association 'MSCluster_ResourceGroupToPreferredNode'
            auto_failback_type    = (ConvertTo-Int32 -Value $group.AutoFailbackType)
            failback_window_start = (ConvertTo-Int32 -Value $group.FailbackWindowStart)
            failback_window_end   = (ConvertTo-Int32 -Value $group.FailbackWindowEnd)
            failover_threshold    = (ConvertTo-Int32 -Value $group.FailoverThreshold)
            failover_period_hours = (ConvertTo-Int32 -Value $group.FailoverPeriod)
        }
        resources       = $resources.ToArray()
        possible_owners = [string[]]@($possible)
        virtual_name    = $virtualName
        guard           = $guard
    })
