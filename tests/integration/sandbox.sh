#!/usr/bin/env bash
# A malicious task on the local backend, which runs each worker in a
# bubblewrap sandbox: it looks for the API token, the database, the
# gateway's process and memory, its own and other workers' environments
# and memory (where a secret could be read), and another pool's files, and
# finds none of them; as root
# the gateway runs each pool as a uid of its own. Then the same from a
# gateway run as a plain user (65534). Skips (77) where bwrap cannot make
# namespaces (a container without the right to).
set -uo pipefail
bin="$1"
src="$(cd "$(dirname "$0")/../.." && pwd)"
. "$src/tests/integration/lib.sh"
top=$(mktemp -d /tmp/strand-test-sandbox-XXXXXX)
chmod 755 "$top"
dir=$top
trap 'show_log_on_failure; stop_gateway; rm -rf "$top"' EXIT
start_gateway "$bin" "$dir" --sandbox auto || exit 1
if grep -q "local workers run unsandboxed" "$dir/gateway.log"; then
  echo "skipped: $(grep -o 'unsandboxed: .*' "$dir/gateway.log")"
  exit 77
fi

# in POOL SCRIPT: runs SCRIPT (sh) as a task of POOL; prints what it wrote
# on stdout (a JSON string of it comes back as the result).
in_pool() {
  local body
  body=$(jq -nc --arg s "$2" '{command: ["sh", "-c", ("printf %s \"$(" + $s + ")\" | jq -Rs .")], arg: null}')
  scurl -s "$STRAND_URL/v1/pools/$1/apply?wait=60" -d "$body" | jq -r .value
}
# What every sandboxed task must not reach, as one line of verdicts.
probe() {
  in_pool "$1" "
    { cat '$dir/strand.token' >/dev/null 2>&1 && echo token:read || echo token:hidden; }
    { head -c 16 '$dir/strand.db' 2>/dev/null | grep -q SQLite && echo db:read || echo db:hidden; }
    { kill -0 $2 2>/dev/null && echo gateway:reachable || echo gateway:unreachable; }
    { cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -Eq '^STRAND_SECRET=[0-9a-f]{64}' && echo secrets:seen || echo secrets:none; }
    { n=0; seen=0; for p in /proc/[0-9]*; do [ \"\$(cat \$p/comm 2>/dev/null)\" = strand-worker ] || continue; seen=\$((seen + 1)); a=\$(head -1 \$p/maps 2>/dev/null | cut -d- -f1); [ -n \"\$a\" ] && [ \"\$(dd if=\$p/mem bs=1 count=1 skip=\$((0x\$a)) 2>/dev/null | wc -c)\" = 1 ] && n=\$((n + 1)); done; echo \"worker-memory:\$n/\$seen\"; }
    { ls /proc | grep -c '^[0-9]' | awk '{print (\$1 < 10 ? \"pids:own\" : \"pids:host\")}'; }
    { touch /etc/strand-was-here 2>/dev/null && echo system:writable || echo system:read-only; }
  " | tr '\n' ' '
}
verdict="token:hidden db:hidden gateway:unreachable secrets:none worker-memory:0/1 pids:own system:read-only "

a=$(scurl -s "$STRAND_URL/v1/pools" -d '{"processes":1}' | jq -r .id)
b=$(scurl -s "$STRAND_URL/v1/pools" -d '{"processes":1}' | jq -r .id)
check "a task reaches nothing of the gateway's" "$verdict" "$(probe "$a" "$GATEWAY_PID")"

uid_a=$(in_pool "$a" "id -u")
uid_b=$(in_pool "$b" "id -u")
if grep -q "runs as a uid of its own" "$dir/gateway.log"; then
  [ "$uid_a" -ge 2100000000 ] && [ "$uid_a" -le 2100999999 ]; check "pool a runs as a uid of the range" 0 $?
  check "pool b as another" "yes" "$([ "$uid_b" != "$uid_a" ] && echo yes || echo no)"
  check "a's tasks, always as a's" "$uid_a" "$(in_pool "$a" "id -u")"
else
  echo "note: no uid of its own per pool here: $(grep -o 'uid [0-9]* cannot.*' "$dir/gateway.log" | head -1)"
fi
in_pool "$a" "echo secret > /tmp/a-was-here; echo done" >/dev/null
check "one pool's /tmp is not another's" "absent" "$(in_pool "$b" "test -e /tmp/a-was-here && echo present || echo absent")"
# A pool's workers share a cache (the code package one of them unpacked),
# which no other pool's reaches: not by its path, not in /dev/shm.
if [ -n "$(ls -d /dev/shm/strand-cache-*/"$a" 2>/dev/null)" ]; then
  in_pool "$a" "echo secret > /var/tmp/strand-cache/a-was-here; echo done" >/dev/null
  check "a pool's cache, its own" absent \
    "$(in_pool "$b" "test -e /var/tmp/strand-cache/a-was-here && echo present || echo absent")"
  check "... and no other's in /dev/shm" 0 "$(in_pool "$b" "ls -A /dev/shm | wc -l")"
  check "... on the host, a's" yes "$([ -f /dev/shm/strand-cache-*/"$a"/a-was-here ] && echo yes || echo no)"
else
  echo "note: no shared cache per pool here: $(grep -o '/dev/shm is no.*\|cannot make /dev/shm.*' "$dir/gateway.log" | head -1)"
fi
stop_gateway

# A gateway given its database by a relative path (as --db strand.db, or
# the default ./strand.db, from its folder): its files are as hidden, and
# its workers start (bwrap refused the relative path: none did).
dir="$top/relative"
mkdir "$dir"
GATEWAY_LAUNCH=(env -C "$dir" -u STRAND_TOKEN -u STRAND_TOKEN_FILE)
start_gateway "$bin" "$dir" --sandbox on --db ./strand.db || exit 1
unset GATEWAY_LAUNCH
d=$(scurl -s "$STRAND_URL/v1/pools" -d '{"processes":1}' | jq -r .id)
check "--db ./strand.db: a task reaches nothing of the gateway's" "$verdict" "$(probe "$d" "$GATEWAY_PID")"
stop_gateway

# Volumes: a host path the operator allowed and a tmpfs, bound at paths
# this host lacks (bwrap makes them on the sandbox's own root, which is
# read-only once they are made); what the sandbox could not bind is
# refused when the pool is asked for, not failed start after start.
dir="$top/volumes"
mkdir -p "$dir" "$top/data"
chmod 777 "$top/data"
start_gateway "$bin" "$dir" --sandbox on --allow-host-paths "$top/data" || exit 1
v=$(scurl -s "$STRAND_URL/v1/pools" -d "$(jq -nc --arg d "$top/data" \
  '{processes: 1, volumes: [($d + ":/strand-test-out/a"), "emptyDir:/strand-test-scratch", ($d + ":/var/tmp/in:ro")]}')" | jq -r .id)
check "with volumes: a task reaches nothing of the gateway's" "$verdict" "$(probe "$v" "$GATEWAY_PID")"
check "volumes bound where the host has no such path" "out scratch in:read-only root:read-only" "$(in_pool "$v" "
    { echo hello > /strand-test-out/a/made && echo out; }
    { touch /strand-test-scratch/s && echo scratch; }
    { test -f /var/tmp/in/made && ! touch /var/tmp/in/x 2>/dev/null && echo in:read-only; }
    { touch /strand-test-root 2>/dev/null || echo root:read-only; }
  " | tr '\n' ' ' | sed 's/ $//')"
check "... the file on the host" "hello" "$(cat "$top/data/made")"
check "... no tmpfs left on the host" "absent" "$(test -e /strand-test-scratch && echo present || echo absent)"
refused() {
  scurl -s "$STRAND_URL/v1/pools" -d "$(jq -nc --arg v "$1" '{processes: 1, volumes: [$v]}')" | jq -r '"\(.status) \(.detail)"'
}
check "a host path this host lacks: 422" \
  "422 field 'volumes[0]': host path '$top/data/nope' is not on this host (No such file or directory)" \
  "$(refused "$top/data/nope:/x")"
check "a path the read-only host would have to hold: 422" \
  "422 field 'volumes[0]': the sandbox cannot make '/usr/share/strand-test': this host's '/usr/share' is read-only there (choose a path this host has, one under /tmp, or one whose first folder this host lacks)" \
  "$(refused "emptyDir:/usr/share/strand-test")"
if grep -q "runs as a uid of its own" "$dir/gateway.log"; then
  mkdir -m 700 "$top/data/closed"
  mkdir -m 777 "$top/data/closed/open"
  check "a host path a pool's own uid cannot reach: 422" \
    "422 field 'volumes[0]': host path '$top/data/closed/open' is out of the pool's reach: it runs as a uid of its own, and '$top/data/closed' lets only its owner and group in" \
    "$(refused "$top/data/closed/open:/x")"
fi
check "no pool was made of them" 1 "$(scurl -s "$STRAND_URL/v1/pools" | jq '.pools | length')"
stop_gateway

# A gateway run as a plain user: its tasks are as far from it.
as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
if [ "$(id -u)" != 0 ] || ! as_user test -x "$bin/strand-gateway"; then
  echo "skipped part: a gateway as user 65534 (needs root, and a checkout that user can reach)"
  checks_passed
  exit $?
fi
dir="$top/plain"
mkdir "$dir"
chown 65534:65534 "$dir"
GATEWAY_LAUNCH=(setpriv --reuid=65534 --regid=65534 --clear-groups)
start_gateway "$bin" "$dir" --sandbox on || exit 1
unset GATEWAY_LAUNCH
c=$(scurl -s "$STRAND_URL/v1/pools" -d '{"processes":1}' | jq -r .id)
check "as 65534: a task reaches nothing of the gateway's" "$verdict" "$(probe "$c" "$GATEWAY_PID")"
check "as 65534: the task is 65534 too" "65534" "$(in_pool "$c" "id -u")"
e=$(scurl -s "$STRAND_URL/v1/pools" -d '{"processes":1,"volumes":["emptyDir:/strand-test-scratch"]}' | jq -r .id)
check "as 65534, a root of its own: a task reaches nothing of the gateway's" "$verdict" "$(probe "$e" "$GATEWAY_PID")"
check "as 65534: its tmpfs" "scratch" "$(in_pool "$e" "touch /strand-test-scratch/s && echo scratch")"
checks_passed
