#!/usr/bin/env bash
# The slurm backend on a real single-node Slurm (deploy/slurm-cluster.sh,
# started by tests/run.sh): each worker is a batch job named
# strand-<pool>-<n>; a map gives exact results; a worker cancelled with
# scancel mid-map is replaced and no result is lost; a gateway killed with
# -9 and restarted adopts its jobs; DELETE leaves no job behind; a job
# waiting for room is not replaced; a request Slurm cannot satisfy, at once
# or ever, fails the pool with Slurm's words; a pool's code package reaches
# its jobs, and values a task names (20 and 64 MiB, and a map over ten of
# 10 MiB), its results past 8 MiB stored back; a named map counted and
# failed by input; a pool whose lease runs out ends with its job; a Process
# and a Ring run as jobs, with their environment and output. Skips (77)
# without the cluster.
#   slurm.sh BIN_DIR      (KEEP=1: its folder, with the gateway's log, is kept)
set -uo pipefail
bin="$1"
src="$(cd "$(dirname "$0")/../.." && pwd)"
. "$src/tests/integration/lib.sh"
if [ -z "${STRAND_TEST_SLURM:-}" ] || [ -z "${SLURM_CONF:-}" ]; then
  echo "skipped: no Slurm cluster (STRAND_TEST_SLURM, SLURM_CONF unset; tests/run.sh starts one)"
  exit 77
fi
dir=$(mktemp -d /tmp/strand-test-slurm-XXXXXX)
export STRAND_CACHE_DIR="$dir/cache" # the jobs' cache of code packages (--export=ALL)
trap 'show_log_on_failure; stop_gateway; [ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT
start_gateway "$bin" "$dir" --slurm --slurm-output-dir "$dir/out" || exit 1

api() { scurl -sf "$STRAND_URL$@"; }
# The jobs of pool $1 Slurm still runs or holds: "name state" lines, sorted.
jobs_of() {
  squeue -h -t PENDING,RUNNING,CONFIGURING,COMPLETING -o "%j %T" | grep "^strand-$1-" | sort
}
until_eq() { # until_eq WANT SECONDS CMD...: waits for CMD to print WANT; prints what it printed last
  local want="$1" secs="$2" got=""
  shift 2
  for _ in $(seq $((secs * 10))); do
    got=$("$@")
    [ "$got" = "$want" ] && break
    sleep 0.1
  done
  echo "$got"
}
connected() { api "/v1/pools/$1" | jq '[.workers[] | select(.state == "connected")] | length'; }
connected_ids() { api "/v1/pools/$1" | jq -c '[.workers[] | select(.state == "connected") | .id] | sort'; }
pool_field() { api "/v1/pools/$1" | jq -r ".$2"; }
started() { api "/v1/jobs/$1" | jq '.done > 0'; }
job_state() { api "/v1/jobs/$1" | jq -r .state; }
results_of() { # every result, in input order, once the job is done
  until_eq done 60 job_state "$1" >/dev/null
  api "/v1/jobs/$1/results?limit=1000" | jq -c '[.items[] | .value]'
}

# A map, with exact results, on two batch jobs named for the pool.
pool=$(api /v1/pools -X POST -d '{"processes":2,"backend":"slurm","resources":{"cpu":1,"memory_mb":256}}' | jq -r .id)
check "two workers connect" 2 "$(until_eq 2 60 connected "$pool")"
check "their jobs: strand-<pool>-1 and -2, running" "strand-$pool-1 RUNNING
strand-$pool-2 RUNNING" "$(jobs_of "$pool")"
check "the API names each worker's slurm job" "$(squeue -h -o %i -n "strand-$pool-1,strand-$pool-2" | sort -n | tr '\n' ' ')" \
  "$(api "/v1/pools/$pool" | jq -r '[.workers[].slurm_job] | sort | map(tostring) | join(" ")') "
job=$(api "/v1/pools/$pool/map" -X POST -d "{\"function\":\"echo\",\"args\":$(seq 1 200 | jq -sc .)}" | jq -r .id)
check "map: 200 exact results in order" "$(seq 1 200 | jq -sc .)" "$(results_of "$job")"

