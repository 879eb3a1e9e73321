package wsman

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// XML namespaces of MS-WSMV messages.
const (
	nsSOAP       = "http://www.w3.org/2003/05/soap-envelope"
	nsAddressing = "http://schemas.xmlsoap.org/ws/2004/08/addressing"
	nsWSMan      = "http://schemas.dmtf.org/wbem/wsman/1/wsman.xsd"
	nsShell      = "http://schemas.microsoft.com/wbem/wsman/1/windows/shell"
)

// WS-Management actions this endpoint serves, and the ones it answers with.
const (
	actionCreate          = "http://schemas.xmlsoap.org/ws/2004/09/transfer/Create"
	actionCreateResponse  = "http://schemas.xmlsoap.org/ws/2004/09/transfer/CreateResponse"
	actionDelete          = "http://schemas.xmlsoap.org/ws/2004/09/transfer/Delete"
	actionDeleteResponse  = "http://schemas.xmlsoap.org/ws/2004/09/transfer/DeleteResponse"
	actionCommand         = nsShell + "/Command"
	actionCommandResponse = nsShell + "/CommandResponse"
	actionSend            = nsShell + "/Send"
	actionSendResponse    = nsShell + "/SendResponse"
	actionReceive         = nsShell + "/Receive"
	actionReceiveResponse = nsShell + "/ReceiveResponse"
	actionSignal          = nsShell + "/Signal"
	actionSignalResponse  = nsShell + "/SignalResponse"
	actionFault           = "http://schemas.dmtf.org/wbem/wsman/1/wsman/fault"

	resourceURICmd   = "http://schemas.microsoft.com/wbem/wsman/1/windows/shell/cmd"
	addressAnonymous = "http://schemas.xmlsoap.org/ws/2004/08/addressing/role/anonymous"

	stateRunning = nsShell + "/CommandState/Running"
	stateDone    = nsShell + "/CommandState/Done"

	signalTerminate = nsShell + "/signal/terminate"
	signalCtrlC     = nsShell + "/signal/ctrl_c"
	signalCtrlBreak = nsShell + "/signal/ctrl_break"
)

// request is the part of a WS-Management SOAP request this endpoint reads.
type request struct {
	XMLName xml.Name      `xml:"http://www.w3.org/2003/05/soap-envelope Envelope"`
	Header  requestHeader `xml:"http://www.w3.org/2003/05/soap-envelope Header"`
	Body    requestBody   `xml:"http://www.w3.org/2003/05/soap-envelope Body"`
}

type requestHeader struct {
	Action           string       `xml:"http://schemas.xmlsoap.org/ws/2004/08/addressing Action"`
	MessageID        string       `xml:"http://schemas.xmlsoap.org/ws/2004/08/addressing MessageID"`
	ResourceURI      string       `xml:"http://schemas.dmtf.org/wbem/wsman/1/wsman.xsd ResourceURI"`
	OperationTimeout string       `xml:"http://schemas.dmtf.org/wbem/wsman/1/wsman.xsd OperationTimeout"`
	MaxEnvelopeSize  string       `xml:"http://schemas.dmtf.org/wbem/wsman/1/wsman.xsd MaxEnvelopeSize"`
	SelectorSet      selectorSet  `xml:"http://schemas.dmtf.org/wbem/wsman/1/wsman.xsd SelectorSet"`
	OptionSet        optionSet    `xml:"http://schemas.dmtf.org/wbem/wsman/1/wsman.xsd OptionSet"`
	Locale           localeHeader `xml:"http://schemas.dmtf.org/wbem/wsman/1/wsman.xsd Locale"`
}

type selectorSet struct {
	Selectors []nameValue `xml:"http://schemas.dmtf.org/wbem/wsman/1/wsman.xsd Selector"`
}

type optionSet struct {
	Options []nameValue `xml:"http://schemas.dmtf.org/wbem/wsman/1/wsman.xsd Option"`
}

