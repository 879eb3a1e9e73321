package host

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// CostConfig is the cost model of one host: what Windows and the network charge
// that a loopback simulator would otherwise not. It is off unless Enabled; an
// enabled model takes the defaults below for every field left out. Sources of the
// defaults: design/winrm-stdin-and-cost-model.md.
type CostConfig struct {
	// Enabled turns the model on. Default false (unit tests run at loopback speed).
	Enabled bool `json:"enabled,omitempty"`
	// RoundTripMS is the network round-trip time, charged once per turn of every
	// WinRM (HTTP, TLS) and TDS connection: when the client speaks after the server
	// answered, and once when a connection opens (TCP's handshake). Default 1 (a LAN).
	RoundTripMS *int `json:"round_trip_ms,omitempty"`
	// PowerShellStartMS is the start of a powershell.exe process (Windows PowerShell
	// 5.1, -NoProfile), charged once per command. Default 700.
	PowerShellStartMS *int `json:"powershell_start_ms,omitempty"`
	// AddTypeMS is the C# compilation of Add-Type -TypeDefinition (csc.exe),
	// charged once per process whose script uses Add-Type. Default 1500.
	AddTypeMS *int `json:"add_type_ms,omitempty"`
}

// Default cost figures (design/winrm-stdin-and-cost-model.md says where they
// come from).
const (
	DefaultRoundTripMS       = 1
	DefaultPowerShellStartMS = 700
	DefaultAddTypeMS         = 1500
)

// Cost is a resolved cost model: durations, zero when the model is off.
type Cost struct {
	RoundTrip       time.Duration
	PowerShellStart time.Duration
	AddType         time.Duration
}

// Resolve fills the defaults of an enabled model; a disabled model costs nothing.
func (c CostConfig) Resolve() Cost {
	if !c.Enabled {
		return Cost{}
	}
	pick := func(v *int, def int) time.Duration {
		if v != nil {
			return ms(*v)
		}
		return ms(def)
	}
	return Cost{
		RoundTrip:       pick(c.RoundTripMS, DefaultRoundTripMS),
		PowerShellStart: pick(c.PowerShellStartMS, DefaultPowerShellStartMS),
		AddType:         pick(c.AddTypeMS, DefaultAddTypeMS),
	}
}

func (c CostConfig) validate() error {
	for name, v := range map[string]*int{"round_trip_ms": c.RoundTripMS, "powershell_start_ms": c.PowerShellStartMS, "add_type_ms": c.AddTypeMS} {
		if v != nil && (*v < 0 || *v > 600000) {
			return fmt.Errorf(`cost.%s %d is outside 0..600000`, name, *v)
		}
	}
	return nil
}

// Stats counts what the host was asked to do, for benchmarks.
type Stats struct {
	PowerShellProcesses int64 // powershell.exe processes started
	AddTypeCompilations int64 // processes that compiled C# with Add-Type
	GuardsByWMI         int64 // restart guards created through Win32_Process.Create
	GuardsByTask        int64 // restart guards started by a scheduled task
}

type stats struct {
	powershell atomic.Int64
	addType    atomic.Int64
	guardWMI   atomic.Int64
	guardTask  atomic.Int64
}

// Stats returns the host's counters.
func (h *Host) Stats() Stats {
	return Stats{PowerShellProcesses: h.stats.powershell.Load(), AddTypeCompilations: h.stats.addType.Load(),
		GuardsByWMI: h.stats.guardWMI.Load(), GuardsByTask: h.stats.guardTask.Load()}
}

// Cost returns the host's resolved cost model.
func (h *Host) Cost() Cost { return h.cost }

// chargeProcessStart is a powershell.exe starting: counted, and the model's start
// time spent (cut short when the command is terminated).
func (h *Host) chargeProcessStart(ctx context.Context) {
	h.stats.powershell.Add(1)
	sleepContext(ctx, h.cost.PowerShellStart)
}

// chargeScript charges what running op's script costs beyond the process start:
// the Add-Type compilation when the script compiles C# (once per process).
func (h *Host) chargeScript(ctx context.Context, op contract.Operation) {
	if usesAddType(op) {
		h.stats.addType.Add(1)
		sleepContext(ctx, h.cost.AddType)
	}
}

var addTypeOps sync.Map // contract.Operation → bool

// usesAddType reports whether op's script calls Add-Type on a line of code (not a
// comment): the simulator knows the scripts by content.
func usesAddType(op contract.Operation) bool {
	if v, ok := addTypeOps.Load(op); ok {
		if uses, ok := v.(bool); ok {
			return uses
		}
	}
	script, err := contract.Script(op)
	uses := err == nil && scriptUsesAddType(script)
	addTypeOps.Store(op, uses)
	return uses
}

// scriptUsesAddType reports an Add-Type on a line of code (comments do not count).
func scriptUsesAddType(script string) bool {
	for _, line := range strings.Split(script, "\n") {
		code := strings.TrimSpace(line)
		if !strings.HasPrefix(code, "#") && strings.Contains(strings.ToLower(code), "add-type") {
			return true
		}
	}
	return false
}

// UsesAddType reports whether the simulator charges Add-Type for op's script.
func UsesAddType(op contract.Operation) bool { return usesAddType(op) }

// sleepContext waits d, or until ctx ends; false when ctx ended first.
func sleepContext(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
