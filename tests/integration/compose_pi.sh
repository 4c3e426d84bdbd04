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
project="strandtest$$"
# The gateway runs as 65534 in the socket's group.
STRAND_DOCKER_GID=$(stat -c %g /var/run/docker.sock)
# Every named volume allowed: the gateway's own must still be refused.
STRAND_ALLOW_VOLUMES='*'
export STRAND_DOCKER_GID STRAND_ALLOW_VOLUMES
compose() { docker-compose -p "$project" -f "$src/docker-compose.yml" "$@"; }
trap 'code=$?; [ $code -eq 0 ] || { echo "--- exit $code; the gateway container said:"; compose logs --tail 25 gateway; }; compose down -v --timeout 30 >/dev/null 2>&1 || true' EXIT
# Tests run in parallel: if the ports are taken by the time the gateway
# listens, start again elsewhere. Ours answers /healthz as pid 1 (the
# container's own namespace); anything else on the port is not ours.
up=0
for _ in $(seq 5); do
  port=$(free_ports)
  export STRAND_TAG=compose STRAND_HTTP="127.0.0.1:$port" STRAND_HUB="tcp://127.0.0.1:$((port + 1))"
  export STRAND_URL="http://127.0.0.1:$port"
  compose up -d >/dev/null 2>&1 || true
  for _ in $(seq 100); do
    [ "$(curl -sf "$STRAND_URL/healthz" | jq -r .pid 2>/dev/null)" = 1 ] && { up=1; break; }
    sleep 0.1
  done
  [ $up = 1 ] && break
  compose down -v --timeout 10 >/dev/null 2>&1 || true
done
[ $up = 1 ] || { echo "the compose gateway did not come up"; exit 1; }
# The gateway made its token next to its database, on the volume.
STRAND_TOKEN="$(docker cp "$(compose ps -q gateway)":/data/strand.token - | tar -xO)"
export STRAND_TOKEN
[ "$(curl -s -o /dev/null -w '%{http_code}' "$STRAND_URL/v1/pools")" = 401 ]
# Not root inside its container.
[ "$(docker inspect -f '{{.Config.User}}' "$(compose ps -q gateway)")" = "65534:$STRAND_DOCKER_GID" ]
out=$("$src/examples/pi/pi.sh" 200000 20)
echo "$out"
[[ "$out" =~ ^Pi\ is\ roughly\ 3\.1 ]]
# The workers were containers the gateway started, now gone with their pool.
logs=$(compose logs gateway 2>&1)
grep -q "docker workers" <<<"$logs"
# (removed by the gateway's docker executor after DELETE answered: a moment,
# longer on a loaded machine; the suite runs it beside the cluster's tests).
# Only this gateway's pools count: the same image may have other containers.
pools=$(curl -sf -H @<(printf 'Authorization: Bearer %s\n' "$STRAND_TOKEN") "$STRAND_URL/v1/pools" |
  jq -r '.pools[].id')
[ -n "$pools" ]
ours() { for p in $pools; do docker ps -a --filter "label=strand.pool=$p" --format '{{.ID}} {{.Status}}'; done; }
for _ in $(seq 300); do
  [ -z "$(ours)" ] && break
  sleep 0.1
done
left=$(ours)
[ -z "$left" ] || { echo "worker containers left 30 s after the pool's DELETE: $left"; exit 1; }
# The database lives on the named volume.
docker volume inspect "${project}_strand-data" >/dev/null
# A pool may not run an image the operator did not allow, nor mount the
# volume that holds the gateway's database and token, whatever
# --allow-volumes says: its workers never start, and the pool says why.
auth() { printf 'Authorization: Bearer %s\n' "$STRAND_TOKEN"; }
code=$(curl -s -o /dev/null -w '%{http_code}' -H @<(auth) -H 'Content-Type: application/json' \
  -d '{"processes": 1, "backend": "docker", "image": "busybox:latest"}' "$STRAND_URL/v1/pools")
[ "$code" = 403 ] || { echo "an image not allowed: $code, not 403"; exit 1; }
stolen=$(curl -sf -H @<(auth) -H 'Content-Type: application/json' \
  -d "{\"processes\": 1, \"backend\": \"docker\", \"volumes\": [\"${project}_strand-data:/stolen\"]}" \
  "$STRAND_URL/v1/pools" | jq -r .id)
for _ in $(seq 300); do
  state=$(curl -sf -H @<(auth) "$STRAND_URL/v1/pools/$stolen" | jq -r .state)
  [ "$state" = failed ] && break
  sleep 0.1
done
reason=$(curl -sf -H @<(auth) "$STRAND_URL/v1/pools/$stolen" | jq -r .reason)
[[ "$reason" == *"volume ${project}_strand-data holds this gateway's own data"* ]] ||
  { echo "a pool mounting the gateway's own volume: state $state, reason '$reason'"; exit 1; }
echo "the gateway's own volume refused: $reason"