type nameValue struct {
	Name  string `xml:"Name,attr"`
	Value string `xml:",chardata"`
}

type localeHeader struct {
	Lang string `xml:"http://www.w3.org/XML/1998/namespace lang,attr"`
}

type requestBody struct {
	Shell       *shellBody   `xml:"http://schemas.microsoft.com/wbem/wsman/1/windows/shell Shell"`
	CommandLine *commandLine `xml:"http://schemas.microsoft.com/wbem/wsman/1/windows/shell CommandLine"`
	Send        *sendBody    `xml:"http://schemas.microsoft.com/wbem/wsman/1/windows/shell Send"`
	Receive     *receiveBody `xml:"http://schemas.microsoft.com/wbem/wsman/1/windows/shell Receive"`
	Signal      *signalBody  `xml:"http://schemas.microsoft.com/wbem/wsman/1/windows/shell Signal"`
}

type shellBody struct {
	InputStreams  string `xml:"http://schemas.microsoft.com/wbem/wsman/1/windows/shell InputStreams"`
	OutputStreams string `xml:"http://schemas.microsoft.com/wbem/wsman/1/windows/shell OutputStreams"`
}

type commandLine struct {
	Command   string   `xml:"http://schemas.microsoft.com/wbem/wsman/1/windows/shell Command"`
	Arguments []string `xml:"http://schemas.microsoft.com/wbem/wsman/1/windows/shell Arguments"`
}

type sendBody struct {
	Streams []sendStream `xml:"http://schemas.microsoft.com/wbem/wsman/1/windows/shell Stream"`
}

type sendStream struct {
	Name      string `xml:"Name,attr"`
	CommandID string `xml:"CommandId,attr"`
	End       string `xml:"End,attr"`
	Data      string `xml:",chardata"`
}

type receiveBody struct {
	DesiredStream struct {
		CommandID string `xml:"CommandId,attr"`
		Streams   string `xml:",chardata"`
	} `xml:"http://schemas.microsoft.com/wbem/wsman/1/windows/shell DesiredStream"`
}

type signalBody struct {
	CommandID string `xml:"CommandId,attr"`
	Code      string `xml:"http://schemas.microsoft.com/wbem/wsman/1/windows/shell Code"`
}

// parseRequest decodes a SOAP envelope.
func parseRequest(body []byte) (*request, error) {
	var req request
	if err := xml.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("decode SOAP envelope: %w", err)
	}
	req.Header.Action = strings.TrimSpace(req.Header.Action)
	req.Header.MessageID = strings.TrimSpace(req.Header.MessageID)
	return &req, nil
}

// shellID is the ShellId selector of the request, or "".
func (r *request) shellID() string {
	for _, s := range r.Header.SelectorSet.Selectors {
		if strings.EqualFold(s.Name, "ShellId") {
			return strings.TrimSpace(s.Value)
		}
	}
	return ""
}

// option is the value of the request's wsman:Option named name, or "".
func (r *request) option(name string) string {
	for _, o := range r.Header.OptionSet.Options {
		if strings.EqualFold(o.Name, name) {
			return o.Value
		}
	}
	return ""
}

// parseDuration reads the xs:duration forms WS-Management clients send in
// OperationTimeout: PT60S, PT1.5S, PT5M0S, P0DT0H1M0S.
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	rest, ok := strings.CutPrefix(s, "P")
	if !ok {
		return 0, fmt.Errorf("duration %q does not start with P", s)
	}
	var total time.Duration
	inTime := false
	for rest != "" {
		if rest[0] == 'T' {
			inTime = true
			rest = rest[1:]
			continue
		}
		i := strings.IndexAny(rest, "YMWDHS")
		if i <= 0 {
			return 0, fmt.Errorf("duration %q is malformed", s)
		}
		n, err := strconv.ParseFloat(rest[:i], 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("duration %q has a bad number %q", s, rest[:i])
		}
		var unit time.Duration
		switch {
		case rest[i] == 'D' && !inTime:
			unit = 24 * time.Hour
		case rest[i] == 'H' && inTime:
			unit = time.Hour
		case rest[i] == 'M' && inTime:
			unit = time.Minute
		case rest[i] == 'S' && inTime:
			unit = time.Second
		default:
			return 0, fmt.Errorf("duration %q uses an unsupported unit %q", s, rest[i])
		}
		total += time.Duration(n * float64(unit))
		rest = rest[i+1:]
	}
	return total, nil
}

