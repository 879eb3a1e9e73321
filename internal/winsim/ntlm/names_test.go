package ntlm

import (
	"fmt"
	"slices"
	"testing"

	azure "github.com/Azure/go-ntlmssp"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ntlmauth"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/utf16le"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/recordings"
)

// challengeAVPairs is the target information of a CHALLENGE_MESSAGE (MS-NLMP
// 2.2.1.2, TargetInfoFields at offset 40): each AV_PAIR's id in order (without
// MsvAvEOL) and the names' values.
func challengeAVPairs(t *testing.T, chal []byte) (ids []uint16, names map[uint16]string) {
	t.Helper()
	info, err := ntlmauth.Field(chal, 40)
	if err != nil {
		t.Fatal(err)
	}
	pairs, err := ntlmauth.ParseAVPairs(info)
	if err != nil {
		t.Fatal(err)
	}
	names = map[uint16]string{}
	for _, p := range pairs {
		if p.ID == avEOL {
			continue
		}
		ids = append(ids, p.ID)
		if p.ID >= avNbComputerName && p.ID <= avDNSTreeName {
			v, err := utf16le.Decode(p.Value)
			if err != nil {
				t.Fatal(err)
			}
			names[p.ID] = v
		}
	}
	return ids, names
}

// A domain member's CHALLENGE announces the pairs a real domain controller's does
// (pyspnego's recorded CHALLENGE of DC01.domain.local: NetBIOS domain and computer,
// DNS domain, computer and tree, timestamp, in that order), with the host's FQDN in
// its domain's DNS name.
func TestChallengeNamesAsADomainMember(t *testing.T) {
	recorded := []byte(recordings.Read(t, "pyspnego/ntlm_challenge"))
	wantIDs, recNames := challengeAVPairs(t, recorded)
	if recNames[avDNSComputerName] != "DC01.domain.local" || recNames[avDNSTreeName] != "domain.local" {
		t.Fatalf("the recording's names are %v: not the DC's this test was written for", recNames)
	}
	srv := &Server{ComputerName: "SQLAD", DomainName: "CONTOSO", DNSDomainName: "contoso.test",
		Lookup: func(string, string) (string, bool) { return "", false }}
	neg, err := azure.NewNegotiateMessage("", "")
	if err != nil {
		t.Fatal(err)
	}
	chal, err := srv.NewSession().Challenge(neg)
	if err != nil {
		t.Fatal(err)
	}
	ids, names := challengeAVPairs(t, chal)
	if !slices.Equal(ids, wantIDs) {
		t.Errorf("AV_PAIR ids = %v, a real domain controller's are %v", ids, wantIDs)
	}
	want := map[uint16]string{avNbDomainName: "CONTOSO", avNbComputerName: "SQLAD", avDNSDomainName: "contoso.test",
		avDNSComputerName: "SQLAD.contoso.test", avDNSTreeName: "contoso.test"}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("names = %v, want %v", names, want)
	}
}

// A workgroup host is its own domain and announces no forest.
func TestChallengeNamesOfAWorkgroupHost(t *testing.T) {
	neg, _ := azure.NewNegotiateMessage("", "")
	chal, err := testServer().NewSession().Challenge(neg)
	if err != nil {
		t.Fatal(err)
	}
	ids, names := challengeAVPairs(t, chal)
	if slices.Contains(ids, avDNSTreeName) {
		t.Errorf("a workgroup host announces MsvAvDnsTreeName %q", names[avDNSTreeName])
	}
	want := map[uint16]string{avNbDomainName: "SQL01", avNbComputerName: "SQL01", avDNSDomainName: "sql01", avDNSComputerName: "sql01"}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("names = %v, want %v", names, want)
	}
}
