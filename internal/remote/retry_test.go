package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/remote/krb"
)

// Refused says which failures an apply rides through within its timeout
// (converge): a refused, reset or unrouted connection; never a name that does not
// resolve, an answer of the host, a timeout, or a possible man-in-the-middle.
func TestErrorRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		e    *Error
		want bool
	}{
		"refused":                    {&Error{Kind: KindUnreachable, Message: "cannot connect: connection refused"}, true},
		"name does not resolve":      {&Error{Kind: KindUnreachable, Setting: SettingHost}, false},
		"HTTP 503":                   {&Error{Kind: KindProtocol, HTTPStatus: 503}, false},
		"timeout":                    {&Error{Kind: KindTimeout}, false},
		"authentication":             {&Error{Kind: KindAuth, HTTPStatus: 401}, false},
		"possible man-in-the-middle": {&Error{Kind: KindUnreachable, Err: fmt.Errorf("reading: %w", ErrUnverifiedAnswer)}, false},
	} {
		if got := tc.e.Refused(); got != tc.want {
			t.Errorf("%s: Refused() = %v, want %v", name, got, tc.want)
		}
	}
}

// windowsFault is a WS-Management fault in the shape a Windows host answers it
// (MS-WSMV 2.2.4.43; the pypsrp recordings, replay_test.go, hold real ones).
func windowsFault(code, subcode, wsmanCode, provider, text string) string {
	msg := text
	if provider != "" {
		msg = `<f:ProviderFault provider="` + provider + `" path="%systemroot%\system32\winrscmd.dll">` + text + `</f:ProviderFault>`
	}
	return `<s:Envelope xml:lang="en-US" xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:a="http://schemas.xmlsoap.org/ws/2004/08/addressing" ` +
		`xmlns:w="http://schemas.dmtf.org/wbem/wsman/1/wsman.xsd"><s:Header><a:Action>http://schemas.dmtf.org/wbem/wsman/1/wsman/fault</a:Action></s:Header>` +
		`<s:Body><s:Fault><s:Code><s:Value>` + code + `</s:Value><s:Subcode><s:Value>` + subcode + `</s:Value></s:Subcode></s:Code>` +
		`<s:Reason><s:Text xml:lang="en-US">` + text + `</s:Text></s:Reason><s:Detail><f:WSManFault xmlns:f="http://schemas.microsoft.com/wbem/wsman/1/wsmanfault" ` +
		`Code="` + wsmanCode + `" Machine="sql01"><f:Message>` + msg + `</f:Message></f:WSManFault></s:Detail></s:Fault></s:Body></s:Envelope>`
}

// faultOnCommand answers every Command request with fault (HTTP 500, as Windows)
// and counts the shells the client opened (Create requests).
func faultOnCommand(fault string, creates *atomic.Int32) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			switch {
			case bytes.Contains(body, []byte("transfer/Create<")):
				creates.Add(1)
			case bytes.Contains(body, []byte("windows/shell/Command<")):
				w.Header().Set("Content-Type", "application/soap+xml;charset=UTF-8")
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = io.WriteString(w, fault)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// A fault of the host's own shell plugin is its answer, not the network's: Windows'
// "The system cannot find the file specified" (WSManFault 2147942402 from the Shell
// cmd plugin) makes a read open one shell, not three, and a restart's follow-through
// (restart_status, which converge follows on transient failures until its deadline)
// fails at once, naming the host and the fault. A shell that is gone (2150858843)
// is asked again in a new shell.
func TestFaultsClassifiedByWSManFaultCode(t *testing.T) {
	const noFile = "The system cannot find the file specified. "
	const gone = "The Windows Remote Shell received a request to perform an operation on a command identifier that does not exist. "
	for name, tc := range map[string]struct {
		fault     string
		transient bool
		shells    int32
		says      string
	}{
		"plugin's own fault": {windowsFault("s:Receiver", "w:InternalError", "2147942402", "Shell cmd plugin", noFile), false, 1,
			"The system cannot find the file specified. (WSManFault 2147942402 from the Shell cmd plugin)"},
		"shell or command gone": {windowsFault("s:Sender", "w:InvalidSelectors", "2150858843", "", gone), true, maxAttempts, "(WSManFault 2150858843)"},
	} {
		t.Run(name, func(t *testing.T) {
			var creates atomic.Int32
			th := newTestHostWith(t, hostOptions{allowUnencrypted: true, handler: faultOnCommand(tc.fault, &creates)}, echoInstance(t))
			h, err := New(th.config(AuthBasic))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for _, read := range []func() error{
				func() error {
					_, err := h.ReadInstance(ctx, contract.ReadInstanceParams{Instance: "MSSQLSERVER"})
					return err
				},
				func() error {
					_, err := h.RestartStatus(ctx, contract.RestartStatusParams{Instance: "MSSQLSERVER"})
					return err
				},
			} {
				creates.Store(0)
				err := read()
				var re *Error
				if !errors.As(err, &re) || Transient(err) != tc.transient || re.Refused() {
					t.Fatalf("error %v: Transient %v, want %v (and not Refused)", err, Transient(err), tc.transient)
				}
				if got := creates.Load(); got != tc.shells {
					t.Errorf("%d shells opened, want %d: %v", got, tc.shells, err)
				}
				if !strings.Contains(err.Error(), "127.0.0.1") || !strings.Contains(err.Error(), tc.says) {
					t.Errorf("error %q does not name the host and say %q", err, tc.says)
				}
				if !tc.transient && !strings.Contains(re.Hint, "not asked again") {
					t.Errorf("hint %q does not say the host's answer was not asked again", re.Hint)
				}
			}
		})
	}
}

// Transient by cause: a WS-Management fault by its WSManFault Code, the HTTP status
// only where the answer carries no fault.
func TestTransientByCause(t *testing.T) {
	for name, tc := range map[string]struct {
		e    *Error
		want bool
	}{
		"operation timeout fault":  {&Error{Kind: KindProtocol, HTTPStatus: 500, Fault: faultOperationTimeout}, true},
		"shell gone fault":         {&Error{Kind: KindProtocol, HTTPStatus: 500, Fault: faultShellGone}, true},
		"plugin's fault":           {&Error{Kind: KindProtocol, HTTPStatus: 500, Fault: "2147942402"}, false},
		"invalid header fault":     {&Error{Kind: KindProtocol, HTTPStatus: 500, Fault: "2150858767"}, false},
		"empty 500":                {&Error{Kind: KindProtocol, HTTPStatus: 500}, true},
		"503 while WinRM restarts": {&Error{Kind: KindProtocol, HTTPStatus: 503}, true},
		"refused connection":       {&Error{Kind: KindUnreachable}, true},
		"KDC does not answer":      {&Error{Kind: KindUnreachable, Setting: SettingKrb5Conf, Err: &krb.Error{Kind: krb.KindKDCUnreachable}}, false},
		"authentication":           {&Error{Kind: KindAuth, HTTPStatus: 401}, false},
	} {
		if got := Transient(tc.e); got != tc.want {
			t.Errorf("%s: Transient = %v, want %v", name, got, tc.want)
		}
	}
}