// envelope writes a response envelope in the shape Windows sends: the usual
// namespace declarations, Action, MessageID, To anonymous, RelatesTo.
func envelope(action, relatesTo, body string) []byte {
	var b bytes.Buffer
	b.WriteString(`<s:Envelope xml:lang="en-US" xmlns:s="` + nsSOAP + `" xmlns:a="` + nsAddressing +
		`" xmlns:x="http://schemas.xmlsoap.org/ws/2004/09/transfer" xmlns:w="` + nsWSMan +
		`" xmlns:rsp="` + nsShell + `" xmlns:p="http://schemas.microsoft.com/wbem/wsman/1/wsman.xsd">`)
	b.WriteString(`<s:Header><a:Action>` + esc(action) + `</a:Action>`)
	b.WriteString(`<a:MessageID>` + newMessageID() + `</a:MessageID>`)
	b.WriteString(`<a:To>` + addressAnonymous + `</a:To>`)
	if relatesTo != "" {
		b.WriteString(`<a:RelatesTo>` + esc(relatesTo) + `</a:RelatesTo>`)
	}
	b.WriteString(`</s:Header><s:Body>` + body + `</s:Body></s:Envelope>`)
	return b.Bytes()
}

// createResponse answers Create with both shapes clients read: pywinrm takes
// the first element named ShellId (the selector in ResourceCreated), masterzen
// reads rsp:ShellId.
func createResponse(relatesTo, address, shellID, owner, clientIP string) []byte {
	body := `<x:ResourceCreated><a:Address>` + esc(address) + `</a:Address><a:ReferenceParameters>` +
		`<w:ResourceURI>` + resourceURICmd + `</w:ResourceURI><w:SelectorSet><w:Selector Name="ShellId">` +
		esc(shellID) + `</w:Selector></w:SelectorSet></a:ReferenceParameters></x:ResourceCreated>` +
		`<rsp:Shell xmlns:rsp="` + nsShell + `"><rsp:ShellId>` + esc(shellID) + `</rsp:ShellId>` +
		`<rsp:ResourceUri>` + resourceURICmd + `</rsp:ResourceUri><rsp:Owner>` + esc(owner) + `</rsp:Owner>` +
		`<rsp:ClientIP>` + esc(clientIP) + `</rsp:ClientIP><rsp:IdleTimeOut>PT7200.000S</rsp:IdleTimeOut>` +
		`<rsp:InputStreams>stdin</rsp:InputStreams><rsp:OutputStreams>stdout stderr</rsp:OutputStreams>` +
		`<rsp:ShellRunTime>P0DT0H0M0S</rsp:ShellRunTime><rsp:ShellInactivity>P0DT0H0M0S</rsp:ShellInactivity></rsp:Shell>`
	return envelope(actionCreateResponse, relatesTo, body)
}

func commandResponse(relatesTo, commandID string) []byte {
	return envelope(actionCommandResponse, relatesTo,
		`<rsp:CommandResponse><rsp:CommandId>`+esc(commandID)+`</rsp:CommandId></rsp:CommandResponse>`)
}

func sendResponse(relatesTo string) []byte {
	return envelope(actionSendResponse, relatesTo, `<rsp:SendResponse/>`)
}

func signalResponse(relatesTo string) []byte {
	return envelope(actionSignalResponse, relatesTo, `<rsp:SignalResponse/>`)
}

