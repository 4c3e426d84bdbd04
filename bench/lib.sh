# Shared by the bench scripts (run from the repository's root): a gateway of
# their own on loopback, on a fresh database.

# bench_gateway_start DIR NAME [FLAGS...]: strand-gateway on DIR/NAME.db
# with FLAGS, its API token in DIR/token and its log in DIR/gateway-NAME.log;
# waits until it answers. Sets BENCH_GATEWAY (its pid) and BENCH_URL.
bench_gateway_start() {
  local dir="$1" name="$2" port
  shift 2
  port=$((10000 + RANDOM % 22000)) # below the ephemeral range (see tests/support/harness.c)
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
