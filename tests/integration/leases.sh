#!/usr/bin/env bash
# Clients' leases over REST: a pool, a manager and a process made with a
# lease end when it is deleted or not renewed in time, and a queue and a
# pipe are deleted then, not while it is renewed; one made without stays;
# a lease survives a restart of the gateway, which gives it its whole time
# again; bad leases get problem+json.
set -uo pipefail
bin="$1"
src="$(cd "$(dirname "$0")/../.." && pwd)"
. "$src/tests/integration/lib.sh"
dir=$(mktemp -d /tmp/strand-test-leases-XXXXXX)
trap 'show_log_on_failure; stop_gateway; rm -rf "$dir"' EXIT
start_gateway "$bin" "$dir" || exit 1

api() { scurl -s "$STRAND_URL$@"; }
state_of() { api "/v1/$1" | jq -r .state; }
until_state() { # until_state WANT SECONDS PATH: waits for the resource's state; prints the last
  local got=""
  for _ in $(seq $(($2 * 10))); do
    got=$(state_of "$3")
    [ "$got" = "$1" ] && break
    sleep 0.1
  done
  echo "$got"
}
status_and_detail() { jq -r '"\(.status) \(.detail)"'; }

check "a lease of 0 s" "400 field 'lease_s' must be an integer from 1 to 86400" \
  "$(api /v1/leases -d '{"lease_s":0}' | status_and_detail)"
check "an unknown field" "400 unknown field 'ttl'" "$(api /v1/leases -d '{"ttl":5}' | status_and_detail)"
check "a pool naming no lease" "422 no lease l-0000000000000000: it ended, or never was (POST /v1/leases)" \
  "$(api /v1/pools -d '{"processes":1,"lease":"l-0000000000000000"}' | status_and_detail)"
check "a lease that is no id" "400 field 'lease' must be a lease's id (POST /v1/leases)" \
  "$(api /v1/pools -d '{"processes":1,"lease":""}' | status_and_detail)"
check "a queue naming no lease" "422 no lease l-0000000000000000: it ended, or never was (POST /v1/leases)" \
  "$(api /v1/queues -d '{"lease":"l-0000000000000000"}' | status_and_detail)"
check "a pipe's lease that is no id" "400 field 'lease' must be a lease's id (POST /v1/leases)" \
  "$(api /v1/pipes -d '{"lease":7}' | status_and_detail)"
check "default: 10 s" 10 "$(api /v1/leases -X POST | jq .lease_s)"

# Renewed, it holds; let go, what it holds ends, and only that. (Its 2 s
# from when all is made: making it all takes longer on a busy machine.)
lease=$(api /v1/leases -d '{"lease_s":60}' | jq -r .id)
pool=$(api /v1/pools -d "{\"processes\":1,\"lease\":\"$lease\"}" | jq -r .id)
free_pool=$(api /v1/pools -d '{"processes":1}' | jq -r .id)
manager=$(api /v1/managers -d "{\"type\":\"dict\",\"lease\":\"$lease\"}" | jq -r .id)
process=$(api /v1/processes -d "{\"command\":[\"sleep\",\"300\"],\"lease\":\"$lease\"}" | jq -r .id)
queue=$(api /v1/queues -d "{\"kind\":\"turns\",\"lease\":\"$lease\"}" | jq -r .id)
pipe=$(api /v1/pipes -d "{\"lease\":\"$lease\"}" | jq -r .id)
free_queue=$(api /v1/queues -X POST | jq -r .id)
api "/v1/queues/$queue/items" -d '{"items":[1,2]}' >/dev/null
api "/v1/pipes/$pipe/ends/0/send" -d '{"item":"x"}' >/dev/null
api "/v1/leases/$lease/renew" -d '{"lease_s":2}' >/dev/null
check "the lease says what it holds" "[\"$pool\"] [\"$manager\"] [\"$process\"] [\"$queue\"] [\"$pipe\"]" \
  "$(api "/v1/leases/$lease" | jq -c '.pools, .managers, .processes, .queues, .pipes' | paste -sd' ')"
check "the pool says its lease" "$lease" "$(api "/v1/pools/$pool" | jq -r .lease)"
for _ in 1 2 3 4 5 6; do
  api "/v1/leases/$lease/renew" -X POST >/dev/null
  sleep 0.5
done
check "renewed for 3 s past its 2: all still there" "active active running" \
  "$(state_of "pools/$pool") $(state_of "managers/$manager") $(state_of "processes/$process")"
check "... the queue's and the pipe's items too" "2 1" \
  "$(api "/v1/queues/$queue" | jq .size) $(api "/v1/pipes/$pipe" | jq '[.directions[].size] | add')"
check "not renewed: the pool ends" terminated "$(until_state terminated 10 "pools/$pool")"
check "... the manager" terminated "$(until_state terminated 10 "managers/$manager")"
check "... the process" exited "$(until_state exited 10 "processes/$process")"
check "... and the lease is gone" "404 no such lease: it ended (deleted, or not renewed in time)" \
  "$(api "/v1/leases/$lease/renew" -X POST | status_and_detail)"
check "... its queue and pipe deleted, with their items" "404 404" \
  "$(api "/v1/queues/$queue" | jq .status) $(api "/v1/pipes/$pipe" | jq .status)"
check "the pool and the queue made without a lease stay" "active 0" \
  "$(state_of "pools/$free_pool") $(api "/v1/queues/$free_queue" | jq .size)"

# Deleted: what it holds ends at once.
lease=$(api /v1/leases -d '{"lease_s":600}' | jq -r .id)
pool=$(api /v1/pools -d "{\"processes\":1,\"lease\":\"$lease\"}" | jq -r .id)
check "deleted: its view, ended" "ended [\"$pool\"]" \
  "$(api "/v1/leases/$lease" -X DELETE | jq -r '"\(.state) \(.pools | tostring)"')"
check "... and its pool ends" terminated "$(until_state terminated 10 "pools/$pool")"

# Across a restart: the lease is kept, and given its whole time again.
lease=$(api /v1/leases -d '{"lease_s":3}' | jq -r .id)
pool=$(api /v1/pools -d "{\"processes\":1,\"lease\":\"$lease\"}" | jq -r .id)
queue=$(api /v1/queues -d "{\"lease\":\"$lease\"}" | jq -r .id)
stop_gateway
start_gateway "$bin" "$dir" || exit 1
check "restarted: the lease is there" "active [\"$pool\"] [\"$queue\"]" \
  "$(api "/v1/leases/$lease" | jq -r '"\(.state) \(.pools | tostring) \(.queues | tostring)"')"
check "... renewed, it holds" active "$(api "/v1/leases/$lease/renew" -X POST | jq -r .state)"
check "... let go, its pool ends" terminated "$(until_state terminated 15 "pools/$pool")"
check "... and its queue goes" 404 "$(api "/v1/queues/$queue" | jq .status)"
checks_passed
