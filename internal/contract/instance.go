package contract

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/safetext"
)

// DefaultInstance is the name of SQL Server's default instance.
const DefaultInstance = "MSSQLSERVER"

// MaxInstanceNameLength is the longest named instance's name SQL Server Setup accepts.
const MaxInstanceNameLength = 16

// InstanceNamePattern is the syntax of an instance name, the one definition the
// provider, the simulator and the scripts share. common.ps1's Test-SqlInstanceName
// holds the same text (Windows PowerShell's -cmatch; instance_test.go holds the two
// against one table of names). It is case-sensitive on purpose: .NET's
// case-insensitive matching folds the Kelvin sign (U+212A) to "k" and, in some
// cultures, "İ" to "i", so a case-insensitive [A-Za-z] lets non-ASCII letters through.
//
// The rule, from Microsoft's "Installation Wizard Help", section "Instance
// Configuration" (learn.microsoft.com/sql/sql-server/install/instance-configuration):
//   - instance names are not case-sensitive, and at most 16 characters;
//   - MSSQLSERVER names the default instance; "Default" and the Transact-SQL reserved
//     keywords (learn.microsoft.com/sql/t-sql/language-elements/reserved-keywords-transact-sql)
//     are refused;
//   - the first character is a letter; then letters, decimal digits, "$" or "_";
//     spaces and other characters (\ , : ; ' & - @ among them) are not allowed.
//
// Two deliberate departures, both about names that can reach a host:
//   - ASCII only. Setup accepts letters and digits of other scripts that the Windows
//     code page holds, but those are where tools disagree (case folding, code pages,
//     look-alikes such as Cyrillic "А" for Latin "A", fullwidth letters, "ſ", Arabic-Indic
//     digits). The provider refuses them before anything reaches a host.
//   - A leading (or trailing) "_" is accepted. Today's Setup refuses it, but SQL
//     Server 2000's Books Online allowed "_" (and "&", "#") as the first character, and
//     an instance keeps its name across in-place upgrades, so hosts have instances such
//     as "_ETL" that the provider must be able to manage. "&" and "#" stay refused: the
//     current rule forbids "&" anywhere, and Setup does not support "#" in instance IDs.
const InstanceNamePattern = `^[A-Za-z_][A-Za-z0-9_$]{0,15}\z`

var instanceNameRe = regexp.MustCompile(InstanceNamePattern)

// ErrInvalidInstanceName is wrapped by every error ValidateInstanceName returns.
var ErrInvalidInstanceName = errors.New("not a SQL Server instance name")

// InstanceNameRule says the rule in one line, for schema descriptions and messages.
const InstanceNameRule = "MSSQLSERVER (the default instance), or 1 to 16 ASCII letters, digits, \"_\" and \"$\", " +
	"starting with a letter or \"_\", not a reserved word"

// IsDefaultInstance reports whether name is the default instance's (case-insensitive).
func IsDefaultInstance(name string) bool { return strings.EqualFold(name, DefaultInstance) }

// InstanceNameSyntaxValid reports whether name has an instance name's syntax: what
// the operations' scripts check before using a name in a registry path or a service
// name. ValidateInstanceName checks reserved words as well.
func InstanceNameSyntaxValid(name string) bool { return instanceNameRe.MatchString(name) }

// ValidateInstanceName applies the instance-name rule (InstanceNamePattern). The
// error wraps ErrInvalidInstanceName and says what is wrong in the name.
func ValidateInstanceName(name string) error {
	if IsDefaultInstance(name) {
		return nil
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidInstanceName, fmt.Sprintf(format, args...))
	}
	if n := len([]rune(name)); n == 0 || n > MaxInstanceNameLength {
		return bad("a named instance has 1 to %d characters; %q has %d (use %s for the default instance)",
			MaxInstanceNameLength, name, n, DefaultInstance)
	}
	for i, r := range name {
		if instanceNameRe.MatchString(string(r)) || i > 0 && instanceNameRe.MatchString("A"+string(r)) {
			continue
		}
		switch {
		case r > 0x7f:
			return bad("%q holds the non-ASCII character %q (U+%04X); use ASCII letters, digits, \"_\" and \"$\" only", name, r, r)
		case i == 0:
			return bad("%q starts with %q; an instance name starts with a letter or \"_\"", name, r)
		default:
			return bad("the character %q in %q is not allowed; use letters, digits, \"_\" and \"$\" only", r, name)
		}
	}
	if !instanceNameRe.MatchString(name) { // every character passed, so only the pattern's shape is left to fail
		return bad("%q does not match %s", name, InstanceNamePattern)
	}
	if reservedInstanceNames[strings.ToUpper(name)] {
		return bad("%q is a reserved word that SQL Server Setup refuses as an instance name; for the default instance use %s",
			name, DefaultInstance)
	}
	return nil
}

