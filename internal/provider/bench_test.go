package provider

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/converge"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/ifi"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/sqlcheck"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
)

// benchParallelism is terraform's default -parallelism.
const benchParallelism = 10

// BenchmarkRefreshFleet measures a refresh of a fleet as terraform runs it: every
// resource's observe path (one read_instance over WinRM/NTLM/HTTPS and one SQL check
// over TDS/TLS), at most 10 at a time, with the clients a fresh provider process
// starts with (a terraform run starts the provider anew, so handshakes count).
// One op is a refresh of the whole fleet; ns/instance divides it by the fleet's
// size. The simulator runs in the same process, so allocs count both sides.
func BenchmarkRefreshFleet(b *testing.B) {
	for _, f := range []struct{ hosts, perHost int }{{1, 1}, {2, 5}, {5, 10}} {
		n := f.hosts * f.perHost
		b.Run(fmt.Sprintf("instances=%d/hosts=%d", n, f.hosts), func(b *testing.B) {
			fleet := startBenchFleet(b, f.hosts, f.perHost)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				fleet.refresh(b)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/instance")
		})
	}
}

type benchFleet struct {
	sim     *winsim.Sim
	winrm   remote.Config
	sql     sqlcheck.Config
	targets []converge.Target
}

// startBenchFleet starts one simulator with hosts hosts of perHost instances each
// (MSSQLSERVER, then named instances), every instance with a SQL login.
func startBenchFleet(b *testing.B, hosts, perHost int) *benchFleet {
	b.Helper()
	cfg := &winsim.Config{}
	for h := 0; h < hosts; h++ {
		n := nextAddr.Add(1)
		hc := defaultHostConfig(fmt.Sprintf("bench%02d", n), fmt.Sprintf("127.0.0.%d", 10+n))
		hc.Instances = nil
		for i := 0; i < perHost; i++ {
			name := "MSSQLSERVER"
			if i > 0 {
				name = fmt.Sprintf("INST%02d", i)
			}
			hc.Instances = append(hc.Instances, host.InstanceConfig{
				Name:   name,
				Logins: []host.LoginConfig{{Name: accSQLUser, Password: accSQLPass}},
			})
		}
		cfg.Hosts = append(cfg.Hosts, hc)
	}
	sim, err := winsim.Start(cfg, winsim.Options{CertDir: b.TempDir()})
	if err != nil {
		b.Fatalf("starting the simulator: %v", err)
	}
	b.Cleanup(func() { _ = sim.Close() })
	f := &benchFleet{
		sim: sim,
		winrm: remote.Config{HTTPS: true, CACert: sim.CACertPEM(), Auth: "ntlm", Username: accUser, Password: accPassword,
			Timeout: remote.DefaultTimeout},
		sql: sqlcheck.Config{Username: accSQLUser, Password: accSQLPass, Encrypt: "true", CACert: sim.CACertPEM()},
	}
	for _, hi := range sim.Info().Hosts {
		_, ps, err := net.SplitHostPort(hi.WinRMHTTPS)
		p, perr := strconv.Atoi(ps)
		if err != nil || perr != nil {
			b.Fatalf("WinRM HTTPS listener %q: %v %v", hi.WinRMHTTPS, err, perr)
		}
		for _, in := range hi.Instances {
			f.targets = append(f.targets, converge.Target{Host: hi.Address, Instance: in.Name, Port: p})
		}
	}
	if len(f.targets) != hosts*perHost {
		b.Fatalf("the simulator lists %d instances, want %d", len(f.targets), hosts*perHost)
	}
	return f
}

// refresh observes every instance with fresh clients, benchParallelism at a time, and
// fails unless each was found and verified through the DMV.
func (f *benchFleet) refresh(b *testing.B) {
	engine := newClients(f.winrm, &f.sql, remote.New, func(cfg sqlcheck.Config) (sqlcheck.Checker, error) { return sqlcheck.New(cfg), nil }, nil).run().Engine
	ctx := context.Background()
	sem := make(chan struct{}, benchParallelism)
	var wg sync.WaitGroup
	errs := make(chan error, len(f.targets))
	for _, t := range f.targets {
		wg.Add(1)
		sem <- struct{}{}
		go func(t converge.Target) {
			defer wg.Done()
			defer func() { <-sem }()
			obs, err := engine.Observe(ctx, t)
			switch {
			case err != nil:
				errs <- fmt.Errorf("%s: %v", t, err)
			case !obs.Instance.Found:
				errs <- fmt.Errorf("%s: not found", t)
			case obs.Observed.Verification.Source != ifi.SourceSQLDMV:
				errs <- fmt.Errorf("%s: verified by %q, want sql_dmv (warnings %v)", t, obs.Observed.Verification.Source, obs.Warnings)
			}
		}(t)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}
