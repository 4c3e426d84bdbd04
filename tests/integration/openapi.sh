#!/usr/bin/env bash
# GET /v1/openapi.json checked against the running gateway by
# tests/openapi/check.mjs: a valid OpenAPI 3.1 document, every documented
# route routed and no other method or path answered, real responses valid
# against their schemas. Its npm tooling (pinned by package-lock.json) is
# installed once per machine into a cache outside the checkout; without
# node and npm, or without the npm registry, the test skips (77) and says why.
#   openapi.sh BIN_DIR
set -euo pipefail
bin="$1"
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/lib.sh"
npm_tools "$here/../openapi"

dir=$(mktemp -d)
trap 'show_log_on_failure; stop_gateway; rm -rf "$dir"' EXIT
start_gateway "$bin" "$dir"
node "$TOOLS/check.mjs"
