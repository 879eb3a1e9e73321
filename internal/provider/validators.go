package provider

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

// DefaultInstance is the name of SQL Server's default instance.
const DefaultInstance = "MSSQLSERVER"

// reservedInstanceNames are words SQL Server Setup refuses as instance names:
// "Default" and the Transact-SQL reserved keywords.
var reservedInstanceNames = map[string]bool{}

func init() {
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
		reservedInstanceNames[w] = true
	}
}

// checkInstanceName applies SQL Server Setup's rules: MSSQLSERVER (the default
// instance), or a named instance of 1 to 16 characters that starts with a letter or
// "_" and continues with letters, digits, "_" or "$", and is not a reserved word.
func checkInstanceName(name string) error {
	if strings.EqualFold(name, DefaultInstance) {
		return nil
	}
	n := len([]rune(name))
	if n == 0 || n > 16 {
		return fmt.Errorf("a named instance has 1 to 16 characters; %q has %d (use %q for the default instance)", name, n, DefaultInstance)
	}
	if reservedInstanceNames[strings.ToUpper(name)] {
		return fmt.Errorf("%q is a reserved word that SQL Server Setup refuses as an instance name; for the default instance use %q", name, DefaultInstance)
	}
	for i, r := range name {
		switch {
		case unicode.IsLetter(r) || r == '_':
		case i > 0 && (unicode.IsDigit(r) || r == '$'):
		case i == 0:
			return fmt.Errorf("an instance name starts with a letter or \"_\", not %q", r)
		default:
			return fmt.Errorf("the character %q is not allowed in an instance name: use letters, digits, \"_\" and \"$\" only", r)
		}
	}
	return nil
}

// checkHost accepts a DNS name (letters, digits, "-" and "_" in dot-separated labels
// of at most 63 characters, 253 in all) or an IPv4/IPv6 literal; anything else
// (spaces, quotes, backslashes, semicolons, URLs, ports) is refused.
func checkHost(host string) error {
	if host == "" {
		return fmt.Errorf("the host is empty: give a DNS name such as sql01.example.com or an IP address")
	}
	if net.ParseIP(host) != nil {
		return nil
	}
	name := strings.TrimSuffix(host, ".")
	if len(name) == 0 || len(name) > 253 {
		return fmt.Errorf("%q is not a DNS name of 1 to 253 characters", host)
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("%q is not a DNS name: each dot-separated part has 1 to 63 characters", host)
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("%q is not a DNS name: a part may not start or end with \"-\"", host)
		}
		for _, r := range label {
			if !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) || r == '-' || r == '_') {
				return fmt.Errorf("%q is not a DNS name or IP address: the character %q is not allowed (give the name only, without scheme, port or path)", host, r)
			}
		}
	}
	return nil
}

// checkSPN accepts a service principal name SERVICE/host[:port], such as
// HTTP/sql01.contoso.com, where host is a DNS name or an IP address.
func checkSPN(spn string) error {
	class, host, ok := strings.Cut(spn, "/")
	if !ok || class == "" || strings.ContainsAny(class, " \\@:") {
		return fmt.Errorf("%q is not a service principal name: write it as SERVICE/host, for example HTTP/sql01.contoso.com", spn)
	}
	if h, port, ok := strings.Cut(host, ":"); ok && net.ParseIP(host) == nil {
		if _, err := strconv.Atoi(port); err != nil {
			return fmt.Errorf("%q is not a service principal name: the part after the host's \":\" must be a port number", spn)
		}
		host = h
	}
	if err := checkHost(host); err != nil {
		return fmt.Errorf("%q is not a service principal name: %v", spn, err)
	}
	return nil
}

// checkDuration accepts a positive Go duration such as "60s" or "2m".
func checkDuration(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return fmt.Errorf("%q is not a positive duration such as \"60s\" or \"2m\"", s)
	}
	return nil
}

// checkPEM accepts one or more PEM-encoded certificates.
func checkPEM(s string) error {
	rest := []byte(s)
	n := 0
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return fmt.Errorf("a PEM block does not hold a valid certificate: %v", err)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("no PEM certificate found: give the CA certificate's text, starting with -----BEGIN CERTIFICATE-----" +
			" (for a file, use file(\"ca.pem\"))")
	}
	return nil
}

// stringCheck adapts a check function to a schema validator.
type stringCheck struct {
	desc  string
	check func(string) error
}

var (
	_ validator.String = stringCheck{}

	instanceNameValidator = stringCheck{"a SQL Server instance name: MSSQLSERVER, or 1-16 letters, digits, _ or $ starting with a letter or _", checkInstanceName}
	hostValidator         = stringCheck{"a DNS name or an IP address", checkHost}
	durationValidator     = stringCheck{"a positive duration such as \"60s\"", checkDuration}
	pemValidator          = stringCheck{"PEM-encoded certificates", checkPEM}
	spnValidator          = stringCheck{"a service principal name such as HTTP/sql01.contoso.com", checkSPN}
)

func (v stringCheck) Description(context.Context) string         { return "value must be " + v.desc }
func (v stringCheck) MarkdownDescription(context.Context) string { return "value must be " + v.desc }

func (v stringCheck) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := v.check(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid value", err.Error())
	}
}
