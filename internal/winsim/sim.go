// Package winsim assembles the Windows host simulator: for every host in a
// configuration file it builds the host model (internal/winsim/host), serves
// WS-Management over HTTP and HTTPS on the host's own loopback address
// (internal/winsim/wsman), a TDS endpoint per SQL Server instance that listens only
// while the instance's Engine runs (internal/winsim/tds), and an HTTP JSON control
// plane for tests, the demo and benchmarks. See README.md for the configuration file
// and the control API, FIDELITY.md for what is modelled.
//
// Production code never imports this package.
package winsim

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/certs"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/ntlm"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/tds"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/wsman"
)

// Options tune how Start runs the simulator.
type Options struct {
	// ControlAddr is where the HTTP control plane listens; "" means 127.0.0.1:0.
	ControlAddr string
	// CertDir is where the CA certificate (ca.pem) is written; "" means a new
	// temporary directory, removed by Close.
	CertDir string
	// Logf receives the simulator's log lines; nil discards them.
	Logf func(format string, args ...any)
	// Cost, when set, is the cost model of every host, replacing the hosts' own
	// "cost" settings: benchmarks turn the model on here (host.CostConfig).
	Cost *host.CostConfig
}

// Info describes the running simulator: exactly the JSON line winsim prints.
type Info struct {
	Control string     `json:"control"`
	CACert  string     `json:"ca_cert"`
	Hosts   []HostInfo `json:"hosts"`
	// Clusters are the failover clusters and their roles' virtual endpoints.
	Clusters []ClusterInfo `json:"clusters,omitempty"`
}

// EnginesDown is what GET /v1/engines_down answers: how many Engines of the fleet
// are down now (they left Running and are not back), and the most that were down
// at once (host.DownGauge): 1 when restarts rolled through the fleet one at a time.
type EnginesDown struct {
	Now int `json:"engines_down"`
	Max int `json:"max_engines_down"`
}

// HostInfo is one host's listeners.
type HostInfo struct {
	Name       string         `json:"name"`
	Address    string         `json:"address"`
	WinRM      string         `json:"winrm"`
	WinRMHTTPS string         `json:"winrm_https"`
	Instances  []InstanceInfo `json:"instances"`
}

// InstanceInfo is one SQL Server instance's TDS endpoint (host:port).
type InstanceInfo struct {
	Name string `json:"name"`
	SQL  string `json:"sql"`
}

// Sim is a running simulator.
type Sim struct {
	logf      func(format string, args ...any)
	ca        *certs.CA
	caPath    string
	removeDir string // a temporary CertDir to remove on Close

	hosts  []*simHost
	byName map[string]*simHost
	down   host.DownGauge   // the fleet's Engines that are down (Info.MaxEnginesDown)
	ags    host.AGDirectory // the fleet's availability replicas, which see each other

	clusters []*simCluster // the failover clusters (cluster.go)

	control     *http.Server
	controlAddr string

	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup
}

type simHost struct {
	name      string
	address   string
	model     *host.Host
	wsman     *wsman.Server
	httpAddr  string
	httpsAddr string
	instances []*sqlEndpoint
	listeners []net.Listener // the WinRM listeners, closed by Close in case Serve never ran
	faults    *faultSet      // injected WinRM faults (faults.go)

	clusterState // a down cluster node's refusal (cluster.go)

	rtt       time.Duration // the cost model's round trip
	winrmWire wireStats
	sqlWire   wireStats

	sspi        *hostSSPI    // SQL Server's integrated logons (sspi.go)
	sqlKerberos atomic.Int64 // of which Kerberos
}

// sqlEndpoint is one instance's TDS listener. The host model opens and closes it as
// the Engine starts and stops; the port chosen the first time is kept, so the
// instance answers on the same address after a restart, like a fixed TcpPort.
type sqlEndpoint struct {
	instance string
	addr     string // host:port, fixed after Start
	server   *tds.Server
	logf     func(format string, args ...any)
	wg       *sync.WaitGroup
	rtt      time.Duration // the cost model's round trip
	stats    *wireStats

	mu       sync.Mutex
	listener net.Listener
	closed   bool          // the simulator is shutting down: open refuses
	changed  chan struct{} // closed and replaced whenever the listener opens or closes
}

