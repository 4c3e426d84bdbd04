#!/usr/bin/env bash
# The strand CLI against a real gateway: ids printed, results one JSON line
# each, conventional exit codes (0 done, 1 refused or failed, 2 bad usage,
# and a process's own code with `run --wait`), --help on every command, and
# the progress bar when stdout is a terminal (script(1) gives it one).
set -uo pipefail
bin="$1"
src="$(cd "$(dirname "$0")/../.." && pwd)"
. "$src/tests/integration/lib.sh"
dir=$(mktemp -d /tmp/strand-test-cli-XXXXXX)
trap 'show_log_on_failure; stop_gateway; rm -rf "$dir"' EXIT
start_gateway "$bin" "$dir" || exit 1
strand="$bin/strand"

# Ctrl-C to the background command pid once `$@` says it is ready (it
# catches SIGINT before it says so; the shell has a background command
# ignore SIGINT until then). Ready within 60 s under any load, or the
# check fails and the command is killed rather than left to hang the test.
interrupt_when() {
  local pid=$1 what=$2
  shift 2
  for _ in $(seq 1200); do
    if "$@"; then
      kill -INT "$pid"
      return
    fi
    sleep 0.05
  done
  check "$what within 60 s" ready "not ready"
  kill -KILL "$pid"
}

"$strand" >/dev/null 2>&1; check "no command: usage" 2 $?
# --version on every program: the project's version, as CMakeLists.txt sets it.
version=$(sed -n 's/^project(strand VERSION \([0-9.]*\) .*/\1/p' "$src/CMakeLists.txt")
for p in strand strand-gateway strand-worker; do
  out=$("$bin/$p" --version); code=$?
  check "$p --version" "0 $p $version" "$code $out"
done
grep -q "local, docker, kubernetes or slurm" <<<"$("$strand" run --help)"; check "run --help: every backend" 0 $?
"$strand" bogus >/dev/null 2>&1; check "unknown command" 2 $?
for c in run ps logs kill pool queue pipe jobs; do
  grep -q usage <<<"$("$strand" $c --help)"; check "$c --help" 0 $?
