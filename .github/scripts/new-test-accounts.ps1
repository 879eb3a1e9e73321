# The accounts the suite logs on with, each with a random password masked in the log
# and handed to later steps through $GITHUB_ENV:
# - a local user in Administrators for WinRM (MSSQLIFI_WINRM_USERNAME/_PASSWORD): the
#   provider's operations need an administrator's full token (docs/guides/
#   first-real-host.md, "The WinRM user"); a local account other than the built-in
#   Administrator gets it over the network only with LocalAccountTokenFilterPolicy 1
#   (set-token-filter.ps1);
# - a SQL login with VIEW SERVER STATE and nothing else (MSSQLIFI_SQL_USERNAME/
#   _PASSWORD): what the provider needs to read sys.dm_server_services;
# - a SQL login in dbcreator (MSSQLIFI_ACC_SEED_SQL_USERNAME/_PASSWORD) for stage 5's
#   CREATE DATABASE and DROP DATABASE of its own database.
# sa, which Setup enabled with a random password, is disabled.
[CmdletBinding()]
param(
    [Parameter(Mandatory = $true)][string] $Instance,
    [string] $WinRMUser = 'mssqlifi-ci',
    [string] $ViewLogin = 'mssqlifi_view',
    [string] $SeedLogin = 'mssqlifi_seed'
)
. "$PSScriptRoot\ci-common.ps1"

$winrmPassword = New-TestPassword
$secure = ConvertTo-SecureString -String $winrmPassword -AsPlainText -Force
New-LocalUser -Name $WinRMUser -Password $secure -PasswordNeverExpires -AccountNeverExpires -Description 'mssqlifi real-host CI: WinRM user' | Out-Null
Add-LocalGroupMember -SID 'S-1-5-32-544' -Member $WinRMUser
# The bare name: NTLM with no domain logs on to the host's own accounts, and the
# suite's preflight recognises a local account by it even when the logon fails.
Set-JobEnv -Name 'MSSQLIFI_WINRM_USERNAME' -Value $WinRMUser
Set-JobEnv -Name 'MSSQLIFI_WINRM_PASSWORD' -Value $winrmPassword

# CREATE LOGIN takes no parameter for the password: the generated one is letters and
# digits only, so it needs no escaping.
$viewPassword = New-TestPassword
$seedPassword = New-TestPassword
Invoke-LocalSql -Instance $Instance -Query @"
CREATE LOGIN [$ViewLogin] WITH PASSWORD = N'$viewPassword', CHECK_POLICY = ON;
GRANT VIEW SERVER STATE TO [$ViewLogin];
CREATE LOGIN [$SeedLogin] WITH PASSWORD = N'$seedPassword', CHECK_POLICY = ON;
ALTER SERVER ROLE [dbcreator] ADD MEMBER [$SeedLogin];
ALTER LOGIN [sa] DISABLE;
"@ -NonQuery
Set-JobEnv -Name 'MSSQLIFI_SQL_USERNAME' -Value $ViewLogin
Set-JobEnv -Name 'MSSQLIFI_SQL_PASSWORD' -Value $viewPassword
Set-JobEnv -Name 'MSSQLIFI_ACC_SEED_SQL_USERNAME' -Value $SeedLogin
Set-JobEnv -Name 'MSSQLIFI_ACC_SEED_SQL_PASSWORD' -Value $seedPassword

# What the least-privilege login holds, as SQL Server lists it (server scope).
$held = Invoke-LocalSql -Instance $Instance -Query "EXECUTE AS LOGIN = N'$ViewLogin'; SELECT permission_name FROM sys.fn_my_permissions(NULL, 'SERVER') ORDER BY permission_name; REVERT;"
$permissions = @($held.Rows | ForEach-Object { $_.permission_name }) -join ', '
Add-JobSummary -Lines @(
    '### Accounts',
    '',
    "- WinRM: local user $WinRMUser in Administrators (NTLM).",
    "- SQL: login $ViewLogin with VIEW SERVER STATE; its server permissions: $permissions.",
    "- SQL: login $SeedLogin in dbcreator, for stage 5 only. sa disabled.",
    ''
)
