#!/usr/bin/env bash
# A Python test file (python_pool.py: the strand client; python_fiber.py:
# Fiber's examples) against a real gateway whose workers run the Python
# runtime in Debian's python3, with python3-cloudpickle.
set -euo pipefail
bin="$1"
test_file="$2"
src="$(cd "$(dirname "$0")/../.." && pwd)"
. "$src/tests/integration/lib.sh"
dir=$(mktemp -d /tmp/strand-test-python-XXXXXX)
trap 'show_log_on_failure; stop_gateway; rm -rf "$dir"' EXIT
# Workers inherit both: their runtime is Debian's Python, as the client's,
# and imports what the tests' functions refer to (fiber_examples: gym).
export STRAND_PYTHON=/usr/bin/python3
export PYTHONPATH="$src/tests/integration/fiber_examples"
# Connections idle for 2 s are closed: the client opens them again.
start_gateway "$bin" "$dir" --http-idle 2
# For the test of an https:// gateway, which starts its own.
export STRAND_TEST_BIN="$bin"
# The program's folder is what its workers get (strand.init's working_dir):
# a folder of its own, not the build tree's.
mkdir "$dir/cwd"
cd "$dir/cwd"
PYTHONPATH="$bin/../lib/python:$PYTHONPATH" /usr/bin/python3 "$src/tests/integration/$test_file"
