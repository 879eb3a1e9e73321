package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// The list resource of mssqlifi_instant_file_initialization at the protocol level
// (ListResource, as terraform query calls it), against the simulator.

// twoQueryHosts starts one simulator with two hosts: the first with the default
// instance and REPORTING (whose service SID is granted the right, in effect since a
// restart), the second with the default instance.
func twoQueryHosts(t *testing.T) []*accEnv {
	t.Helper()
	var hcs []host.HostConfig
	for i := range 2 {
		k := nextAddr.Add(1)
		hc := defaultHostConfig(fmt.Sprintf("sql%02d", k), fmt.Sprintf("127.0.0.%d", 10+k))
		if i == 0 {
			hc.Instances = append(hc.Instances, host.InstanceConfig{Name: "REPORTING",
				Logins: []host.LoginConfig{{Name: accSQLUser, Password: accSQLPass}}})
		}
		hcs = append(hcs, hc)
	}
	es := startHosts(t, hcs)
	if err := es[0].sim.Do(es[0].name, winsim.Action{Action: winsim.ActionGrantRight, Right: contract.RightManageVolume,
		SID: winsid.ServiceSID(`MSSQL$REPORTING`)}); err != nil {
		t.Fatal(err)
	}
	if err := es[0].sim.Do(es[0].name, winsim.Action{Action: winsim.ActionRestartService, Service: `MSSQL$REPORTING`}); err != nil {
		t.Fatal(err)
	}
	return es
}

// Every instance of both hosts, from one read of each host, each with the
// resource's identity and the display name HOST/INSTANCE; with include_resource,
// the resource as an import finds it (enabled: whether its service SID holds the
// right; the arguments' defaults).
func TestListResource_everyInstanceOfTheHosts(t *testing.T) {
	t.Parallel()
	es := twoQueryHosts(t)
	p := newProtoProvider(t, es[0], true)
	n0, n1 := len(es[0].operations()), len(es[1].operations())
	results := p.listIFI(map[string]any{"hosts": []any{es[0].addr, hostPort(es[1])}}, true)

	idType := p.ifiIdentityType(t)
	resType := p.schema.ResourceSchemas["mssqlifi_instant_file_initialization"].ValueType()
	var names []string
	for _, r := range results {
		if errs := protoErrors(r.Diagnostics); errs != "" {
			t.Fatalf("result %q: %s", r.DisplayName, errs)
		}
		names = append(names, r.DisplayName)
		id := decode(t, idType, r.Identity.IdentityData)
		var wantPort any // the provider's port: es[0]'s
		if id["host"] == es[1].addr {
			wantPort = int64(es[1].httpsPort)
		}
		if want := fmt.Sprintf("%s/%s", id["host"], id["instance"]); r.DisplayName != want || id["port"] != wantPort {
			t.Errorf("%s: identity %v, want host and instance of the display name, port %v", r.DisplayName, id, wantPort)
		}
		res := decode(t, resType, r.Resource)
		if res["port"] != wantPort {
			t.Errorf("%s: resource port %v, want %v", r.DisplayName, res["port"], wantPort)
		}
		wantEnabled := r.DisplayName == es[0].addr+"/REPORTING"
		if res["ifi_enabled"] != wantEnabled || res["restart_pending"] != false {
			t.Errorf("%s: ifi_enabled %v, restart_pending %v; want %t, false", r.DisplayName, res["ifi_enabled"], res["restart_pending"], wantEnabled)
		}
		if res["id"] != r.DisplayName || res["enabled"] != wantEnabled || res["grantee"] != "service_sid" || res["restart"] != "if_needed" ||
			res["planned_action"] != "none" || res["privilege_granted"] != wantEnabled || res["service_name"] == nil {
			t.Errorf("%s: resource id %v, enabled %v, grantee %v, restart %v, planned_action %v, privilege_granted %v, service_name %v; "+
				"want the display name, %t, service_sid, if_needed, none, %t, a name", r.DisplayName, res["id"], res["enabled"], res["grantee"],
				res["restart"], res["planned_action"], res["privilege_granted"], res["service_name"], wantEnabled, wantEnabled)
		}
	}
	want := []string{es[0].addr + "/MSSQLSERVER", es[0].addr + "/REPORTING", es[1].addr + "/MSSQLSERVER"}
	if !slices.Equal(names, want) {
		t.Errorf("results %v, want %v", names, want)
	}
	for i, ops := range [][]string{es[0].opsSince(n0), es[1].opsSince(n1)} {
		if got := countOp(ops, contract.OpReadHost); got != 1 {
			t.Errorf("host %d: operations %v, want one read_host", i, ops)
		}
	}

	// A host that is not HOST or HOST:PORT is refused, naming it, before any host is read.
	bad := p.listIFI(map[string]any{"hosts": []any{es[1].addr, "sql01:http"}}, true)
	if len(bad) != 1 || !strings.Contains(protoErrors(bad[0].Diagnostics), `Invalid host: hosts[1] = "sql01:http" is not HOST, HOST:PORT`) {
		t.Errorf("a bad host: results %+v, want one error naming hosts[1]", bad)
	}

	// Without include_resource: the identities alone.
	for _, r := range p.listIFI(map[string]any{"hosts": []any{es[1].addr}, "port": es[1].httpsPort}, false) {
		if r.Resource != nil || r.Identity == nil || r.DisplayName != es[1].addr+"/MSSQLSERVER" {
			t.Errorf("result %q: resource %v, identity %v; want no resource, an identity", r.DisplayName, r.Resource, r.Identity)
		}
	}
}

// ifiIdentityType is the type of mssqlifi_instant_file_initialization's identity.
func (p *protoProvider) ifiIdentityType(t *testing.T) tftypes.Type {
	t.Helper()
	const typeName = "mssqlifi_instant_file_initialization"
	resp, err := p.s.GetResourceIdentitySchemas(context.Background(), &tfprotov6.GetResourceIdentitySchemasRequest{})
	if err != nil || resp.IdentitySchemas[typeName] == nil {
		t.Fatalf("GetResourceIdentitySchemas: %v, %s has none", err, typeName)
	}
	return resp.IdentitySchemas[typeName].ValueType()
}

// hostPort is e's host with its WinRM HTTPS port, HOST:PORT.
func hostPort(e *accEnv) string { return fmt.Sprintf("%s:%d", e.addr, e.httpsPort) }
