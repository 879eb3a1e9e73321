package contract

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

// instanceNames is the table both copies of the rule answer: want is the whole rule
// (ValidateInstanceName); syntax is what the pattern alone says (reserved words have
// a valid syntax).
var instanceNames = []struct {
	name          string
	want, syntax  bool
	errorContains string
}{
	// Valid names, and case variants of them.
	{name: "MSSQLSERVER", want: true, syntax: true},
	{name: "mssqlserver", want: true, syntax: true},
	{name: "MsSqlServer", want: true, syntax: true},
	{name: "REPORTING", want: true, syntax: true},
	{name: "reporting", want: true, syntax: true},
	{name: "SQLEXPRESS", want: true, syntax: true},
	{name: "Sql2022_A", want: true, syntax: true},
	{name: "A$B", want: true, syntax: true},
	{name: "A", want: true, syntax: true},
	{name: "ABCDEFGHIJKLMNOP", want: true, syntax: true}, // 16
	{name: "_ETL", want: true, syntax: true},
	{name: "_etl", want: true, syntax: true},
	{name: "ETL_", want: true, syntax: true},
	{name: "_", want: true, syntax: true},
	{name: "X1$", want: true, syntax: true},

	// Reserved words: valid syntax, refused by the rule, whatever the case.
	{name: "DEFAULT", syntax: true, errorContains: "reserved"},
	{name: "Default", syntax: true, errorContains: "reserved"},
	{name: "select", syntax: true, errorContains: "reserved"},
	{name: "PUBLIC", syntax: true, errorContains: "reserved"},

	// Invalid syntax.
	{name: "", errorContains: "1 to 16"},
	{name: "ABCDEFGHIJKLMNOPQ", errorContains: "1 to 16"}, // 17
	{name: "1SQL", errorContains: "starts with"},
	{name: "$SQL", errorContains: "starts with"},
	{name: "&SQL", errorContains: "starts with"},
	{name: "#SQL", errorContains: "starts with"},
	{name: "SQL-01", errorContains: "not allowed"},
	{name: "SQL 01", errorContains: "not allowed"},
	{name: "SQL#1", errorContains: "not allowed"},
	{name: "SQL&1", errorContains: "not allowed"},
	{name: "SQL@1", errorContains: "not allowed"},
	{name: "SQL';DROP", errorContains: "not allowed"},
	{name: `SQL\X`, errorContains: "not allowed"},
	{name: `SQL"x`, errorContains: "not allowed"},
	{name: "SQL.X", errorContains: "not allowed"},
	{name: "a;b", errorContains: "not allowed"},
	{name: "SQL\n", errorContains: "not allowed"}, // "$" before a final newline must not pass
	{name: "SQL\x00", errorContains: "not allowed"},
	{name: "$(calc)", errorContains: "starts with"},

	// Letters and digits outside ASCII, the ones that reached a host (issue 8).
	{name: "Δ1", errorContains: "non-ASCII"},
	{name: "SQLΔ", errorContains: "non-ASCII"},
	{name: "ЅQL", errorContains: "non-ASCII"},         // Cyrillic DZE, looks like S
	{name: "РЕПОРТ", errorContains: "non-ASCII"},      // Cyrillic
	{name: "ＳＱＬ", errorContains: "non-ASCII"},         // fullwidth
	{name: "SQL１", errorContains: "non-ASCII"},        // fullwidth digit
	{name: "İNST", errorContains: "non-ASCII"},        // Turkish dotted capital I
	{name: "ınst", errorContains: "non-ASCII"},        // Turkish dotless i
	{name: "ſql", errorContains: "non-ASCII"},         // long s, folds to s
	{name: "\u212Aelvin", errorContains: "non-ASCII"}, // Kelvin sign, folds to k
	{name: "SQL٣", errorContains: "non-ASCII"},        // Arabic-Indic digit three
	{name: "SQL۳", errorContains: "non-ASCII"},        // Extended Arabic-Indic digit
	{name: "Prüfung", errorContains: "non-ASCII"},     // Latin-1 letter
	{name: "SQL\u200b", errorContains: "non-ASCII"},   // zero-width space
	{name: "ＭＳＳＱＬＳＥＲＶＥＲ", errorContains: "non-ASCII"}, // fullwidth default instance
}