# scancel of a worker mid-map: replaced, every result still there.
job=$(api "/v1/pools/$pool/map" -X POST -d "{\"function\":\"sleep\",\"args\":$(yes 150 | head -40 | jq -sc .)}" | jq -r .id)
until_eq true 30 started "$job" >/dev/null
victim=$(api "/v1/pools/$pool" | jq -r '.workers[0].slurm_job')
survivor=$(jobs_of "$pool" | grep -v "^$(squeue -h -j "$victim" -o %j) ")
scancel "$victim"
results_of "$job" >/dev/null
check "after scancel: 40 results, none failed" "40 0" "$(api "/v1/jobs/$job" | jq -r '"\(.done) \(.failed)"')"
check "the cancelled job is a lost worker" 1 "$(until_eq 1 30 pool_field "$pool" counters.workers_lost)"
check "its last words are Slurm's" "slurm job $victim CANCELLED" \
  "$(api "/v1/pools/$pool" | jq -r ".workers[] | select(.slurm_job == $victim) | .last_words")"
want=$(printf '%s\nstrand-%s-3 RUNNING\n' "$survivor" "$pool" | sort)
check "its replacement is the pool's third job" "$want" "$(until_eq "$want" 30 jobs_of "$pool")"

# kill -9 of the gateway: its jobs run on, and the next one adopts them.
before=$(api "/v1/pools/$pool" | jq -c '[.workers[] | select(.state == "connected") | .id] | sort')
kill -9 "$GATEWAY_PID"
wait "$GATEWAY_PID" 2>/dev/null
GATEWAY_PID=""
check "the jobs outlive the gateway" 2 "$(jobs_of "$pool" | wc -l)"
# One start as a crash right after sbatch leaves it: its job id never
# recorded. The restart finds that job by its comment.
jobs_before=$(squeue -h -o %i -n "$(jobs_of "$pool" | cut -d' ' -f1 | paste -sd,)" | sort -n | paste -sd' ')
python3 - "$dir/strand.db" "$(echo "$before" | jq -r '.[0]')" <<'PY'
import os, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE workers SET handle = '' WHERE id = ?", (sys.argv[2],))
db.commit()
os._exit(0)  # as the gateway crashed: the log stays, not checkpointed away
PY
# The same ports: the workers dial the hub they were given.
port=${STRAND_URL##*:}
env -u STRAND_TOKEN "$bin/strand-gateway" --db "$dir/strand.db" --http "127.0.0.1:$port" \
  --hub "tcp://127.0.0.1:$((port + 1))" --slurm --slurm-output-dir "$dir/out" 2>>"$dir/gateway.log" &
GATEWAY_PID=$!
check "restarted: the same workers reconnect" "$before" \
  "$(until_eq "$before" 60 connected_ids "$pool")"
check "no job was added" 2 "$(jobs_of "$pool" | wc -l)"
check "both jobs known again, the unrecorded one by its comment" "$jobs_before" \
  "$(api "/v1/pools/$pool" | jq -r '[.workers[] | select(.state == "connected") | .slurm_job] | sort | map(tostring) | join(" ")')"
job=$(api "/v1/pools/$pool/map" -X POST -d '{"function":"echo","args":["a","b","c"]}' | jq -r .id)
check "a map on the adopted workers" '["a","b","c"]' "$(results_of "$job")"

# DELETE: no job left.
api "/v1/pools/$pool" -X DELETE >/dev/null
check "deleted: the pool's jobs are gone" "" "$(until_eq "" 30 jobs_of "$pool")"

# A job that waits for room: its worker's time to connect does not run
# meanwhile, however long the cluster stays full.
whole=$(api /v1/pools -X POST -d '{"processes":1,"backend":"slurm","resources":{"cpu":16}}' | jq -r .id)
check "a pool taking the whole node connects" 1 "$(until_eq 1 60 connected "$whole")"
small=$(api /v1/pools -X POST -d '{"processes":1,"backend":"slurm","resources":{"cpu":1}}' | jq -r .id)
check "the next job waits for room" "strand-$small-1 PENDING" "$(until_eq "strand-$small-1 PENDING" 30 jobs_of "$small")"
check "... and its worker says it is queued" true "$(until_eq true 10 pool_field "$small" 'workers[0].queued')"
sleep 35 # past the 30 s a running worker has to connect
check "35 s later: still its one job, waiting; no worker lost" "strand-$small-1 PENDING 0" \
  "$(jobs_of "$small") $(pool_field "$small" counters.workers_lost)"
api "/v1/pools/$whole" -X DELETE >/dev/null
check "room made: it runs and connects" 1 "$(until_eq 1 60 connected "$small")"
job=$(api "/v1/pools/$small/map" -X POST -d '{"function":"echo","args":[7,8]}' | jq -r .id)
check "a map on it" '[7,8]' "$(results_of "$job")"
api "/v1/pools/$small" -X DELETE >/dev/null

# What Slurm cannot satisfy fails the pool, in Slurm's words.
big=$(api /v1/pools -X POST -d '{"processes":1,"backend":"slurm","resources":{"memory_mb":100000}}' | jq -r .id)
check "more memory than any node: failed" failed "$(until_eq failed 30 pool_field "$big" state)"
check "... with Slurm's reason" "slurm backend cannot start a worker: sbatch: error: Batch job submission failed: Requested node configuration is not available" \
  "$(api "/v1/pools/$big" | jq -r .reason)"
gpu=$(api /v1/pools -X POST -d '{"processes":1,"backend":"slurm","resources":{"gpu":1}}' | jq -r .id)
check "a GPU on a cluster without: failed with Slurm's reason" "slurm backend cannot start a worker: sbatch: error: Invalid generic resource (gres) specification" \
  "$(until_eq failed 30 pool_field "$gpu" state >/dev/null; pool_field "$gpu" reason)"
check "no job was left for either" "" "$(jobs_of "$big"; jobs_of "$gpu")"

# A code package: the batch jobs fetch it from the hub (no file system is
# assumed shared) and run their tasks in it.
mkdir -p "$dir/project/data"
echo '{"read": "by a relative path"}' >"$dir/project/data/value.json"
(cd "$dir/project" && python3 -c 'import zipfile; zipfile.ZipFile("../project.zip", "w").write("data/value.json")')
sha=$(sha256sum "$dir/project.zip" | cut -c1-64)
curl -sf -H @<(printf 'Authorization: Bearer %s\n' "$(cat "$STRAND_TOKEN_FILE")") -H 'Content-Type: application/zip' \
  -X PUT --data-binary @"$dir/project.zip" "$STRAND_URL/v1/code/$sha" >/dev/null
coded=$(api /v1/pools -X POST -d "{\"processes\":1,\"backend\":\"slurm\",\"code\":\"$sha\"}" | jq -r .id)
check "a pool with a code package connects" 1 "$(until_eq 1 60 connected "$coded")"
check "its task reads the package's file" '{"read":"by a relative path"}' \
  "$(api "/v1/pools/$coded/apply?wait=60" -X POST -d '{"command":["cat","data/value.json"],"arg":null}' | jq -c .value)"
api "/v1/pools/$coded/apply?wait=60" -X POST -d '{"command":["sh","-c","echo from a slurm job >&2; echo 1"],"arg":null}' \
  >/dev/null
check "what its task wrote comes back" "stderr from a slurm job" \
  "$(api "/v1/pools/$coded/logs" | jq -r '.lines[] | "\(.stream) \(.text)"')"
# A value of 20 MiB, over what travels inline: uploaded once, fetched by
# the batch job from the hub with its grant.
python3 -c 'import sys; sys.stdout.write("\"" + "v" * (20 << 20) + "\"")' >"$dir/value.json"
vsha=$(sha256sum "$dir/value.json" | cut -c1-64)
curl -sf -H @<(printf 'Authorization: Bearer %s\n' "$(cat "$STRAND_TOKEN_FILE")") \
  -H 'Content-Type: application/octet-stream' -X PUT --data-binary @"$dir/value.json" "$STRAND_URL/v1/values/$vsha" >/dev/null
check "a task gets a 20 MiB value it names" $(((20 << 20) + 2)) \
  "$(api "/v1/pools/$coded/apply?wait=60" -X POST -d "{\"command\":[\"wc\",\"-c\"],\"arg\":{\"\$value\":\"$vsha\"}}" | jq -c .value)"
check "a result past 8 MiB comes back as the value of its bytes" "{\"\$value\":\"$vsha\"}" \
  "$(api "/v1/pools/$coded/apply?wait=60" -X POST -d "{\"command\":[\"cat\"],\"arg\":{\"\$value\":\"$vsha\"}}" | jq -c .value)"
# 64 MiB each way: a value a task names, and the task's stdout of as much
# stored back as a value, exact; and a map over 10 distinct 10 MiB values.
head -c $((64 << 20)) /dev/urandom | base64 -w0 | head -c $((64 << 20)) | sed 's/.*/"&"/' >"$dir/big.json"
bsha=$(sha256sum "$dir/big.json" | cut -c1-64)
curl -sf -H @<(printf 'Authorization: Bearer %s\n' "$(cat "$STRAND_TOKEN_FILE")") \
  -H 'Content-Type: application/octet-stream' -X PUT --data-binary @"$dir/big.json" "$STRAND_URL/v1/values/$bsha" >/dev/null
made=$(api "/v1/pools/$coded/apply?wait=120" -X POST -d "{\"command\":[\"tr\",\"A\",\"a\"],\"arg\":{\"\$value\":\"$bsha\"}}" |
  jq -r '.value["$value"]')
check "a 64 MiB result, stored from the batch job, is its input's bytes as tr made them" \
  "$(tr A a <"$dir/big.json" | sha256sum | cut -c1-64)" \
  "$(curl -sf -H @<(printf 'Authorization: Bearer %s\n' "$(cat "$STRAND_TOKEN_FILE")") "$STRAND_URL/v1/values/$made" |
    sha256sum | cut -c1-64)"
