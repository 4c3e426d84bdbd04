#!/usr/bin/env bash
# Rings on a real gateway: every member gets RANK (each once), WORLD_SIZE,
# MASTER_ADDR and MASTER_PORT (the same for all); examples/ring's all-reduce
# over nng gives every rank the same result; DELETE ends every member; bad
# requests are refused.
set -uo pipefail
bin="$1"
src="$(cd "$(dirname "$0")/../.." && pwd)"
. "$src/tests/integration/lib.sh"
dir=$(mktemp -d /tmp/strand-test-ring-XXXXXX)
trap 'show_log_on_failure; stop_gateway; rm -rf "$dir"' EXIT
start_gateway "$bin" "$dir" || exit 1
fails=0
passes=0
check() {
  if [ "$2" != "$3" ]; then echo "FAIL $1: expected [$2], got [$3]"; fails=$((fails + 1)); else echo "ok   $1"; passes=$((passes + 1)); fi
}
logs_of() { # every member's output, rank order
  for p in $(scurl -sf "$STRAND_URL/v1/rings/$1" | jq -r '.members | sort_by(.rank) | .[].id'); do
    scurl -sf "$STRAND_URL/v1/processes/$p/logs"
  done
}

ring=$(scurl -sf -X POST "$STRAND_URL/v1/rings" \
  -d '{"size":3,"command":["sh","-c","echo $RANK $WORLD_SIZE $MASTER_ADDR $MASTER_PORT"]}' | jq -r .id)
check "ring id" "g-" "${ring:0:2}"
check "ring ends done" done "$(scurl -sf "$STRAND_URL/v1/rings/$ring?wait=30" | jq -r .state)"
out=$(logs_of "$ring")
check "ranks 0..2, each once" "0 1 2" "$(echo "$out" | awk '{print $1}' | sort -n | tr '\n' ' ' | sed 's/ $//')"
check "world size" "3 3 3" "$(echo "$out" | awk '{print $2}' | tr '\n' ' ' | sed 's/ $//')"
check "one master for all" 1 "$(echo "$out" | awk '{print $3":"$4}' | sort -u | wc -l)"

out=$("$src/examples/ring/ring.sh" 4 "$bin"); code=$?
check "all-reduce ring: done" 0 $code
check "all-reduce: 4 ranks spoke" 4 "$(echo "$out" | grep -c 'average =')"
check "all-reduce: the same result on every rank" 1 "$(echo "$out" | sed 's/.*average =//' | sort -u | wc -l)"
check "all-reduce: the right average" " 2.5000 5.0000 7.5000 10.0000 12.5000 15.0000 17.5000 20.0000" \
  "$(echo "$out" | sed 's/.*average =//' | sort -u)"

ring=$(scurl -sf -X POST "$STRAND_URL/v1/rings" -d '{"size":2,"command":["sleep","60"]}' | jq -r .id)
check "listed, newest first, with its members" "$ring 2" \
  "$(scurl -sf "$STRAND_URL/v1/rings" | jq -r '.rings[0] | "\(.id) \(.members | length)"')"
del=$(scurl -sf -X DELETE "$STRAND_URL/v1/rings/$ring")
check "delete: every member ended" "143 143" "$(echo "$del" | jq -r '[.members[].exit_code] | map(tostring) | join(" ")')"

check "size 0 refused" 400 "$(scurl -s -o /dev/null -w '%{http_code}' -X POST "$STRAND_URL/v1/rings" -d '{"size":0,"command":["true"]}')"
check "no command refused" 400 "$(scurl -s -o /dev/null -w '%{http_code}' -X POST "$STRAND_URL/v1/rings" -d '{"size":2}')"
check "unknown ring" 404 "$(scurl -s -o /dev/null -w '%{http_code}' "$STRAND_URL/v1/rings/g-0000000000000000")"
echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