func TestValidateInstanceName(t *testing.T) {
	for _, tc := range instanceNames {
		err := ValidateInstanceName(tc.name)
		switch {
		case tc.want && err != nil:
			t.Errorf("ValidateInstanceName(%q) = %v; want nil", tc.name, err)
		case !tc.want && err == nil:
			t.Errorf("ValidateInstanceName(%q) = nil; want an error containing %q", tc.name, tc.errorContains)
		case !tc.want && !errors.Is(err, ErrInvalidInstanceName):
			t.Errorf("ValidateInstanceName(%q) = %v; want it to wrap ErrInvalidInstanceName", tc.name, err)
		case !tc.want && !strings.Contains(err.Error(), tc.errorContains):
			t.Errorf("ValidateInstanceName(%q) = %v; want it to contain %q", tc.name, err, tc.errorContains)
		}
		if got := InstanceNameSyntaxValid(tc.name); got != tc.syntax {
			t.Errorf("InstanceNameSyntaxValid(%q) = %v; want %v", tc.name, got, tc.syntax)
		}
	}
}

// psRuleRe finds Test-SqlInstanceName's comparison in common.ps1: the operator and
// the single-quoted pattern.
var psRuleRe = regexp.MustCompile(`(?s)function Test-SqlInstanceName \{.*?\$Name -(c|i)?match '([^']*)'`)

// TestScriptInstanceNameRuleMatchesGo holds the .ps1 copy of the rule against the Go
// definition: the script's pattern, compiled as PowerShell would use it (-match and
// -imatch ignore case), must answer every name of the table as the Go pattern does.
func TestScriptInstanceNameRuleMatchesGo(t *testing.T) {
	src, err := scriptFS.ReadFile("scripts/common.ps1")
	if err != nil {
		t.Fatal(err)
	}
	m := psRuleRe.FindSubmatch(src)
	if m == nil {
		t.Fatal("common.ps1: no `$Name -cmatch '<pattern>'` in function Test-SqlInstanceName")
	}
	op, pattern := string(m[1]), string(m[2])
	// .NET and Go agree on this subset: ^, \z, ASCII classes, a literal "$" in a class.
	goPattern := pattern
	if op != "c" {
		goPattern = "(?i)" + pattern
	}
	ps, err := regexp.Compile(goPattern)
	if err != nil {
		t.Fatalf("common.ps1's pattern %q does not compile: %v", pattern, err)
	}
	for _, tc := range instanceNames {
		if got := ps.MatchString(tc.name); got != tc.syntax {
			t.Errorf("common.ps1 (-%smatch '%s') says %v for %q; the Go rule says %v", op, pattern, got, tc.name, tc.syntax)
		}
	}
	if pattern != InstanceNamePattern {
		t.Errorf("common.ps1's pattern %q differs from contract.InstanceNamePattern %q", pattern, InstanceNamePattern)
	}
}

func TestServiceNames(t *testing.T) {
	cases := []struct{ instance, engine, agent string }{
		{"MSSQLSERVER", "MSSQLSERVER", "SQLSERVERAGENT"},
		{"mssqlserver", "MSSQLSERVER", "SQLSERVERAGENT"},
		{"REPORTING", "MSSQL$REPORTING", "SQLAgent$REPORTING"},
		{"reporting", "MSSQL$REPORTING", "SQLAgent$REPORTING"},
		{"SQLEXPRESS", "MSSQL$SQLEXPRESS", "SQLAgent$SQLEXPRESS"},
		{"_ETL", "MSSQL$_ETL", "SQLAgent$_ETL"},
		{"A$B", "MSSQL$A$B", "SQLAgent$A$B"},
	}
	for _, tc := range cases {
		if got := EngineServiceName(tc.instance); got != tc.engine {
			t.Errorf("EngineServiceName(%q) = %q; want %q", tc.instance, got, tc.engine)
		}
		if got := AgentServiceName(tc.instance); got != tc.agent {
			t.Errorf("AgentServiceName(%q) = %q; want %q", tc.instance, got, tc.agent)
		}
	}
}

// TestScriptServiceNamesMatchGo: Find-SqlInstance in common.ps1 names the Engine's
// service with the same constants.
func TestScriptServiceNamesMatchGo(t *testing.T) {
	src, err := scriptFS.ReadFile("scripts/common.ps1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"$result.ServiceName = '" + DefaultEngineService + "'",
		"$result.ServiceName = '" + EngineServicePrefix + "' + $found",
		"if ($found -ieq '" + DefaultInstance + "')",
	} {
		if !strings.Contains(string(src), want) {
			t.Errorf("common.ps1 lacks %q: its service names drifted from contract.EngineServiceName", want)
		}
	}
}
