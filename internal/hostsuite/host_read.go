package hostsuite

import (
	"context"
	"encoding/json"
	"reflect"
	"sort"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// hostRead runs read_host (every instance of the host in one powershell.exe, the
// read the provider shares between a run's operations on a host) and checks that
// its report of the tested instance is read_instance's, r: on a real host this is
// what proves the one process reads what the per-instance read does
// (design/winrm-stdin-and-cost-model.md, "One read per host per run"). Reads only.
func (s *Suite) hostRead(ctx context.Context, r *contract.ReadInstanceResult) {
	hr, ok := s.host.(contract.HostReader)
	if !ok {
		s.p.fail("host read", "this host's client cannot run read_host")
		return
	}
	res, err := hr.ReadHost(ctx, contract.ReadHostParams{Right: contract.RightManageVolume})
	if err != nil {
		s.p.fail("host read", "read_host failed where read_instance did not: %v. The provider then reads each instance alone (one powershell.exe per instance); report this with the transcript", err)
		return
	}
	var names []string
	var mine *contract.ReadInstanceResult
	for i := range res.Instances {
		names = append(names, res.Instances[i].Instance)
		if strings.EqualFold(res.Instances[i].Instance, r.Instance) {
			mine = &res.Instances[i]
		}
	}
	if mine == nil {
		s.p.fail("host read", "read_host reported %s (installed: %s) but not %s", strings.Join(names, ", "),
			strings.Join(res.InstalledInstances, ", "), r.Instance)
		return
	}
	if diff := reportDiff(r, mine); len(diff) > 0 {
		s.p.fail("host read", "read_host's report of %s differs from read_instance's in %s (the Engine may have restarted in between: run the suite again)",
			r.Instance, strings.Join(diff, ", "))
		return
	}
	s.p.pass("host read", "read_host reported %d instance(s) in one powershell.exe (%s); its report of %s is read_instance's",
		len(res.Instances), strings.Join(names, ", "), r.Instance)
}

// reportDiff names the fields (as the contract's JSON names them) in which two
// reports of one instance differ.
func reportDiff(a, b *contract.ReadInstanceResult) []string {
	fields := func(r *contract.ReadInstanceResult) map[string]any {
		m := map[string]any{}
		if raw, err := json.Marshal(r); err == nil {
			_ = json.Unmarshal(raw, &m)
		}
		return m
	}
	fa, fb := fields(a), fields(b)
	var diff []string
	for k, v := range fa {
		if !reflect.DeepEqual(v, fb[k]) {
			diff = append(diff, k)
		}
	}
	for k := range fb {
		if _, ok := fa[k]; !ok {
			diff = append(diff, k)
		}
	}
	sort.Strings(diff)
	return diff
}
