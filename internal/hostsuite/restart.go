package hostsuite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"time"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/contract"
	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/sqlcheck"
)

func (s *Suite) planRestart() []string {
	return []string{
		"if the service SID holds the right or the Engine runs with IFI: revoke it and restart the Engine (restart_instance), so that the grant below needs a restart",
		"terraform apply with restart = \"if_needed\": grant the right and restart the Engine and its running dependents",
		"while that restart runs, cut WinRM: " + s.cutHow(),
		"check that the restart's guard finished it (restart_status), and that the Engine and the dependents that were running end Running",
		"verify IFI through SQL Server (sys.dm_server_services) and through the error log's startup line; the next plan is empty",
		"terraform destroy (revokes the right, restarting as needed), then put the right back as the preflight found it (restart_instance, restarting once more when it differs)",
	}
}

// cutHow says how stage 4 cuts WinRM during the restart.
func (s *Suite) cutHow() string {
	switch {
	case s.cfg.SimControl != "":
		return fmt.Sprintf("the simulator's control action restart_winrm, the listeners refusing for %d ms (%s)", simWinRMGapMS, EnvSimControl)
	case s.cfg.Local:
		return "Restart-Service WinRM on this machine (" + EnvLocal + "=true: the suite runs on the host)"
	}
	return "skipped: the host is remote (" + EnvLocal + " is not true), and a WinRM session cannot restart WinRM under itself"
}

// restart: grant with if_needed on a disposable instance, WinRM cut during the
// restart, verified through SQL Server and the error log; then destroy.
func (s *Suite) restart(ctx context.Context) {
	if _, err := s.terraformCLI(); err != nil {
		s.p.fail("terraform", "%v", err)
		return
	}
	r, ok := s.startWithIFIOff(ctx)
	if !ok {
		return
	}
	wasRunning := runningDependents(r)
	last, _ := s.host.RestartStatus(ctx, contract.RestartStatusParams{Instance: s.cfg.Instance})
	lastID := ""
	if last != nil {
		lastID = last.RestartID
	}
	spec := resourceSpec{restart: "if_needed", enabled: true}
	if err := s.tf.write(s.config(&spec)); err != nil {
		s.p.fail("grant and restart", "%v", err)
		return
	}
	s.p.about("terraform apply with restart = \"if_needed\": grant %s for %s and restart %s", contract.RightManageVolume, s.serviceSID, r.ServiceName)
	done := make(chan applied, 1)
	go func() {
		out, code, err := s.tf.run(ctx, "apply", "-auto-approve", "-no-color", "-input=false")
		done <- applied{out, code, err}
	}()
	a, ended := s.cutDuringRestart(ctx, lastID, done)
	if !ended {
		a = <-done
	}
	if a.err != nil || a.code != 0 {
		s.p.fail("grant and restart", "terraform apply %s", tfOutcome(a.code, a.err, a.out))
	} else {
		s.p.pass("grant and restart", "terraform apply with restart = \"if_needed\" finished")
	}
	s.checkRestarted(ctx, lastID, wasRunning)
	s.verifyIFI(ctx, true)
	s.checkEmptyPlan(ctx, "plan after restart")
	s.p.about("terraform destroy: revoke the right (restart = \"if_needed\" restarts when that is what makes IFI off)")
	out, code, err := s.tf.run(ctx, "destroy", "-auto-approve", "-no-color", "-input=false")
	if err != nil || code != 0 {
		s.p.fail("destroy", "terraform destroy %s", tfOutcome(code, err, out))
	} else {
		s.p.pass("destroy", "terraform destroy finished")
		s.checkLSA(ctx, "destroy (lsa)", false)
	}
	s.restore(ctx)
}

// startWithIFIOff makes the starting point of a grant that needs a restart: the
// right not held and the Engine running without IFI.
func (s *Suite) startWithIFIOff(ctx context.Context) (*contract.ReadInstanceResult, bool) {
	s.p.about("read the instance (read_instance) and, with a SQL login, what SQL Server says of IFI")
	r, err := s.readInstance(ctx)
	if err != nil {
		s.p.fail("starting point", "%v", err)
		return nil, false
	}
	if r.ServiceState != contract.StateRunning {
		s.p.fail("starting point", "the Engine %s is %s; start it (Start-Service %s) and run the suite again", r.ServiceName, r.ServiceState, r.ServiceName)
		return nil, false
	}
	// Without a SQL login, the error log's startup line tells the running Engine's IFI.
	ifiOn := r.ErrorLog.Enabled != nil && *r.ErrorLog.Enabled
	if s.sqlCfg != nil {
		if rep, err := sqlcheck.New(*s.sqlCfg).Check(ctx, s.sqlTarget()); err == nil && rep.IFIEnabled != nil {
			ifiOn = *rep.IFIEnabled
		}
	}
	if !holds(r, s.serviceSID) && !ifiOn {
		s.p.pass("starting point", "the service SID does not hold the right and the Engine runs without IFI: the grant needs a restart")
		return r, true
	}
	if !s.restartWith(ctx, "starting point", false) {
		return nil, false
	}
	r, err = s.readInstance(ctx)
	if err != nil {
		s.p.fail("starting point", "%v", err)
		return nil, false
	}
	return r, true
}

