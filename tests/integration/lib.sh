# Shared by the shell tests: ports, a gateway that retries elsewhere when
# its ports are taken (tests run in parallel), and checks that count.
# Loopback only.

# Prints a port P such that P and P+1 accept no connection now.
free_ports() {
  local p
  for _ in $(seq 50); do
    # Below the ephemeral range (32768 and up): see tests/support/harness.c.
    p=$((10000 + RANDOM % 22000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && ! (exec 3<>"/dev/tcp/127.0.0.1/$((p + 1))") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  return 1
}

GATEWAY_PID=""

# The test's own deadline (STRAND_TEST_DEADLINE s, 20 s below its ctest
# timeout: tests/CMakeLists.txt): past it, a watcher prints where the test
# is (its processes, each gateway's threads' stacks and the end of its log,
# and what the test asked for with on_deadline) and ends the test's
# processes, before ctest's timeout would end the test without a word. It
# goes once the test is gone.
deadline_notes="${TMPDIR:-/tmp}/strand-deadline-$$.sh"
# on_deadline CMD [ARGS...]: a command whose output says more of where the
# test is, run by the watcher if the deadline passes (a cluster's pods).
on_deadline() {
  printf '%q ' "$@" >>"$deadline_notes"
  echo >>"$deadline_notes"
}
# descendants PID SKIP: PID's children, theirs, and so on, but SKIP's.
descendants() {
  local kid
  for kid in $(ps -o pid= --ppid "$1"); do
    [ "$kid" = "$2" ] && continue
    echo "$kid"
    descendants "$kid" "$2"
  done
}
if [ -n "${STRAND_TEST_DEADLINE:-}" ]; then
  (
    test_pid=$$ # the test's shell ($$ is not the subshell's own)
    watcher=$BASHPID
    for _ in $(seq $((STRAND_TEST_DEADLINE * 5))); do
      kill -0 "$test_pid" 2>/dev/null || { rm -f "$deadline_notes"; exit 0; }
      sleep 0.2
    done
    echo "--- the test's deadline (${STRAND_TEST_DEADLINE} s) passed; where it is:"
    kids=$(descendants "$test_pid" "$watcher")
    # shellcheck disable=SC2086
    [ -n "$kids" ] && ps -o pid,ppid,etime,args -p $(tr '\n' ',' <<<"$kids" | sed 's/,$//')
    for pid in $kids; do
      [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = strand-gateway ] || continue
      echo "--- the stacks of gateway $pid:"
      gdb -batch -p "$pid" -ex 'thread apply all bt' 2>&1 | grep -v '^\[' || echo "(no gdb to show them)"
      log=$(readlink "/proc/$pid/fd/2")
      echo "--- its log ($log) ends:"
      tail -40 "$log" 2>/dev/null
    done
    if [ -f "$deadline_notes" ]; then
      echo "--- what the test asked to be shown:"
      bash "$deadline_notes" 2>&1 | tail -80
      rm -f "$deadline_notes"
    fi
    for pid in $kids; do kill -TERM "$pid" 2>/dev/null; done
    kill -TERM "$test_pid" 2>/dev/null
  ) &
fi

# start_gateway BIN_DIR DIR [ARGS...]: starts strand-gateway (with ARGS)
# with its database and log in DIR; sets GATEWAY_PID and STRAND_URL. Tries
# other ports if it cannot listen. GATEWAY_LAUNCH (an array) is the command
# the gateway is started through, which must exec it (so that its pid is
# the gateway's): by default env without the caller's token.
start_gateway() {
  local bin="$1" dir="$2" port
  shift 2
  local launch=(env -u STRAND_TOKEN -u STRAND_TOKEN_FILE)
  [ -z "${GATEWAY_LAUNCH+set}" ] || launch=("${GATEWAY_LAUNCH[@]}")
  for _ in $(seq 10); do
    port=$(free_ports)
    "${launch[@]}" \
      "$bin/strand-gateway" --db "$dir/strand.db" --http "127.0.0.1:$port" --hub "tcp://127.0.0.1:$((port + 1))" \
      "$@" 2>>"$dir/gateway.log" &
    GATEWAY_PID=$!
    export STRAND_URL="http://127.0.0.1:$port"
    # The token the gateway makes next to its database: strand and
    # libstrand read it from here, scurl too.
    export STRAND_TOKEN_FILE="$dir/strand.token"
    for _ in $(seq 200); do
      # Ours, not another test's gateway that took the port first.
      [ "$(curl -sf "$STRAND_URL/healthz" | jq -r .pid 2>/dev/null)" = "$GATEWAY_PID" ] && return 0
      kill -0 "$GATEWAY_PID" 2>/dev/null || break
      sleep 0.05
    done
    # It may have exited already (its port was taken): not an error here.
    kill -9 "$GATEWAY_PID" 2>/dev/null || true
    wait "$GATEWAY_PID" 2>/dev/null || true
    GATEWAY_PID=""
  done
  echo "strand-gateway did not start; see $dir/gateway.log" >&2
  return 1
}

# curl with the gateway's token (read by the shell, never on a command line
# where ps would show it) and a JSON body type.
scurl() {
  curl -H @<(printf 'Authorization: Bearer %s\n' "$(cat "$STRAND_TOKEN_FILE")") \
    -H 'Content-Type: application/json' "$@"
}

# For an EXIT trap: on failure, what the gateway said (under $dir).
show_log_on_failure() {
  local code=$?
  if [ "$code" -ne 0 ] && [ -n "${dir:-}" ] && [ -f "$dir/gateway.log" ]; then
    echo "--- exit $code; the gateway's log ends:"
    tail -25 "$dir/gateway.log"
  fi
  return 0 # the trap goes on (set -e); the script's exit status stays as it was
}

# For an EXIT trap: stops the gateway start_gateway started, if it did; never
# anything else (no pid, no signal).
stop_gateway() {
  if [ -n "${GATEWAY_PID:-}" ]; then
    kill -TERM "$GATEWAY_PID" 2>/dev/null || true
    wait "$GATEWAY_PID" 2>/dev/null || true
    GATEWAY_PID=""
  fi
}

# check NAME EXPECTED ACTUAL: one line ok or FAIL, counted; checks_passed
# prints the count and fails if any check did.
CHECK_FAILS=0
CHECK_PASSES=0
check() {
  if [ "$2" != "$3" ]; then
    echo "FAIL $1: expected [$2], got [$3]"
    CHECK_FAILS=$((CHECK_FAILS + 1))
  else
    echo "ok   $1"
    CHECK_PASSES=$((CHECK_PASSES + 1))
  fi
}
checks_passed() {
  echo "$CHECK_PASSES passed, $CHECK_FAILS failed"
  [ "$CHECK_FAILS" -eq 0 ]
}

# npm_tools DIR: test tooling pinned by DIR's package.json and
# package-lock.json, installed once per machine (per lock file) into a cache
# outside the checkout, with DIR's *.mjs beside it; sets TOOLS to that
# folder. Exits 77 (skipped), saying why, without node and npm or without
# the npm registry.
npm_tools() {
  local src="$1" sum
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "skipped: node and npm are not installed (deploy/install-deps.sh test installs them)"
    exit 77
  fi
  sum=$(sha256sum <"$src/package-lock.json" | cut -c1-16)
  TOOLS="${XDG_CACHE_HOME:-$HOME/.cache}/strand/$(basename "$src")-$sum"
  if [ ! -d "$TOOLS/node_modules" ]; then
    mkdir -p "$TOOLS"
    cp "$src/package.json" "$src/package-lock.json" "$TOOLS/"
    if ! (cd "$TOOLS" && npm ci --no-audit --no-fund --loglevel=error >npm.log 2>&1); then
      tail -5 "$TOOLS/npm.log"
      rm -rf "$TOOLS/node_modules"
      echo "skipped: npm ci could not install $(basename "$src")'s tools (no npm registry?)"
      exit 77
    fi
  fi
  cp "$src"/*.mjs "$TOOLS/"
}

# Exits 77 (skipped), saying why, unless a Docker engine answers.
require_docker() {
  if ! docker info >/dev/null 2>&1; then
    echo "skipped: no Docker daemon answers (tests/run.sh starts one as root)"
    exit 77
  fi
}

# Exits 77 (skipped), saying why, unless tests/run.sh started a cluster.
require_cluster() {
  if [ -z "${K8S_SERVER:-}" ] || [ -z "${KUBECONFIG:-}" ]; then
    echo "skipped: no cluster (K8S_SERVER, KUBECONFIG unset; tests/run.sh starts one)"
    exit 77
  fi
}
