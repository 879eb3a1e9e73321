package winsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/host"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/winsim/wsfc"
)

// Action is one control-plane action, the JSON body of POST /v1/hosts/{host}/actions.
//
//	{"action":"grant_right","right":"SeManageVolumePrivilege","sid":"S-1-5-80-..."}
//	{"action":"revoke_right","right":"SeManageVolumePrivilege","sid":"S-1-5-80-..."}
//	{"action":"restart_service","service":"MSSQLSERVER"}
//	{"action":"stop_service","service":"MSSQLSERVER","force":true}
//	{"action":"start_service","service":"MSSQLSERVER"}
//	{"action":"set_group_policy_right","right":"SeManageVolumePrivilege","sids":["S-1-5-32-544"]}
//	{"action":"refresh_group_policy"}
//	{"action":"uninstall_instance","instance":"REPORTING"}
//	{"action":"fail_start","service":"MSSQLSERVER","code":1067,"times":-1}
//	{"action":"slow_stop","service":"MSSQLSERVER","stop_ms":30000}
//	{"action":"tds_drop_after_login","instance":"MSSQLSERVER","times":-1}
//	{"action":"winrm_fault","fault":"reset","request":"Receive","operation":"restart_instance"} (faults.go)
//	{"action":"clear_faults"}
//	{"action":"set_ag_role","instance":"MSSQLSERVER","role":"secondary"}
//	{"action":"set_ag_role","instance":"MSSQLSERVER","role":"primary","group":"AG2"}
//	{"action":"set_ag_role","instance":"MSSQLSERVER","role":"none"}
//	{"action":"set_language_mode","mode":"ConstrainedLanguage"}
//	{"action":"pause_service","service":"MSSQLLaunchpad"}
//	{"action":"set_asr_rule","rule":"d1e49aac-8f56-4280-b9ba-993a6d77406c","rule_action":1}
//
// pause_service pauses a running service (SERVICE_CONTROL_PAUSE). set_asr_rule sets
// a Microsoft Defender attack surface reduction rule's action (0 disabled, 1 block,
// 2 audit, 6 warn), as Add-MpPreference does; with the rule above in block mode,
// Win32_Process.Create refuses to create processes (the restart's guard).
//
//	{"action":"start_backup","instance":"MSSQLSERVER","command":"BACKUP DATABASE"}
//	{"action":"end_backups","instance":"MSSQLSERVER"}
//	{"action":"set_hadr_registry","instance":"MSSQLSERVER","value":0}
//	{"action":"set_max_server_memory","instance":"MSSQLSERVER","value":8192}
//	{"action":"restart_winrm","duration_ms":300}
//	{"action":"race_stop","service":"MSSQLLaunchpad","mode":"stopped"}
//
// race_stop arms a race for the next SERVICE_CONTROL_STOP sent to the service
// (sc.exe stop): just before it arrives, the service stops by itself (mode
// "stopped": the control answers 1062) or its process ends and the SCM's recovery
// starts it again (mode "restarting": Start Pending, the control answers 1061).
//
// restart_winrm plays Restart-Service WinRM (winrm_restart.go): every WinRS shell
// and WinRM connection of the host ends, the listeners refuse connections for
// duration_ms (default 300), then listen again; the answer waits for that unless
// "wait" is false. The restart's guard and the services keep running.
//
// start_backup runs a BACKUP or RESTORE command on the running Engine
// (sys.dm_exec_requests) until end_backups or the Engine stops. set_hadr_registry
// writes HADR_Enabled now ("value" absent deletes the value); the Engine reads it
// at its next start.
//
// set_ag_role changes an Always On replica's role (a failover), joins the instance
// to "group" or, with role "none", removes it from its group; the instance must
// have Always On enabled in its configuration.
//
// Service actions wait until the service reaches its target state (Running, or
// Stopped for stop_service) unless "wait" is false; "timeout_seconds" bounds the wait
// (default 60).
type Action struct {
	Action         string   `json:"action"`
	Right          string   `json:"right,omitempty"`
	SID            string   `json:"sid,omitempty"`
	SIDs           []string `json:"sids,omitempty"`
	Service        string   `json:"service,omitempty"`
	Instance       string   `json:"instance,omitempty"`
	Role           string   `json:"role,omitempty"`
	Group          string   `json:"group,omitempty"`
	Force          bool     `json:"force,omitempty"`
	Wait           *bool    `json:"wait,omitempty"`
	TimeoutSeconds int      `json:"timeout_seconds,omitempty"`
	// fail_start: the Windows error code (0: 1067) and how many starts fail (-1: all, 0: clear).
	Code  int `json:"code,omitempty"`
	Times int `json:"times,omitempty"`
	// slow_stop: how long the service's stops take from now on.
	StopMS int `json:"stop_ms,omitempty"`
	// winrm_fault: the fault (faults.go).
	WinRMFault
	Mode string `json:"mode,omitempty"`
	// set_asr_rule: the rule's id and its action.
	Rule       string `json:"rule,omitempty"`
	RuleAction int    `json:"rule_action,omitempty"`
	// start_backup: the command (default "BACKUP DATABASE").
	Command string `json:"command,omitempty"`
	// set_hadr_registry: HADR_Enabled's new value; nil deletes it.
	// set_max_server_memory: max server memory (MB); nil: the default, no limit.
	Value *int `json:"value,omitempty"`
}