args=""
want=""
for i in $(seq 10); do
  head -c $((10 << 20)) /dev/urandom | base64 -w0 | head -c $(((10 << 20) + i)) | sed 's/.*/"&"/' >"$dir/v$i.json"
  vs=$(sha256sum "$dir/v$i.json" | cut -c1-64)
  curl -sf -H @<(printf 'Authorization: Bearer %s\n' "$(cat "$STRAND_TOKEN_FILE")") \
    -H 'Content-Type: application/octet-stream' -X PUT --data-binary @"$dir/v$i.json" "$STRAND_URL/v1/values/$vs" >/dev/null
  args="$args${args:+,}{\"\$value\":\"$vs\"}"
  want="$want${want:+,}$(((10 << 20) + i + 2))" # with its quotes
done
job=$(api "/v1/pools/$coded/map" -X POST -d "{\"command\":[\"wc\",\"-c\"],\"args\":[$args]}" | jq -r .id)
check "a map over 100 MiB of distinct values, each fetched by the batch job" "[$want]" "$(results_of "$job")"
# A named map of tasks carrying several inputs: counted and failed by input.
job=$(api "/v1/pools/$coded/map" -X POST -d '{"name":"by input","function":"sleep","args":[0,"x",0],"inputs":[3,2,1]}' |
  jq -r .id)
