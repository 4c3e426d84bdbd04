#!/usr/bin/env bash
# libstrand as a user gets it: installed, then found with pkg-config and
# linked into a program of theirs that talks to a gateway.
set -euo pipefail
build="$1"
src="$(cd "$(dirname "$0")/../.." && pwd)"
. "$src/tests/integration/lib.sh"
dir=$(mktemp -d /tmp/strand-test-pc-XXXXXX)
trap 'show_log_on_failure; stop_gateway; rm -rf "$dir"' EXIT
cmake --install "$build" --prefix "$dir/prefix" >/dev/null
cat >"$dir/user.c" <<'C'
#include <stdio.h>
#include "client.h"
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
export PKG_CONFIG_PATH="$dir/prefix/lib/pkgconfig"
# shellcheck disable=SC2046
cc -o "$dir/user" "$dir/user.c" $(pkg-config --cflags --libs strand)
start_gateway "$build/bin" "$dir"
out=$("$dir/user")
echo "$out"
[ "$out" = "ok 42" ]
