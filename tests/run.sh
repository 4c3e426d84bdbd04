#!/usr/bin/env bash
# The whole test suite, from a clean checkout: install what is needed, build
# with warnings as errors (STRAND_WERROR, off in a user's plain build),
# compile a Release build (-O3 finds warnings -O2 does not), run every test
# under AddressSanitizer and UBSan, then under ThreadSanitizer, then in a
# RelWithDebInfo build. Output ends with ctest's summary line.
set -euo pipefail
cd "$(dirname "$0")/.."

./deploy/install-deps.sh docker slurm test
# The docker tests need a real engine; they skip, saying why, only where
# none can be started.
./deploy/start-dockerd.sh || echo "no Docker engine: the docker tests will skip"
# A real Kubernetes for the kubernetes tests (built once per machine into a
# cache outside the checkout); they skip, saying why, where it cannot run.
# A real single-node Slurm on loopback for the slurm tests, the same way.
# Both stop when the suite ends.
repo=$PWD
up=()
cleanup() {
  for cluster in "${up[@]}"; do
    "$repo/deploy/$cluster-cluster.sh" down >/dev/null 2>&1 || true
  done
}
trap cleanup EXIT
for cluster in k8s slurm; do
  if env_file=$("./deploy/$cluster-cluster.sh" up); then
    up+=("$cluster")
    set -a
    # shellcheck disable=SC1090
    . "$env_file"
    set +a
  fi
done
jobs=$(nproc)

echo "== release compile (warnings as errors) =="
cmake -S . -B build-release -DSTRAND_WERROR=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-release -j"$jobs" >/dev/null

echo "== sanitizer build (address, undefined) =="
cmake -S . -B build-asan -DSTRAND_WERROR=ON -DSTRAND_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-asan -j"$jobs" >/dev/null
(cd build-asan && ctest --output-on-failure -j"$jobs")

echo "== sanitizer build (thread) =="
cmake -S . -B build-tsan -DSTRAND_WERROR=ON -DSTRAND_SANITIZE=thread -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-tsan -j"$jobs" >/dev/null
(cd build-tsan && ctest --output-on-failure -j"$jobs")

echo "== release build =="
cmake -S . -B build -DSTRAND_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs" >/dev/null
cd build && ctest --output-on-failure -j"$jobs"
