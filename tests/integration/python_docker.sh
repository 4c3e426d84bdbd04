#!/usr/bin/env bash
# The Python scenarios on the docker backend: workers are containers of
# strand-worker-python (deploy/build-images.sh, tag "test"), built without a
# registry. Skips (77) where no Docker engine answers.
set -euo pipefail
bin="$1"
src="$(cd "$(dirname "$0")/../.." && pwd)"
. "$src/tests/integration/lib.sh"
require_docker
"$src/deploy/build-images.sh" "$bin/.." test
dir=$(mktemp -d /tmp/strand-test-python-docker-XXXXXX)
trap 'show_log_on_failure; stop_gateway; rm -rf "$dir"' EXIT
start_gateway "$bin" "$dir" --image strand-worker-python:test
# The program's folder is what its workers get: a folder of its own.
mkdir "$dir/cwd"
cd "$dir/cwd"
STRAND_TEST_BACKEND=docker STRAND_TEST_IMAGE=strand-worker-python:test \
  PYTHONPATH="$bin/../lib/python" /usr/bin/python3 "$src/tests/integration/python_containers.py"
# Fiber's examples, as python_fiber runs them on the local backend.
STRAND_TEST_BACKEND=docker STRAND_TEST_IMAGE=strand-worker-python:test \
  PYTHONPATH="$bin/../lib/python:$src/tests/integration/fiber_examples" \
  /usr/bin/python3 "$src/tests/integration/python_fiber.py"