results_of "$job" >/dev/null
check "a named map counts its inputs" '"by input" 6 6 2 {"total":3,"done":3,"failed":1}' \
  "$(api "/v1/jobs/$job" | jq -c -r '"\(.name | tojson) \(.total) \(.done) \(.failed) \(.tasks | tojson)"')"
check "... and its failure from the input it starts at" "3 1 2" \
  "$(api "/v1/jobs/$job/failures" | jq -r '.items[0] | "\(.index) \(.task) \(.inputs)"')"
api "/v1/pools/$coded" -X DELETE >/dev/null

# A pool held by a lease its client stops renewing (a program killed with
# SIGKILL): it ends, and so do its batch jobs.
lease=$(api /v1/leases -X POST -d '{"lease_s":5}' | jq -r .id)
leased=$(api /v1/pools -X POST -d "{\"processes\":1,\"backend\":\"slurm\",\"lease\":\"$lease\"}" | jq -r .id)
check "a leased pool starts its batch job" 1 "$(until_eq 1 30 pool_field "$leased" counters.workers_started)"
check "its lease runs out: the pool ends" terminated "$(until_eq terminated 30 pool_field "$leased" state)"
check "... and its batch job with it" "" "$(until_eq "" 30 jobs_of "$leased")"

# A Process: its environment (never on a command line) and its output.
proc=$(api /v1/processes -X POST -d '{"backend":"slurm","command":["sh","-c","echo \"it'"'"'s $GREETING\"; exit 3"],"env":{"GREETING":"hello from slurm"}}' | jq -r .id)
check "a process ends with its code" "exited 3" "$(api "/v1/processes/$proc?wait=60" | jq -r '"\(.state) \(.exit_code)"')"
check "its output" "it's hello from slurm" "$(api "/v1/processes/$proc/logs")"
check "it was a slurm job named for it" "strand-$proc" \
  "$(squeue -h -t all -j "$(api "/v1/processes/$proc" | jq .slurm_job)" -o %j)"