// Action names.
const (
	ActionGrantRight           = "grant_right"
	ActionRevokeRight          = "revoke_right"
	ActionRestartService       = "restart_service"
	ActionStopService          = "stop_service"
	ActionStartService         = "start_service"
	ActionSetGroupPolicyRight  = "set_group_policy_right"
	ActionRefreshGroupPolicy   = "refresh_group_policy"
	ActionUninstallInstance    = "uninstall_instance"
	ActionFailStart            = "fail_start"
	ActionSlowStop             = "slow_stop"
	ActionWinRMFault           = "winrm_fault"
	ActionClearFaults          = "clear_faults"
	ActionTDSDrop              = "tds_drop_after_login"
	ActionSetAGRole            = "set_ag_role"
	ActionSetLanguageMode      = "set_language_mode"
	ActionPauseService         = "pause_service"
	ActionSetASRRule           = "set_asr_rule"
	ActionStartBackup          = "start_backup"
	ActionEndBackups           = "end_backups"
	ActionSetHADRRegistry      = "set_hadr_registry"
	ActionSetMaxServerMemory   = "set_max_server_memory"
	ActionRestartWinRM         = "restart_winrm"
	ActionRaceStop             = "race_stop"
	defaultActionWaitTimeout   = 60 * time.Second
	maxControlRequestBodyBytes = 1 << 20
)

// ActionResult is what the control plane answers to an action.
type ActionResult struct {
	Host    string `json:"host"`
	Action  string `json:"action"`
	Changed *bool  `json:"changed,omitempty"` // grant_right / revoke_right: did the holder list change
	Service string `json:"service,omitempty"`
	State   string `json:"state,omitempty"` // service actions: the service's state when the answer was sent
	// restart_winrm: how many WinRS shells the restart ended.
	ShellsEnded *int `json:"shells_ended,omitempty"`
}

// ErrUnknownHost is returned (wrapped) for a host name not in the configuration.
var ErrUnknownHost = errors.New("unknown host")

// ErrBadAction is returned (wrapped) for an action that is malformed: unknown name or
// missing fields.
var ErrBadAction = errors.New("bad action")

// Do applies one action to one host, as POST /v1/hosts/{host}/actions does.
func (s *Sim) Do(hostName string, a Action) error {
	_, err := s.apply(context.Background(), hostName, a)
	return err
}

// Apply is Do that also returns the action's result.
func (s *Sim) Apply(ctx context.Context, hostName string, a Action) (ActionResult, error) {
	return s.apply(ctx, hostName, a)
}

