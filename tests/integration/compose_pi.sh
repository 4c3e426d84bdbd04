#!/usr/bin/env bash
# docker-compose up (Debian's docker-compose 1.29) with the images of this
# build, then examples/pi against it; down again, volume and all.
# Exits 77 (skipped) where no Docker engine or docker-compose is available.
set -euo pipefail
src="$1"
build="$2"
if ! command -v docker-compose >/dev/null || ! docker info >/dev/null 2>&1; then
  echo "skipped: needs docker-compose and a running Docker engine (tests/run.sh starts one)"
  exit 77
fi
"$src/deploy/build-images.sh" "$build" compose >/dev/null
. "$src/tests/integration/lib.sh"
port=$(free_ports)
export STRAND_TAG=compose STRAND_HTTP="127.0.0.1:$port" STRAND_HUB="tcp://127.0.0.1:$((port + 1))"
export STRAND_URL="http://127.0.0.1:$port"
project="strandtest$$"
compose() { docker-compose -p "$project" -f "$src/docker-compose.yml" "$@"; }
trap 'code=$?; [ $code -eq 0 ] || { echo "--- exit $code; the gateway container said:"; compose logs --tail 25 gateway; }; compose down -v --timeout 30 >/dev/null 2>&1 || true' EXIT
compose up -d >/dev/null 2>&1
for _ in $(seq 100); do curl -sf "$STRAND_URL/healthz" >/dev/null && break; sleep 0.1; done
out=$("$src/examples/pi/pi.sh" 200000 20)
echo "$out"
[[ "$out" =~ ^Pi\ is\ roughly\ 3\.1 ]]
# The workers were containers the gateway started, now gone with their pool.
logs=$(compose logs gateway 2>&1)
grep -q "docker workers" <<<"$logs"
[ "$(docker ps -aq --filter ancestor=strand-worker:compose | wc -l)" -eq 0 ]
# The database lives on the named volume.
docker volume inspect "${project}_strand-data" >/dev/null
