package provider

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// TestFleetBenchmark is `make bench`: fleet scenarios with the real terraform CLI
// against the simulator with the cost model on (issue 9). It reports, never asserts,
// wall times; it writes the table to $MSSQLIFI_BENCH_OUT (BENCHMARKS.md) when set.
//
// Per fleet size N (10, 50, 100 hosts of one instance each, 50 ms round trip,
// PowerShell start 700 ms, Add-Type 1500 ms where a script uses it):
//   - one refresh: a one-resource terraform plan in the same run; its refresh
//     (refresh_start → refresh_complete in terraform's -json output), median of 3;
//   - the fleet plan: terraform plan of N resources at terraform's default
//     parallelism (10); the refresh span (first refresh_start → last
//     refresh_complete) against the bound ⌈N/10⌉ × one refresh;
//   - per refresh: WinRM requests, connections, TLS and NTLM handshakes and
//     PowerShell processes, from the simulator's counters over the fleet plan / N;
//   - the provider's peak RSS during the fleet plan: the provider runs as its own
//     process in debug mode (TF_REATTACH_PROVIDERS) and its VmHWM is read from /proc;
//   - an enabling apply of one instance (stop 1 s, start 2 s, ready 0.5 s) with and
//     without (restart = "never") the restart: the restart's overhead is the
//     difference of the resources' applies (apply_start → apply_complete) minus that
//     service time; and the PowerShell processes of each whole terraform apply.
func TestFleetBenchmark(t *testing.T) {
	if os.Getenv("MSSQLIFI_BENCH") == "" {
		t.Skip("the fleet benchmark runs with make bench (MSSQLIFI_BENCH=1)")
	}
	sizes := []int{10, 50, 100}
	if s := os.Getenv("MSSQLIFI_BENCH_SIZES"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 || n > 200 {
				t.Fatalf("MSSQLIFI_BENCH_SIZES %q: want sizes between 1 and 200", s)
			}
			sizes = append(sizes, n)
		}
	}
	var rows []benchRow
	for _, n := range sizes {
		rows = append(rows, runFleetScenario(t, n))
	}
	restart := runRestartScenario(t)
	table := benchTable(rows, restart) + benchAgainstTargets(rows, restart)
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		// The machine is shared: say how busy it was, since wall times depend on it.
		table += fmt.Sprintf("\nLoad average at the end of the run (1, 5, 15 min): %s.\n", strings.Join(strings.Fields(string(b))[:3], ", "))
	}
	t.Log("\n" + table)
	fmt.Println(table)
	if out := os.Getenv("MSSQLIFI_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(benchDoc(table)), 0o644); err != nil {
			t.Fatalf("writing %s: %v", out, err)
		}
	}
}

const (
	benchRTTMS        = 50
	benchPSStartMS    = 700
	benchStopMS       = 1000
	benchStartMS      = 2000
	benchReadyMS      = 500
	benchAddressBlock = "127.0.3."
)

func benchCost() *host.CostConfig {
	rtt, ps, at := benchRTTMS, benchPSStartMS, host.DefaultAddTypeMS
	return &host.CostConfig{Enabled: true, RoundTripMS: &rtt, PowerShellStartMS: &ps, AddTypeMS: &at}
}

type benchRow struct {
	hosts                                                int
	oneRefresh, fleetSpan, planWall                      time.Duration
	ratio                                                float64
	requests, connections, tlsFull, tlsResumed, ntlm, ps float64
	sqlConnections                                       float64
	peakRSS                                              int64 // KiB
}

// restartResult compares two enabling applies of one instance that nobody has
// granted the right: one that restarts (restart = if_needed) and the same one
// with restart = "never".
type restartResult struct {
	withRestart, withoutRestart time.Duration // the resource's apply_start → apply_complete
	serviceTime                 time.Duration // simulated stop + start + ready
	// overhead is what the restart adds beyond the service's own time:
	// withRestart − withoutRestart − serviceTime.
	overhead                        time.Duration
	psWithRestart, psWithoutRestart int64 // powershell.exe processes of the whole terraform apply
	// update: the same restart for a resource already in the state (enabled false →
	// true), whose apply uses the read of the plan's refresh.
	update   time.Duration
	psUpdate int64
}

