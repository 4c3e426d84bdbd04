#!/usr/bin/env bash
# docs/tasks.md's recipe for a worker image with your own plugin, followed as
# written: a plugin built against strand_plugin.h, an image FROM
# strand-worker with the .so in /usr/lib/strand, a docker pool of that
# image running it; the stock image does not have it. Skips (77) where no
# Docker engine answers.
set -euo pipefail
bin="$1"
src="$(cd "$(dirname "$0")/../.." && pwd)"
. "$src/tests/integration/lib.sh"
require_docker
"$src/deploy/build-images.sh" "$bin/.." test >/dev/null
dir=$(mktemp -d /tmp/strand-test-custom-image-XXXXXX)
trap 'show_log_on_failure; stop_gateway; docker rmi -f strand-worker-greet:test >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT

mkdir "$dir/image"
cat >"$dir/greet.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "strand_plugin.h"

/* greet.so:greet: "NAME" -> "hello, NAME" (the argument is a JSON string). */
int greet(const char *arg, size_t len, char **out)
{
	if (len < 2 || arg[0] != '"') {
		*out = strdup("greet: the argument must be a string");
		return 1;
	}
	*out = malloc(len + 16);
	if (!*out)
		return 1;
	snprintf(*out, len + 16, "\"hello, %.*s\"", (int)(len - 2), arg + 1);
	return 0;
}
C
cc -Wall -Werror -shared -fPIC -I"$src/worker" -o "$dir/image/greet.so" "$dir/greet.c"
cat >"$dir/image/Dockerfile" <<'D'
FROM strand-worker:test
COPY greet.so /usr/lib/strand/
D
docker build -q -t strand-worker-greet:test "$dir/image" >/dev/null

start_gateway "$bin" "$dir" --allow-images 'strand-worker*:test'
# run_greet IMAGE: the result item of greet.so:greet("world") on a docker pool of IMAGE.
run_greet() {
  local pool job
  pool=$(scurl -sf -d "{\"processes\": 1, \"backend\": \"docker\", \"image\": \"$1\"}" "$STRAND_URL/v1/pools" | jq -r .id)
  job=$(scurl -sf -d '{"function": "greet.so:greet", "args": ["world"]}' "$STRAND_URL/v1/pools/$pool/map" | jq -r .id)
  scurl -sf "$STRAND_URL/v1/jobs/$job/results?wait=60" | jq -c '.items[0] | {ok, value, error}'
  scurl -sf -X DELETE "$STRAND_URL/v1/pools/$pool" >/dev/null
}
check "the plugin runs in the custom image" '{"ok":true,"value":"hello, world","error":null}' \
  "$(run_greet strand-worker-greet:test)"
stock=$(run_greet strand-worker:test)
check "the stock image has no greet.so" "false" "$(jq -r .ok <<<"$stock")"
check "... and says so" "yes" "$(jq -r '.error | test("greet.so not found") | if . then "yes" else "no" end' <<<"$stock")"
# strand-worker loads libcurl only to join a pool (--join), so ldd does not
# name it: the stock image holds it all the same. With no network, the
# join gets as far as dialing (nothing listens on port 9 of its loopback).
joined=$(docker run --rm --network none strand-worker:test --join http://127.0.0.1:9 --join-token t \
  --gateway-timeout 1 2>&1 || true)
check "the stock image can join" "yes" \
  "$(grep -q 'cannot reach http://127.0.0.1:9/v1/join' <<<"$joined" && echo yes || echo "no: $joined")"
checks_passed
