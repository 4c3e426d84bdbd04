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
src="$here/../openapi"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIP: node and npm are not installed (deploy/install-deps.sh test installs them)"
  exit 77
fi
lock_sum=$(sha256sum "$src/package-lock.json" | cut -c1-16)
tools="${XDG_CACHE_HOME:-$HOME/.cache}/strand/openapi-$lock_sum"
if [ ! -d "$tools/node_modules" ]; then
  mkdir -p "$tools"
  cp "$src/package.json" "$src/package-lock.json" "$tools/"
  if ! (cd "$tools" && npm ci --no-audit --no-fund --loglevel=error >npm.log 2>&1); then
    tail -5 "$tools/npm.log"
    rm -rf "$tools/node_modules"
    echo "SKIP: npm ci could not install the validator (no npm registry?)"
    exit 77
  fi
fi
cp "$src/check.mjs" "$tools/"

dir=$(mktemp -d)
trap 'show_log_on_failure; stop_gateway; rm -rf "$dir"' EXIT
start_gateway "$bin" "$dir"
node "$tools/check.mjs"
