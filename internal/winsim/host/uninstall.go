package host

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
)

// ErrNoSuchInstance: the named SQL Server instance is not installed on the host.
var ErrNoSuchInstance = errors.New("no such SQL Server instance")

// UninstallInstance removes an instance as SQL Server Setup's uninstall leaves the
// host:
//   - the instance's services (Engine and Agent) are stopped at once and deleted
//     from the service control manager; waiting for them fails, starting them
//     answers ERROR_SERVICE_DOES_NOT_EXIST (1060);
//   - other services that depended on the Engine or Agent (configured "services")
//     are stopped and stay installed with a dangling dependency: starting them
//     fails with 1075, as Windows does for a dependency marked for deletion;
//   - the instance's registry entries are gone: read_instance answers found = false
//     and no longer lists it among the installed instances; restart_instance answers
//     not_found;
//   - its TDS endpoint closes (the listener hook) and open connections drop;
//   - user rights are untouched: LSA keeps the now-orphaned per-service SID in every
//     holder list it was in (Setup does not revoke rights), and since the service no
//     longer exists the SID no longer translates, so read_instance of another instance
//     and the snapshot show it with an empty name
//     (design/windows-behaviour.md#orphaned-and-untranslatable-sids: orphaned SIDs
//     in holder lists).
//
// The host's configuration (Config) still lists the instance.
func (h *Host) UninstallInstance(name string) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return errors.New("the host model was closed")
	}
	inst, ok := h.instanceLocked(name)
	if !ok {
		installed := h.installedNamesLocked()
		h.mu.Unlock()
		return fmt.Errorf("%w: %q on host %s (installed: %s)", ErrNoSuchInstance, name, h.cfg.Name, strings.Join(installed, ", "))
	}
	remove := []*service{inst.engine}
	if inst.agent != nil {
		remove = append(remove, inst.agent)
	}
	// Stop what depends on the instance's services (deepest first), then the
	// services themselves: Setup stops them before it deletes them.
	var stop []*service
	for _, s := range remove {
		for _, d := range allDependents(s) {
			if !slices.Contains(stop, d) && !slices.Contains(remove, d) {
				stop = append(stop, d)
			}
		}
	}
	if inst.agent != nil {
		stop = append(stop, inst.agent)
	}
	stop = append(stop, inst.engine)
	for _, s := range stop {
		h.stopNowLocked(s)
	}
	if inst.readyTimer != nil {
		inst.readyTimer.Stop()
		inst.readyTimer = nil
	}
	inst.ready = false
	for _, s := range remove {
		s.deleted = true
		delete(h.svcByName, strings.ToUpper(s.name))
		h.services = slices.DeleteFunc(slices.Clone(h.services), func(x *service) bool { return x == s })
		for _, d := range s.dependsOn {
			d.dependents = slices.DeleteFunc(slices.Clone(d.dependents), func(x *service) bool { return x == s })
		}
	}
	h.instances = slices.DeleteFunc(slices.Clone(h.instances), func(x *Instance) bool { return x == inst })
	h.advanceLocked()
	h.notifyLocked()
	h.mu.Unlock()
	// The instance is no longer in h.instances, so syncListeners does not see it:
	// close its listener here.
	inst.syncListener()
	h.syncListeners()
	h.logf("instance %s uninstalled (services %s removed)", inst.name, inst.engine.name)
	return nil
}

// stopNowLocked ends a service's process at once, whatever its state or stop
// duration (the uninstaller's stop; no dependents check).
func (h *Host) stopNowLocked(s *service) {
	s.cancelTimer()
	s.pending = ""
	if s.state == contract.StateStopped {
		return
	}
	if s.inst != nil && s.state == contract.StateRunning {
		s.inst.engineStoppingLocked()
	}
	s.state = contract.StateStopped
	s.pid = 0
	h.recordLocked(s)
	if s.inst != nil {
		s.inst.processEndedLocked(false)
	}
}

// installedNames lists the installed instances' names, as the registry's
// "Instance Names\SQL" key does.
func (h *Host) installedNames() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.installedNamesLocked()
}

func (h *Host) installedNamesLocked() []string {
	names := make([]string, 0, len(h.instances))
	for _, i := range h.instances {
		names = append(names, i.name)
	}
	return names
}
