package host

import (
	"crypto/sha1"
	"errors"
	"fmt"
	"strings"
)

// ErrHADRDisabled: the instance does not have Always On availability groups enabled.
var ErrHADRDisabled = errors.New("Always On availability groups are not enabled on the instance")

// ErrBadAGRole: the role is not primary, secondary or none.
var ErrBadAGRole = errors.New(`the availability group role must be "primary", "secondary" or "none"`)

// AGRoleNone, given to SetAGRole, removes the instance from its availability group.
const AGRoleNone = "none"

// SetAGRole changes the instance's availability group replica, as a failover
// (primary <-> secondary), joining a group or leaving it (role "none") would. group
// "" keeps the current group. Enabling Always On itself needs the configuration
// (hadr_enabled), as it needs a service restart on Windows.
func (h *Host) SetAGRole(instance, group, role string) error {
	role = strings.ToLower(strings.TrimSpace(role))
	switch role {
	case AGRolePrimary, AGRoleSecondary, AGRoleNone:
	default:
		return fmt.Errorf("%w, not %q", ErrBadAGRole, role)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	inst, ok := h.instanceLocked(instance)
	if !ok {
		return fmt.Errorf("%w: %q on host %s (installed: %s)", ErrNoSuchInstance, instance, h.cfg.Name, strings.Join(h.installedNamesLocked(), ", "))
	}
	if !inst.hadr {
		return fmt.Errorf("%w: %s on host %s; set \"hadr_enabled\": true or an \"availability_group\" in its configuration", ErrHADRDisabled, inst.name, h.cfg.Name)
	}
	if role == AGRoleNone {
		inst.ag = nil
		h.notifyLocked()
		return nil
	}
	if group == "" {
		if inst.ag == nil {
			return fmt.Errorf("instance %s on host %s is in no availability group: name the group to join", inst.name, h.cfg.Name)
		}
		group = inst.ag.Name
	}
	ag := AvailabilityGroupConfig{Name: group, Role: role}
	if inst.ag != nil && strings.EqualFold(inst.ag.Name, group) {
		ag.ClusterType = inst.ag.ClusterType // a failover keeps the group's cluster type
	}
	if err := validateAG(ag); err != nil {
		return err
	}
	inst.ag = &ag
	h.notifyLocked()
	return nil
}

// AGState reports the instance's availability group and role ("" and "" when it is
// in none) and whether Always On is enabled.
func (i *Instance) AGState() (group, role string, hadr bool) {
	i.h.mu.Lock()
	defer i.h.mu.Unlock()
	if i.ag != nil {
		group, role = i.ag.Name, i.ag.Role
	}
	return group, role, i.hadr
}

// nameGUID derives a stable GUID from a name, as the ids of a group and its
// replicas stay the same for the life of the group.
func nameGUID(kind, name string) string {
	sum := sha1.Sum([]byte(kind + "\x00" + strings.ToUpper(name)))
	b := sum[:16]
	b[6] = b[6]&0x0F | 0x50 // version 5 (name-based, SHA-1)
	b[8] = b[8]&0x3F | 0x80 // RFC 4122 variant
	return strings.ToUpper(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]))
}
