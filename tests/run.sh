#!/usr/bin/env bash
# The whole test suite, from a clean checkout: install what is needed, build
# with warnings as errors, run every test under AddressSanitizer and UBSan,
# then under ThreadSanitizer, then in a release build. Output ends with
# ctest's summary line.
set -euo pipefail
cd "$(dirname "$0")/.."

./deploy/install-deps.sh docker test
# The docker tests need a real engine; they skip, saying why, only where
# none can be started.
./deploy/start-dockerd.sh || echo "no Docker engine: the docker tests will skip"
# A real Kubernetes for the kubernetes tests (built once per machine into a
# cache outside the checkout); they skip, saying why, where it cannot run.
if env_file=$(./deploy/k8s-cluster.sh up); then
  # shellcheck disable=SC2064 # the path now, before the cd below
  trap "'$PWD/deploy/k8s-cluster.sh' down >/dev/null 2>&1 || true" EXIT
  set -a
  # shellcheck disable=SC1090
  . "$env_file"
  set +a
fi
jobs=$(nproc)

echo "== sanitizer build (address, undefined) =="
cmake -S . -B build-asan -DSTRAND_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-asan -j"$jobs" >/dev/null
(cd build-asan && ctest --output-on-failure -j"$jobs")

echo "== sanitizer build (thread) =="
cmake -S . -B build-tsan -DSTRAND_SANITIZE=thread -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-tsan -j"$jobs" >/dev/null
(cd build-tsan && ctest --output-on-failure -j"$jobs")

echo "== release build =="
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs" >/dev/null
cd build && ctest --output-on-failure -j"$jobs"
