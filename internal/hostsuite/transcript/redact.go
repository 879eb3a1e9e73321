package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsid"
)

// Known names what Redact must replace that no pattern can find.
type Known struct {
	// Secrets are passwords and keys: never recorded on purpose, and replaced by
	// "[secret]" wherever one still appears.
	Secrets []string
	// Hosts are host names, FQDNs, computer and cluster names.
	Hosts []string
	// Domains are NetBIOS and DNS domain names and Kerberos realms.
	Domains []string
	// Users are user and login names, with or without a domain (DOMAIN\user,
	// user@realm).
	Users []string
}

func (k Known) clone() Known {
	return Known{Secrets: append([]string(nil), k.Secrets...), Hosts: append([]string(nil), k.Hosts...),
		Domains: append([]string(nil), k.Domains...), Users: append([]string(nil), k.Users...)}
}

func (k Known) merge(o Known) Known {
	k.Secrets = append(k.Secrets, o.Secrets...)
	k.Hosts = append(k.Hosts, o.Hosts...)
	k.Domains = append(k.Domains, o.Domains...)
	k.Users = append(k.Users, o.Users...)
	return k
}

// survivors lists which secrets and names still appear in raw (case-insensitive for
// names), each described without repeating it.
func (k Known) survivors(raw []byte) []string {
	var left []string
	lower := bytes.ToLower(raw)
	for i, s := range k.Secrets {
		if s != "" && bytes.Contains(raw, []byte(s)) {
			left = append(left, fmt.Sprintf("secret #%d", i+1))
		}
	}
	check := func(what string, names []string) {
		for i, n := range names {
			for _, part := range nameParts(n) {
				if keepName(part) || len(part) < minNameLen {
					continue
				}
				if containsWord(lower, []byte(strings.ToLower(part))) {
					left = append(left, fmt.Sprintf("%s #%d", what, i+1))
					break
				}
			}
		}
	}
	check("host name", k.Hosts)
	check("domain name", k.Domains)
	check("user name", k.Users)
	return left
}

// minNameLen: shorter names are not replaced in free text (a user "sa" would
// replace every "sa" in every message); they are replaced where the transcript's
// structure names them.
const minNameLen = 3

