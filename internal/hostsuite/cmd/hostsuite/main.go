// Command hostsuite is the staged real-host suite (internal/hostsuite): `make
// testacc-host` runs it against the Windows host the environment names, and `make
// testacc-host-sim` against the simulator, with the same variables. Run from the
// module root:
//
//	go run ./internal/hostsuite/cmd/hostsuite [-dry-run] [-summary-md FILE] [-provider-dir bin] [-terraform PATH]
//
// The variables (MSSQLIFI_ACC_*, MSSQLIFI_WINRM_*, MSSQLIFI_SQL_*) are listed in
// the README's "Development" section. Exit status: 0 when no check failed, 1 when
// one did, 2 when the settings are wrong (nothing was contacted).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/hostsuite"
)

func main() {
	os.Exit(run())
}

func run() int {
	dry := flag.Bool("dry-run", false, "print every stage and what it would change; contact nothing (also "+hostsuite.EnvDryRun+"=true)")
	summary := flag.String("summary-md", "", "write the results table (and the seed's measurement) as Markdown to this file")
	providerDir := flag.String("provider-dir", "bin", "folder holding the terraform-provider-mssqlifi binary terraform uses (dev_overrides)")
	tf := flag.String("terraform", "", "terraform or OpenTofu binary (default: terraform on PATH)")
	step := flag.Duration("step-timeout", 30*time.Minute, "bound of each terraform run, restart and wait")
	flag.Parse()

	getenv := os.Getenv
	if *dry {
		getenv = func(k string) string {
			if k == hostsuite.EnvDryRun {
				return "true"
			}
			return os.Getenv(k)
		}
	}
	cfg, err := hostsuite.LoadConfig(getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hostsuite: the settings cannot work, nothing was contacted:\n%v\n", err)
		return 2
	}
	opt := hostsuite.Options{Out: os.Stdout, ProviderDir: *providerDir, Terraform: *tf, StepTimeout: *step}
	if cfg.RecordDir != "" && !cfg.DryRun {
		opt.Recorder = hostsuite.NewRecorder(cfg)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep := hostsuite.Run(ctx, cfg, opt)
	if opt.Recorder != nil {
		path, err := opt.Recorder.WriteFile(cfg.RecordDir)
		if err != nil {
			fmt.Fprintf(os.Stderr, "hostsuite: the transcript could not be written to %s: %v\n", cfg.RecordDir, err)
			return 1
		}
		fmt.Printf("transcript (redacted): %s. Read it through before you commit it (testdata/realhost/): redaction replaces the names and secrets it knows or recognises, not every word a host may say\n", path)
	}
	if *summary != "" {
		if err := hostsuite.WriteMarkdown(*summary, rep.Header, rep.Results, rep.Seed); err != nil {
			fmt.Fprintf(os.Stderr, "hostsuite: %v\n", err)
			return 1
		}
	}
	if !rep.OK() {
		return 1
	}
	return 0
}
