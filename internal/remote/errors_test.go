package remote

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
)

// Errors as masterzen/winrm words them, without a server: the texts come from its
// http.go (Post) and from WinRM's SOAP faults.
func TestClassifyMasterzenTexts(t *testing.T) {
	h := &winrmHost{cfg: Config{Host: "sql01.example.test", Username: `CONTOSO\deploy`, Auth: "ntlm", HTTPS: true}, port: 5986}
	accessDenied := `http error 500: <s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:f="http://schemas.microsoft.com/wbem/wsman/1/wsmanfault">` +
		`<s:Body><s:Fault><s:Code><s:Value>s:Sender</s:Value></s:Code><s:Reason><s:Text xml:lang="en-US">Access is denied. </s:Text></s:Reason>` +
		`<s:Detail><f:WSManFault Code="5" Machine="sql01.example.test"><f:Message>Access is denied. </f:Message></f:WSManFault></s:Detail></s:Fault></s:Body></s:Envelope>`
	quota := `http error 500: <s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><s:Fault><s:Reason><s:Text xml:lang="en-US">` +
		`The WS-Management service cannot process the request. This user is allowed a maximum number of 5 concurrent shells, which has been exceeded.</s:Text></s:Reason></s:Fault></s:Body></s:Envelope>`
	for _, tc := range []struct {
		err      error
		kind     ErrorKind
		contains string
		hint     string
	}{
		{fmt.Errorf("http response error: %d - %w", 401, errors.New("invalid content type")), KindAuth,
			`authentication failed for CONTOSO\deploy at sql01.example.test:5986`, "local Administrator"},
		{errors.New(accessDenied), KindAuth, "answered HTTP 500: Access is denied.", "local Administrator"},
		{errors.New(quota), KindProtocol, "maximum number of 5 concurrent shells", "winrm get winrm/config"},
		{errors.New("unknown error Post \"https://sql01.example.test:5986/wsman\": unexpected EOF"), KindUnreachable, "connection to sql01.example.test:5986 was closed", "winrm quickconfig"},
		// Our transport's errors (transport.go).
		{&httpStatusError{Status: 401}, KindAuth, `authentication failed for CONTOSO\deploy at sql01.example.test:5986`, "local Administrator"},
		{fmt.Errorf("creating the shell: %w", &httpStatusError{Status: 500, SOAP: true, Body: strings.TrimPrefix(accessDenied, "http error 500: ")}), KindAuth, "answered HTTP 500: Access is denied.", "local Administrator"},
		{&transportError{URL: "https://sql01.example.test:5986/wsman", Err: &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}}, KindTimeout,
			"sql01.example.test:5986 did not answer in time: i/o timeout", "load and network"},
		{&transportError{URL: "https://sql01.example.test:5986/wsman", Err: io.ErrUnexpectedEOF}, KindUnreachable, "connection to sql01.example.test:5986 was closed: unexpected EOF", "winrm quickconfig"},
	} {
		e := h.classify(tc.err)
		if e.Kind != tc.kind || !strings.Contains(e.Message, tc.contains) || !strings.Contains(e.Hint, tc.hint) {
			t.Errorf("classify(%.60q) = kind %d, %q, hint %q", tc.err, e.Kind, e.Message, e.Hint)
		}
		if strings.Contains(e.Message, "<s:") {
			t.Errorf("XML leaked into %q", e.Message)
		}
	}
}