// restartWith revokes or grants the right and restarts the Engine in one
// restart_instance, waiting for it to finish.
func (s *Suite) restartWith(ctx context.Context, check string, grant bool) bool {
	s.p.about("%s the right and restart the Engine (restart_instance, the guard included)", grantWord(grant))
	res, err := s.host.RestartInstance(ctx, contract.RestartInstanceParams{
		Instance: s.cfg.Instance, TimeoutSeconds: int(s.opt.StepTimeout / time.Second),
		Changes: []contract.RightChange{{SID: s.serviceSID, Grant: grant}}, Agent: contract.UserAgent("hostsuite"),
	})
	switch {
	case err != nil:
		s.p.fail(check, "%v", err)
		return false
	case res.Error != "":
		s.p.fail(check, "the restart failed (%s): %s", res.Error, res.Message)
		return false
	}
	s.p.pass(check, "%s and restarted: stopped %s, started %s", grantWord(grant), strings.Join(res.Stopped, ", "), strings.Join(res.Started, ", "))
	if s.sqlCfg != nil {
		s.p.about("wait until SQL Server accepts logins")
		if err := sqlcheck.New(*s.sqlCfg).WaitReady(ctx, s.sqlTarget()); err != nil {
			s.p.fail(check, "SQL Server did not accept logins after the restart: %v", err)
			return false
		}
	}
	return true
}

func runningDependents(r *contract.ReadInstanceResult) []string {
	var out []string
	for _, d := range r.Dependents {
		if d.State == contract.StateRunning {
			out = append(out, d.Name)
		}
	}
	return out
}

// applied is a terraform run's outcome.
type applied struct {
	out  string
	code int
	err  error
}

// cutDuringRestart waits until a restart newer than lastID runs, then cuts WinRM.
// ended is true when the apply's outcome arrived meanwhile (then a holds it).
func (s *Suite) cutDuringRestart(ctx context.Context, lastID string, done <-chan applied) (a applied, ended bool) {
	if s.cfg.SimControl == "" && !s.cfg.Local {
		s.p.skip("winrm cut", "%s", s.cutHow())
		return a, false
	}
	s.p.about("watch restart_status until the restart runs, then cut WinRM (%s)", s.cutHow())
	deadline := time.Now().Add(s.opt.StepTimeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case a = <-done:
			s.p.fail("winrm cut", "the apply ended before the suite saw the restart running (it watches restart_status); nothing was cut")
			return a, true
		case <-ctx.Done():
			s.p.fail("winrm cut", "%v", ctx.Err())
			return a, false
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			s.p.fail("winrm cut", "no restart seen within %s", s.opt.StepTimeout)
			return a, false
		}
		st, err := s.host.RestartStatus(ctx, contract.RestartStatusParams{Instance: s.cfg.Instance})
		if err != nil || !st.Found || st.RestartID == lastID || st.Finished {
			continue
		}
		s.p.about("cut WinRM while the restart is in phase %q: %s", st.Phase, s.cutHow())
		if err := s.cutWinRM(ctx); err != nil {
			s.p.fail("winrm cut", "%v", err)
			return a, false
		}
		s.p.pass("winrm cut", "WinRM was cut while the restart was in phase %q", st.Phase)
		return a, false
	}
}

// simWinRMGapMS is how long the simulated WinRM service refuses connections when
// stage 4 cuts it.
const simWinRMGapMS = 3000

