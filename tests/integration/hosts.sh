#!/usr/bin/env bash
# Workers on another host, the hosts made of network namespaces this test
# creates: "gw" holds the gateway, "far" the workers that join its
# external pool, a veth pair between them (10.231.N.1 and .2; nothing
# outside the two namespaces is ever contacted). The API is HTTPS and the
# hub TLS, checked by a CA the test makes. Over that link, each map's
# results are checked exact (every index once, its own value, none
# failed):
#   - over a link with 10 ms of delay each way (strand-test-link-delay
#     holds the far host's packets on a netfilter queue: a kernel may lack
#     tc's netem), 100 tasks of 30 ms, each worker holding the next while
#     one runs, then 2,000 tasks of 1 ms on the two workers; the time is
#     printed (bench/hosts compares it with the ideal);
#   - with 1% of the packets dropped each way (iptables' statistic match);
#   - across a 20 s cut of the link in the middle of a map;
#   - across a gateway killed and restarted while the link is cut.
# The workers run under a bounded restart loop, as a supervisor would run
# them: one the gateway gave up on during a cut joins again.
# Skips (77) without root, ip, iptables or the link delay's program.
#   hosts.sh BIN_DIR
set -uo pipefail
bin="$1"
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/lib.sh"

if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! command -v iptables >/dev/null; then
  echo "skipped: needs root, ip and iptables to make its hosts of network namespaces"
  exit 77
fi
if [ ! -x "$bin/strand-test-link-delay" ]; then
  echo "skipped: strand-test-link-delay was not built (libnetfilter-queue-dev; deploy/install-deps.sh test)"
  exit 77
