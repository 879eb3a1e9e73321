package remote

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/xml"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

// httpStatusRe finds the status masterzen's own transports put in their messages
// (ours returns an *httpStatusError with the same text):
// "http response error: 401 - invalid content type" or "http error 500: <body>".
var httpStatusRe = regexp.MustCompile(`http (?:response )?error:? (\d{3})`)

// classify turns an error from masterzen/winrm into an *Error that says what failed,
// which setting is likely at fault, and what to check on the host.
func (h *winrmHost) classify(err error) *Error {
	where := net.JoinHostPort(h.cfg.Host, strconv.Itoa(h.port))
	if errors.Is(err, ErrUnverifiedAnswer) {
		e := h.newError("", KindProtocol)
		e.Err = err
		e.Message = fmt.Sprintf("possible man-in-the-middle between this machine and %s: an answer did not prove that it comes from the host the logon authenticated (%s), "+
			"so it was not used and nothing it reported is recorded", where, rootCause(err))
		e.Hint = "Something on the network path (a proxy, a spoofed DNS name or address, an ARP or DHCP attacker) may be answering in the host's place: " +
			"check that the name resolves to the host and what sits in between, or use HTTPS with a verified certificate; the operation was not retried"
		return e
	}
	if ke := h.classifyKerberos(err); ke != nil {
		return ke
	}
	e := h.newError("", KindUnknown)
	e.Err = err
	msg := err.Error()

	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		e.Kind = KindTimeout
		if errors.Is(err, context.Canceled) {
			e.Message = fmt.Sprintf("the operation on %s was cancelled", where)
			return e
		}
		e.Message = fmt.Sprintf("the operation on %s did not finish before the deadline", where)
		e.Hint = "Check why the host answers slowly"
		return e
	}

	var outErr *outputLimitError
	if errors.As(err, &outErr) {
		e.Kind = KindProtocol
		e.Message = fmt.Sprintf("%s printed more than %d MiB for one operation, so the provider stopped reading and ended the command", where, outErr.limit>>20)
		e.Hint = "The operations print a few kilobytes of JSON: check that the endpoint is a Windows host running Windows PowerShell 5.1, " +
			"and that nothing on the host (a profile, a transcript, a logging module) writes into the command's output"
		return e
	}
	var encErr *encryptionRequiredError
	if errors.As(err, &encErr) {
		e.Kind = KindAuth
		e.Message = fmt.Sprintf("the host requires encrypted WinRM messages: %s refused a message sent in clear text over HTTP (AllowUnencrypted=false, Windows' default)", where)
		e.Setting = SettingAllowUnencrypted
		e.Hint = "Negotiate and NTLM encrypt every message over HTTP; HTTPS encrypts the channel"
		return e
	}
	if errors.Is(err, errBasicOverHTTP) {
		e.Kind = KindAuth
		e.Message = fmt.Sprintf("auth \"basic\" to %s over plain HTTP would send the password in clear text, so nothing was sent", where)
		e.Setting = SettingAuth
		e.Hint = "Negotiate encrypts every message over HTTP; clear text only suits a host that allows it (Basic=true, AllowUnencrypted=true)"
		return e
	}

	status := 0
	var se *httpStatusError
	if errors.As(err, &se) {
		status = se.Status
		if se.SOAP {
			msg = se.Error()
		}
	} else if m := httpStatusRe.FindStringSubmatch(msg); m != nil {
		status, _ = strconv.Atoi(m[1])
	}
	if status != 0 {
		e.HTTPStatus = status
		switch {
		case status == 401:
			e.Kind = KindAuth
			e.Message = fmt.Sprintf("authentication failed for %s at %s", h.user(), where)
			e.Setting = SettingPassword
			e.Hint = authHint(h.cfg.Auth)
			if lg := h.Logon(); lg.Fallback {
				e.Message += fmt.Sprintf(" with NTLM (negotiate did not use Kerberos: %s)", lg.Why)
			}
			switch {
			case h.cfg.Auth == AuthBasic && !h.cfg.HTTPS:
				e.Message = fmt.Sprintf("authentication failed for %s at %s with Basic over plain HTTP", h.user(), where)
				e.Hint = "Windows refuses Basic over HTTP unless the service allows it (Basic=true and AllowUnencrypted=true; both false by default), " +
					"so the host requires encrypted WinRM messages here: Negotiate (encrypted over HTTP) or HTTPS works. " + e.Hint
			case h.cfg.Auth != AuthBasic && h.cfg.HTTPS:
				e.Hint += ". Over HTTPS the logon is also bound to the TLS certificate the provider saw (channel binding): a host with " +
					"CbtHardeningLevel=Strict refuses it when a TLS-intercepting proxy or load balancer terminates TLS in between; " +
					"connect to the host directly, or use HTTP 5985 (messages are encrypted by NTLM)"
			}
			return e
		case status == 400 && !h.cfg.HTTPS:
			e.Kind = KindProtocol
			e.Message = fmt.Sprintf("%s rejected the request (HTTP 400)", where)
			e.Setting = SettingHTTPS
			e.Hint = fmt.Sprintf("The port may be an HTTPS listener (WinRM uses %d for HTTP and %d for HTTPS)", DefaultHTTPPort, DefaultHTTPSPort)
			return e
		default:
			e.Kind = KindProtocol
			fault := hostText(soapFault(msg))
			if fault == "" {
				fault = excerpt(msg)
			}
			e.Message = fmt.Sprintf("WinRM at %s answered HTTP %d: %s", where, status, fault)
			f, isFault := faultOf(err)
			if isFault {
				e.Fault = f.Code
				e.Message += faultSource(f)
			}
			switch {
			case strings.Contains(strings.ToLower(fault), "access is denied"):
				e.Kind = KindAuth
				e.Setting = SettingUsername
				e.Hint = fmt.Sprintf("%s logged in but may not use WinRM: make the user a local Administrator of the host", h.user())
			case isFault && f.Code == faultShellQuota:
				e.Hint = fmt.Sprintf("The host allows %s a limited number of WinRM shells at once (winrm/config/winrs MaxShellsPerUser: 30 by default "+
					"since Windows Server 2012, 5 on Windows Server 2008 R2), and none of the user's other shells closed within %s of asking again: "+
					"shells of other runs or tools, or of a killed client, which WinRM keeps until winrm/config/winrs IdleTimeout. On the host, "+
					"list them with Get-WSManInstance -ResourceURI shell -Enumerate and remove stale ones with Remove-WSManInstance, or raise the "+
					"quota (winrm set winrm/config/winrs @{MaxShellsPerUser=\"50\"}, or the Group Policy setting Windows Remote Shell > "+
					"\"Specify maximum number of remote shells per user\"), then run terraform again", h.user(), shellQuotaWait)
			case isFault && !faultRetried(f.Code):
				e.Hint = "This is the host's own answer, so it was not asked again: check the WinRM service and its shell plugin on the host " +
					"(winrm get winrm/config, and the Microsoft-Windows-WinRM/Operational event log), and that cmd.exe and Windows PowerShell 5.1 " +
					"(%SystemRoot%\\System32\\WindowsPowerShell\\v1.0\\powershell.exe) are present"
			default:
				e.Hint = "Check the WinRM service on the host (winrm get winrm/config) and its event log"
			}
			return e
		}
	}

	var certErrs = []any{new(x509.UnknownAuthorityError), new(x509.HostnameError), new(x509.CertificateInvalidError), new(*tls.CertificateVerificationError)}
	for _, target := range certErrs {
		if errors.As(err, target) {
			return h.tlsError(e, where, err)
		}
	}
	if strings.Contains(msg, "x509:") || strings.Contains(msg, "tls: failed to verify") {
		return h.tlsError(e, where, err)
	}
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) || strings.Contains(msg, "first record does not look like a TLS handshake") {
		e.Kind = KindTLS
		e.Message = fmt.Sprintf("%s does not speak TLS", where)
		e.Setting = SettingHTTPS
		e.Hint = fmt.Sprintf("The port is probably an HTTP listener; the HTTPS listener's port is usually %d", DefaultHTTPSPort)
		return e
	}
	if strings.Contains(msg, "server gave HTTP response to HTTPS client") {
		e.Kind = KindTLS
		e.Message = fmt.Sprintf("%s answered plain HTTP to an HTTPS request", where)
		e.Setting = SettingHTTPS
		e.Hint = fmt.Sprintf("The port is an HTTP listener; the HTTPS listener's port is usually %d", DefaultHTTPSPort)
		return e
	}

	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case errors.As(err, &dnsErr):
		e.Kind = KindUnreachable
		e.Message = fmt.Sprintf("cannot resolve the host name %q: %v", h.cfg.Host, dnsErr.Err)
		e.Setting = SettingHost
		e.Hint = "Check the host name and DNS, or use the host's IP address"
		return e
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH),
		errors.As(err, &opErr) && opErr.Op == "dial":
		e.Kind = KindUnreachable
		e.Message = fmt.Sprintf("cannot connect to the WinRM listener at %s: %s", where, rootCause(err))
		e.Hint = unreachableHint
		return e
	}

	var ue *url.Error
	var ne net.Error
	if errors.As(err, &ue) && ue.Timeout() || errors.As(err, &ne) && ne.Timeout() {
		e.Kind = KindTimeout
		e.Message = fmt.Sprintf("WinRM at %s did not answer in time: %s", where, rootCause(err))
		e.Setting = SettingTimeout
		e.Hint = "Check the host's load and network"
		return e
	}
	if strings.Contains(msg, "EOF") || strings.Contains(msg, "connection reset") {
		e.Kind = KindUnreachable
		e.Message = fmt.Sprintf("the connection to %s was closed: %s", where, rootCause(err))
		e.Hint = unreachableHint
		return e
	}
	e.Kind = KindProtocol
	e.Message = fmt.Sprintf("WinRM at %s failed: %s", where, excerpt(msg))
	e.Hint = "Check that the port is a WinRM listener (winrm enumerate winrm/config/listener)"
	return e
}

