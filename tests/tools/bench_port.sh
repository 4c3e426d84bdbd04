#!/usr/bin/env bash
# bench/lib.sh's port: STRAND_BENCH_PORT when set and valid, refused with
# its reason when not, a random one below the ephemeral range otherwise.
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib.sh
fail() { echo "bench_port: $*" >&2; exit 1; }

[ "$(STRAND_BENCH_PORT=23456 bench_port)" = 23456 ] || fail "STRAND_BENCH_PORT=23456 not taken"
for bad in abc 12x 0 65535 -1; do
  if msg=$(STRAND_BENCH_PORT=$bad bench_port 2>&1); then fail "'$bad' taken as $msg"; fi
  case "$msg" in *STRAND_BENCH_PORT*) ;; *) fail "'$bad' refused without a reason: $msg" ;; esac
done
for _ in $(seq 50); do
  p=$(unset STRAND_BENCH_PORT; bench_port)
  [ "$p" -ge 10000 ] && [ "$p" -lt 32000 ] || fail "random port $p outside 10000-31999"
done
echo "bench_port: ok"
