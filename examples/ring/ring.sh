#!/usr/bin/env bash
# Starts a Ring of SIZE members running strand-example-ring (a ring
# all-reduce over nng), waits for it, and prints what every rank said.
#   STRAND_URL=http://127.0.0.1:8080 examples/ring/ring.sh [SIZE] [BIN_DIR]
set -euo pipefail
url="${STRAND_URL:-http://127.0.0.1:8080}"
size="${1:-4}"
bin="$(cd "${2:-$(dirname "$0")/../../build/bin}" && pwd)"
# The gateway's API token: $STRAND_TOKEN, else $STRAND_TOKEN_FILE, else
# ./strand.token. It goes to curl through a file descriptor, never argv.
token="${STRAND_TOKEN:-$(cat "${STRAND_TOKEN_FILE:-strand.token}" 2>/dev/null || true)}"
api() { curl -sSf -H @<(printf 'Authorization: Bearer %s\n' "$token") -H 'Content-Type: application/json' "$@"; }
ring=$(api -X POST "$url/v1/rings" -d "{\"size\": $size, \"command\": [\"$bin/strand-example-ring\", \"8\"]}" | jq -r .id)
state=$(api "$url/v1/rings/$ring?wait=60" | jq -r .state)
for p in $(api "$url/v1/rings/$ring" | jq -r '.members[].id'); do
  api "$url/v1/processes/$p/logs"
done
[ "$state" = done ]
