#!/usr/bin/env bash
# libstrand as a user gets it: installed (cmake --install), then found with
# pkg-config and linked into a program of theirs, shared and static, that
# includes both of strand's installed headers; and the installed gateway,
# which runs the installed example plugin.
set -euo pipefail
build="$1"
src="$(cd "$(dirname "$0")/../.." && pwd)"
. "$src/tests/integration/lib.sh"
dir=$(mktemp -d /tmp/strand-test-pc-XXXXXX)
trap 'show_log_on_failure; stop_gateway; rm -rf "$dir"' EXIT
prefix="$dir/prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
cat >"$dir/user.c" <<'C'
#include <stdio.h>
#include <strand/client.h>
#include <strand/strand_plugin.h> /* beside it: no name declared twice */
int main(void)
{
	strand_client *c = strand_client_new(NULL);
	char q[32];
	json_t *v = json_integer(42), *got = NULL;
	int ok = strand_queue_create(c, q) == 0 && strand_queue_put(c, q, v) == 0 && strand_queue_get(c, q, 5, &got) == 0;
	printf("%s %lld\n", ok ? "ok" : strand_client_error(c), ok ? (long long)json_integer_value(got) : 0LL);
	json_decref(v);
	json_decref(got);
	strand_client_free(c);
	return ok ? 0 : 1;
}
C
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$(find "$prefix" -name strand.pc)")
libdir=$(pkg-config --variable=libdir strand)
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
check "the version is the project's" "$version" "$(pkg-config --modversion strand)"
check "jansson is required, libcurl and libcrypto privately" "jansson" "$(pkg-config --print-requires strand)"
check "libcurl and libcrypto are private requirements" "libcurl
libcrypto" "$(pkg-config --print-requires-private strand)"

# Shared: -lstrand finds libstrand.so, whose soname the program needs.
# shellcheck disable=SC2046
cc -Wall -Werror -o "$dir/user" "$dir/user.c" $(pkg-config --cflags --libs strand)
check "linked to the shared library" "libstrand.so.${version%%.*}" \
  "$(readelf -d "$dir/user" | sed -n 's/.*Shared library: \[\(libstrand[^]]*\)\].*/\1/p')"
# Only the API is exported: nothing of libstrand's inside.
check "exports only strand_*" "" \
  "$(nm -D --defined-only "$libdir/libstrand.so" | awk '$2 ~ /^[TDB]$/ && $3 !~ /^strand_/ {print $3}')"
# Static: libstrand.a, then what it needs.
# shellcheck disable=SC2046
cc -Wall -Werror -o "$dir/user_static" "$dir/user.c" $(pkg-config --cflags strand) "$libdir/libstrand.a" \
  $(pkg-config --libs jansson libcurl libcrypto)
check "the static program needs no libstrand.so" "" "$(readelf -d "$dir/user_static" | grep libstrand || true)"

# The installed tree runs: its gateway, its worker and the example plugin.
check "the example plugins are installed" "yes" "$([ -f "$libdir/strand/pi.so" ] && echo yes || echo no)"
start_gateway "$prefix/bin" "$dir"
check "the shared program" "ok 42" "$(LD_LIBRARY_PATH="$libdir" "$dir/user")"
check "the static program" "ok 42" "$("$dir/user_static")"
pool=$(scurl -sf -d '{"processes": 1}' "$STRAND_URL/v1/pools" | jq -r .id)
job=$(scurl -sf -d '{"function": "pi.so:pi_hits", "args": [1000]}' "$STRAND_URL/v1/pools/$pool/map" | jq -r .id)
item=$(scurl -sf "$STRAND_URL/v1/jobs/$job/results?wait=30" | jq -c '.items[0] | {index, ok, hit: (.value > 700 and .value < 850)}')
check "pi.so ran from the installed plugin folder" '{"index":0,"ok":true,"hit":true}' "$item"
checks_passed
