package hostsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
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
	var names, found []string
	var mine *contract.ReadInstanceResult
	for i := range res.Instances {
		in := &res.Instances[i]
		names = append(names, in.Instance)
		found = append(found, discovered(in))
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
	s.p.pass("host read", "read_host reported %d instance(s) in one powershell.exe: %s; its report of %s is read_instance's",
		len(res.Instances), strings.Join(found, "; "), r.Instance)
}

// discovered is one instance read_host found: its name, build, Engine state, the
// holders of both managed rights and the memory model its error log reports.
func discovered(in *contract.ReadInstanceResult) string {
	if !in.Found {
		return in.Instance + " (not found)"
	}
	lock := "not reported"
	if in.LockPages != nil {
		lock = strconv.Itoa(len(in.LockPages.Holders))
	}
	memory := in.ErrorLog.MemoryModel
	if memory == "" {
		memory = "no line"
	}
	return fmt.Sprintf("%s (%s, %s; holders of %s %d, of %s %s; memory model %s)", in.Instance, in.Version, in.ServiceState,
		contract.RightManageVolume, len(in.RightHolders), contract.RightLockMemory, lock, memory)
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
