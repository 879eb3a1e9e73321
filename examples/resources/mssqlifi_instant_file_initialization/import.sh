# Import an instance's IFI setting by HOST/INSTANCE.
terraform import mssqlifi_instant_file_initialization.sql01 sql01.contoso.com/MSSQLSERVER

# A named instance:
terraform import mssqlifi_instant_file_initialization.sql02_reporting sql02.contoso.com/REPORTING