done
for c in "pool results" "pool status" "pool delete" "pool map" "pool resize" "pool create" "queue get" "queue put" \
  "pipe send" "pipe recv" "jobs cancel" "jobs rm"; do
  out=$(STRAND_URL=http://127.0.0.1:1 "$strand" $c --help 2>&1); code=$?  # no gateway there: a request would fail
  check "$c --help: usage, no request" "0 usage" "$code $(grep -o '^usage' <<<"$out" | head -1)"
done

pool=$("$strand" pool create --processes 2); check "pool id" "p-" "${pool:0:2}"
check "pool list: a table" "ID STATE BACKEND WORKERS CREATED" "$("$strand" pool list | head -1 | tr -s ' ')"
check "pool list: the pool, its state, backend and size" "$pool active local /2" \
  "$("$strand" pool list | awk -v id="$pool" '$1 == id {sub(/^[0-9]+/, "", $4); print $1, $2, $3, $4}')"
check "pool list --json: a line each" "$pool" "$("$strand" pool list --json | jq -r .id | grep -x "$pool")"
"$strand" pool list --bogus >/dev/null 2>&1; check "pool list --bogus: usage" 2 $?
check "pool list --state terminated: not it" "" "$("$strand" pool list --state terminated,failed | awk 'NR > 1 {print $1}' | grep -x "$pool")"
check "pool list --state active: it" "$pool" "$("$strand" pool list --json --state active | jq -r .id | grep -x "$pool")"
out=$("$strand" pool map "$pool" echo 1 '"two"' '{"three":3}' --wait | tr '\n' ' ')
check "map --wait results in order" '1 "two" {"three":3} ' "$out"
out=$("$strand" pool map "$pool" echo -5 -0.5 -1e3 --wait | tr '\n' ' ')
check "negative numbers are arguments, not options" '-5 -0.5 -1000.0 ' "$out"
job=$("$strand" pool map "$pool" fail boom)
out=$("$strand" pool results "$job"); code=$?
check "failed task: exit 1" 1 $code
check "failed task: its error" '{"index":0,"error":"boom"}' "$out"
"$strand" pool status "$job" | jq -e '.state == "done"' >/dev/null; check "status of a job" 0 $?
named=$("$strand" pool map "$pool" echo 1 --name "nightly run")
check "map --name: the job is called so" "nightly run" "$("$strand" pool status "$named" | jq -r .name)"
"$strand" pool map p-0000000000000000 echo 1 >/dev/null 2>&1; check "unknown pool: exit 1" 1 $?
bar=$(script -qc "$strand pool map $pool sleep 200 200 200 200 --wait" /dev/null | tr '\r' '\n' | grep -ac '^\[')
[ "$bar" -ge 1 ]; check "progress bar on a terminal" 0 $?
last=$(script -qc "$strand pool map $pool fail a b --wait" /dev/null | tr '\r' '\n' | grep -a '^\[' | tail -1)
check "the bar: done, rate, failures" "2/2 100% /s 2 failed" \
  "$(grep -o '2/2 100%' <<<"$last") $(grep -o '/s' <<<"$last") $(grep -o '2 failed' <<<"$last")"
err=$("$strand" pool map "$pool" echo 1 --wait 2>&1 >/dev/null)
check "map --wait says the job first, on stderr" "strand: job j-" "${err:0:14}"
# --wait: values on stdout, a failed input's error on stderr.
out=$("$strand" pool map "$pool" echo 7 --wait 2>"$dir/err")
check "map --wait: values on stdout" 7 "$out"
out=$("$strand" pool map "$pool" fail boom --wait 2>"$dir/err"); code=$?
check "map --wait: a failure's error on stderr, exit 1" "1  1" "$code $out $(grep -c '^{"index":0,"error":"boom"}$' "$dir/err")"
# Ctrl-C: the job goes on, and the command says how to stop it.
"$strand" pool map "$pool" sleep 600000 --wait >/dev/null 2>"$dir/int" &
waiting=$!
interrupt_when "$waiting" "map --wait says its job" grep -q '^strand: job' "$dir/int"
wait "$waiting"; code=$?
stopped=$(sed -n 's/^strand: job \(j-[0-9a-f]*\)$/\1/p' "$dir/int")
check "map --wait, Ctrl-C: exit 130" 130 "$code"
grep -q "job $stopped goes on in the gateway: \`strand jobs cancel $stopped\` stops it" "$dir/int"
check "... saying the job goes on and how to cancel it" 0 $?
check "... and it does" running "$("$strand" pool status "$stopped" | jq -r .state)"
"$strand" jobs cancel "$stopped" >/dev/null
bar=$("$strand" pool map "$pool" sleep 10 --wait | grep -c '^\[')
check "no progress bar when piped" 0 "$bar"
for bad in "--processes abc" "--processes 0" "--processes -3" "--processes 2x" "--cpu 0" "--cpu x" "--memory 1.5" \
  "--gpu -1" "--max-attempts 0" "--timeout -1" "--autoscale 2:1" "--autoscale 3" "extra"; do
  "$strand" pool create $bad >/dev/null 2>&1; check "pool create $bad: usage" 2 $?
done
p2=$("$strand" pool create --processes 1 --cpu 0.5 --memory 256 --max-attempts 2 --timeout 30 --retry-errors -v emptyDir:/scratch)
"$strand" pool status "$p2" | jq -e '.processes == 1 and .max_attempts == 2 and .resources.cpu == 0.5 and .resources.memory_mb == 256' \
  >/dev/null; check "pool create takes every field" 0 $?
"$strand" pool delete "$p2" >/dev/null
p3=$("$strand" pool create --autoscale 0:3)
"$strand" pool status "$p3" | jq -e '.processes == 0 and .autoscale.max == 3' >/dev/null; check "pool create --autoscale" 0 $?
"$strand" pool delete "$p3" >/dev/null
"$strand" pool resize "$pool" 3; check "pool resize" 0 $?
"$strand" pool status "$pool" | jq -e '.processes == 3' >/dev/null; check "resized to 3" 0 $?
"$strand" pool resize "$pool" --autoscale 1:4 --idle 600; check "pool autoscale" 0 $?  # none idles 600 s here: it stays at 3
"$strand" pool status "$pool" | jq -e '.autoscale.min == 1 and .autoscale.max == 4 and .autoscale.idle_s == 600' >/dev/null
check "autoscale set" 0 $?
"$strand" pool resize "$pool" 2 2>/dev/null; check "resize while autoscaling: refused" 1 $?
"$strand" pool resize "$pool" --no-autoscale; check "autoscale off" 0 $?
"$strand" pool status "$pool" | jq -e '.autoscale == null and .processes == 3' >/dev/null; check "fixed at 3" 0 $?
for bad in "abc" "0" "-3" "2x" "1025"; do
  "$strand" pool resize "$pool" -- "$bad" >/dev/null 2>&1; check "resize to '$bad': usage" 2 $?
done
"$strand" pool resize "$pool" --autoscale 3:1 >/dev/null 2>&1; check "autoscale 3:1: usage" 2 $?
"$strand" pool resize "$pool" --autoscale 1:2 --no-autoscale >/dev/null 2>&1; check "both: usage" 2 $?
"$strand" pool resize "$pool" 2 --idle 4 >/dev/null 2>&1; check "--idle without autoscale: usage" 2 $?
job=$("$strand" pool map "$pool" sleep 0 '"x"' 0 '"y"')
"$strand" pool results "$job" >/dev/null 2>&1
out=$("$strand" jobs failures "$job" | jq -c '[.index, .attempts]' | tr '\n' ' ')
check "jobs failures" "[1,1] [3,1] " "$out"
check "jobs list: a table" "ID STATE POOL DONE FAILED FUNCTION CREATED" "$("$strand" jobs list | head -1 | tr -s ' ')"
check "jobs list: newest first, its state, pool, done of total, failed, function" "$job done $pool 4/4 2 sleep" \
  "$("$strand" jobs list --pool "$pool" | awk 'NR == 2 {print $1, $2, $3, $4, $5, $6}')"
check "jobs list --json: newest first" "$job" "$("$strand" jobs list --json --pool "$pool" | head -1 | jq -r .id)"
slow=$("$strand" pool map "$pool" sleep 600000)
check "jobs list --state running" "$slow" "$("$strand" jobs list --json --state running | jq -r .id)"
check "jobs cancel" cancelled "$("$strand" jobs cancel "$slow")"
# cancel never removes: an ended job stays, and says why nothing was done;
# rm removes an ended job only.
err=$("$strand" jobs cancel "$slow" 2>&1 >/dev/null); code=$?
check "jobs cancel of an ended job: refused, kept" "1 cancelled" "$code $("$strand" pool status "$slow" | jq -r .state)"
grep -q "has ended (cancelled): nothing to cancel" <<<"$err"; check "... saying it ended" 0 $?
running=$("$strand" pool map "$pool" sleep 600000)
err=$("$strand" jobs rm "$running" 2>&1 >/dev/null); code=$?
check "jobs rm of a running job: refused" "1 strand: job $running is running" "$code $(cut -d: -f1-2 <<<"$err")"
"$strand" jobs cancel "$running" >/dev/null
check "jobs rm of an ended job" deleted "$("$strand" jobs rm "$running")"
"$strand" pool status "$running" >/dev/null 2>&1; check "... then it is gone" 1 $?
"$strand" jobs list --state bogus >/dev/null 2>&1; check "jobs list: a state the gateway refuses" 1 $?
"$strand" jobs cancel >/dev/null 2>&1; check "jobs cancel without a job: usage" 2 $?
"$strand" pool delete "$pool"; check "pool delete" 0 $?

q=$("$strand" queue create)
check "queue list: a table" "ID ITEMS READERS CREATED" "$("$strand" queue list | head -1 | tr -s ' ')"
check "queue list: the new queue first, empty" "$q 0 0" "$("$strand" queue list | awk 'NR == 2 {print $1, $2, $3}')"
check "queue list --json: the new queue first" "$q" "$("$strand" queue list --json | head -1 | jq -r .id)"
x=$("$strand" pipe create)
check "queue list --pipes: a duplex pipe, empty" "$x duplex 0 0 0" \
  "$("$strand" queue list --pipes | awk 'NR == 2 {print $1, $2, $3, $4, $5}')"
check "pipe list --json" "$x" "$("$strand" pipe list --json | head -1 | jq -r .id)"
"$strand" queue list --bogus >/dev/null 2>&1; check "queue list --bogus: usage" 2 $?
"$strand" queue get "$q" --max abc >/dev/null 2>&1; check "queue get --max abc: usage" 2 $?
"$strand" queue get "$q" --wait -1 >/dev/null 2>&1; check "queue get --wait -1: usage" 2 $?
"$strand" queue put "$q" a 2 '[3]'; check "queue put" 0 $?
out=$("$strand" queue get "$q" --max 5 | tr '\n' ' '); check "queue get: FIFO" '"a" 2 [3] ' "$out"
out=$("$strand" queue get "$q" --wait 1); check "queue get: empty after wait" "" "$out"

id=$("$strand" run -e WHO=cli -- sh -c 'echo hi $WHO'); check "run prints an id" "r-" "${id:0:2}"
out=$("$strand" logs -f "$id"); check "logs -f" "hi cli" "$out"
# A pool's output: what its tasks wrote, after their worker, on the stream
# they wrote it to.
pool=$("$strand" pool create --processes 1)
scurl -s "$STRAND_URL/v1/pools/$pool/apply?wait=30" \
  -d '{"command":["sh","-c","echo to stderr >&2; echo 1"],"arg":null}' >/dev/null
out=$("$strand" logs "$pool" 2>&1 >/dev/null | grep 'to stderr' | sed 's/^(w-[0-9a-f]\{16\}) //')
check "logs POOL: a task's stderr, after its worker" "to stderr" "$out"
out=$(timeout 20 "$strand" logs -f "$pool" 2>/dev/null & sleep 1; scurl -s "$STRAND_URL/v1/pools/$pool" -X DELETE >/dev/null; wait)
check "logs -f POOL ends once the pool ended" 0 $?
manager=$(scurl -s "$STRAND_URL/v1/managers" -d '{"type": "dict"}' | jq -r .id)
out=$("$strand" logs "$manager"); code=$?
check "logs MANAGER: what its methods printed (none here)" "0 []" "$code [$out]"
check "pool list --managers: the manager, not the pools" "$manager" \
  "$("$strand" pool list --managers | awk 'NR > 1 {print $1}' | tr '\n' ' ' | sed 's/ $//')"
grep -q "$id" <<<"$("$strand" ps)"; check "ps lists it" 0 $?
check "ps --json --state exited: it" "$id" "$("$strand" ps --json --state exited | jq -r .id | grep -x "$id")"
check "ps --state running: not it" "" "$("$strand" ps --state running | grep "$id")"
"$strand" ps --state bogus >/dev/null 2>&1; check "ps --state bogus: refused" 1 $?
ring=$(scurl -s "$STRAND_URL/v1/rings" -d '{"size": 2, "command": ["sleep", "30"]}' | jq -r .id)
check "ps --rings: a table" "ID STATE SIZE RUNNING PORT CREATED" "$("$strand" ps --rings | head -1 | tr -s ' ')"
check "ps --rings: the ring, its state, size and members running" "$ring running 2 2" \
  "$("$strand" ps --rings | awk -v id="$ring" '$1 == id {print $1, $2, $3, $4}')"
check "ps --rings --json --state running: it" "$ring" "$("$strand" ps --rings --json --state running | jq -r .id)"
check "ps --rings --state done: not it" "" "$("$strand" ps --rings --state done | awk 'NR > 1 {print $1}')"
scurl -s "$STRAND_URL/v1/rings/$ring" -X DELETE >/dev/null
out=$("$strand" run --wait -- sh -c 'echo out; exit 5'); code=$?
check "run --wait: its exit code" 5 $code
check "run --wait: its output" "out" "$out"
id=$("$strand" run -- sleep 30)
out=$("$strand" kill "$id"); check "kill" "$id exited with code 143" "$out"
"$strand" run >/dev/null 2>&1; check "run without a command" 2 $?
for bad in "--cpu abc" "--cpu 0" "--memory 1.5" "--gpu -1" "--gpu x" "-e =x"; do
  "$strand" run $bad -- true >/dev/null 2>&1; check "run $bad: usage" 2 $?
done
out=$("$strand" run -- /nonexistent/program 2>&1); code=$?
check "run of a program that cannot start: exit 1" 1 $code
grep -q "could not start: cannot run /nonexistent/program" <<<"$out"; check "... and why" 0 $?
check "... and no id on stdout" "" "$("$strand" run -- /nonexistent/program 2>/dev/null)"
out=$("$strand" run --wait -- /nonexistent/program 2>&1); code=$?
check "run --wait of a program that cannot start: exit 1" 1 $code
grep -q "could not start: cannot run /nonexistent/program" <<<"$out"; check "... and why" 0 $?
# Streamed: the first line is out while the program still runs.
"$strand" run --wait -- sh -c 'echo first; sleep 4; echo second' >"$dir/stream" 2>/dev/null &
streamer=$!
for _ in $(seq 30); do [ -s "$dir/stream" ] && break; sleep 0.1; done
check "run --wait streams its output" "first" "$(cat "$dir/stream")"
wait "$streamer"
check "... to the end" "first second" "$(tr '\n' ' ' <"$dir/stream" | sed 's/ $//')"
# Ctrl-C: the process goes on, and the command says how to stop it.
"$strand" run --wait -- sh -c 'echo up; sleep 600' >"$dir/stream" 2>"$dir/int" &
streamer=$!
interrupt_when "$streamer" "run --wait streams what its process printed" test -s "$dir/stream"
wait "$streamer"; code=$?
running=$(sed -n 's/^strand: process \(r-[0-9a-f]*\)$/\1/p' "$dir/int")
check "run --wait, Ctrl-C: exit 130, what came printed" "130 up" "$code $(cat "$dir/stream")"
grep -q "process $running goes on in the gateway: \`strand kill $running\` stops it" "$dir/int"
check "... saying the process goes on and how to stop it" 0 $?
check "... and it does" running "$("$strand" ps | awk -v id="$running" '$1 == id {print $2}')"
"$strand" kill "$running" >/dev/null

# map --command: a program per task, its stdin the argument.
pool=$("$strand" pool create --processes 2)
out=$("$strand" pool map "$pool" --command 'wc -c' '"abc"' 12345 --wait 2>/dev/null | tr '\n' ' ')
check "map --command" "5 5 " "$out"
out=$("$strand" pool map "$pool" --command '["sh", "-c", "tr a b"]' '"aaa"' --wait 2>/dev/null)
check "map --command as JSON" '"bbb"' "$out"
"$strand" pool map "$pool" --command '[1]' 1 >/dev/null 2>&1; check "map --command [1]: usage" 2 $?
"$strand" pool map "$pool" echo 1 --chunksize 0 >/dev/null 2>&1; check "map --chunksize 0: usage" 2 $?
job=$("$strand" pool map "$pool" echo 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17)
check "chunks: auto, four per worker" 3 "$("$strand" pool status "$job" | jq .chunksize)"

# An external pool: a worker started by hand joins it with its token.
ext=$("$strand" pool create --backend external --processes 1)
token=$("$strand" pool join "$ext" --uses 1 --ttl 60 2>"$dir/join")
check "pool join: a token" "jt-" "${token:0:3}"
grep -q "STRAND_JOIN_TOKEN=$token strand-worker --join $STRAND_URL" "$dir/join"; check "... and how to join" 0 $?
STRAND_JOIN_TOKEN=$token "$bin/strand-worker" --join "$STRAND_URL" 2>"$dir/joined.log" &
joined=$!
out=$("$strand" pool map "$ext" echo 7 8 --wait 2>/dev/null | tr '\n' ' ')
check "the joined worker runs the map" "7 8 " "$out"
"$strand" pool join "$pool" >/dev/null 2>&1; check "pool join of a pool that starts its own: refused" 1 $?
"$strand" pool join "$ext" --uses 0 >/dev/null 2>&1; check "pool join --uses 0: usage" 2 $?
"$strand" pool delete "$ext" >/dev/null
wait "$joined"; check "the joined worker stops with its pool" 0 $?

# Pipes.
pipe=$("$strand" pipe create); check "pipe create" "x-" "${pipe:0:2}"
"$strand" pipe send "$pipe" 0 hello '{"n":1}'; check "pipe send" 0 $?
out=$("$strand" pipe recv "$pipe" 1 --max 5 | tr '\n' ' '); check "pipe recv at the other end" '"hello" {"n":1} ' "$out"
grep -q "$pipe" <<<"$("$strand" pipe list)"; check "pipe list" 0 $?
simplex=$("$strand" pipe create --simplex)
"$strand" pipe send "$simplex" 1 x >/dev/null 2>&1; check "a simplex pipe's end 1 does not send" 1 $?
"$strand" pipe send "$pipe" 2 x >/dev/null 2>&1; check "pipe end 2: usage" 2 $?

checks_passed