func deleteResponse(relatesTo string) []byte {
	return envelope(actionDeleteResponse, relatesTo, ``)
}

// output is what one Receive returns for a command.
type output struct {
	chunks   []chunk // the writes taken, in the order written
	done     bool    // the command finished and this is the last of its output
	exitCode int
}

// receiveResponse answers as Windows does (the pypsrp recordings, FIDELITY.md): one
// rsp:Stream element per write, in the order written; once the command is done,
// an empty element with End="true" for stdout, then for stderr; then the
// CommandState (with the ExitCode when done).
func receiveResponse(relatesTo, commandID string, out output) []byte {
	var b strings.Builder
	b.WriteString(`<rsp:ReceiveResponse>`)
	id := esc(commandID)
	for _, ch := range out.chunks {
		name := "stdout"
		if ch.stderr {
			name = "stderr"
		}
		b.WriteString(`<rsp:Stream Name="` + name + `" CommandId="` + id + `">` + b64(ch.data) + `</rsp:Stream>`)
	}
	if out.done {
		b.WriteString(`<rsp:Stream Name="stdout" CommandId="` + id + `" End="true"></rsp:Stream>`)
		b.WriteString(`<rsp:Stream Name="stderr" CommandId="` + id + `" End="true"></rsp:Stream>`)
		b.WriteString(`<rsp:CommandState CommandId="` + id + `" State="` + stateDone + `"><rsp:ExitCode>` +
			strconv.Itoa(out.exitCode) + `</rsp:ExitCode></rsp:CommandState>`)
	} else {
		b.WriteString(`<rsp:CommandState CommandId="` + id + `" State="` + stateRunning + `"></rsp:CommandState>`)
	}
	b.WriteString(`</rsp:ReceiveResponse>`)
	return envelope(actionReceiveResponse, relatesTo, b.String())
}

// fault is a WS-Management fault as Windows reports it (HTTP 500).
type fault struct {
	code    string // s:Sender or s:Receiver
	subcode string // e.g. w:TimedOut
	reason  string
	detail  string // w:FaultDetail, a URI; "" for none
	wsman   string // WSManFault Code, decimal
	message string // f:Message, often longer than reason
	// provider and providerPath, when set, wrap message in the f:ProviderFault of
	// the plugin that raised it (the Shell cmd plugin, winrscmd.dll).
	provider, providerPath string
}

func (f fault) xml(relatesTo, machine string) []byte {
	detail := ""
	if f.detail != "" {
		detail = `<w:FaultDetail>` + esc(f.detail) + `</w:FaultDetail>`
	}
	message := esc(f.message)
	if f.provider != "" {
		message = `<f:ProviderFault provider="` + esc(f.provider) + `" path="` + esc(f.providerPath) + `">` + message + `</f:ProviderFault>`
	}
	body := `<s:Fault><s:Code><s:Value>` + f.code + `</s:Value><s:Subcode><s:Value>` + f.subcode +
		`</s:Value></s:Subcode></s:Code><s:Reason><s:Text xml:lang="en-US">` + esc(f.reason) +
		`</s:Text></s:Reason><s:Detail>` + detail + `<f:WSManFault xmlns:f="http://schemas.microsoft.com/wbem/wsman/1/wsmanfault" Code="` +
		f.wsman + `" Machine="` + esc(machine) + `"><f:Message>` + message +
		`</f:Message></f:WSManFault></s:Detail></s:Fault>`
	return envelope(actionFault, relatesTo, body)
}

// FaultDetail URIs Windows sends (MS-WSMV 2.2.4.43; the pypsrp recordings).
const (
	faultDetailUnexpectedSelectors = "http://schemas.dmtf.org/wbem/wsman/1/wsman/faultDetail/UnexpectedSelectors"
	faultDetailInvalidValue        = "http://schemas.dmtf.org/wbem/wsman/1/wsman/faultDetail/InvalidValue"
)

