#!/usr/bin/env bash
# Starts a Ring of SIZE members running strand-example-ring (a ring
# all-reduce over nng), waits for it, and prints what every rank said.
#   STRAND_URL=http://127.0.0.1:8080 examples/ring/ring.sh [SIZE] [BIN_DIR]
set -euo pipefail
url="${STRAND_URL:-http://127.0.0.1:8080}"
size="${1:-4}"
bin="$(cd "${2:-$(dirname "$0")/../../build/bin}" && pwd)"
ring=$(curl -sSf -X POST "$url/v1/rings" -H 'Content-Type: application/json' \
  -d "{\"size\": $size, \"command\": [\"$bin/strand-example-ring\", \"8\"]}" | jq -r .id)
state=$(curl -sSf "$url/v1/rings/$ring?wait=60" | jq -r .state)
for p in $(curl -sSf "$url/v1/rings/$ring" | jq -r '.members[].id'); do
  curl -sSf "$url/v1/processes/$p/logs"
done
[ "$state" = done ]