func (s *Sim) apply(ctx context.Context, hostName string, a Action) (ActionResult, error) {
	h, err := s.Host(hostName)
	if err != nil {
		return ActionResult{}, err
	}
	res := ActionResult{Host: h.Name(), Action: a.Action}
	switch a.Action {
	case ActionGrantRight, ActionRevokeRight:
		return changeRight(h, hostName, a, res)
	case ActionRestartService, ActionStopService, ActionStartService:
		return controlService(ctx, h, hostName, a, res)
	case ActionSetGroupPolicyRight:
		return setGroupPolicyRight(h, hostName, a, res)
	case ActionRefreshGroupPolicy:
		h.RefreshGroupPolicy()
		return res, nil
	case ActionUninstallInstance:
		return s.uninstallInstance(h, hostName, a, res)
	case ActionPauseService:
		return pauseService(h, hostName, a, res)
	case ActionRaceStop:
		return raceStop(h, hostName, a, res)
	case ActionSetASRRule:
		return setASRRule(h, hostName, a, res)
	case ActionFailStart, ActionSlowStop:
		return serviceFault(h, hostName, a, res)
	case ActionTDSDrop:
		return s.dropAfterLogin(hostName, a, res)
	case ActionWinRMFault, ActionClearFaults:
		return s.winrmFault(hostName, a, res)
	case ActionSetAGRole:
		return setAGRole(h, hostName, a, res)
	case ActionStartBackup, ActionEndBackups, ActionSetHADRRegistry, ActionSetMaxServerMemory:
		return changeInstance(h, hostName, a, res)
	case ActionRestartWinRM:
		return s.restartWinRMAction(ctx, hostName, a, res)
	case ActionSetLanguageMode:
		return setLanguageMode(h, hostName, a, res)
	case "":
		return res, fmt.Errorf("%w: the body has no \"action\"; use one of %s", ErrBadAction, strings.Join(actionNames, ", "))
	default:
		return res, fmt.Errorf("%w: unknown action %q; use one of %s", ErrBadAction, a.Action, strings.Join(actionNames, ", "))
	}
}

// needField refuses an action whose required field is empty.
func needField(a Action, field, value string) error {
	if strings.TrimSpace(value) == "" {
		return fmt.Errorf("%w: %q needs the field %q; see internal/winsim/README.md", ErrBadAction, a.Action, field)
	}
	return nil
}

// changeRight is grant_right and revoke_right: LsaAddAccountRights and
// LsaRemoveAccountRights for one SID, idempotent; Changed says whether the holder
// list changed.
func changeRight(h *host.Host, hostName string, a Action, res ActionResult) (ActionResult, error) {
	if err := needField(a, "right", a.Right); err != nil {
		return res, err
	}
	if err := needField(a, "sid", a.SID); err != nil {
		return res, err
	}
	if _, err := host.ParseSID(a.SID); err != nil {
		return res, fmt.Errorf("%w: %s: %v", ErrBadAction, a.Action, err)
	}
	var changed bool
	var err error
	if a.Action == ActionGrantRight {
		changed, err = h.GrantRight(a.Right, a.SID)
	} else {
		changed, err = h.RevokeRight(a.Right, a.SID)
	}
	if err != nil {
		return res, fmt.Errorf("%s %s for %s on host %s: %w", a.Action, a.Right, a.SID, hostName, err)
	}
	res.Changed = &changed
	return res, nil
}

// controlService is restart_service, stop_service and start_service, as
// Restart-Service -Force, Stop-Service and Start-Service do; the answer waits until
// the service reached its target state unless "wait" is false.
func controlService(ctx context.Context, h *host.Host, hostName string, a Action, res ActionResult) (ActionResult, error) {
	if err := needField(a, "service", a.Service); err != nil {
		return res, err
	}
	res.Service = a.Service
	target := contract.StateRunning
	var err error
	switch a.Action {
	case ActionRestartService:
		err = h.RestartService(a.Service)
	case ActionStopService:
		target = contract.StateStopped
		err = h.StopService(a.Service, a.Force)
	case ActionStartService:
		err = h.StartService(a.Service)
	}
	if err != nil {
		return res, fmt.Errorf("%s %s on host %s: %w", a.Action, a.Service, hostName, err)
	}
	if a.Wait == nil || *a.Wait {
		timeout := defaultActionWaitTimeout
		if a.TimeoutSeconds > 0 {
			timeout = time.Duration(a.TimeoutSeconds) * time.Second
		}
		wctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := h.WaitServiceState(wctx, a.Service, target); err != nil {
			return res, fmt.Errorf("%s %s on host %s: the service did not reach %s within %s (raise timeout_seconds, or check the service's configured start failure): %w",
				a.Action, a.Service, hostName, target, timeout, err)
		}
		res.State = target
	}
	return res, nil
}