fi
tag="s$$"
gwns="strand-gw-$tag" farns="strand-far-$tag"
net="10.231.$((RANDOM % 250))"
gwip="$net.1" farip="$net.2"
dir=$(mktemp -d /tmp/strand-test-hosts-XXXXXX)
chmod 755 "$dir"
gw_pid="" far_pids=() delay_pid=""
cleanup() {
  code=$?
  if [ "$code" -ne 0 ]; then
    for f in "$dir"/gateway.log "$dir"/worker-*.log; do
      [ -f "$f" ] && { echo "--- exit $code; $(basename "$f") ends:"; tail -25 "$f"; }
    done
  fi
  # the supervisors' loops, stopped first so that none starts another
  # worker, then the workers they run, then the loops
  for p in "${far_pids[@]}"; do
    kill -STOP "$p" 2>/dev/null
    for k in $(descendants "$p" 0); do kill -TERM "$k" 2>/dev/null; done
    kill -TERM "$p" 2>/dev/null
    kill -CONT "$p" 2>/dev/null
  done
  [ -n "$gw_pid" ] && kill -TERM "$gw_pid" 2>/dev/null
  [ -n "$delay_pid" ] && kill -TERM "$delay_pid" 2>/dev/null
  for p in "${far_pids[@]}" $gw_pid $delay_pid; do wait "$p" 2>/dev/null; done
  ip netns del "$gwns" 2>/dev/null
  ip netns del "$farns" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
in_gw() { ip netns exec "$gwns" "$@"; }
in_far() { ip netns exec "$farns" "$@"; }

# Two hosts and a wire.
ip netns add "$gwns" && ip netns add "$farns" || exit 1
ip link add "${tag}g" type veth peer name "${tag}f" || exit 1
ip link set "${tag}g" netns "$gwns" && ip link set "${tag}f" netns "$farns" || exit 1
in_gw ip addr add "$gwip/24" dev "${tag}g" && in_gw ip link set "${tag}g" up && in_gw ip link set lo up
in_far ip addr add "$farip/24" dev "${tag}f" && in_far ip link set "${tag}f" up && in_far ip link set lo up

# The gateway's certificate: its address for the API, a name for the hub
# (the worker's TLS library checks names, not addresses).
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=strand-gw \
  -addext "subjectAltName=IP:$gwip,DNS:strand-gw" -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null || exit 1
chmod 644 "$dir/key.pem"
start_gw() { # ip execs the gateway: $! is its pid
  ip netns exec "$gwns" "$bin/strand-gateway" --db "$dir/strand.db" --http "$gwip:8443" \
    --hub "tls+tcp://$gwip:8444" --tls-cert "$dir/cert.pem" --tls-key "$dir/key.pem" --hub-server-name strand-gw \
    --token-file "$dir/token" </dev/null >/dev/null 2>>"$dir/gateway.log" &
  gw_pid=$!
  for _ in $(seq 200); do
    api GET /healthz >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  echo "FAIL the gateway did not answer"
  exit 1
}
api() { # METHOD PATH [BODY]: from the gateway's own host
  in_gw curl -sf --cacert "$dir/cert.pem" -H "Authorization: Bearer $(cat "$dir/token" 2>/dev/null)" \
    -H 'Content-Type: application/json' -X "$1" "https://$gwip:8443$2" ${3:+-d "$3"}
}
start_gw

check "the far host reaches the gateway's API" ok \
  "$(in_far curl -sf --cacert "$dir/cert.pem" "https://$gwip:8443/healthz" | jq -r .status)"
pool=$(api POST /v1/pools '{"backend": "external", "processes": 2}' | jq -r .id)
token=$(api POST "/v1/pools/$pool/join" '{"uses": 40, "ttl_s": 600}' | jq -r .token)
check "an external pool and its token" "jt-" "${token:0:3}"
# Each worker under a supervisor's loop: at most 20 runs, a second apart.
for i in 1 2; do
  ip netns exec "$farns" env STRAND_JOIN_TOKEN="$token" bash -c 'for _ in $(seq 20); do
      "$0" --join "https://$1:8443" --ca "$2" 2>>"$3"; sleep 1; done' \
    "$bin/strand-worker" "$gwip" "$dir/cert.pem" "$dir/worker-$i.log" </dev/null >/dev/null &
  far_pids+=($!)
done
connected() { api GET "/v1/pools/$pool" | jq '[.workers[] | select(.state == "connected")] | length'; }
for _ in $(seq 200); do [ "$(connected)" = 2 ] && break; sleep 0.1; done
check "two workers from the far host joined over TLS" 2 "$(connected)"

# map N MS: N sleeps of MS ms each (the value of input i is MS + i/1e6,
# told apart); waits up to LIMIT s for the job, then checks every result.
map() {
  local n=$1 ms=$2 job
  job=$(api POST "/v1/pools/$pool/map" \
    "$(jq -cn --argjson n "$n" --argjson ms "$ms" '{function: "sleep", chunksize: 1, args: [range($n) | $ms + . / 1e6]}')" |
    jq -r .id)
  echo "$job"
}
verify() { # JOB N MS LIMIT_S: "exact" or what is wrong
  local job=$1 n=$2 ms=$3 state
  for _ in $(seq $(($4 * 10))); do
    state=$(api GET "/v1/jobs/$job" | jq -r '.state + " " + (.done|tostring) + " " + (.failed|tostring)')
    [ "${state%% *}" = done ] && break
    sleep 0.1
  done
  [ "$state" = "done $n 0" ] || { echo "job $job: $state"; return; }
  local cursor=0 all="$dir/results-$job"
  : >"$all"
  for _ in $(seq 1000); do
    page=$(api GET "/v1/jobs/$job/results?cursor=$cursor&limit=1000")
    jq -c '.items[] | [.index, .ok, .value]' <<<"$page" >>"$all"
    [ "$(jq -r .complete <<<"$page")" = true ] && break
    cursor=$(jq -r .next_cursor <<<"$page")
  done
  jq -rs --argjson n "$n" --argjson ms "$ms" \
    'if length == $n and ([.[] | select(.[1] == true and (.[2] - ($ms + .[0] / 1e6) | fabs) < 1e-9)] | length) == $n
       and ([.[][0]] | unique | length) == $n then "exact" else "wrong: \(length) results" end' "$all"
}

job=$(map 2000 0); check "a map over the link" exact "$(verify "$job" 2000 0 60)"

# 10 ms each way: every packet to or from the gateway waits on the far
# host's netfilter queue 0 (it stops by itself within 5 minutes).
ip netns exec "$farns" "$bin/strand-test-link-delay" 0 10 300 2>>"$dir/delay.log" &
delay_pid=$!
for _ in $(seq 50); do grep -q "queue 0" "$dir/delay.log" 2>/dev/null && break; sleep 0.05; done
in_far iptables -A OUTPUT -d "$gwip" -j NFQUEUE --queue-num 0
in_far iptables -A INPUT -s "$gwip" -j NFQUEUE --queue-num 0
# Tasks of 30 ms, first: a worker that runs them one at a time exchanges
# only with nothing in hand, so it learns its round trip (20 ms now) from
# pulls the gateway may have held waiting for work; it then asks for the
# next tasks while one runs, and holds three. Alone, it would wait 20 ms
# after each. (A map of more than 64 tasks: a smaller one of `sleep` would
# be priced at the earlier map's no-ops and handed out in large batches.)
job=$(map 100 30)
most=0
for _ in $(seq 500); do
  view=$(api GET "/v1/pools/$pool") || continue
  held=$(jq '[.workers[].pending] | max // 0' <<<"$view")
  [ "$held" -gt "$most" ] && most=$held
  [ "$(api GET "/v1/jobs/$job" | jq -r .state)" = done ] && break
  sleep 0.01
done
check "a map of 30 ms tasks 10 ms away" exact "$(verify "$job" 100 30 60)"
check "a worker 10 ms away holds the next 30 ms tasks while one runs (held $most)" 1 \
  "$([ "$most" -ge 2 ] && echo 1 || echo 0)"
began=$(date +%s.%N)
job=$(map 2000 1)
for _ in $(seq 3000); do
  [ "$(api GET "/v1/jobs/$job" | jq -r .state)" = done ] && break
  sleep 0.02
done
echo "2,000 tasks of 1 ms on two workers 10 ms away: $(awk -v b="$began" -v e="$(date +%s.%N)" \
  'BEGIN { printf "%.2f", e - b }') s (ideal 1.00 s)"
check "a map over a link with 10 ms of delay each way" exact "$(verify "$job" 2000 1 60)"
for chain in INPUT OUTPUT; do in_far iptables -F "$chain"; done
kill -TERM "$delay_pid"; wait "$delay_pid"; delay_pid=""
# The map's traffic went through the delay: some hundreds of packets (676
# in one run, its pulls and their answers); without the queue's rules, none.
delayed=$(sed -n 's/.* \([0-9]*\) packets delayed$/\1/p' "$dir/delay.log")
check "the map's packets waited on the delayed link" 1 "$([ "${delayed:-0}" -ge 100 ] && echo 1 || echo 0)"

# 1% of the packets lost each way, for a whole map.
for chain in INPUT OUTPUT; do
  in_far iptables -A "$chain" -m statistic --mode random --probability 0.01 -j DROP
done
job=$(map 2000 1); check "a map with 1% of the packets lost" exact "$(verify "$job" 2000 1 120)"
for chain in INPUT OUTPUT; do in_far iptables -F "$chain"; done

# The link cut for 20 s in the middle of a 4,000-task map.
job=$(map 4000 2)
sleep 1.5
in_gw ip link set "${tag}g" down
sleep 20
in_gw ip link set "${tag}g" up
check "a map across a 20 s cut of the link" exact "$(verify "$job" 4000 2 240)"

# The gateway killed and restarted while the link is cut.
job=$(map 2000 2)
sleep 1
in_gw ip link set "${tag}g" down
kill -9 "$gw_pid"; wait "$gw_pid" 2>/dev/null
start_gw
sleep 3
in_gw ip link set "${tag}g" up
check "a map across a gateway restart during a cut" exact "$(verify "$job" 2000 2 240)"
grep -q "joined pool $pool" "$dir/gateway.log"; check "the joins are in the gateway's log" 0 $?

checks_passed
