# Import an instance's IFI setting by HOST/INSTANCE (the WinRM port of the provider,
# or its default).
terraform import mssqlifi_instant_file_initialization.sql01 sql01.contoso.com/MSSQLSERVER

# A named instance:
terraform import mssqlifi_instant_file_initialization.sql02_reporting sql02.contoso.com/REPORTING

# A host whose WinRM listens on another port: HOST:PORT/INSTANCE, and for an IPv6
# address [ADDRESS]:PORT/INSTANCE.
terraform import mssqlifi_instant_file_initialization.sql05_vault sql05.contoso.com:15986/VAULT
terraform import mssqlifi_instant_file_initialization.sql06 '[2001:db8::10]:5986/MSSQLSERVER'