// waitOpen waits until the endpoint listens or ctx ends.
func (e *sqlEndpoint) waitOpen(ctx context.Context) error {
	for {
		e.mu.Lock()
		open, ch := e.listener != nil, e.changed
		e.mu.Unlock()
		if open {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// notifyLocked wakes waitOpen; e.mu is held.
func (e *sqlEndpoint) notifyLocked() {
	close(e.changed)
	e.changed = make(chan struct{})
}

func (e *sqlEndpoint) open() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return fmt.Errorf("the simulator is shutting down; instance %s's SQL endpoint %s stays closed", e.instance, e.addr)
	}
	if e.listener != nil {
		return nil
	}
	l, err := listenRetry(e.addr)
	if err != nil {
		return fmt.Errorf("re-opening instance %s's SQL port %s: %w (another process may have taken the port; restart the simulator)", e.instance, e.addr, err)
	}
	e.serve(l)
	return nil
}

// serve starts serving l; e.mu is held.
func (e *sqlEndpoint) serve(l net.Listener) {
	e.listener = l
	e.notifyLocked()
	served := net.Listener(&costListener{Listener: l, rtt: e.rtt, stats: e.stats})
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		if err := e.server.Serve(served); err != nil && !errors.Is(err, net.ErrClosed) {
			e.logf("winsim: instance %s: TDS server on %s stopped: %v", e.instance, e.addr, err)
		}
	}()
	e.logf("winsim: instance %s: SQL endpoint listening on %s", e.instance, e.addr)
}

// close is the model's hook: the Engine stopped.
func (e *sqlEndpoint) close() { e.closeBecause("the Engine stopped") }

func (e *sqlEndpoint) closeBecause(why string) {
	e.mu.Lock()
	l := e.listener
	e.listener = nil
	if l != nil {
		e.notifyLocked()
	}
	e.mu.Unlock()
	if l != nil {
		_ = l.Close()
		e.logf("winsim: instance %s: SQL endpoint %s closed: %s", e.instance, e.addr, why)
	}
	e.server.CloseConnections()
}

func (e *sqlEndpoint) isOpen() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.listener != nil
}

func (e *sqlEndpoint) shutdown() {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.closeBecause("the simulator is stopping")
}

// listenRetry listens on addr, retrying briefly: a port just released by a closed
// listener is normally free at once, but give the kernel a moment if not.
func listenRetry(addr string) (net.Listener, error) {
	deadline := time.Now().Add(2 * time.Second)
	for {
		l, err := net.Listen("tcp", addr)
		if err == nil || time.Now().After(deadline) {
			return l, err
		}
		time.Sleep(20 * time.Millisecond) // back-off between bind attempts, not synchronisation
	}
}