// benchSim starts a simulator with n hosts of one default instance each.
func benchSim(t *testing.T, n int, mod func(*host.InstanceConfig)) *winsim.Sim {
	t.Helper()
	no := false
	cfg := &winsim.Config{}
	for i := 1; i <= n; i++ {
		hc := defaultHostConfig(fmt.Sprintf("fleet%03d", i), fmt.Sprintf("%s%d", benchAddressBlock, i))
		hc.Instances[0].Agent = &no
		if mod != nil {
			mod(&hc.Instances[0])
		}
		cfg.Hosts = append(cfg.Hosts, hc)
	}
	sim, err := winsim.Start(cfg, winsim.Options{CertDir: t.TempDir(), Cost: benchCost()})
	if err != nil {
		t.Fatalf("starting the simulator with %d hosts: %v", n, err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	return sim
}

// benchConfig is the provider block and one resource per host of the simulator
// (the first `count` hosts).
func benchConfig(t *testing.T, sim *winsim.Sim, count int) string {
	t.Helper()
	e := &accEnv{t: t, sim: sim, httpsPort: port(t, sim.Info().Hosts[0].WinRMHTTPS)}
	var b strings.Builder
	b.WriteString(e.providerConfig(true))
	for i, hi := range sim.Info().Hosts {
		if i >= count {
			break
		}
		fmt.Fprintf(&b, "\nresource \"mssqlifi_instant_file_initialization\" %q {\n  host = %q\n  port = %d\n}\n",
			hi.Name, hi.Address, port(t, hi.WinRMHTTPS))
	}
	return b.String()
}

func runFleetScenario(t *testing.T, n int) benchRow {
	t.Helper()
	sim := benchSim(t, n+1, nil)
	// The last host serves the one-resource runs.
	single := newCLI(t)
	singleCfg := benchConfig(t, sim, n+1)
	singleCfg = keepResources(singleCfg, []string{sim.Info().Hosts[n].Name})
	single.write(singleCfg)
	if r := single.apply(); r.Exit != 0 {
		t.Fatalf("one-resource apply failed:\n%s", r.describe())
	}
	var ones []time.Duration
	for i := 0; i < 3; i++ {
		ev := runTimed(t, single, nil, "plan", "-json", "-no-color")
		ones = append(ones, ev.refreshSpan())
	}
	sort.Slice(ones, func(i, j int) bool { return ones[i] < ones[j] })
	one := ones[1]

	fleet := newCLI(t)
	fleet.write(keepResources(benchConfig(t, sim, n), nil))
	if r := fleet.apply(); r.Exit != 0 {
		t.Fatalf("%d-resource apply failed:\n%s", n, r.describe())
	}
	before := sim.TotalStats()
	prov := startDebugProvider(t)
	ev := runTimed(t, fleet, prov.env(), "plan", "-json", "-no-color")
	rss := prov.stop(t)
	after := sim.TotalStats()
	if ev.refreshes != n {
		t.Fatalf("the fleet plan refreshed %d resources, want %d:\n%s", ev.refreshes, n, ev.stderr)
	}
	per := func(a, b int64) float64 { return float64(b-a) / float64(n) }
	span := ev.refreshSpan()
	bound := time.Duration(math.Ceil(float64(n)/float64(benchParallelism))) * one
	return benchRow{
		hosts: n, oneRefresh: one, fleetSpan: span, planWall: ev.wall,
		ratio:          float64(span) / float64(bound),
		requests:       per(before.WinRMRequests, after.WinRMRequests),
		connections:    per(before.WinRMConnections, after.WinRMConnections),
		tlsFull:        per(before.TLSHandshakes, after.TLSHandshakes),
		tlsResumed:     per(before.TLSResumed, after.TLSResumed),
		ntlm:           per(before.NTLMHandshakes, after.NTLMHandshakes),
		ps:             per(before.PowerShellProcesses, after.PowerShellProcesses),
		sqlConnections: per(before.SQLConnections, after.SQLConnections),
		peakRSS:        rss,
	}
}

func runRestartScenario(t *testing.T) restartResult {
	t.Helper()
	service := time.Duration(benchStopMS+benchStartMS+benchReadyMS) * time.Millisecond
	with, psWith := timedEnablingApply(t, "", false)
	without, psWithout := timedEnablingApply(t, "never", false)
	update, psUpdate := timedEnablingApply(t, "", true)
	return restartResult{withRestart: with, withoutRestart: without, serviceTime: service, overhead: with - without - service,
		psWithRestart: psWith, psWithoutRestart: psWithout, update: update, psUpdate: psUpdate}
}

// timedEnablingApply applies one resource on a fresh host where only
// BUILTIN\Administrators holds the right (Windows' default), so the apply grants it
// to NT SERVICE\MSSQLSERVER, and restarts the Engine unless restart is "never". It
// returns the resource's apply span and the powershell.exe processes of the whole
// terraform apply. With update, the resource is first applied with enabled = false,
// and the timed apply turns it on.
func timedEnablingApply(t *testing.T, restart string, update bool) (time.Duration, int64) {
	t.Helper()
	sim := benchSim(t, 1, func(ic *host.InstanceConfig) {
		ic.StopMS, ic.StartMS, ic.ReadyMS = benchStopMS, benchStartMS, benchReadyMS
	})
	cfg := benchConfig(t, sim, 1)
	if restart != "" {
		cfg = strings.Replace(cfg, "\n  host = ", fmt.Sprintf("\n  restart = %q\n  host = ", restart), 1)
	}
	w := newCLI(t)
	if update {
		w.write(strings.Replace(cfg, "\n  host = ", "\n  enabled = false\n  host = ", 1))
		if r := w.apply(); r.Exit != 0 {
			t.Fatalf("the apply with enabled = false failed:\n%s", r.describe())
		}
	}
	w.write(cfg)
	before := sim.TotalStats()
	ev := runTimed(t, w, nil, "apply", "-auto-approve", "-json", "-no-color")
	after := sim.TotalStats()
	return ev.applySpan(), after.PowerShellProcesses - before.PowerShellProcesses
}

// keepResources drops every resource block whose name is not in names (nil keeps all).
func keepResources(cfg string, names []string) string {
	if names == nil {
		return cfg
	}
	keep := map[string]bool{}
	for _, n := range names {
		keep[n] = true
	}
	re := regexp.MustCompile(`(?s)\nresource "mssqlifi_instant_file_initialization" "([^"]+)" \{.*?\n\}\n`)
	return re.ReplaceAllStringFunc(cfg, func(block string) string {
		if keep[re.FindStringSubmatch(block)[1]] {
			return block
		}
		return ""
	})
}

// timedRun is one terraform command with the times of its hooks.
type timedRun struct {
	wall                      time.Duration
	firstRefresh, lastRefresh time.Time
	refreshes                 int
	applyStart, applyDone     time.Time
	stderr                    string
}

func (r timedRun) refreshSpan() time.Duration { return r.lastRefresh.Sub(r.firstRefresh) }
func (r timedRun) applySpan() time.Duration   { return r.applyDone.Sub(r.applyStart) }

// runTimed runs terraform and reads the @timestamp of its refresh and apply hooks.
func runTimed(t *testing.T, w *cliWork, extraEnv []string, args ...string) timedRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.bin, args...)
	cmd.Dir = w.dir
	cmd.Env = append(append([]string{}, w.env...), extraEnv...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := timedRun{wall: time.Since(start), stderr: errb.String()}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("terraform %s: %v", strings.Join(args, " "), err)
	}
	if err != nil {
		t.Fatalf("terraform %s failed: %v\n%s\n%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var l struct {
			Time string `json:"@timestamp"`
			Type string `json:"type"`
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		ts, err := time.Parse(time.RFC3339Nano, l.Time)
		if err != nil {
			continue
		}
		switch l.Type {
		case "refresh_start":
			if r.firstRefresh.IsZero() || ts.Before(r.firstRefresh) {
				r.firstRefresh = ts
			}
		case "refresh_complete":
			r.refreshes++
			if ts.After(r.lastRefresh) {
				r.lastRefresh = ts
			}
		case "apply_start":
			if r.applyStart.IsZero() {
				r.applyStart = ts
			}
		case "apply_complete":
			r.applyDone = ts
		}
	}
	return r
}

// debugProvider is the provider binary run as its own process (-debug), which
// terraform reattaches to, so its memory can be read.
type debugProvider struct {
	cmd      *exec.Cmd
	reattach string
}

var reattachLine = regexp.MustCompile(`TF_REATTACH_PROVIDERS='([^']+)'`)

func startDebugProvider(t *testing.T) *debugProvider {
	t.Helper()
	if _, err := buildCLIProvider(); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(cliBuild.dir, "terraform-provider-mssqlifi")
	cmd := exec.Command(bin, "-debug")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the provider in debug mode: %v", err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			if m := reattachLine.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
	}()
	select {
	case r := <-found:
		return &debugProvider{cmd: cmd, reattach: r}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the provider in debug mode printed no TF_REATTACH_PROVIDERS within 30 s")
	}
	return nil
}

