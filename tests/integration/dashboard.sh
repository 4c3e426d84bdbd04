#!/usr/bin/env bash
# The dashboard in headless Chromium: tests/dashboard/check.mjs drives
# Debian's chromium with puppeteer-core (pinned by its package-lock.json,
# installed once per machine outside the checkout). Screenshots at 1400
# and 420 px are left in BUILD_DIR/dashboard-screenshots. Skips (77), saying
# why, without chromium, node and npm, or the npm registry.
#   dashboard.sh BIN_DIR
set -euo pipefail
bin="$1"
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/lib.sh"
CHROMIUM=$(command -v chromium || true)
if [ -z "$CHROMIUM" ]; then
  echo "skipped: no chromium (deploy/install-deps.sh test installs it)"
  exit 77
fi
npm_tools "$here/../dashboard"

dir=$(mktemp -d)
trap 'show_log_on_failure; stop_gateway; rm -rf "$dir"' EXIT
start_gateway "$bin" "$dir"
export CHROMIUM SCREENSHOTS="$bin/../dashboard-screenshots"
node "$TOOLS/check.mjs"
