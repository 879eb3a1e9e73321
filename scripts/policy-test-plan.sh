#!/usr/bin/env bash
# policy-test-plan.sh TF OPA POLICY: the real-plan half of policy-test.sh, run by
# winsim-test-env.sh in a copy of examples/policies/testdata (it sets WINSIM_CONTROL
# and WINSIM_VAR_FILE).
set -euo pipefail
tf="$1" opa="$2" policy="$3"
run() { "$tf" "$@" -no-color -input=false >>tf.log 2>&1 || { cat tf.log >&2; echo "policy-test: $tf $1 failed" >&2; exit 1; }; }
act() { # HOST JSON: a control-plane action, as an administrator would act outside Terraform
	curl --silent --show-error --fail-with-body -X POST -H "Content-Type: application/json" -d "$2" \
		"http://$WINSIM_CONTROL/v1/hosts/$1/actions" >/dev/null
}
run init
run apply -auto-approve -var-file="$WINSIM_VAR_FILE" -var restarts_allowed=true
sid="$("$tf" output -raw service_sid)"
for h in sql01 sql02; do act "$h" "{\"action\":\"revoke_right\",\"right\":\"SeManageVolumePrivilege\",\"sid\":\"$sid\"}"; done
act sql01 "{\"action\":\"restart_service\",\"service\":\"MSSQLSERVER\"}"
run plan -out=tfplan -var-file="$WINSIM_VAR_FILE" -var restarts_allowed=true
"$tf" show -json tfplan >plan.json
"$opa" eval --format json --input plan.json --data "$policy" "data.mssqlifi.restarts.deny" >deny.json
if [[ -n "${POLICY_TEST_KEEP:-}" ]]; then cp plan.json deny.json "$POLICY_TEST_KEEP/"; fi
python3 - <<"PY"
import json, sys
plan = json.load(open("plan.json"))
acts = {rc["address"]: rc["change"]["after"].get("planned_action") for rc in plan["resource_changes"]}
deny = json.load(open("deny.json"))["result"][0]["expressions"][0]["value"]
fail = []
if acts.get("mssqlifi_instant_file_initialization.primary") != "grant_and_restart":
    fail.append("the primary's planned_action is %r, not grant_and_restart" % acts.get("mssqlifi_instant_file_initialization.primary"))
if acts.get("mssqlifi_instant_file_initialization.standalone") != "grant":
    fail.append("the standalone instance's planned_action is %r, not grant" % acts.get("mssqlifi_instant_file_initialization.standalone"))
if [m for m in deny if "primary: " in m] != [m for m in deny if "restarts the primary replica of AG1" in m] or not deny:
    fail.append("the policy does not deny the primary's restart (alone: -var restarts_allowed=true opens the window): %s" % deny)
if any("standalone" in m for m in deny):
    fail.append("the policy denies the grant without restart: %s" % deny)
for f in fail:
    print("policy-test: FAIL: " + f, file=sys.stderr)
if fail:
    sys.exit(1)
print("policy-test: the plan restarts the primary (denied: %s) and only grants on the standalone instance (allowed)" % "; ".join(deny))
PY