// faultSource names the fault's code and the plugin that raised it, for a message:
// " (WSManFault 2147942402 from the Shell cmd plugin)".
func faultSource(f wsmanFault) string {
	if f.Code == "" {
		return " (" + f.Subcode + ")"
	}
	if f.Provider != "" {
		return " (WSManFault " + f.Code + " from the " + f.Provider + ")"
	}
	return " (WSManFault " + f.Code + ")"
}

const unreachableHint = "Check that the host is up and that a WinRM listener runs there (winrm quickconfig; winrm enumerate winrm/config/listener), " +
	"and that the firewall allows TCP 5985 (HTTP) or 5986 (HTTPS) from here"

// authHint states what a refused logon (HTTP 401) means on the host's side. Which
// user names log on to which account is the caller's to explain, once per host.
func authHint(auth string) string {
	if auth == AuthBasic {
		return `Basic authentication logs on local accounts only, and only where the listener allows it ` +
			`(winrm set winrm/config/service/auth @{Basic="true"}). The user must be a local Administrator of the host`
	}
	return "The host refused the logon: it knows no such account (on the host or in its domain), or the password does not match. " +
		"The user must be a local Administrator of the host"
}

func (h *winrmHost) tlsError(e *Error, where string, err error) *Error {
	e.Kind = KindTLS
	e.Message = fmt.Sprintf("the TLS certificate of %s could not be verified: %s", where, rootCause(err))
	e.Setting = SettingCACert
	e.Hint = "Trust the CA that signed the listener's certificate, check the name the certificate is issued to, " +
		"or (only for testing) skip verification"
	return e
}

// rootCause is the innermost error's text, without masterzen's and net/http's prefixes.
func rootCause(err error) string {
	var ue *url.Error
	var te *transportError
	if errors.As(err, &ue) {
		err = ue.Err
	} else if errors.As(err, &te) {
		err = te.Err
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Err != nil {
		return opErr.Err.Error()
	}
	return err.Error()
}

// soapFault extracts the readable text of a WS-Management fault in an error message
// ("http error 500: <s:Envelope>..."): f:Message, else s:Text.
func soapFault(msg string) string {
	i := strings.Index(msg, "<")
	if i < 0 {
		return ""
	}
	d := xml.NewDecoder(strings.NewReader(msg[i:]))
	d.Strict = false
	var in, text, message string
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		switch t := tok.(type) {
		case xml.StartElement:
			in = t.Name.Local
		case xml.EndElement:
			in = ""
		case xml.CharData:
			s := strings.TrimSpace(string(t))
			if s == "" {
				continue
			}
			switch in {
			case "Message":
				if message == "" {
					message = s
				}
			case "Text":
				if text == "" {
					text = s
				}
			}
		}
	}
	if message != "" {
		return message
	}
	return text
}
