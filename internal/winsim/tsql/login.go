package tsql

import "strings"

// LoginConfig is one SQL login. A name with a backslash (DOMAIN\user) is a
// Windows login (CREATE LOGIN ... FROM WINDOWS): it logs on only by integrated
// authentication (Kerberos or NTLM, through the host's security package), and has
// no password.
type LoginConfig struct {
	Name     string `json:"name"`
	Password string `json:"password,omitempty"`
	// ViewServerState grants VIEW SERVER STATE (needed for the DMVs). Default true.
	ViewServerState *bool `json:"view_server_state,omitempty"`
	// ViewAnyDefinition grants VIEW ANY DEFINITION: without it (and without
	// sysadmin) catalog views such as sys.availability_groups show no rows, and no
	// error (metadata visibility). Default false.
	ViewAnyDefinition bool `json:"view_any_definition,omitempty"`
	// Sysadmin makes the login a member of sysadmin. Default: true for "sa" only.
	Sysadmin *bool `json:"sysadmin,omitempty"`
	// DBCreator makes the login a member of the dbcreator fixed server role (CREATE
	// ANY DATABASE): it may create databases, and alter and drop those it owns.
	DBCreator bool `json:"dbcreator,omitempty"`
}

// IsSysadmin reports membership in sysadmin (default: "sa" only).
func (l LoginConfig) IsSysadmin() bool {
	if l.Sysadmin != nil {
		return *l.Sysadmin
	}
	return strings.EqualFold(l.Name, "sa")
}

// CanCreateDatabase reports CREATE ANY DATABASE: dbcreator or sysadmin.
func (l LoginConfig) CanCreateDatabase() bool { return l.DBCreator || l.IsSysadmin() }

// CanViewServerState reports the ViewServerState flag (default true).
func (l LoginConfig) CanViewServerState() bool { return l.ViewServerState == nil || *l.ViewServerState }

// CanViewDefinitions reports whether catalog views show the login their rows:
// VIEW ANY DEFINITION, or sysadmin.
func (l LoginConfig) CanViewDefinitions() bool { return l.ViewAnyDefinition || l.IsSysadmin() }