// Start builds every host of cfg and opens every listener. When it returns without
// error, every WinRM listener, the control plane, and the SQL endpoint of every
// running instance accept connections.
func Start(cfg *Config, opts Options) (_ *Sim, err error) {
	if cfg == nil {
		return nil, errors.New("winsim.Start: no configuration; load one with winsim.LoadConfig")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	s := &Sim{logf: logf, byName: map[string]*simHost{}}
	defer func() {
		if err != nil {
			_ = s.Close()
		}
	}()

	validity := cfg.certValidity()
	if s.ca, err = certs.NewCA("winsim test CA", validity); err != nil {
		return nil, err
	}
	certDir := opts.CertDir
	if certDir == "" {
		if certDir, err = os.MkdirTemp("", "winsim-certs-"); err != nil {
			return nil, fmt.Errorf("creating a temporary directory for the CA certificate: %w (set --cert-dir)", err)
		}
		s.removeDir = certDir
	} else if err := os.MkdirAll(certDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the certificate directory %s: %w", certDir, err)
	}
	s.caPath = filepath.Join(certDir, "ca.pem")
	if abs, err := filepath.Abs(s.caPath); err == nil {
		s.caPath = abs
	}
	if err := os.WriteFile(s.caPath, s.ca.CertPEM(), 0o644); err != nil {
		return nil, fmt.Errorf("writing the simulator CA certificate to %s: %w", s.caPath, err)
	}

	{
		hosts := clusteredHostConfigs(cfg)
		for i := range hosts {
			if opts.Cost != nil {
				hosts[i].Cost = *opts.Cost
			}
		}
		c := *cfg
		c.Hosts = hosts
		cfg = &c
	}
	for i := range cfg.Hosts {
		if err := s.startHost(cfg, i, validity); err != nil {
			return nil, err
		}
	}
	if err := s.startClusters(cfg, validity); err != nil {
		return nil, err
	}

	controlAddr := opts.ControlAddr
	if controlAddr == "" {
		controlAddr = "127.0.0.1:0"
	}
	cl, err := net.Listen("tcp", controlAddr)
	if err != nil {
		return nil, fmt.Errorf("listening for the control plane on %s: %w (choose another --control address)", controlAddr, err)
	}
	s.controlAddr = cl.Addr().String()
	s.control = &http.Server{Handler: s.controlHandler(), ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.control.Serve(cl); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logf("winsim: control plane on %s stopped: %v", s.controlAddr, err)
		}
	}()
	logf("winsim: control plane listening on http://%s", s.controlAddr)
	if ControlExposed(s.controlAddr) {
		logf("winsim: WARNING: the control plane listens on %s, beyond loopback, and has no authentication: anyone who reaches it "+
			"can stop services, change rights and uninstall instances of the simulated hosts; use --control 127.0.0.1:0 unless this network is yours alone", s.controlAddr)
	}
	return s, nil
}

func (s *Sim) startHost(cfg *Config, i int, validity time.Duration) error {
	hc := cfg.Hosts[i]
	name := hc.Name
	address := hc.Address
	ip := net.ParseIP(address)
	model, err := host.New(hc, host.Options{Logf: s.logf, Down: &s.down, AGs: &s.ags})
	if err != nil {
		return fmt.Errorf("host %s: building the host model: %w", name, err)
	}
	sh := &simHost{name: name, address: address, model: model, rtt: model.Cost().RoundTrip}
	// Register the host at once so Close releases what was opened even if a later
	// step fails.
	s.hosts = append(s.hosts, sh)
	s.byName[strings.ToLower(name)] = sh

	computer := hostComputerName(hc)
	// The certificate names the host as Windows' does (its FQDN; the simulator's
	// other names of it beside).
	dnsNames := uniqueStrings([]string{hc.FQDN(), name, computer, strings.ToLower(computer)})
	cert, err := s.ca.Issue(name, dnsNames, []net.IP{ip}, validity)
	if err != nil {
		return fmt.Errorf("host %s: %w", name, err)
	}
	tlsCfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	winrmTLS := countHandshakes(tlsCfg, &sh.winrmWire)

	sh.faults = &faultSet{ops: map[string]string{}, model: model}
	kerberos, err := wsmanKerberos(hc)
	if err != nil {
		return err
	}
	sh.wsman = wsman.NewServer(wsman.Config{
		Wrap:         sh.faults.wrap,
		ComputerName: computer,
		DomainName:   hc.Domain,
		DNSDomain:    hc.DNSDomainOrDefault(),
		Lookup:       model.Lookup,
		AllowBasic:   hostAllowBasic(hc),
		AllowNTLM:    hostAllowNTLM(hc),
		// Windows' defaults unless the configuration says otherwise.
		AllowUnencrypted: hc.WinRM.AllowUnencrypted,
		CBTHardening:     hc.WinRM.CBTHardeningLevel,
		// The names the host answers to, as in its certificate: an NTLM logon naming
		// another host was relayed.
		TargetNames: append(append([]string{}, dnsNames...), address, strings.ToLower(computer)+dnsSuffix(hc.Domain)),
		Kerberos:    kerberos,
		Executor:    model,
		Logf:        s.logf,
	})
	sh.sspi = newHostSSPI(kerberos, hc.Domain, &ntlm.Server{ComputerName: computer, DomainName: hc.Domain, DNSDomainName: hc.DNSDomainOrDefault(), Lookup: model.Lookup,
		TargetNames: append(append([]string{}, dnsNames...), address, strings.ToLower(computer)+dnsSuffix(hc.Domain))}, &sh.sqlKerberos)
	if sh.httpAddr, err = s.serveWinRM(sh, "HTTP", hostHTTPPort(hc), "http_port", sh.wsman.Serve); err != nil {
		return err
	}
	serveTLS := func(l net.Listener) error { return sh.wsman.ServeTLS(l, winrmTLS) }
	if sh.httpsAddr, err = s.serveWinRM(sh, "HTTPS", hostHTTPSPort(hc), "https_port", serveTLS); err != nil {
		return err
	}
	s.logf("winsim: host %s: WinRM on http://%s/wsman and https://%s/wsman", name, sh.httpAddr, sh.httpsAddr)

	for _, inst := range model.Instances() {
		if fciInstance(cfg, name, inst.Name()) {
			continue // it answers on its role's virtual address (cluster.go)
		}
		ep, err := s.startSQLEndpoint(sh, inst, hc, tlsCfg)
		if ep != nil {
			sh.instances = append(sh.instances, ep)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// serveWinRM listens for WinRM over proto ("HTTP" or "HTTPS") on the host's address
// and port (0: a free one), serves it with serve until Close, and returns the
// address it listens on. setting names the configuration key of the port.
func (s *Sim) serveWinRM(sh *simHost, proto string, port int, setting string, serve func(net.Listener) error) (string, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(sh.address, strconv.Itoa(port)))
	if err != nil {
		return "", fmt.Errorf("host %s: listening for WinRM over %s on %s port %d: %w (pick another %s, or 0 for a free one)", sh.name, proto, sh.address, port, err, setting)
	}
	gate := newGateListener(l) // the "refuse" fault closes it for a while
	sh.listeners = append(sh.listeners, gate)
	sh.faults.gates = append(sh.faults.gates, gate)
	addr := l.Addr().String()
	served := &costListener{Listener: gate, rtt: sh.rtt, stats: &sh.winrmWire}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := serve(served); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			s.logf("winsim: host %s: WinRM %s listener %s stopped: %v", sh.name, proto, addr, err)
		}
	}()
	return addr, nil
}

