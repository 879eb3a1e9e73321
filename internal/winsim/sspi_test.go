package winsim_test

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"testing"
	"time"

	mssql "github.com/microsoft/go-mssqldb"
	_ "github.com/microsoft/go-mssqldb/integratedauth/krb5" // go-mssqldb's Kerberos authenticator, "krb5"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/addc"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// Windows logons to the simulated SQL Server through go-mssqldb's own integrated
// authentication (its NTLM client, its krb5 authenticator), as a DBA's program
// would: the host's security package accepts them and maps them to Windows logins.

// sspiHost is one domain host whose instance has the Windows login CONTOSO\dba
// only; edit changes it further.
func sspiHost(t *testing.T, edit func(*host.HostConfig)) (*winsim.Sim, string) {
	t.Helper()
	hc := host.HostConfig{
		Name: "sql01", Address: "127.0.0.61", Domain: "CONTOSO",
		WinRM:     host.WinRMConfig{Users: []host.UserConfig{{Name: `CONTOSO\dba`, Password: "Dba-Pass-1"}}},
		Instances: []host.InstanceConfig{{Name: "MSSQLSERVER", Logins: []host.LoginConfig{{Name: `CONTOSO\dba`}}}},
	}
	if edit != nil {
		edit(&hc)
	}
	sim, err := winsim.Start(&winsim.Config{Hosts: []host.HostConfig{hc}}, winsim.Options{CertDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	return sim, sqlAddr(t, sim, "sql01", "MSSQLSERVER")
}

func loginAs(t *testing.T, u *url.URL) error {
	t.Helper()
	db, err := sql.Open("sqlserver", u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

func TestSQLNTLMLogon(t *testing.T) {
	_, addr := sspiHost(t, nil)
	q := "encrypt=disable"
	if err := loginAs(t, &url.URL{Scheme: "sqlserver", User: url.UserPassword(`CONTOSO\dba`, "Dba-Pass-1"), Host: addr, RawQuery: q}); err != nil {
		t.Fatalf("NTLM logon of CONTOSO\\dba, which has a Windows login: %v", err)
	}
	err := loginAs(t, &url.URL{Scheme: "sqlserver", User: url.UserPassword(`CONTOSO\dba`, "wrong"), Host: addr, RawQuery: q})
	var me mssql.Error
	if !errors.As(err, &me) || me.Number != 18452 {
		t.Errorf("NTLM logon with a wrong password: %v; want error 18452", err)
	}
}

// go-mssqldb's krb5 authenticator with a ticket from the AD DC for the host's SQL
// Server SPN (on its computer account, as SQL Server running as its virtual
// account registers it): the host takes CONTOSO\simdba from the ticket's PAC and
// maps it to its Windows login.
func TestSQLKerberosLogon(t *testing.T) {
	dc := simDC(t)
	kt := dc.HostKeytab(t, simHost, simSPN, simSQLSPN)
	sim, addr := sspiHost(t, func(hc *host.HostConfig) {
		hc.WinRM.Kerberos = &host.KerberosConfig{Realm: dc.Realm, Keytab: kt}
		hc.Instances[0].Logins = []host.LoginConfig{{Name: addc.NetBIOS + `\` + simUser}}
	})
	logon := func(spn string) error {
		q := url.Values{}
		q.Set("encrypt", "disable")
		q.Set("authenticator", "krb5")
		q.Set("krb5-configfile", dc.Krb5Conf)
		q.Set("krb5-realm", dc.Realm)
		q.Set("krb5-dnslookupkdc", "false")
		q.Set("serverspn", spn)
		return loginAs(t, &url.URL{Scheme: "sqlserver", User: url.UserPassword(simUser, simPass), Host: addr, RawQuery: q.Encode()})
	}
	if err := logon(simSQLSPN); err != nil {
		t.Fatalf("Kerberos logon for the host's SPN: %v", err)
	}
	st, err := sim.Stats("sql01")
	if err != nil || st.SQLKerberosLogons != 1 {
		t.Errorf("SQL Kerberos logons = %d (%v), want 1", st.SQLKerberosLogons, err)
	}
	// A ticket for another account's SPN: the host cannot decrypt it.
	var me mssql.Error
	if err := logon(otherSQLSPN); !errors.As(err, &me) || me.Number != 18452 {
		t.Errorf("Kerberos logon with a ticket for another account: %v; want error 18452", err)
	}
}
