// Command winsim runs the Windows host simulator: every host of a configuration file
// with its WinRM (HTTP and HTTPS) and SQL Server (TDS) endpoints on its own loopback
// address, plus an HTTP JSON control plane.
//
//	winsim --config FILE [--control ADDR] [--cert-dir DIR] [--log FILE]
//
// Once every listener is up it prints exactly one JSON line on stdout:
//
//	{"control":"127.0.0.1:P","ca_cert":"PATH","hosts":[{"name":"sql01","address":"127.0.0.2","winrm":"127.0.0.2:P","winrm_https":"127.0.0.2:P","instances":[{"name":"MSSQLSERVER","sql":"127.0.0.2:P"}]}]}
//
// It logs to stderr (or --log FILE) and stops cleanly on SIGINT or SIGTERM (exit 0).
// See internal/winsim/README.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("winsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "the simulator configuration file (JSON; see internal/winsim/README.md)")
	control := fs.String("control", "127.0.0.1:0", "address of the HTTP control plane (port 0 picks a free one)")
	certDir := fs.String("cert-dir", "", "directory to write the CA certificate (ca.pem) to; default a temporary directory removed on exit")
	logPath := fs.String("log", "", "append log lines to this file instead of stderr")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: winsim --config FILE [--control ADDR] [--cert-dir DIR] [--log FILE]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *configPath == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "winsim: --config FILE is required and no positional arguments are accepted; see internal/winsim/examples/fleet.json")
		fs.Usage()
		return 2
	}

	logOut := stderr
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintf(stderr, "winsim: opening the log file %s: %v (check the directory exists and is writable)\n", *logPath, err)
			return 1
		}
		defer f.Close()
		logOut = f
	}
	logger := log.New(logOut, "", log.LstdFlags|log.Lmicroseconds)

	cfg, err := winsim.LoadConfig(*configPath)
	if err != nil {
		fmt.Fprintf(stderr, "winsim: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	sim, err := winsim.Start(cfg, winsim.Options{ControlAddr: *control, CertDir: *certDir, Logf: logger.Printf})
	if err != nil {
		fmt.Fprintf(stderr, "winsim: %v\n", err)
		return 1
	}
	if winsim.ControlExposed(sim.ControlAddr()) {
		fmt.Fprintf(stderr, "winsim: WARNING: the control plane at %s is reachable beyond this machine and has no authentication: "+
			"anyone who reaches it can stop services, change rights and uninstall instances. Use --control 127.0.0.1:0 unless the network is yours alone.\n",
			sim.ControlAddr())
	}
	line, err := json.Marshal(sim.Info())
	if err != nil {
		fmt.Fprintf(stderr, "winsim: encoding the listener addresses: %v\n", err)
		_ = sim.Close()
		return 1
	}
	if _, err := fmt.Fprintf(stdout, "%s\n", line); err != nil {
		logger.Printf("winsim: writing the listener addresses to stdout: %v", err)
	}

	<-ctx.Done()
	logger.Printf("winsim: signal received, stopping")
	if err := sim.Close(); err != nil {
		fmt.Fprintf(stderr, "winsim: stopping: %v\n", err)
		return 1
	}
	logger.Printf("winsim: stopped")
	return 0
}