func (p *debugProvider) env() []string { return []string{"TF_REATTACH_PROVIDERS=" + p.reattach} }

// stop reads the provider's peak resident set (VmHWM, KiB) and ends it.
func (p *debugProvider) stop(t *testing.T) int64 {
	t.Helper()
	var kib int64
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
				kib, _ = strconv.ParseInt(f[1], 10, 64)
			}
		}
	} else {
		t.Logf("reading the provider's memory: %v", err)
	}
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	return kib
}

func benchTable(rows []benchRow, r restartResult) string {
	var b strings.Builder
	b.WriteString("| hosts | one refresh | fleet refresh | per instance | ratio to ⌈N/10⌉ × one | terraform plan | requests / refresh | connections / refresh | TLS full + resumed / refresh | NTLM / refresh | PowerShell / refresh | SQL connections / refresh | provider peak RSS |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, x := range rows {
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %.2f | %s | %.1f | %.1f | %.1f + %.1f | %.1f | %.1f | %.1f | %.1f MiB |\n",
			x.hosts, x.oneRefresh.Round(time.Millisecond), x.fleetSpan.Round(time.Millisecond), (x.fleetSpan / time.Duration(x.hosts)).Round(time.Millisecond), x.ratio, x.planWall.Round(time.Millisecond),
			x.requests, x.connections, x.tlsFull, x.tlsResumed, x.ntlm, x.ps, x.sqlConnections, float64(x.peakRSS)/1024)
	}
	fmt.Fprintf(&b, "\nEnabling apply of one instance (simulated stop %d ms + start %d ms + ready %d ms = %s):\n\n", benchStopMS, benchStartMS, benchReadyMS, r.serviceTime)
	b.WriteString("| apply | resource apply | PowerShell processes (whole terraform apply) |\n|---|---:|---:|\n")
	fmt.Fprintf(&b, "| with restart | %s | %d |\n", r.withRestart.Round(time.Millisecond), r.psWithRestart)
	fmt.Fprintf(&b, "| restart = \"never\" | %s | %d |\n", r.withoutRestart.Round(time.Millisecond), r.psWithoutRestart)
	fmt.Fprintf(&b, "| with restart, resource already in the state (enabled false → true) | %s | %d |\n", r.update.Round(time.Millisecond), r.psUpdate)
	fmt.Fprintf(&b, "\nRestart overhead beyond the service's own time: %s − %s − %s = %s.\n",
		r.withRestart.Round(time.Millisecond), r.withoutRestart.Round(time.Millisecond), r.serviceTime, r.overhead.Round(time.Millisecond))
	return b.String()
}

