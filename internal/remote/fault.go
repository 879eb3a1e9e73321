package remote

import (
	"encoding/xml"
	"errors"
	"strings"
)

// WSManFault codes (MS-WSMV 2.2.4.43's f:WSManFault Code, decimal as Windows writes
// it) that say what asking again can do. Every other fault a host's WS-Management
// service or one of its plugins answers is the host's own answer: asking again
// gets the same one (Transient, retry.go).
const (
	// faultOperationTimeout (w:TimedOut, 0x80338029): the OperationTimeout passed
	// with no output yet; the client polls again (MS-WSMV 3.1.4.14).
	faultOperationTimeout = "2150858793"
	// faultShellGone (w:InvalidSelectors, 0x8033805B): the shell or the command the
	// request names does not exist (any more): a new shell may cure it.
	faultShellGone = "2150858843"
	// faultShellQuota (w:QuotaLimit, 0x803381A5): the user holds the most shells
	// the host allows one user at once (winrm/config/winrs MaxShellsPerUser); it
	// clears when one of them is deleted. The shell's Create waits it out
	// (session.openShell); after that wait it is the error, not transient.
	faultShellQuota = "2150859173"
)

// wsmanFault is what a WS-Management fault says: its SOAP subcode (w:TimedOut,
// w:InvalidSelectors, w:InternalError ...), the f:WSManFault Code, the plugin that
// raised it (f:ProviderFault's provider, "" when the service itself did), and its
// readable text (f:Message, else s:Reason's s:Text).
type wsmanFault struct {
	Subcode  string
	Code     string
	Provider string
	Message  string
}

// parseFault reads the fault in a SOAP body; ok is false when the body holds no
// s:Fault with a WSManFault Code or subcode (an empty or non-SOAP answer). A fault
// without a WSManFault Code is classified by its HTTP status (Transient), as an
// answer without a fault is.
func parseFault(body string) (f wsmanFault, ok bool) {
	i := strings.Index(body, "<")
	if i < 0 {
		return f, false
	}
	d := xml.NewDecoder(strings.NewReader(body[i:]))
	d.Strict = false
	var stack []string
	var inFault bool
	var text string
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		switch t := tok.(type) {
		case xml.StartElement:
			stack = append(stack, t.Name.Local)
			switch t.Name.Local {
			case "Fault":
				inFault = true
			case "WSManFault":
				if f.Code == "" {
					f.Code = strings.TrimSpace(attr(t, "Code"))
				}
			case "ProviderFault":
				if f.Provider == "" {
					f.Provider = strings.TrimSpace(attr(t, "provider"))
				}
			}
		case xml.EndElement:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case xml.CharData:
			s := strings.TrimSpace(string(t))
			if s == "" || !inFault || len(stack) < 2 {
				continue
			}
			switch in, parent := stack[len(stack)-1], stack[len(stack)-2]; {
			case in == "Value" && parent == "Subcode" && f.Subcode == "":
				f.Subcode = s
			case (in == "Message" || in == "ProviderFault") && f.Message == "":
				f.Message = s
			case in == "Text" && text == "":
				text = s
			}
		}
	}
	if f.Message == "" {
		f.Message = text
	}
	return f, inFault && (f.Code != "" || f.Subcode != "")
}

func attr(t xml.StartElement, name string) string {
	for _, a := range t.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// faultOf is the fault an answer of the host carried, if any.
func faultOf(err error) (wsmanFault, bool) {
	var se *httpStatusError
	if !errors.As(err, &se) || !se.SOAP {
		return wsmanFault{}, false
	}
	return parseFault(se.Body)
}
