#!/usr/bin/env bash
# The Python scenarios on the kubernetes backend: every worker, process and
# manager is a pod of strand-worker-python (deploy/build-images.sh, tag
# "test"; the kubelet runs Docker's images, so none is pulled), reaching the
# gateway on loopback through hostNetwork. Exits 77 (skipped) without a
# cluster.
set -euo pipefail
bin="$1"
src="$(cd "$(dirname "$0")/../.." && pwd)"
. "$src/tests/integration/lib.sh"
require_cluster
"$src/deploy/build-images.sh" "$bin/.." test >/dev/null
dir=$(mktemp -d /tmp/strand-test-python-k8s-XXXXXX)
trap 'show_log_on_failure; stop_gateway; rm -rf "$dir"' EXIT
start_gateway "$bin" "$dir" --kubeconfig "$KUBECONFIG" --k8s-host-network --k8s-pull-policy Never \
  --k8s-start-grace 3 --image strand-worker-python:test
# The program's folder is what its workers get: a folder of its own.
mkdir "$dir/cwd"
cd "$dir/cwd"
STRAND_TEST_BACKEND=kubernetes STRAND_TEST_IMAGE=strand-worker-python:test \
  PYTHONPATH="$bin/../lib/python" /usr/bin/python3 "$src/tests/integration/python_containers.py"
# Fiber's examples, as python_fiber runs them on the local backend.
STRAND_TEST_BACKEND=kubernetes STRAND_TEST_IMAGE=strand-worker-python:test \
  PYTHONPATH="$bin/../lib/python:$src/tests/integration/fiber_examples" \
  /usr/bin/python3 "$src/tests/integration/python_fiber.py"