// setGroupPolicyRight makes a GPO define a right; the next refresh applies it.
func setGroupPolicyRight(h *host.Host, hostName string, a Action, res ActionResult) (ActionResult, error) {
	if err := needField(a, "right", a.Right); err != nil {
		return res, err
	}
	if a.SIDs == nil {
		return res, fmt.Errorf("%w: %q needs the field \"sids\" (a list, [] for a policy that defines the right with no holders)", ErrBadAction, a.Action)
	}
	if err := h.SetGroupPolicyRight(a.Right, a.SIDs); err != nil {
		return res, fmt.Errorf("%s %s on host %s: %w", a.Action, a.Right, hostName, err)
	}
	return res, nil
}

// uninstallInstance removes an instance as SQL Server Setup does, and closes its
// SQL endpoint for good.
func (s *Sim) uninstallInstance(h *host.Host, hostName string, a Action, res ActionResult) (ActionResult, error) {
	if err := needField(a, "instance", a.Instance); err != nil {
		return res, err
	}
	if err := h.UninstallInstance(a.Instance); err != nil {
		return res, fmt.Errorf("%s %s on host %s: %w", a.Action, a.Instance, hostName, err)
	}
	// The model closed the TDS listener; make sure nothing opens it again.
	if sh, ok := s.byName[strings.ToLower(hostName)]; ok {
		for _, ep := range sh.instances {
			if _, n, _ := strings.Cut(ep.instance, `\`); strings.EqualFold(n, a.Instance) {
				ep.shutdown()
			}
		}
	}
	return res, nil
}

// pauseService pauses a running service (SERVICE_CONTROL_PAUSE).
func pauseService(h *host.Host, hostName string, a Action, res ActionResult) (ActionResult, error) {
	if err := needField(a, "service", a.Service); err != nil {
		return res, err
	}
	res.Service = a.Service
	if err := h.PauseService(a.Service); err != nil {
		return res, fmt.Errorf("%s %s on host %s: %w", a.Action, a.Service, hostName, err)
	}
	res.State = contract.StatePaused
	return res, nil
}

// raceStop arms a race for the next SERVICE_CONTROL_STOP sent to the service.
func raceStop(h *host.Host, hostName string, a Action, res ActionResult) (ActionResult, error) {
	if err := needField(a, "service", a.Service); err != nil {
		return res, err
	}
	if err := needField(a, "mode", a.Mode); err != nil {
		return res, err
	}
	res.Service = a.Service
	if err := h.RaceNextStop(a.Service, a.Mode); err != nil {
		if errors.Is(err, host.ErrNoSuchService) {
			return res, fmt.Errorf("%s %s on host %s: %w", a.Action, a.Service, hostName, err)
		}
		return res, fmt.Errorf("%w: %s on host %s: %v", ErrBadAction, a.Action, hostName, err)
	}
	return res, nil
}

// setASRRule sets a Defender attack surface reduction rule's action, as
// Add-MpPreference does.
func setASRRule(h *host.Host, hostName string, a Action, res ActionResult) (ActionResult, error) {
	if err := needField(a, "rule", a.Rule); err != nil {
		return res, err
	}
	if err := h.SetASRRule(a.Rule, a.RuleAction); err != nil {
		return res, fmt.Errorf("%w: %s on host %s: %v", ErrBadAction, a.Action, hostName, err)
	}
	return res, nil
}

// serviceFault is fail_start (the next starts fail with a Windows error) and
// slow_stop (the service's stops take that long from now on).
func serviceFault(h *host.Host, hostName string, a Action, res ActionResult) (ActionResult, error) {
	if err := needField(a, "service", a.Service); err != nil {
		return res, err
	}
	res.Service = a.Service
	var err error
	if a.Action == ActionFailStart {
		err = h.FailStarts(a.Service, a.Code, a.Times)
	} else {
		err = h.SetStopDuration(a.Service, time.Duration(a.StopMS)*time.Millisecond)
	}
	if err != nil {
		return res, fmt.Errorf("%s %s on host %s: %w", a.Action, a.Service, hostName, err)
	}
	return res, nil
}

// dropAfterLogin is tds_drop_after_login: the instance's SQL endpoint closes the
// next connections right after their login succeeded.
func (s *Sim) dropAfterLogin(hostName string, a Action, res ActionResult) (ActionResult, error) {
	if err := needField(a, "instance", a.Instance); err != nil {
		return res, err
	}
	sh, ok := s.byName[strings.ToLower(hostName)]
	if !ok {
		return res, fmt.Errorf("%w: %s", ErrUnknownHost, hostName)
	}
	for _, ep := range sh.instances {
		if _, n, _ := strings.Cut(ep.instance, `\`); strings.EqualFold(n, a.Instance) {
			ep.server.DropAfterLogin(a.Times)
			return res, nil
		}
	}
	return res, fmt.Errorf("%s: host %s has no SQL endpoint for instance %s: %w", a.Action, hostName, a.Instance, host.ErrNoSuchInstance)
}

// winrmFault is winrm_fault (faults.go) and clear_faults, which also clears the
// TDS faults.
func (s *Sim) winrmFault(hostName string, a Action, res ActionResult) (ActionResult, error) {
	sh, ok := s.byName[strings.ToLower(hostName)]
	if !ok {
		return res, fmt.Errorf("%w: %s", ErrUnknownHost, hostName)
	}
	if a.Action == ActionClearFaults {
		sh.faults.clear()
		for _, ep := range sh.instances {
			ep.server.DropAfterLogin(0)
		}
		return res, nil
	}
	f := a.WinRMFault
	f.Service = a.Service // "service" is the Action's field in JSON
	return res, sh.faults.add(f)
}

// setAGRole changes an Always On replica's role, its group, or takes it out.
func setAGRole(h *host.Host, hostName string, a Action, res ActionResult) (ActionResult, error) {
	if err := needField(a, "instance", a.Instance); err != nil {
		return res, err
	}
	if err := needField(a, "role", a.Role); err != nil {
		return res, err
	}
	if err := h.SetAGRole(a.Instance, a.Group, a.Role); err != nil {
		if errors.Is(err, host.ErrBadAGRole) {
			err = fmt.Errorf("%w: %v", ErrBadAction, err)
		}
		return res, fmt.Errorf("%s %s on host %s: %w", a.Action, a.Instance, hostName, err)
	}
	return res, nil
}

// changeInstance is what an instance's administrator does to it outside the
// provider: start_backup, end_backups, set_hadr_registry, set_max_server_memory.
func changeInstance(h *host.Host, hostName string, a Action, res ActionResult) (ActionResult, error) {
	if err := needField(a, "instance", a.Instance); err != nil {
		return res, err
	}
	var err error
	switch a.Action {
	case ActionStartBackup:
		err = h.StartBackup(a.Instance, a.Command)
	case ActionEndBackups:
		err = h.EndBackups(a.Instance)
	case ActionSetMaxServerMemory:
		if err = h.SetMaxServerMemory(a.Instance, a.Value); errors.Is(err, host.ErrBadMaxServerMemory) {
			err = fmt.Errorf("%w: %v", ErrBadAction, err)
		}
	default:
		err = h.SetHADRRegistry(a.Instance, a.Value)
	}
	if err != nil {
		return res, fmt.Errorf("%s %s on host %s: %w", a.Action, a.Instance, hostName, err)
	}
	return res, nil
}

// restartWinRMAction is restart_winrm: Restart-Service WinRM (winrm_restart.go).
func (s *Sim) restartWinRMAction(ctx context.Context, hostName string, a Action, res ActionResult) (ActionResult, error) {
	sh, ok := s.byName[strings.ToLower(hostName)]
	if !ok {
		return res, fmt.Errorf("%w: %s", ErrUnknownHost, hostName)
	}
	if a.DurationMS < 0 {
		return res, fmt.Errorf("%w: %s: duration_ms %d is negative; give the milliseconds the listeners stay closed (0: %s)", ErrBadAction, a.Action, a.DurationMS, defaultWinRMRestart)
	}
	res.Service = "WinRM"
	n, err := s.restartWinRM(ctx, sh, time.Duration(a.DurationMS)*time.Millisecond, a.Wait == nil || *a.Wait)
	res.ShellsEnded = &n
	if err != nil {
		return res, fmt.Errorf("%s on host %s: %w", a.Action, hostName, err)
	}
	if a.Wait == nil || *a.Wait {
		res.State = contract.StateRunning
	}
	return res, nil
}

// setLanguageMode deploys or lifts a script policy: PowerShell's language mode for
// the WinRM users' commands.
func setLanguageMode(h *host.Host, hostName string, a Action, res ActionResult) (ActionResult, error) {
	if err := needField(a, "mode", a.Mode); err != nil {
		return res, err
	}
	if err := h.SetLanguageMode(a.Mode); err != nil {
		return res, fmt.Errorf("%w: %s on host %s: %v", ErrBadAction, a.Action, hostName, err)
	}
	return res, nil
}

var actionNames = []string{
	ActionGrantRight, ActionRevokeRight, ActionRestartService, ActionStopService,
	ActionStartService, ActionSetGroupPolicyRight, ActionRefreshGroupPolicy, ActionUninstallInstance,
	ActionFailStart, ActionSlowStop, ActionWinRMFault, ActionClearFaults, ActionTDSDrop,
	ActionSetAGRole, ActionSetLanguageMode, ActionPauseService, ActionSetASRRule,
	ActionStartBackup, ActionEndBackups, ActionSetHADRRegistry, ActionSetMaxServerMemory, ActionRestartWinRM, ActionRaceStop,
}

// controlHandler serves the HTTP JSON control plane, behind sameSiteOnly.
func (s *Sim) controlHandler() http.Handler {
	return sameSiteOnly(s.controlAddr, s.controlMux())
}

// sameSiteOnly refuses what a web page could make a browser send to the control
// plane, which has no authentication: a request whose Host is not the control
// plane's own address (DNS rebinding: a name of the attacker's that resolves to
// it), one with an Origin other than the control plane itself (a cross-site fetch
// or form), and a body that is not application/json (a "simple" cross-site POST,
// text/plain or a form, needs no CORS preflight).
func sameSiteOnly(addr string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ownHost(addr, r.Host) {
			writeJSON(w, http.StatusForbidden, map[string]string{"error": fmt.Sprintf(
				"the Host %q is not the control plane's address %s: refused (DNS rebinding); use the address winsim printed", r.Host, addr)})
			return
		}
		if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host {
			writeJSON(w, http.StatusForbidden, map[string]string{"error": fmt.Sprintf(
				"cross-site request from the origin %q refused: the control plane takes requests from tools, not web pages", o)})
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if media, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || media != "application/json" {
				writeJSON(w, http.StatusUnsupportedMediaType, map[string]string{"error": fmt.Sprintf(
					"the body's Content-Type is %q: send application/json", r.Header.Get("Content-Type"))})
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// ownHost says whether a request's Host names the control plane listening at
// addr: its port, and its IP address, "localhost" when that is a loopback
// address, or any IP address when it listens on all of them. A DNS name is never
// its own: one that resolves to it could be an attacker's.
func ownHost(addr, hostport string) bool {
	lhost, lport, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	h, p, err := net.SplitHostPort(hostport)
	if err != nil || p != lport {
		return false
	}
	lip := net.ParseIP(lhost)
	if strings.EqualFold(h, "localhost") {
		return lip != nil && (lip.IsLoopback() || lip.IsUnspecified())
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	switch {
	case ip == nil || lip == nil:
		return false
	case lip.IsUnspecified():
		return true
	}
	return ip.Equal(lip)
}

// ControlExposed says whether a control plane at addr can be reached from beyond
// this machine; it has no authentication, so winsim warns.
func ControlExposed(addr string) bool {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return true
	}
	ip := net.ParseIP(h)
	return ip == nil || !ip.IsLoopback()
}

// controlRoute is one endpoint of the control plane: its pattern (method and path,
// as http.ServeMux takes it) and its handler. README.md's "Control plane" documents
// every one; control_test.go holds the README to this list.
type controlRoute struct {
	pattern string
	handler http.HandlerFunc
}

func (s *Sim) controlMux() http.Handler {
	mux := http.NewServeMux()
	var patterns []string
	for _, r := range s.controlRoutes() {
		mux.HandleFunc(r.pattern, r.handler)
		patterns = append(patterns, r.pattern)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{
			"error": fmt.Sprintf("no control endpoint %s %s; use %s", r.Method, r.URL.Path, strings.Join(patterns, ", ")),
		})
	})
	return mux
}

// controlRoutes are the control plane's endpoints.
func (s *Sim) controlRoutes() []controlRoute {
	// hostView answers with what view reads of the host the path names.
	hostView := func(view func(*host.Host) any) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			h, err := s.Host(r.PathValue("host"))
			if err != nil {
				writeError(w, err)
				return
			}
			writeJSON(w, http.StatusOK, view(h))
		}
	}
	return []controlRoute{
		{"GET /v1/info", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, s.Info())
		}},
		{"GET /v1/hosts", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, s.Info().Hosts)
		}},
		{"GET /v1/engines_down", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, s.EnginesDown())
		}},
		{"GET /v1/hosts/{host}", hostView(func(h *host.Host) any { return h.Snapshot() })},
		{"GET /v1/hosts/{host}/audit", hostView(func(h *host.Host) any { return h.Audit() })},
		{"GET /v1/hosts/{host}/eventlog", hostView(func(h *host.Host) any { return h.EventLog() })},
		{"POST /v1/hosts/{host}/actions", s.serveHostAction},
		{"GET /v1/clusters", func(w http.ResponseWriter, r *http.Request) {
			views := []wsfc.ClusterView{}
			for _, sc := range s.clusters {
				views = append(views, sc.model.View())
			}
			writeJSON(w, http.StatusOK, views)
		}},
		{"GET /v1/clusters/{cluster}", func(w http.ResponseWriter, r *http.Request) {
			c, err := s.Cluster(r.PathValue("cluster"))
			if err != nil {
				writeError(w, err)
				return
			}
			writeJSON(w, http.StatusOK, c.View())
		}},
		{"POST /v1/clusters/{cluster}/actions", s.serveClusterAction},
	}
}

// serveHostAction is POST /v1/hosts/{host}/actions: one Action, applied.
func (s *Sim) serveHostAction(w http.ResponseWriter, r *http.Request) {
	if _, err := s.Host(r.PathValue("host")); err != nil {
		writeError(w, err)
		return
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxControlRequestBodyBytes))
	dec.DisallowUnknownFields()
	var a Action
	if err := dec.Decode(&a); err != nil {
		writeError(w, fmt.Errorf("%w: the body is not an action object: %v; see internal/winsim/README.md", ErrBadAction, err))
		return
	}
	res, err := s.apply(r.Context(), r.PathValue("host"), a)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// serveClusterAction is POST /v1/clusters/{cluster}/actions: one ClusterAction, applied.
func (s *Sim) serveClusterAction(w http.ResponseWriter, r *http.Request) {
	if _, err := s.Cluster(r.PathValue("cluster")); err != nil {
		writeError(w, err)
		return
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxControlRequestBodyBytes))
	dec.DisallowUnknownFields()
	var a ClusterAction
	if err := dec.Decode(&a); err != nil {
		writeError(w, fmt.Errorf("%w: the body is not a cluster action object: %v; see internal/winsim/README.md", ErrBadAction, err))
		return
	}
	res, err := s.ClusterDo(r.Context(), r.PathValue("cluster"), a)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, err error) {
	status := http.StatusConflict // the model refused the action (e.g. unknown service, start failure)
	switch {
	case errors.Is(err, ErrUnknownHost):
		status = http.StatusNotFound
	case errors.Is(err, host.ErrNoSuchService), errors.Is(err, host.ErrNoSuchInstance), errors.Is(err, wsfc.ErrNoSuchClusterObject):
		status = http.StatusNotFound
	case errors.Is(err, ErrBadAction), errors.Is(err, host.ErrNoSuchPrivilege):
		status = http.StatusBadRequest
	}
	writeJSON(w, status, map[string]string{"error": err.Error()})
}
