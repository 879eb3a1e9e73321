package winsid

import "testing"

// Known values from Windows (design/windows-behaviour.md#service-sids), checked
// against `sc.exe showsid` output.
func TestServiceSIDKnownValues(t *testing.T) {
	cases := map[string]string{
		"MSSQLSERVER":      "S-1-5-80-3880718306-3832830129-1677859214-2598158968-1052248003",
		"TrustedInstaller": "S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464",
		"SQLSERVERAGENT":   "S-1-5-80-344959196-2060754871-2302487193-2804545603-1466107430",
		"MSSQL$SQLEXPRESS": "S-1-5-80-3880006512-4290199581-1648723128-3569869737-3631323133",
	}
	for name, want := range cases {
		if got := ServiceSID(name); got != want {
			t.Errorf("ServiceSID(%q) = %s, want %s", name, got, want)
		}
	}
}

func TestServiceSIDIsCaseInsensitive(t *testing.T) {
	if ServiceSID("mssqlserver") != ServiceSID("MSSQLSERVER") {
		t.Fatal("service SIDs must be computed from the upper-cased name")
	}
}

func TestWellKnownAccountSID(t *testing.T) {
	cases := []struct {
		account, sid string
		ok           bool
	}{
		{"LocalSystem", LocalSystem, true},
		{`NT AUTHORITY\SYSTEM`, LocalSystem, true},
		{`NT AUTHORITY\NetworkService`, NetworkService, true},
		{`NT Service\MSSQLSERVER`, "S-1-5-80-3880718306-3832830129-1677859214-2598158968-1052248003", true},
		{`CONTOSO\sqlsvc`, "", false},
		{`NT SERVICE\`, "", false},
	}
	for _, c := range cases {
		sid, ok := WellKnownAccountSID(c.account)
		if sid != c.sid || ok != c.ok {
			t.Errorf("WellKnownAccountSID(%q) = %q,%v want %q,%v", c.account, sid, ok, c.sid, c.ok)
		}
	}
}
