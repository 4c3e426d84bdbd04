#!/usr/bin/env bash
# strand.Pool (client/python) against a real gateway whose workers run the
# Python runtime in Debian's python3, with python3-cloudpickle.
set -euo pipefail
bin="$1"
src="$(cd "$(dirname "$0")/../.." && pwd)"
. "$src/tests/integration/lib.sh"
dir=$(mktemp -d /tmp/strand-test-python-XXXXXX)
trap 'show_log_on_failure; stop_gateway; rm -rf "$dir"' EXIT
# Workers inherit it: their runtime is Debian's Python, as the client's.
export STRAND_PYTHON=/usr/bin/python3
start_gateway "$bin" "$dir"
PYTHONPATH="$bin/../lib/python" /usr/bin/python3 "$src/tests/integration/python_pool.py"
