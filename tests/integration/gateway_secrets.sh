#!/usr/bin/env bash
# What a process beside the gateway, of the same user, can read of it: the
# gateway runs as a plain user (65534) with its token in STRAND_TOKEN. The
# token still authenticates, but its bytes are gone from the environment
# block /proc/PID/environ shows, and from its workers'; the gateway is not
# dumpable, so its /proc files (mem, environ) are root's, not its user's,
# and another process of that user cannot ptrace it. Needs root, to start
# the gateway as another user.
set -euo pipefail
bin="$1"
src="$(cd "$(dirname "$0")/../.." && pwd)"
. "$src/tests/integration/lib.sh"

if [ "$(id -u)" != 0 ]; then
  echo "skipped: runs the gateway as user 65534, which needs root"
  exit 77
fi
as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
if ! as_user test -x "$bin/strand-gateway"; then
  echo "skipped: user 65534 cannot reach $bin (the checkout's permissions)"
  exit 77
fi
dir=$(mktemp -d /tmp/strand-test-secrets-XXXXXX)
chown 65534:65534 "$dir"
trap 'show_log_on_failure; stop_gateway; rm -rf "$dir"' EXIT

token=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')
# env, then setpriv, each exec the next: GATEWAY_PID is the gateway's.
GATEWAY_LAUNCH=(env "STRAND_TOKEN=$token" setpriv --reuid=65534 --regid=65534 --clear-groups)
start_gateway "$bin" "$dir"
bearer() { curl -s -H @<(printf 'Authorization: Bearer %s\n' "$token") -H 'Content-Type: application/json' "$@"; }

check "the gateway runs as 65534" "65534" "$(awk '/^Uid:/ {print $2}' "/proc/$GATEWAY_PID/status")"
check "STRAND_TOKEN still authenticates" '{"pools":[],"next_cursor":null}' "$(bearer "$STRAND_URL/v1/pools")"
check "the token is not in the gateway's /proc/PID/environ" "0" \
  "$(tr '\0' '\n' <"/proc/$GATEWAY_PID/environ" | grep -c "$token" || true)"
check "not dumpable: its /proc files are root's" "0 0" \
  "$(stat -c %u "/proc/$GATEWAY_PID/environ") $(stat -c %u "/proc/$GATEWAY_PID/mem")"
check "a process of its own user cannot read its memory" "refused" \
  "$(as_user head -c 1 "/proc/$GATEWAY_PID/environ" >/dev/null 2>&1 && echo read || echo refused)"

pool=$(bearer -d '{"processes": 1}' "$STRAND_URL/v1/pools" | jq -r .id)
worker_pid=""
for _ in $(seq 200); do
  worker_pid=$(bearer "$STRAND_URL/v1/pools/$pool" | jq -r '.workers[] | select(.state == "connected") | .pid')
  [ -n "$worker_pid" ] && break
  sleep 0.05
done
check "its worker runs" "yes" "$([ -n "$worker_pid" ] && [ -d "/proc/$worker_pid" ] && echo yes || echo no)"
check "the token is not in its worker's environment" "0" \
  "$(tr '\0' '\n' <"/proc/$worker_pid/environ" | grep -c "$token" || true)"
checks_passed