// benchAgainstTargets sets this run's figures against issue 9's targets (the largest
// fleet of the run stands for "100 hosts").
func benchAgainstTargets(rows []benchRow, r restartResult) string {
	if len(rows) == 0 {
		return ""
	}
	big := rows[len(rows)-1]
	for _, x := range rows {
		if x.hosts > big.hosts {
			big = x
		}
	}
	mark := func(ok bool) string {
		if ok {
			return "met"
		}
		return "missed"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nAgainst the targets (this run, %d hosts):\n\n", big.hosts)
	fmt.Fprintf(&b, "- fleet plan ≤ 1.15 × the bound: %.2f, %s;\n", big.ratio, mark(big.ratio <= 1.15))
	fmt.Fprintf(&b, "- ≤ 6 HTTP requests per refresh on one connection: %.1f on %.1f, %s;\n", big.requests, big.connections,
		mark(big.requests <= 6 && big.connections <= 1))
	fmt.Fprintf(&b, "- ≤ 3 PowerShell processes per enabling apply: %d (new resource), %d (resource in the state), %s;\n",
		r.psWithRestart, r.psUpdate, mark(r.psWithRestart <= 3 && r.psUpdate <= 3))
	fmt.Fprintf(&b, "- restart overhead ≤ 0.5 s: %s, %s;\n", r.overhead.Round(time.Millisecond), mark(r.overhead <= 500*time.Millisecond))
	fmt.Fprintf(&b, "- provider peak RSS ≤ 40 MiB: %.1f MiB, %s.\n", float64(big.peakRSS)/1024, mark(big.peakRSS <= 40*1024))
	return b.String()
}

func benchDoc(table string) string {
	return `# Benchmarks

Written by ` + "`make bench`" + ` (internal/provider/fleet_bench_test.go, TestFleetBenchmark). Figures
from one run on the build machine; compare ratios, not wall times.

## How it is measured

- The real terraform CLI runs against the simulator (internal/winsim) with its cost
  model on (internal/winsim/host/cost.go; sources in
  design/winrm-stdin-and-cost-model.md): ` + fmt.Sprint(benchRTTMS) + ` ms per network round trip
  (every turn of a WinRM or TDS connection, and each new connection), ` + fmt.Sprint(benchPSStartMS) + ` ms per
  powershell.exe start, ` + fmt.Sprint(host.DefaultAddTypeMS) + ` ms for an Add-Type compilation where a script still
  uses one (none does).
- Fleets of 10, 50 and 100 hosts with one instance each, WinRM over HTTPS with NTLM,
  SQL verification over TDS with TLS, terraform's default parallelism (10).
- One refresh: a one-resource terraform plan in the same simulator run, from
  terraform's refresh_start to refresh_complete (-json @timestamp), median of three.
- Fleet refresh: the fleet plan's first refresh_start to its last
  refresh_complete; per instance is that divided by N. The ratio divides it by the
  bound ⌈N/10⌉ × one refresh.
  terraform plan is the whole command's wall time (start-up included).
- Per refresh: the simulator's counters over the fleet plan divided by N (HTTP
  requests including NTLM legs, accepted connections, TLS handshakes full and
  resumed, NTLM handshakes, powershell.exe processes, SQL connections). Over plain
  HTTP, where the bodies are encrypted, the NTLM AUTHENTICATE leg goes without a
  body and a refresh is 7 requests on one connection
  (internal/remote/exchange_test.go; design/winrm-stdin-and-cost-model.md).
- Provider peak RSS: the provider runs as its own process in debug mode and
  terraform reattaches to it (TF_REATTACH_PROVIDERS); VmHWM from /proc after the
  fleet plan.
- Enabling apply: one instance that nobody has granted the right (a new resource),
  with simulated service times, applied twice on fresh hosts: once with the restart
  (restart = "if_needed", the default) and once with restart = "never". The
  resource's apply_start to apply_complete of each; the restart overhead is the
  first minus the second minus stop + start + ready: what restarting costs beyond
  the service's own time. PowerShell processes are counted over the whole
  terraform apply (the plan's refresh included), the restart's guard process
  included. A third apply turns on a resource already in the state (enabled false
  → true): its apply uses the read of the plan's refresh.
  Not charged, so not in the overhead: the WMI call that creates the guard
  (Win32_Process.Create, on the restart's path before the stop; the earlier design
  paid the same call for its worker) and the guard's own start, which overlaps the
  stop. The cost model has no figure for a WMI call.

## Results

` + table + `
## Targets (issue 9)

- fleet plan at 100 hosts ≤ 1.15 × the bound;
- ≤ 6 HTTP requests per refresh on one connection;
- ≤ 3 PowerShell processes per enabling apply;
- apply-with-restart overhead ≤ 0.5 s beyond the simulated stop + start + ready
  (measured as above: an apply without the restart does everything else);
- provider peak RSS ≤ 40 MiB at 100 instances.
`
}
