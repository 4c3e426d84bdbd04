#!/usr/bin/env bash
# The first command of a new user: install, build, start strand-gateway on
# the local backend with an embedded SQLite file, and run examples/pi
# against it. The gateway then keeps running in the foreground (Ctrl-C stops
# it and every worker it started); QUICKSTART_EXIT=1 stops it right after the
# example instead.
set -euo pipefail
cd "$(dirname "$0")/.."

./deploy/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null

export STRAND_HTTP="${STRAND_HTTP:-127.0.0.1:8080}"
export STRAND_HUB="${STRAND_HUB:-tcp://127.0.0.1:7070}"
export STRAND_DB="${STRAND_DB:-$PWD/strand.db}"
export STRAND_BACKEND="${STRAND_BACKEND:-local}"
export STRAND_URL="http://$STRAND_HTTP"
# The gateway creates its API token (0600) next to the database on first
# start; the examples, strand and libstrand read it from there.
export STRAND_TOKEN_FILE="${STRAND_TOKEN_FILE:-$(dirname "$STRAND_DB")/strand.token}"

./build/bin/strand-gateway &
gateway=$!
trap 'kill -TERM $gateway 2>/dev/null; wait $gateway' INT TERM
for _ in $(seq 100); do
  curl -sf "$STRAND_URL/healthz" >/dev/null && break
  kill -0 $gateway 2>/dev/null || { echo "strand-gateway did not start" >&2; exit 1; }
  sleep 0.1
done

./examples/pi/pi.sh
./build/bin/strand-example-pi --url "$STRAND_URL"

if [ "${QUICKSTART_EXIT:-0}" = 1 ]; then
  kill -TERM $gateway
  wait $gateway
  exit 0
fi
echo "strand-gateway is running on $STRAND_URL (pid $gateway, database $STRAND_DB, API token in"
echo "$STRAND_TOKEN_FILE); Ctrl-C stops it. To use it from another shell, here:"
echo "  export PATH=$PWD/build/bin:\$PATH PYTHONPATH=$PWD/build/lib/python STRAND_URL=$STRAND_URL"
wait $gateway