func (s *Suite) cutWinRM(ctx context.Context) error {
	if s.cfg.SimControl != "" {
		// The listeners refuse for 3 s: a WinRM service restart takes seconds on a
		// real host (the simulator's default gap, 300 ms, is a guess at the quickest).
		return s.simAction(ctx, map[string]any{"action": "restart_winrm", "duration_ms": simWinRMGapMS})
	}
	out, err := exec.CommandContext(ctx, "powershell.exe", "-NoProfile", "-NonInteractive", "-Command", "Restart-Service -Name WinRM -Force").CombinedOutput()
	if err != nil {
		return fmt.Errorf("Restart-Service WinRM on this machine: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// simAction posts one action to the simulator's control plane for this host.
func (s *Suite) simAction(ctx context.Context, action map[string]any) error {
	name := strings.ToLower(s.before.ComputerName)
	body, _ := json.Marshal(action)
	u := s.cfg.SimControl + "/v1/hosts/" + url.PathEscape(name) + "/actions"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("the simulator's control plane (%s): %w", EnvSimControl, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the simulator's control plane answered %s to %s: %s", resp.Status, body, strings.TrimSpace(string(msg)))
	}
	return nil
}

// checkRestarted: the restart newer than lastID finished without error (the guard
// finished it if the cut ended the script), and the Engine and the dependents that
// were running are Running.
func (s *Suite) checkRestarted(ctx context.Context, lastID string, wasRunning []string) {
	s.p.about("wait for the restart's outcome (restart_status) and read the services")
	var st *contract.RestartInstanceResult
	err := s.poll(ctx, func() (bool, error) {
		var err error
		st, err = s.host.RestartStatus(ctx, contract.RestartStatusParams{Instance: s.cfg.Instance, WaitSeconds: 30})
		if err != nil {
			return false, err
		}
		return st.Found && st.RestartID != lastID && st.Finished, nil
	})
	switch {
	case err != nil:
		s.p.fail("guard", "the restart's outcome could not be read: %v", err)
		return
	case st.Error != "":
		s.p.fail("guard", "the restart ended with %s: %s", st.Error, st.Message)
		return
	}
	s.p.pass("guard", "the restart %s finished: stopped %s, started %s", st.RestartID, strings.Join(st.Stopped, ", "), strings.Join(st.Started, ", "))
	r, err := s.readInstance(ctx)
	if err != nil {
		s.p.fail("services", "%v", err)
		return
	}
	var notRunning []string
	if r.ServiceState != contract.StateRunning {
		notRunning = append(notRunning, r.ServiceName+" "+r.ServiceState)
	}
	now := map[string]string{}
	for _, d := range r.Dependents {
		now[strings.ToLower(d.Name)] = d.State
	}
	for _, d := range wasRunning {
		if st := now[strings.ToLower(d)]; st != contract.StateRunning {
			notRunning = append(notRunning, d+" "+st)
		}
	}
	if len(notRunning) > 0 {
		s.p.fail("services", "not Running after the restart: %s. Start them (Start-Service) and look at the System event log", strings.Join(notRunning, ", "))
		return
	}
	s.p.pass("services", "%s and the dependents that were running (%s) are Running", r.ServiceName, strings.Join(wasRunning, ", "))
}

// verifyIFI checks IFI through SQL Server and through the error log's startup line.
func (s *Suite) verifyIFI(ctx context.Context, want bool) {
	sqlCheck, logCheck := "ifi "+onOff(want)+" (sql server)", "ifi "+onOff(want)+" (error log)"
	if s.sqlCfg == nil {
		s.p.skip(sqlCheck, "%s is not set", EnvSQLUser)
	} else {
		s.p.about("ask SQL Server (sys.dm_server_services) whether IFI is on")
		c := sqlcheck.New(*s.sqlCfg)
		rep, err := func() (*contract.SQLReport, error) {
			if err := c.WaitReady(ctx, s.sqlTarget()); err != nil {
				return nil, err
			}
			return c.Check(ctx, s.sqlTarget())
		}()
		switch {
		case err != nil:
			s.p.fail(sqlCheck, "%v", err)
		case rep.IFIEnabled == nil || *rep.IFIEnabled != want:
			s.p.fail(sqlCheck, "instant_file_initialization_enabled is %v; expected %s", ptrText(rep.IFIEnabled), yesNo(want))
		default:
			s.p.pass(sqlCheck, "instant_file_initialization_enabled = %s", map[bool]string{true: "Y", false: "N"}[want])
		}
	}
	s.p.about("read the error log's startup line (read_instance)")
	r, err := s.readInstance(ctx)
	switch {
	case err != nil:
		s.p.fail(logCheck, "%v", err)
	case !r.ErrorLog.Found || r.ErrorLog.Enabled == nil:
		s.p.fail(logCheck, "no IFI line in the current error log %s", r.ErrorLog.Path)
	case *r.ErrorLog.Enabled != want:
		s.p.fail(logCheck, "the line says IFI is %s: %s", map[bool]string{true: "on", false: "off"}[*r.ErrorLog.Enabled], r.ErrorLog.Line)
	default:
		s.p.pass(logCheck, "%s", r.ErrorLog.Line)
	}
}

func ptrText(b *bool) string {
	if b == nil {
		return "NULL"
	}
	return fmt.Sprint(*b)
}

// restore puts the right back as the preflight found it, restarting the Engine when
// that changes it (the instance is disposable).
func (s *Suite) restore(ctx context.Context) {
	r, err := s.readInstance(ctx)
	if err != nil {
		s.p.fail("restore", "%v", err)
		return
	}
	if holds(r, s.serviceSID) == s.initialHolds() {
		s.p.pass("restore", "the right is as the preflight found it (service SID holds it: %s)", yesNo(s.initialHolds()))
		return
	}
	s.restartWith(ctx, "restore", s.initialHolds())
}

// errPollDeadline is poll's error when the deadline passes.
var errPollDeadline = errors.New("the step timeout passed")

// poll calls fn until it reports done, an error persists past the deadline, or the
// step timeout passes; errors in between (WinRM coming back after the cut) are
// retried after a short pause.
func (s *Suite) poll(ctx context.Context, fn func() (bool, error)) error {
	deadline := time.Now().Add(s.opt.StepTimeout)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		ok, err := fn()
		if err == nil && ok {
			return nil
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			if last != nil {
				return fmt.Errorf("%w: %v", errPollDeadline, last)
			}
			return errPollDeadline
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
