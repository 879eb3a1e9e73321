package converge

import (
	"context"
	"reflect"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
)

// A list resource's result is the import of its instance: ImportHost reads every
// instance of the host from one read_host, and each result is what Import of that
// instance alone (another run, its own read) returns: enabled adopted from the host,
// the arguments' defaults, planned_action none, the same assessment.
func TestImportHostIsTheImportOfEachInstance(t *testing.T) {
	t.Parallel()
	names := []string{"MSSQLSERVER", "REPORTING"}
	h, e, _ := newShelf(names...)
	h.granted(svcSID) // MSSQLSERVER's service SID holds the right; REPORTING's does not
	listed, err := NewSession(e).ImportHost(context.Background(), Request{Target: Target{Host: "sql01.example.com"}})
	if err != nil {
		t.Fatalf("ImportHost: %v", err)
	}
	if hr, ir := h.counts(); hr != 1 || ir != 0 {
		t.Errorf("listing the host sent %d read_host and %d read_instance; want 1 and 0", hr, ir)
	}
	if len(listed) != len(names) {
		t.Fatalf("%d results, want %d", len(listed), len(names))
	}
	for i, hi := range listed {
		if hi.Instance != names[i] {
			t.Errorf("result %d is %s, want %s", i, hi.Instance, names[i])
		}
		ih, ie, _ := newShelf(names...)
		ih.granted(svcSID)
		imported, err := NewSession(ie).Import(context.Background(), Request{Target: Target{Host: "sql01.example.com", Instance: hi.Instance}})
		if err != nil {
			t.Fatalf("Import %s: %v", hi.Instance, err)
		}
		got, want := hi.Result, imported
		if got.Enabled != want.Enabled || got.Action != want.Action || got.Desired != want.Desired || !reflect.DeepEqual(got.LockPages, want.LockPages) ||
			!reflect.DeepEqual(got.Assessment, want.Assessment) || got.Clustered() != want.Clustered() {
			t.Errorf("%s listed as enabled %v, action %q, desired %+v, lock pages %v, assessment %+v;\nimported as %v, %q, %+v, %v, %+v",
				hi.Instance, got.Enabled, got.Action, got.Desired, got.LockPages, got.Assessment,
				want.Enabled, want.Action, want.Desired, want.LockPages, want.Assessment)
		}
		wantEnabled := hi.Instance == contract.DefaultInstance
		if got.Enabled != wantEnabled || got.Action != ifi.ActionNone || got.Desired != ImportDefaults {
			t.Errorf("%s: enabled %v, action %q, desired %+v; want %v (what the host has), none, the arguments' defaults",
				hi.Instance, got.Enabled, got.Action, got.Desired, wantEnabled)
		}
	}
}

// The target of an instance as a configuration names it: the default instance
// when the name is unset, the replica addresses as the engine keeps them.
func TestInstanceTarget(t *testing.T) {
	t.Parallel()
	tg := InstanceTarget("sql01", "", 5986, 0, map[string]string{"SQL02": "sql02.example.com:1433"})
	if tg.Host != "sql01" || tg.Instance != contract.DefaultInstance || tg.Port != 5986 || tg.SQLPort != 0 {
		t.Errorf("InstanceTarget = %+v, want sql01's default instance on WinRM port 5986", tg)
	}
	if !reflect.DeepEqual(tg.ReplicaAddresses, NewReplicaAddresses(map[string]string{"SQL02": "sql02.example.com:1433"})) {
		t.Errorf("replica addresses %+v", tg.ReplicaAddresses)
	}
	if tg := InstanceTarget("sql01", "REPORTING", 0, 1500, nil); tg.Instance != "REPORTING" || tg.SQLPort != 1500 {
		t.Errorf("InstanceTarget = %+v, want REPORTING at SQL port 1500", tg)
	}
}