bad=$(api /v1/processes -X POST -d '{"backend":"slurm","command":["true"],"env":{"A,B":"x"}}' | jq -r .id)
check "an environment name Slurm cannot export: refused with why" \
  "failed environment variable 'A,B' is not a name a job can have" \
  "$(api "/v1/processes/$bad?wait=30" | jq -r '"\(.state) \(.reason)"' | sed 's/slurm backend cannot start it: //')"

for name in SLURM_CONF SBATCH_PARTITION; do
  bad=$(api /v1/processes -X POST -d "{\"backend\":\"slurm\",\"command\":[\"true\"],\"env\":{\"$name\":\"x\"}}" | jq -r .id)
  check "$name, sbatch's own setting, refused" "failed environment variable '$name' is Slurm's own: a job may not set it" \
    "$(api "/v1/processes/$bad?wait=30" | jq -r '"\(.state) \(.reason)"')"
done

# A Ring: every member gets its rank and the ring's rendezvous.
ring=$(api /v1/rings -X POST -d '{"size":2,"backend":"slurm","command":["sh","-c","echo $RANK $WORLD_SIZE $MASTER_ADDR $MASTER_PORT"]}' | jq -r .id)
check "the ring ends done" done "$(api "/v1/rings/$ring?wait=60" | jq -r .state)"
out=$(for p in $(api "/v1/rings/$ring" | jq -r '.members | sort_by(.rank) | .[].id'); do api "/v1/processes/$p/logs"; done)
port=$(api "/v1/rings/$ring" | jq .master_port)
check "ranks 0 and 1 of 2, one master" "0 2 127.0.0.1 $port
1 2 127.0.0.1 $port" "$out"
# A request the partition's limits will never let run: sbatch takes it,
# Slurm keeps it pending for ever (PartitionConfig); the pool fails with
# that reason and its job is cancelled.
stop_gateway
mkdir -p "$dir/tiny"
start_gateway "$bin" "$dir/tiny" --slurm --slurm-partition tiny --slurm-output-dir "$dir/out" || exit 1
never=$(api /v1/pools -X POST -d '{"processes":1,"backend":"slurm","resources":{"cpu":2}}' | jq -r .id)
check "over the partition's limits: failed" failed "$(until_eq failed 30 pool_field "$never" state)"
check "... with the reason Slurm holds it for" "slurm backend cannot start a worker: slurm job N can never run: PartitionConfig" \
  "$(pool_field "$never" reason | sed 's/job [0-9]*/job N/')"
check "... and its job cancelled" "" "$(until_eq "" 10 jobs_of "$never")"
checks_passed