// reservedInstanceNames are "DEFAULT" and the Transact-SQL reserved keywords, which
// SQL Server Setup refuses as instance names.
var reservedInstanceNames = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`DEFAULT ADD ALL ALTER AND ANY AS ASC AUTHORIZATION BACKUP BEGIN BETWEEN BREAK BROWSE
		BULK BY CASCADE CASE CHECK CHECKPOINT CLOSE CLUSTERED COALESCE COLLATE COLUMN COMMIT COMPUTE CONSTRAINT
		CONTAINS CONTAINSTABLE CONTINUE CONVERT CREATE CROSS CURRENT CURRENT_DATE CURRENT_TIME CURRENT_TIMESTAMP
		CURRENT_USER CURSOR DATABASE DBCC DEALLOCATE DECLARE DELETE DENY DESC DISK DISTINCT DISTRIBUTED DOUBLE
		DROP DUMP ELSE END ERRLVL ESCAPE EXCEPT EXEC EXECUTE EXISTS EXIT EXTERNAL FETCH FILE FILLFACTOR FOR
		FOREIGN FREETEXT FREETEXTTABLE FROM FULL FUNCTION GOTO GRANT GROUP HAVING HOLDLOCK IDENTITY
		IDENTITY_INSERT IDENTITYCOL IF IN INDEX INNER INSERT INTERSECT INTO IS JOIN KEY KILL LEFT LIKE LINENO
		LOAD MERGE NATIONAL NOCHECK NONCLUSTERED NOT NULL NULLIF OF OFF OFFSETS ON OPEN OPENDATASOURCE
		OPENQUERY OPENROWSET OPENXML OPTION OR ORDER OUTER OVER PERCENT PIVOT PLAN PRECISION PRIMARY PRINT PROC
		PROCEDURE PUBLIC RAISERROR READ READTEXT RECONFIGURE REFERENCES REPLICATION RESTORE RESTRICT RETURN
		REVERT REVOKE RIGHT ROLLBACK ROWCOUNT ROWGUIDCOL RULE SAVE SCHEMA SECURITYAUDIT SELECT
		SEMANTICKEYPHRASETABLE SEMANTICSIMILARITYDETAILSTABLE SEMANTICSIMILARITYTABLE SESSION_USER SET SETUSER
		SHUTDOWN SOME STATISTICS SYSTEM_USER TABLE TABLESAMPLE TEXTSIZE THEN TO TOP TRAN TRANSACTION TRIGGER
		TRUNCATE TRY_CONVERT TSEQUAL UNION UNIQUE UNPIVOT UPDATE UPDATETEXT USE USER VALUES VARYING VIEW
		WAITFOR WHEN WHERE WHILE WITH WITHIN WRITETEXT`) {
		m[w] = true
	}
	return m
}()

// Service names Setup gives an instance's services. Setup upper-cases a named
// instance's name, so MSSQL$REPORTING is the Engine of instance "reporting". Windows
// compares service names without case.
const (
	DefaultEngineService = "MSSQLSERVER"    // the default instance's Database Engine
	DefaultAgentService  = "SQLSERVERAGENT" // the default instance's SQL Server Agent
	EngineServicePrefix  = "MSSQL$"         // a named instance's Engine: MSSQL$NAME
	AgentServicePrefix   = "SQLAgent$"      // a named instance's Agent: SQLAgent$NAME
)

// EngineServiceName returns the Database Engine's service name: MSSQLSERVER for the
// default instance, MSSQL$NAME for a named one. common.ps1's Find-SqlInstance builds
// the same name on a host (instance_test.go checks its text).
func EngineServiceName(instance string) string {
	if IsDefaultInstance(instance) {
		return DefaultEngineService
	}
	return EngineServicePrefix + strings.ToUpper(instance)
}

// AgentServiceName returns SQL Server Agent's service name: SQLSERVERAGENT for the
// default instance, SQLAgent$NAME for a named one.
func AgentServiceName(instance string) string {
	if IsDefaultInstance(instance) {
		return DefaultAgentService
	}
	return AgentServicePrefix + strings.ToUpper(instance)
}

// MaxServiceNameLength is the longest service name Windows accepts (CreateService:
// "The maximum string length is 256 characters").
const MaxServiceNameLength = 256

// ErrInvalidServiceName is wrapped by every error CheckEngineServiceName returns.
var ErrInvalidServiceName = errors.New("not the instance's Database Engine service name")

// CheckEngineServiceName checks the Database Engine service name a host reports
// for instance before anything uses it (a service SID is computed from it, messages
// show it): a Windows service name (CreateService: at most MaxServiceNameLength
// characters, no "/" or "\"), and the one Setup gives the instance's Engine
// (EngineServiceName), compared without case in ASCII only: Unicode case folding
// takes the Kelvin sign for "K", and only printable ASCII characters are accepted,
// so no control character, escape sequence or line break passes. The error wraps
// ErrInvalidServiceName and shows name quoted with Go's escapes (%q).
func CheckEngineServiceName(instance, name string) error {
	want := EngineServiceName(instance)
	instance = safetext.Escape(instance)
	if len(name) == 0 || len(name) > MaxServiceNameLength || strings.ContainsAny(name, `/\`) {
		return fmt.Errorf("%w: %q is not a Windows service name (1 to %d characters, no \"/\" or \"\\\"); instance %s's Engine is %s",
			ErrInvalidServiceName, name, MaxServiceNameLength, instance, want)
	}
	for _, r := range name {
		if r < 0x21 || r > 0x7e {
			return fmt.Errorf("%w: %q holds the character %q (U+%04X), which no Engine service name Setup gives holds; instance %s's Engine is %s",
				ErrInvalidServiceName, name, r, r, instance, want)
		}
	}
	if !strings.EqualFold(name, want) {
		return fmt.Errorf("%w: %q is not instance %s's Engine service name, %s", ErrInvalidServiceName, name, instance, want)
	}
	return nil
}