func timedOutFault() fault {
	const text = "The WS-Management service cannot complete the operation within the time specified in OperationTimeout.  "
	return fault{code: "s:Receiver", subcode: "w:TimedOut", reason: text, wsman: "2150858793", message: text}
}

func shellNotFoundFault(shellID string) fault {
	return fault{
		code:    "s:Sender",
		subcode: "w:InvalidSelectors",
		reason:  "The WS-Management service cannot process the request because the request contained invalid selectors for the resource. ",
		wsman:   "2150858843",
		message: "The request for the Windows Remote Shell with ShellId " + shellID +
			" failed because the shell was not found on the server. Possible causes are: the specified ShellId is incorrect or the shell no longer exists on the server. Provide the correct ShellId or create a new shell and retry the operation. ",
	}
}

// commandNotFoundFault is Windows' answer to a CommandId the shell does not have
// (pypsrp's test_winrs_bad_cmd_id recording): the selectors are wrong, as for a
// shell that is gone.
func commandNotFoundFault() fault {
	return fault{
		code:    "s:Sender",
		subcode: "w:InvalidSelectors",
		reason:  "The WS-Management service cannot process the request because the request contained invalid selectors for the resource. ",
		detail:  faultDetailUnexpectedSelectors,
		wsman:   "2150858843",
		message: "The Windows Remote Shell received a request to perform an operation on a command identifier that does not exist. " +
			"Either the command has completed execution or the client specified an invalid command identifier. ",
	}
}

// shellPluginParameterFault is the Shell cmd plugin's ERROR_INVALID_PARAMETER (87),
// Windows' answer to a Receive that names no CommandId (pypsrp's
// test_winrs_fail_poll_process recording).
func shellPluginParameterFault() fault {
	const text = "The parameter is incorrect. "
	return fault{code: "s:Sender", subcode: "w:InvalidParameter", reason: text, detail: faultDetailInvalidValue, wsman: "87", message: text,
		provider: "Shell cmd plugin", providerPath: `%systemroot%\system32\winrscmd.dll`}
}

// invalidTimeoutFault is Windows' answer to an OperationTimeout that is not a
// positive duration (pypsrp's test_psrp_is_alive_other_wsman_error recording: PT-1S).
func invalidTimeoutFault(value string) fault {
	return fault{
		code:    "s:Sender",
		subcode: "a:InvalidMessageInformationHeader",
		reason:  "The WS-Management service cannot process the request. The request contains one or more invalid SOAP headers. ",
		wsman:   "2150858767",
		message: "The WS-Management service cannot process the request. The XML contains an invalid timeout field in the SOAP header: " + value + ". ",
	}
}

func actionNotSupportedFault(action string) fault {
	return fault{
		code:    "s:Sender",
		subcode: "a:ActionNotSupported",
		reason:  "The action is not supported by the service. ",
		wsman:   "2150858754",
		message: "The WS-Management service cannot process the request. The action " + action + " is not supported by this endpoint (a simulator of the Windows Remote Shell). ",
	}
}

func badRequestFault(detail string) fault {
	return fault{
		code:    "s:Sender",
		subcode: "w:InvalidParameter",
		reason:  "The parameter is incorrect. ",
		wsman:   "2147942487",
		message: detail,
	}
}

func b64(data []byte) string { return base64.StdEncoding.EncodeToString(data) }

// newMessageID returns a fresh "uuid:...", as Windows writes them.
func newMessageID() string { return "uuid:" + newGUID() }

// newGUID returns a random upper-case GUID, the form of ShellId and CommandId.
func newGUID() string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return strings.ToUpper(fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:]))
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// decodeB64 decodes a base64 stream chunk, ignoring the whitespace XML may wrap it in.
func decodeB64(s string) ([]byte, error) {
	s = strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\r' || r == '\n' {
			return -1
		}
		return r
	}, s)
	return base64.StdEncoding.DecodeString(s)
}
