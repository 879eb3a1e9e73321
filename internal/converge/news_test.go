package converge

import (
	"slices"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

// A refresh says a standing condition when it first appears or changes, and again
// when it returns after it ended; other warnings always. An update's apply says
// only what its plan's refresh did not; a create's apply says no standing
// condition (its plan read the host moments ago) and records them as said.
func TestMemoNews(t *testing.T) {
	tde := ifi.Warning{Code: ifi.WarnTDE, Summary: "TDE", Detail: "Payroll"}
	tde2 := ifi.Warning{Code: ifi.WarnTDE, Summary: "TDE", Detail: "Payroll, HR"}
	recovered := ifi.Warning{Code: WarnRecovered, Summary: "recovered"}
	m := &Memo{}
	steps := []struct {
		ws   []ifi.Warning
		want []string
	}{
		{[]ifi.Warning{tde, recovered}, []string{ifi.WarnTDE, WarnRecovered}},
		{[]ifi.Warning{tde, recovered}, []string{WarnRecovered}},
		{[]ifi.Warning{tde2}, []string{ifi.WarnTDE}},
		{nil, nil},
		{[]ifi.Warning{tde2}, []string{ifi.WarnTDE}},
	}
	for i, st := range steps {
		if got := codes(m.news(st.ws)); !slices.Equal(got, st.want) {
			t.Errorf("refresh %d: said %v, want %v", i+1, got, st.want)
		}
	}
	if got := codes(m.told([]ifi.Warning{tde2, recovered}, false)); !slices.Equal(got, []string{WarnRecovered}) {
		t.Errorf("update's apply: said %v, want only what is not standing and already said", got)
	}
	c := &Memo{}
	pending := ifi.Warning{Code: ifi.WarnRestartPending, Summary: "A restart of SQL Server is pending"}
	if got := codes(c.told([]ifi.Warning{tde, pending, recovered}, true)); !slices.Equal(got, []string{ifi.WarnRestartPending, WarnRecovered}) {
		t.Errorf("create's apply: said %v, want what the change brought about and what is not standing, not the TDE its plan said", got)
	}
	if got := codes(c.news([]ifi.Warning{tde, pending})); len(got) != 0 {
		t.Errorf("the refresh after a create: said %v, want nothing (the create's plan said it)", got)
	}
}
