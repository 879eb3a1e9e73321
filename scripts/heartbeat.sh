#!/usr/bin/env bash
# heartbeat.sh LABEL COMMAND [ARG ...]: runs COMMAND and, while it runs, prints
# "still running: LABEL (N s)" every 30 s (HEARTBEAT_SECONDS), so that a long quiet
# step of make test (a cold build, npm's first install) is never silent for a minute.
# COMMAND's output and exit status are its own.
set -euo pipefail
label="$1"
shift
every="${HEARTBEAT_SECONDS:-30}"
start=$SECONDS
"$@" &
pid=$!
# A background command of a script ignores SIGINT: pass Ctrl-C (and TERM) on to it.
trap 'kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; exit 130' INT TERM
# Polls once a second (not one long sleep), so the command's end ends the wait at once.
while kill -0 "$pid" 2>/dev/null; do
	for ((i = 0; i < every; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "still running: $label ($((SECONDS - start)) s)"
	fi
done
status=0
wait "$pid" || status=$?
exit "$status"