// nameParts splits DOMAIN\user and user@realm into their names.
func nameParts(n string) []string {
	n = strings.TrimSpace(n)
	if d, u, ok := strings.Cut(n, `\`); ok {
		return []string{n, d, u}
	}
	if u, d, ok := strings.Cut(n, "@"); ok {
		return []string{n, u, d}
	}
	return []string{n}
}

func containsWord(hay, needle []byte) bool {
	for i := 0; ; {
		j := bytes.Index(hay[i:], needle)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(needle)
		if (start == 0 || !nameByte(hay[start-1])) && (end == len(hay) || !nameByte(hay[end])) {
			return true
		}
		i = start + 1
	}
}

func nameByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-' || b == '$'
}

// Account names Windows and SQL Server give every host: never replaced.
var builtinNames = map[string]bool{
	"administrator": true, "administrators": true, "guest": true, "system": true, "localsystem": true,
	"localservice": true, "networkservice": true, "local service": true, "network service": true,
	"defaultaccount": true, "wdagutilityaccount": true, "sa": true, "builtin": true, "nt service": true,
	"nt authority": true, "nt virtual machine": true, "iis apppool": true, "window manager": true,
	"font driver host": true, "everyone": true, "users": true, "public": true, "domain admins": true,
	"domain users": true, "domain computers": true, "domain controllers": true, "enterprise admins": true,
	"schema admins": true, "remote management users": true,
}

func keepName(n string) bool { return builtinNames[strings.ToLower(strings.TrimSpace(n))] }

// Services whose per-service SID (S-1-5-80-...) is derived from a public name: kept.
var publicServices = []string{"MSSQLSERVER", "SQLSERVERAGENT", "MSSQLLaunchpad", "SQLTELEMETRY", "MSSQLFDLauncher",
	"MSSQLServerOLAPService", "ReportServer", "SQLBrowser", "SQLWriter", "MsDtsServer160", "SSISTELEMETRY160",
	"SQLPBENGINE", "SQLPBDMS", "WinRM", "TrustedInstaller"}

// Redact returns a copy of t in which secrets, host and domain names, user names,
// SIDs, IP addresses, certificate thumbprints, SPNs and file paths are replaced by
// placeholders, consistently: one value gets one placeholder throughout the
// transcript (host-1, DOMAIN-1, domain-1.example, user-1, S-1-5-21-1000000001-...,
// 192.0.2.1, 2001:db8::1, a 40-digit thumbprint, C:\path-1, \\host-1\path-2).
//
// Kept: well-known SIDs (S-1-5-32-544, S-1-5-18, ...), domain RIDs below 1000
// (500 Administrator, 512 Domain Admins), the per-service SIDs of SQL Server's and
// Windows' public service names and of the transcript's instances (others keep the
// shape S-1-5-80-<five numbers>), built-in account names, loopback addresses,
// instance names, versions. What Redact cannot know (names inside free text it was
// never told, database and availability group names) a human checks before
// committing (testdata/realhost/README.md).
func Redact(t *Transcript, k Known) *Transcript {
	r := newRedactor(k)
	r.learnTranscript(t)
	out := *t
	out.Host = r.hostName(t.Host)
	out.Note = r.text(t.Note)
	out.Facts.Dependents = append([]string(nil), t.Facts.Dependents...)
	out.Entries = make([]Entry, len(t.Entries))
	for i, e := range t.Entries {
		e.Params = r.rawJSON(e.Params)
		e.Stdout = r.rawJSON(e.Stdout)
		e.Stderr = r.text(e.Stderr)
		e.SQL = r.text(e.SQL)
		e.Error = r.text(e.Error)
		e.Note = r.text(e.Note)
		if len(e.Rows) > 0 {
			rows := make([][]any, len(e.Rows))
			for j, row := range e.Rows {
				rows[j] = make([]any, len(row))
				for c, v := range row {
					col := ""
					if c < len(e.Columns) {
						col = e.Columns[c]
					}
					rows[j][c] = r.value(col, v)
				}
			}
			e.Rows = rows
		}
		if e.Shape != nil {
			s := *e.Shape
			e.Shape = &s
		}
		out.Entries[i] = e
	}
	return &out
}

// redactor holds one transcript's placeholders.
type redactor struct {
	secrets  []string
	names    []knownName         // longest first once sorted
	kinds    map[string]string   // lower-case name → kind (host, domain, dnsdomain, user)
	places   map[string]string   // kind + "\x00" + lower-case value → placeholder
	counts   map[string]int      // kind → placeholders given
	keptSIDs map[string]bool     // per-service SIDs to keep
	sidDoms  map[string]string   // S-1-5-21 domain part → placeholder domain part
	rids     map[string][]string // placeholder domain → RIDs given, for numbering
	sorted   bool
}

type knownName struct{ lower, kind string }

func newRedactor(k Known) *redactor {
	r := &redactor{kinds: map[string]string{}, places: map[string]string{}, counts: map[string]int{},
		keptSIDs: map[string]bool{}, sidDoms: map[string]string{}, rids: map[string][]string{}}
	for _, s := range k.Secrets {
		if s != "" {
			r.secrets = append(r.secrets, s)
		}
	}
	// Longest first, so a secret containing another is replaced whole.
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
	for _, svc := range publicServices {
		r.keptSIDs[winsid.ServiceSID(svc)] = true
	}
	for _, h := range k.Hosts {
		r.learnHost(h)
	}
	for _, d := range k.Domains {
		r.learnDomain(d)
	}
	for _, u := range k.Users {
		r.learnAccount(u)
	}
	return r
}

// learnInstance keeps an instance's service SIDs.
func (r *redactor) learnInstance(name string) {
	name = strings.TrimSpace(name)
	if name == "" {
		return
	}
	if strings.EqualFold(name, "MSSQLSERVER") {
		return
	}
	for _, svc := range []string{"MSSQL$" + name, "SQLAgent$" + name, "MSSQLLaunchpad$" + name, "MSSQLFDLauncher$" + name} {
		r.keptSIDs[winsid.ServiceSID(svc)] = true
	}
}

func (r *redactor) learn(name, kind string) {
	name = strings.TrimSpace(name)
	if name == "" || keepName(name) || net.ParseIP(name) != nil {
		return
	}
	l := strings.ToLower(name)
	if _, ok := r.kinds[l]; ok {
		return
	}
	r.kinds[l] = kind
	r.names = append(r.names, knownName{lower: l, kind: kind})
	r.sorted = false
}

// learnHost learns a host name; an FQDN teaches its first label and its domain.
func (r *redactor) learnHost(h string) {
	h = strings.TrimSpace(h)
	if h == "" || net.ParseIP(h) != nil || strings.EqualFold(h, "localhost") {
		return
	}
	if first, rest, ok := strings.Cut(h, "."); ok {
		r.learn(first, "host")
		r.learn(rest, "dnsdomain")
		r.learn(h, "fqdn")
		return
	}
	r.learn(h, "host")
}

func (r *redactor) learnDomain(d string) {
	d = strings.TrimSpace(d)
	if strings.Contains(d, ".") {
		r.learn(d, "dnsdomain")
		return
	}
	r.learn(d, "domain")
}

// learnAccount learns DOMAIN\user, user@realm or user; a domain that is a known host
// is the host's own (a local account).
func (r *redactor) learnAccount(a string) {
	a = strings.TrimSpace(a)
	if a == "" || keepName(a) {
		return
	}
	if d, u, ok := strings.Cut(a, `\`); ok {
		if keepName(d) || d == "." {
			return // NT SERVICE\x, NT AUTHORITY\x, BUILTIN\x, .\LocalSystem
		}
		if r.kinds[strings.ToLower(d)] == "" {
			r.learnDomain(d)
		}
		r.learn(u, "user")
		return
	}
	if u, d, ok := strings.Cut(a, "@"); ok {
		r.learn(u, "user")
		r.learnDomain(d)
		return
	}
	r.learn(a, "user")
}

// Keys and columns whose values name hosts or accounts.
func hostKey(k string) bool {
	k = strings.ToLower(k)
	return k == "host" || strings.Contains(k, "computer") || strings.Contains(k, "machine") ||
		strings.Contains(k, "server_name") || k == "servername" || strings.Contains(k, "node") || k == "hostname"
}

func accountKey(k string) bool {
	k = strings.ToLower(k)
	return strings.Contains(k, "account") || strings.Contains(k, "login") || k == "user" || k == "username" || k == "user_name"
}

// learnTranscript learns the names the transcript's structure reveals.
func (r *redactor) learnTranscript(t *Transcript) {
	r.learnHost(t.Host)
	r.learnInstance(t.Facts.Instance)
	for _, e := range t.Entries {
		for _, raw := range []json.RawMessage{e.Params, e.Stdout} {
			if v, ok := decode(raw); ok {
				r.learnValue("", v)
			}
		}
		for _, row := range e.Rows {
			for c, v := range row {
				if s, ok := v.(string); ok && c < len(e.Columns) {
					r.learnField(e.Columns[c], s)
				}
			}
		}
	}
}

func (r *redactor) learnValue(key string, v any) {
	switch t := v.(type) {
	case map[string]any:
		// A principal {"sid": ..., "name": "DOMAIN\\user"}.
		if name, ok := t["name"].(string); ok {
			if _, isPrincipal := t["sid"]; isPrincipal {
				r.learnAccount(name)
			}
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			r.learnValue(k, t[k])
		}
	case []any:
		for _, e := range t {
			r.learnValue(key, e)
		}
	case string:
		r.learnField(key, t)
	}
}

func (r *redactor) learnField(key, s string) {
	switch lk := strings.ToLower(key); {
	case lk == "instance" || lk == "installed_instances" || lk == "instance_name":
		r.learnInstance(s)
	case hostKey(key):
		h, _, _ := strings.Cut(s, `\`) // SERVER\INSTANCE
		r.learnHost(h)
	case accountKey(key):
		r.learnAccount(s)
	}
}

func decode(raw json.RawMessage) (any, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	return v, true
}

// rawJSON redacts every string of a JSON value (keys stay).
func (r *redactor) rawJSON(raw json.RawMessage) json.RawMessage {
	v, ok := decode(raw)
	if !ok {
		if len(raw) == 0 {
			return raw
		}
		return mustJSON(r.text(string(raw)))
	}
	return mustJSON(r.walk("", v))
}

func (r *redactor) walk(key string, v any) any {
	switch t := v.(type) {
	case map[string]any:
		// In key order, so the placeholders' numbers do not depend on map order.
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			t[k] = r.walk(k, t[k])
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = r.walk(key, e)
		}
		return t
	case string:
		return r.field(key, t)
	}
	return v
}

// value redacts one SQL value of a column.
func (r *redactor) value(col string, v any) any {
	if s, ok := v.(string); ok {
		return r.field(col, s)
	}
	return v
}

// field redacts a string under a key: versions stay as they are (four dotted
// numbers that are no address).
func (r *redactor) field(key, s string) string {
	if strings.Contains(strings.ToLower(key), "version") {
		return s
	}
	return r.text(s)
}

// span is one replacement in a text.
type span struct {
	start, end int
	with       string
}

var (
	spnPattern  = regexp.MustCompile(`(?i)\b(HTTPS?|WSMAN|MSSQLSvc|HOST|RestrictedKrbHost|TERMSRV|CIFS|LDAP|GC|DNS|krbtgt)/([A-Za-z0-9](?:[A-Za-z0-9\-]|\.[A-Za-z0-9])*)(:[0-9A-Za-z$_]+)?(@[A-Za-z0-9](?:[A-Za-z0-9\-]|\.[A-Za-z0-9])*)?`)
	uncPattern  = regexp.MustCompile(`\\\\([A-Za-z0-9](?:[A-Za-z0-9\-]|\.[A-Za-z0-9])*)((?:\\[^\\\s"'<>|*?:]+(?: [^\\\s"'<>|*?:]+)*)*)`)
	pathPattern = regexp.MustCompile(`\b([A-Za-z]):\\(?:[^\\\s"'<>|*?:]+(?: [^\\\s"'<>|*?:]+)*\\)*[^\\\s"'<>|*?:]*`)
	sidPattern  = regexp.MustCompile(`\bS-1-[0-9]+(?:-[0-9]+)+\b`)
	hexPattern  = regexp.MustCompile(`\b(?:[0-9A-Fa-f]{64}|[0-9A-Fa-f]{40})\b`)
	ipv6Pattern = regexp.MustCompile(`[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*(?:%[0-9A-Za-z]+)?`)
	ipv4Pattern = regexp.MustCompile(`\b(?:[0-9]{1,3}\.){3}[0-9]{1,3}\b`)
)

// text redacts a free text in one pass: every finder proposes spans, earlier finders
// win overlaps, and the text is rebuilt once, so no placeholder is ever redacted again.
func (r *redactor) text(s string) string {
	if s == "" {
		return s
	}
	var spans []span
	free := func(a, b int) bool {
		for _, sp := range spans {
			if a < sp.end && sp.start < b {
				return false
			}
		}
		return true
	}
	add := func(a, b int, with string) {
		if a < b && free(a, b) {
			spans = append(spans, span{a, b, with})
		}
	}
	for _, sec := range r.secrets {
		for i := 0; ; {
			j := strings.Index(s[i:], sec)
			if j < 0 {
				break
			}
			add(i+j, i+j+len(sec), "[secret]")
			i += j + len(sec)
		}
	}
	for _, m := range spnPattern.FindAllStringSubmatchIndex(s, -1) {
		with := s[m[2]:m[3]] + "/" + r.hostName(s[m[4]:m[5]])
		if m[6] >= 0 {
			with += s[m[6]:m[7]]
		}
		if m[8] >= 0 {
			with += "@" + r.domainName(s[m[8]+1:m[9]])
		}
		add(m[0], m[1], with)
	}
	for _, m := range uncPattern.FindAllStringSubmatchIndex(s, -1) {
		m[1], m[5] = clixmlEnd(s, m[4], m[1]), clixmlEnd(s, m[4], m[5])
		with := `\\` + r.hostName(s[m[2]:m[3]])
		if m[5] > m[4] {
			with += `\` + r.place("path", s[m[4]:m[5]], "path-")
		}
		add(m[0], m[1], with)
	}
	for _, m := range pathPattern.FindAllStringSubmatchIndex(s, -1) {
		m[1] = clixmlEnd(s, m[0], m[1])
		drive := s[m[2]:m[3]]
		rest := s[m[3]+2 : m[1]]
		with := drive + `:\`
		if rest != "" {
			with += r.place("path", strings.ToLower(drive)+":"+rest, "path-")
		}
		add(m[0], m[1], with)
	}
	for _, m := range sidPattern.FindAllStringIndex(s, -1) {
		add(m[0], m[1], r.sid(s[m[0]:m[1]]))
	}
	for _, m := range hexPattern.FindAllStringIndex(s, -1) {
		h := s[m[0]:m[1]]
		add(m[0], m[1], r.place("thumbprint", h, fmt.Sprintf("%%0%dX", len(h))))
	}
	for _, m := range ipv6Pattern.FindAllStringIndex(s, -1) {
		a := strings.Trim(s[m[0]:m[1]], ".")
		addr, _, _ := strings.Cut(a, "%")
		ip := net.ParseIP(addr)
		if ip == nil || ip.To4() != nil && !strings.Contains(addr, "::") || ip.IsLoopback() || ip.IsUnspecified() {
			continue
		}
		start := m[0] + strings.Index(s[m[0]:m[1]], a)
		add(start, start+len(a), r.place("ipv6", strings.ToLower(a), "2001:db8::%x"))
	}
	for _, m := range ipv4Pattern.FindAllStringIndex(s, -1) {
		a := s[m[0]:m[1]]
		ip := net.ParseIP(a)
		if ip == nil || ip.IsLoopback() || ip.IsUnspecified() || a == "255.255.255.255" || afterVersion(s, m[0]) {
			continue
		}
		add(m[0], m[1], r.ipv4(a))
	}
	r.sortNames()
	lower := strings.ToLower(s)
	for _, n := range r.names {
		if len(n.lower) < minNameLen {
			continue
		}
		for i := 0; ; {
			j := strings.Index(lower[i:], n.lower)
			if j < 0 {
				break
			}
			a, b := i+j, i+j+len(n.lower)
			if (a == 0 || !nameByte(lower[a-1])) && (b == len(lower) || !nameByte(lower[b])) {
				add(a, b, r.nameOf(n.kind, s[a:b]))
			}
			i = a + 1
		}
	}
	if len(spans) == 0 {
		return s
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	var sb strings.Builder
	last := 0
	for _, sp := range spans {
		sb.WriteString(s[last:sp.start])
		sb.WriteString(sp.with)
		last = sp.end
	}
	sb.WriteString(s[last:])
	return sb.String()
}

// clixmlEnd ends a path match [start, end) before an escaped line break of CLIXML
// (_x000D_, _x000A_), which belongs to the message, not to the path.
func clixmlEnd(s string, start, end int) int {
	if start < 0 || end <= start {
		return end
	}
	if i := strings.Index(s[start:end], "_x000"); i >= 0 {
		return start + i
	}
	return end
}

// afterVersion: four dotted numbers right after the word "version" (Version="1.1.0.1"
// in CLIXML, "version 10.0.0.1") are a version, not an address.
func afterVersion(s string, at int) bool {
	before := strings.ToLower(s[max(0, at-12):at])
	return strings.Contains(before, "version")
}

func (r *redactor) sortNames() {
	if r.sorted {
		return
	}
	sort.SliceStable(r.names, func(i, j int) bool { return len(r.names[i].lower) > len(r.names[j].lower) })
	r.sorted = true
}

// place returns value's placeholder of a kind, numbering the kind's values in the
// order they are met; format has one verb for the number.
func (r *redactor) place(kind, value, format string) string {
	key := kind + "\x00" + strings.ToLower(value)
	if p, ok := r.places[key]; ok {
		return p
	}
	r.counts[kind]++
	n := r.counts[kind]
	var p string
	if strings.Contains(format, "%") {
		p = fmt.Sprintf(format, n)
	} else {
		p = format + strconv.Itoa(n)
	}
	r.places[key] = p
	return p
}

func (r *redactor) nameOf(kind, s string) string {
	switch kind {
	case "host":
		return r.hostName(s)
	case "fqdn":
		first, rest, _ := strings.Cut(s, ".")
		return r.hostName(first) + "." + r.domainName(rest)
	case "domain", "dnsdomain":
		return r.domainName(s)
	}
	return r.place("user", s, "user-")
}

// hostName is a host's placeholder (an FQDN's is host-N.domain-M.example); an IP
// address stays an address.
func (r *redactor) hostName(h string) string {
	if h == "" {
		return h
	}
	if ip := net.ParseIP(h); ip != nil {
		if ip.IsLoopback() {
			return h
		}
		if ip.To4() != nil {
			return r.ipv4(h)
		}
		return r.place("ipv6", h, "2001:db8::%x")
	}
	if strings.EqualFold(h, "localhost") {
		return h
	}
	if first, rest, ok := strings.Cut(h, "."); ok {
		return r.place("host", first, "host-") + "." + r.domainName(rest)
	}
	return r.place("host", h, "host-")
}

// domainName: DOMAIN-N for a NetBIOS name, domain-N.example for a DNS name or realm.
func (r *redactor) domainName(d string) string {
	if strings.Contains(d, ".") {
		return r.place("dnsdomain", d, "domain-%d.example")
	}
	return r.place("domain", d, "DOMAIN-")
}

// ipv4 maps addresses into the documentation ranges (RFC 5737).
func (r *redactor) ipv4(a string) string {
	key := "ipv4\x00" + a
	if p, ok := r.places[key]; ok {
		return p
	}
	r.counts["ipv4"]++
	n := r.counts["ipv4"]
	nets := []string{"192.0.2", "198.51.100", "203.0.113"}
	p := fmt.Sprintf("%s.%d", nets[(n-1)/254%3], (n-1)%254+1)
	r.places[key] = p
	return p
}

// sid keeps well-known SIDs and replaces the others, keeping their shape.
func (r *redactor) sid(s string) string {
	parts := strings.Split(s, "-")
	// parts: S, 1, authority, sub...
	if len(parts) < 4 || r.keptSIDs[s] {
		return s
	}
	auth, sub := parts[2], parts[3:]
	switch {
	case auth != "5":
		// S-1-0-0, S-1-1-0, S-1-2-x, S-1-3-x, S-1-16-x (integrity levels), S-1-15-2-x (app packages).
		if auth == "0" || auth == "1" || auth == "2" || auth == "3" || auth == "16" || auth == "15" && len(sub) <= 2 {
			return s
		}
	case len(sub) == 1, sub[0] == "32", sub[0] == "64", sub[0] == "80" && len(sub) == 2, sub[0] == "90" && len(sub) == 2:
		// S-1-5-18, S-1-5-32-544, S-1-5-64-10, S-1-5-80-0, S-1-5-90-0.
		return s
	case sub[0] == "21" && len(sub) >= 4:
		dom := strings.Join(sub[1:4], "-")
		p, ok := r.sidDoms[dom]
		if !ok {
			r.counts["siddomain"]++
			n := r.counts["siddomain"]
			p = fmt.Sprintf("%d-%d-%d", 1000000000+n*10+1, 1000000000+n*10+2, 1000000000+n*10+3)
			r.sidDoms[dom] = p
		}
		out := "S-1-5-21-" + p
		if len(sub) > 4 {
			rid := sub[4]
			if v, err := strconv.Atoi(rid); err != nil || v >= 1000 {
				rid = r.place("rid", dom+"-"+rid, "%d")
				n, _ := strconv.Atoi(rid)
				rid = strconv.Itoa(1000 + n)
			}
			out += "-" + rid
			for _, extra := range sub[5:] {
				out += "-" + extra
			}
		}
		return out
	case sub[0] == "80":
		// A per-service SID of a service name we do not keep: S-1-5-80 and five numbers.
		n := r.place("servicesid", s, "%d")
		return "S-1-5-80-1000000001-1000000002-1000000003-1000000004-" + n
	}
	n := r.place("sid", s, "%d")
	return "S-1-" + auth + "-" + sub[0] + "-" + strconv.Itoa(1000000000+mustAtoi(n))
}

func mustAtoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
