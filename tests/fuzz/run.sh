#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) in their own build
# folder and runs each for FUZZ_SECONDS (30) on a copy of its seed corpus
# (tests/fuzz/corpus/NAME); fails on any crash, leak or sanitizer report, and
# prints the input that caused it. Exits 77 (skipped, saying why) where clang
# or its libFuzzer runtime is missing.
#   tests/fuzz/run.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src="$(cd "$1" && pwd)"
build="$(mkdir -p "$2" && cd "$2" && pwd)"
# 30 s a target keeps a fresh machine's CI (one-time cluster build included)
# within its 45 minutes; a longer run: FUZZ_SECONDS=600 tests/fuzz/run.sh ...
seconds="${FUZZ_SECONDS:-30}"
if ! command -v clang >/dev/null; then
  echo "skipped: no clang (apt-get install clang) for the libFuzzer targets"
  exit 77
fi
probe=$(mktemp -d /tmp/strand-fuzz-probe-XXXXXX)
trap 'rm -rf "$probe"' EXIT
echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }' >"$probe/p.c"
if ! clang -fsanitize=fuzzer "$probe/p.c" -o "$probe/p" 2>/dev/null; then
  echo "skipped: clang has no libFuzzer runtime (apt-get install libclang-rt-dev)"
  exit 77
fi
cmake -S "$src" -B "$build" -DCMAKE_C_COMPILER=clang -DSTRAND_FUZZ=ON -DSTRAND_WERROR=ON -DBUILD_TESTING=OFF \
  -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$build" -j"$(nproc)" --target fuzz_frame fuzz_spec fuzz_http fuzz_http_reply >/dev/null
work=$(mktemp -d /tmp/strand-fuzz-XXXXXX)
trap 'rm -rf "$probe" "$work"' EXIT
failed=0
for name in frame spec http http_reply; do
  # fuzz_http's gateway keeps its state (pools, jobs) from input to input
  # and is never stopped: that is not a leak. The ASan integration tests,
  # which stop their gateways, check for leaks.
  leaks=1
  [ "$name" = http ] && leaks=0
  mkdir -p "$work/$name"
  cp "$src/tests/fuzz/corpus/$name/"* "$work/$name/"
  echo "== fuzz_$name: $seconds s"
  if ! (cd "$work" && FUZZ_WORKDIR="$work" ASAN_OPTIONS="detect_leaks=$leaks" "$build/bin/fuzz_$name" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -detect_leaks=$leaks -print_final_stats=1 \
    "$work/$name" >"$work/$name.log" 2>&1); then
    failed=1
    echo "fuzz_$name FAILED; its last words:"
    tail -40 "$work/$name.log"
    for crash in "$work"/crash-* "$work"/leak-* "$work"/timeout-*; do
      [ -e "$crash" ] && { echo "input $crash:"; od -c "$crash" | head -20; }
    done
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$work/$name.log" | tr '\n' ' '
    echo
  fi
done
[ "$failed" -eq 0 ]
