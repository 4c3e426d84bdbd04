#!/usr/bin/env bash
# How the gateway opens its database: --sync, --retain; it holds the database
# alone (a second gateway on it is refused, another process cannot read it)
# unless --db-shared lets other processes read it; a database whose write-ahead
# log was removed after a crash is refused (exit 1, saying so) instead of
# loading without its last commits, and opens again with the log back; a
# damaged page the start does not read is found by the integrity check
# that runs while the gateway serves, which stops it (exit 3).
set -uo pipefail
bin="$1"
src="$(cd "$(dirname "$0")/../.." && pwd)"
. "$src/tests/integration/lib.sh"
dir=$(mktemp -d /tmp/strand-test-db-XXXXXX)
trap 'show_log_on_failure; stop_gateway; rm -rf "$dir"' EXIT
db="$dir/strand.db"

# Runs the gateway on $db in the foreground (ARGS...), at most 60 s; prints its exit status.
gateway_once() {
  local port
  port=$(free_ports)
  timeout 60 "$bin/strand-gateway" --db "$db" --http "127.0.0.1:$port" --hub "tcp://127.0.0.1:$((port + 1))" \
    "$@" 2>>"$dir/gateway.log"
  echo $?
}

check "--sync other than normal or full: exit 64" 64 "$(gateway_once --sync fast)"
grep -q -- "--sync must be normal or full" "$dir/gateway.log"
check "... saying so" 0 $?

# The queue items another process reads from $db, or "locked".
items_read_beside() {
  /usr/bin/python3 - "$db" <<'PY'
import sqlite3, sys
try:
    db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True, timeout=0.5)
    print(db.execute("SELECT count(*) FROM queue_items").fetchone()[0])
except sqlite3.OperationalError as e:
    print("locked" if "locked" in str(e) else e)
PY
}

check "--retain not an age: exit 64" 64 "$(gateway_once --retain 5x)"
grep -q -- "--retain must be 0 or a whole number with s, m, h or d" "$dir/gateway.log"
check "... saying so" 0 $?

start_gateway "$bin" "$dir" --sync full || exit 1
check "healthz: the sync level" full "$(curl -sf "$STRAND_URL/healthz" | jq -r .sync)"
bytes=$(curl -sf "$STRAND_URL/healthz" | jq -r .db_bytes)
[ "$bytes" -gt 0 ]
check "healthz: the database's bytes" 0 $?
queue=$(scurl -sf -X POST "$STRAND_URL/v1/queues" | jq -r .id)
scurl -sf -X POST "$STRAND_URL/v1/queues/$queue/items" -d '{"item": "kept"}' >/dev/null
check "an item put" 0 $?
check "a second gateway on the database: exit 1" 1 "$(gateway_once)"
grep -q "cannot start: database $db is in use by another process" "$dir/gateway.log"
check "... saying so" 0 $?
check "another process cannot read it" locked "$(items_read_beside)"

# kill -9: the last commits are in the log. Without it, refused.
kill -9 "$GATEWAY_PID"
wait "$GATEWAY_PID" 2>/dev/null
GATEWAY_PID=""
mv "$db-wal" "$dir/wal-aside"
check "the log gone after a crash: exit 1" 1 "$(gateway_once)"
grep -q "was not closed cleanly and its write-ahead log $db-wal is gone" "$dir/gateway.log"
check "... saying so" 0 $?
mv "$dir/wal-aside" "$db-wal"
start_gateway "$bin" "$dir" --db-shared || exit 1
check "--db-shared: another process reads it" 1 "$(items_read_beside)"
check "the log back: the item is there" '["kept"]' \
  "$(scurl -sf -X POST "$STRAND_URL/v1/queues/$queue/take?max=5" | jq -c .items)"
check "... and another process sees it taken" 0 "$(items_read_beside)"
stop_gateway

# A damaged page of an index nothing reads at start (the rings' ids).
read -r page size < <(/usr/bin/python3 - "$db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'sqlite_autoindex_rings_1'").fetchone()[0],
      db.execute("PRAGMA page_size").fetchone()[0])
PY
)
printf '\x0d\xff\xff\xff\xff\xff\xff\xff' | dd of="$db" bs=1 seek=$(((page - 1) * size)) conv=notrunc 2>/dev/null
check "a damaged database: the gateway stops, exit 3" 3 "$(gateway_once)"
grep -q "stopping: database failed its integrity check" "$dir/gateway.log"
check "... saying so" 0 $?

checks_passed
