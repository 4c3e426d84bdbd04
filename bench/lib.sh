# Shared by the bench scripts (run from the repository's root): a gateway of
# their own on loopback, on a fresh database.

# bench_port: STRAND_BENCH_PORT when set (the gateway's HTTP port; its hub
# takes the next one), else a random one below the ephemeral range (see
# tests/support/harness.c), so that two benches rarely meet.
bench_port() {
  if [ -n "${STRAND_BENCH_PORT:-}" ]; then
    case "$STRAND_BENCH_PORT" in
    *[!0-9]*) echo "STRAND_BENCH_PORT must be a port number" >&2; return 64 ;;
    esac
    if [ "$STRAND_BENCH_PORT" -lt 1 ] || [ "$STRAND_BENCH_PORT" -gt 65534 ]; then
      echo "STRAND_BENCH_PORT must be 1 to 65534 (the hub takes the next port)" >&2
      return 64
    fi
    echo "$STRAND_BENCH_PORT"
  else
    echo $((10000 + RANDOM % 22000))
  fi
}

# bench_gateway_start DIR NAME [FLAGS...]: strand-gateway on DIR/NAME.db
# with FLAGS, its API token in DIR/token and its log in DIR/gateway-NAME.log;
# waits until it answers. Sets BENCH_GATEWAY (its pid) and BENCH_URL.
bench_gateway_start() {
  local dir="$1" name="$2" port
  shift 2
  port=$(bench_port)
  ./build/bin/strand-gateway --db "$dir/$name.db" --http "127.0.0.1:$port" \
    --hub "tcp://127.0.0.1:$((port + 1))" --token-file "$dir/token" "$@" 2>"$dir/gateway-$name.log" &
  BENCH_GATEWAY=$!
  BENCH_URL="http://127.0.0.1:$port"
  for _ in $(seq 100); do curl -sf "$BENCH_URL/healthz" >/dev/null && break; sleep 0.05; done
}

# Stops the gateway bench_gateway_start started, if it runs.
bench_gateway_stop() {
  [ -z "${BENCH_GATEWAY:-}" ] || { kill -TERM "$BENCH_GATEWAY" 2>/dev/null; wait "$BENCH_GATEWAY" 2>/dev/null; }
  BENCH_GATEWAY=""
}