func (s *Sim) startSQLEndpoint(sh *simHost, inst *host.Instance, hc host.HostConfig, tlsCfg *tls.Config) (*sqlEndpoint, error) {
	name := inst.Name()
	port := instanceConfig(hc, name).SQLPort
	// Bind once to learn (or check) the port, then hand the listener to the model's
	// first open, or release it when the Engine is not running: a stopped Engine must
	// refuse connections.
	l, err := net.Listen("tcp", net.JoinHostPort(sh.address, strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("host %s: instance %s: listening for SQL on %s port %d: %w (pick another sql_port, or 0 for a free one)", sh.name, name, sh.address, port, err)
	}
	srvTLS := tlsCfg.Clone() // the TDS server adds ALPN tds/8.0 itself
	ep := &sqlEndpoint{
		instance: sh.name + `\` + name,
		addr:     l.Addr().String(),
		server:   tds.NewServer(inst.TDSHandler(), tds.Options{TLSConfig: srvTLS, Logf: s.logf, SSPI: sh.sspi}),
		logf:     s.logf,
		wg:       &s.wg,
		changed:  make(chan struct{}),
		rtt:      sh.rtt,
		stats:    &sh.sqlWire,
	}
	ep.mu.Lock()
	ep.serve(l)
	ep.mu.Unlock()
	inst.SetTCPPort(l.Addr().(*net.TCPAddr).Port)
	// From here the model decides: SetSQLListener calls open (a no-op, the listener
	// is serving) when the Engine is ready and close when it is not, then open and
	// close again whenever the Engine starts and stops.
	inst.SetSQLListener(ep.open, ep.close)

	// Start promises every listener is up: wait for an Engine configured to run
	// (the model normally makes it ready at once; ready_ms can delay it).
	ic := instanceConfig(hc, name)
	if !ic.Stopped && !ic.FailStart {
		budget := time.Duration(ic.StartMS+ic.ReadyMS)*time.Millisecond + 10*time.Second
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		if err := ep.waitOpen(ctx); err != nil {
			return ep, fmt.Errorf("host %s: instance %s: the Engine did not accept SQL connections within %s of the simulator's start (check its start_ms, ready_ms and fail_start): %w", sh.name, name, budget, err)
		}
	}
	return ep, nil
}

// Info returns the simulator's addresses, as winsim prints them.
func (s *Sim) Info() Info {
	info := Info{Control: s.controlAddr, CACert: s.caPath, Hosts: []HostInfo{}}
	for _, sh := range s.hosts {
		hi := HostInfo{Name: sh.name, Address: sh.address, WinRM: sh.httpAddr, WinRMHTTPS: sh.httpsAddr, Instances: []InstanceInfo{}}
		for _, ep := range sh.instances {
			_, inst, _ := strings.Cut(ep.instance, `\`)
			if _, installed := sh.model.Instance(inst); !installed {
				continue // uninstalled through the control plane
			}
			hi.Instances = append(hi.Instances, InstanceInfo{Name: inst, SQL: ep.addr})
		}
		info.Hosts = append(info.Hosts, hi)
	}
	info.Clusters = s.clusterInfos()
	return info
}

// EnginesDown reports the fleet's Engines that are down now, and the most at once.
func (s *Sim) EnginesDown() EnginesDown { return EnginesDown{Now: s.down.Now(), Max: s.down.Max()} }

// CACertPEM returns the CA certificate that signed every host's certificate.
func (s *Sim) CACertPEM() []byte { return s.ca.CertPEM() }

// CACertPath is the file the CA certificate was written to.
func (s *Sim) CACertPath() string { return s.caPath }

// ControlAddr is the control plane's host:port.
func (s *Sim) ControlAddr() string { return s.controlAddr }

// Host returns one host's model by name (case-insensitive).
func (s *Sim) Host(name string) (*host.Host, error) {
	sh, ok := s.byName[strings.ToLower(name)]
	if !ok {
		names := make([]string, 0, len(s.hosts))
		for _, h := range s.hosts {
			names = append(names, h.name)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("%w %q: the simulator has %s", ErrUnknownHost, name, strings.Join(names, ", "))
	}
	return sh.model, nil
}

// SQLListening reports whether an instance's SQL endpoint currently accepts
// connections (the Engine is running). For tests.
func (s *Sim) SQLListening(hostName, instance string) (bool, error) {
	sh, ok := s.byName[strings.ToLower(hostName)]
	if !ok {
		return false, fmt.Errorf("%w %q", ErrUnknownHost, hostName)
	}
	for _, ep := range sh.instances {
		if _, n, _ := strings.Cut(ep.instance, `\`); strings.EqualFold(n, instance) {
			return ep.isOpen(), nil
		}
	}
	return false, fmt.Errorf("host %s has no instance %q", hostName, instance)
}

// Close stops every listener, connection and timer. It is safe to call more than once.
func (s *Sim) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		if s.control != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := s.control.Shutdown(ctx); err != nil {
				_ = s.control.Close()
			}
			cancel()
		}
		for _, sc := range s.clusters {
			sc.model.Close()
			for _, ep := range sc.vnns {
				ep.shutdown()
			}
		}
		for _, sh := range s.hosts {
			sh.endDown()
			for _, ep := range sh.instances {
				ep.shutdown()
			}
			if sh.wsman != nil {
				if err := sh.wsman.Close(); err != nil {
					errs = append(errs, fmt.Errorf("closing host %s's WinRM listeners: %w", sh.name, err))
				}
			}
			if sh.faults != nil {
				sh.faults.clear() // ends refusals under way
			}
			for _, l := range sh.listeners {
				_ = l.Close()
			}
			if sh.model != nil {
				sh.model.Close()
			}
		}
		s.wg.Wait()
		if s.removeDir != "" {
			if err := os.RemoveAll(s.removeDir); err != nil {
				errs = append(errs, fmt.Errorf("removing the temporary certificate directory %s: %w", s.removeDir, err))
			}
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

func uniqueStrings(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range in {
		if v == "" || seen[v] {
			continue
		}
		seen[v] = true
		out = append(out, v)
	}
	return out
}

// dnsSuffix is ".domain" for a domain with a DNS name, else "".
func dnsSuffix(domain string) string {
	if strings.Contains(domain, ".") {
		return "." + strings.ToLower(domain)
	}
	return ""
}
