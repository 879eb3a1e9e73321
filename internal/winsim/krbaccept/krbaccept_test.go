package krbaccept_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/addc"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/krbaccept"
)

func TestMain(m *testing.M) { os.Exit(addc.Main(m)) }

// pacAccounts creates the test's accounts once per DC (a run with -count shares it).
var pacAccounts sync.Once

// A ticket from Active Directory is accepted as the account its PAC names, with
// the user's SID and groups, whatever its client name: here the UPN
// pac.user@corp.example of the account pacuser, sent by kinit -E without
// canonicalization, so that the ticket's client name is the UPN.
func TestVerifyTakesTheAccountFromThePAC(t *testing.T) {
	dc := addc.Shared(t)
	pacAccounts.Do(func() {
		dc.AddUser(t, "pacuser", "Pac-User-Secret-1")
		dc.SetUPN(t, "pacuser", "pac.user@"+addc.UPNSuffix)
		dc.AddComputer(t, "SQL02")
	})
	const spn = "HTTP/sql02.contoso.test"
	kt, err := keytab.Load(dc.Keytab(t, "SQL02$"))
	if err != nil {
		t.Fatal(err)
	}
	// The keytab holds the account's keys under SQL02$; the host's service keys are
	// the same keys under its SPNs.
	for i := range kt.Entries {
		kt.Entries[i].Principal.Components = strings.Split(spn, "/")
	}
	cc := dc.Kinit(t, "pac.user@"+addc.UPNSuffix, "Pac-User-Secret-1", true)
	c, err := krb.New(krb.Config{CCache: strings.TrimPrefix(cc, "FILE:"), Krb5Conf: dc.Krb5Conf})
	if err != nil {
		t.Fatal(err)
	}
	_, raw, err := c.InitSecContext(context.Background(), spn, krb.SPNEGO, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := krbaccept.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	a := &krbaccept.Acceptor{Keytab: kt, Realm: addc.Realm}
	logon, refusal := a.Verify(tok, types.HostAddress{})
	if refusal != nil {
		t.Fatalf("Verify refused: %v", refusal)
	}
	if logon.User != "pac.user@"+addc.UPNSuffix {
		t.Errorf("client name %q; the test wants a ticket whose client name is the UPN", logon.User)
	}
	if p := logon.PAC; p == nil || p.Account != "pacuser" || p.Domain != addc.NetBIOS || !strings.HasPrefix(p.SID, "S-1-5-21-") ||
		!slices.ContainsFunc(p.Groups, func(g string) bool { return strings.HasSuffix(g, "-513") }) {
		t.Fatalf("PAC logon = %+v; want pacuser of %s with its S-1-5-21 SID and Domain Users (RID 513)", logon.PAC, addc.NetBIOS)
	}
	if got := logon.Name("OTHER"); got != addc.NetBIOS+`\pacuser` {
		t.Errorf("Name = %q, want %s\\pacuser (the PAC's account, not the client name)", got, addc.NetBIOS)
	}
}
