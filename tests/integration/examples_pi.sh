#!/usr/bin/env bash
# examples/pi, both of them, against a real gateway on loopback: each must
# print an estimate of pi close to 3.14.
set -euo pipefail
bin="$1"
src="$(cd "$(dirname "$0")/../.." && pwd)"
. "$src/tests/integration/lib.sh"
dir=$(mktemp -d /tmp/strand-test-pi-XXXXXX)
trap 'show_log_on_failure; stop_gateway; rm -rf "$dir"' EXIT
start_gateway "$bin" "$dir"

check() {
  echo "$1"
  [[ "$1" =~ ^Pi\ is\ roughly\ 3\.1[0-9]* ]] || { echo "not an estimate of pi: $1" >&2; exit 1; }
}
check "$("$src/examples/pi/pi.sh" 200000 20)"
check "$("$bin/strand-example-pi" --samples 200000 --tasks 20)"
if grep -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$dir/gateway.log"; then exit 1; fi
