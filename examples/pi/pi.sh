#!/usr/bin/env bash
# Estimates pi the way the Fiber seeds do (pool.map over random samples), with
# nothing but curl and jq against a strand gateway:
#   STRAND_URL=http://127.0.0.1:8080 examples/pi/pi.sh [SAMPLES] [TASKS]
# (the token: $STRAND_TOKEN, $STRAND_TOKEN_FILE or ./strand.token)
# Each task runs the builtin "pi" function on SAMPLES/TASKS points and returns
# how many fell inside the quarter circle (one task per point, as in the seed,
# works too, but moves a million JSON values for a million bits of work).
set -euo pipefail

url="${STRAND_URL:-http://127.0.0.1:8080}"
samples="${1:-1000000}"
tasks="${2:-100}"
per_task=$((samples / tasks))
# The gateway's API token: $STRAND_TOKEN, else $STRAND_TOKEN_FILE, else
# ./strand.token. It goes to curl through a file descriptor, never argv.
token="${STRAND_TOKEN:-$(cat "${STRAND_TOKEN_FILE:-strand.token}" 2>/dev/null || true)}"
api() { curl -sSf -H @<(printf 'Authorization: Bearer %s\n' "$token") -H 'Content-Type: application/json' "$@"; }

pool=$(api -X POST "$url/v1/pools" -d '{"processes": 4}' | jq -r .id)
trap 'api -o /dev/null -X DELETE "$url/v1/pools/$pool"' EXIT

args=$(jq -nc --argjson n "$tasks" --argjson k "$per_task" '[range($n)] | map($k)')
job=$(api -X POST "$url/v1/pools/$pool/map" -d "{\"function\": \"pi\", \"args\": $args}" | jq -r .id)

# Page the results as they come (imap), long polling up to 30 s a page.
hits=0
cursor=0
while :; do
  page=$(api "$url/v1/jobs/$job/results?cursor=$cursor&wait=30&limit=10000")
  failed=$(jq '[.items[] | select(.ok | not)] | length' <<<"$page")
  [ "$failed" -eq 0 ] || { jq -r '.items[] | select(.ok | not) | .error' <<<"$page" >&2; exit 1; }
  hits=$((hits + $(jq '[.items[].value] | add // 0' <<<"$page")))
  cursor=$(jq -r .next_cursor <<<"$page")
  [ "$(jq -r .complete <<<"$page")" = true ] && break
done

echo "Pi is roughly $(jq -n --argjson h "$hits" --argjson n "$((per_task * tasks))" '4 * $h / $n')"
