#!/usr/bin/env bash
# examples/pi, both of them, against a real gateway on loopback: each must
# print an estimate of pi close to 3.14.
set -euo pipefail
bin="$1"
src="$(cd "$(dirname "$0")/../.." && pwd)"
dir=$(mktemp -d /tmp/strand-test-pi-XXXXXX)
port=$((20000 + RANDOM % 20000))
export STRAND_URL="http://127.0.0.1:$port"
"$bin/strand-gateway" --db "$dir/pi.db" --http "127.0.0.1:$port" --hub "tcp://127.0.0.1:$((port + 1))" \
  2>"$dir/gateway.log" &
gateway=$!
trap 'kill -TERM $gateway 2>/dev/null; wait $gateway 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 200); do curl -sf "$STRAND_URL/healthz" >/dev/null && break; sleep 0.05; done

check() {
  echo "$1"
  [[ "$1" =~ ^Pi\ is\ roughly\ 3\.1[0-9]* ]] || { echo "not an estimate of pi: $1" >&2; exit 1; }
}
check "$("$src/examples/pi/pi.sh" 200000 20)"
check "$("$bin/strand-example-pi" --samples 200000 --tasks 20)"
if grep -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$dir/gateway.log"; then exit 1; fi
