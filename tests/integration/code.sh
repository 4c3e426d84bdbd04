#!/usr/bin/env bash
# Code packages over REST on the local backend: an upload stored once under
# the SHA-256 of its bytes, or refused whole (a wrong name, a body of other
# bytes, one over --max-code-bytes, one of another type) with problem+json;
# a pool, a manager and a Process that name one run in it: a module of its
# package imported, a data file read by its relative path, from a cache
# the workers fill once, with libarchive loaded only then.
set -uo pipefail
bin="$1"
src="$(cd "$(dirname "$0")/../.." && pwd)"
. "$src/tests/integration/lib.sh"
dir=$(mktemp -d /tmp/strand-test-code-XXXXXX)
trap 'show_log_on_failure; stop_gateway; rm -rf "$dir"' EXIT
export STRAND_PYTHON=/usr/bin/python3
start_gateway "$bin" "$dir" --max-code-bytes 4096 || exit 1
# Every start of a worker would load libarchive (and ICU, through libxml2)
# were it linked; the worker loads it when it first unpacks a package.
check "strand-worker links no libarchive nor libcurl" "" \
  "$(readelf -d "$bin/strand-worker" | grep -oE 'lib(archive|curl)[^]]*' || true)"

# A project: a package reading a data file by its relative path.
mkdir -p "$dir/project/pkg" "$dir/project/data"
printf 'def scaled(x):\n    with open("data/factor.txt") as f:\n        return int(f.read()) * x\n' \
  >"$dir/project/pkg/calc.py"
: >"$dir/project/pkg/__init__.py"
echo 7 >"$dir/project/data/factor.txt"
echo '{"from": "the package"}' >"$dir/project/data/value.json"
(cd "$dir/project" && /usr/bin/python3 -c '
import zipfile
with zipfile.ZipFile("../project.zip", "w") as z:
    for f in ["pkg/__init__.py", "pkg/calc.py", "data/factor.txt", "data/value.json"]:
        z.write(f)')
sha=$(sha256sum "$dir/project.zip" | cut -c1-64)
size=$(stat -c %s "$dir/project.zip")

# zcurl: curl with the token and a zip body type.
zcurl() {
  curl -H @<(printf 'Authorization: Bearer %s\n' "$(cat "$STRAND_TOKEN_FILE")") -H 'Content-Type: application/zip' "$@"
}
status_and_detail() { jq -r '"\(.status) \(.detail)"'; }

check "the cap" '{"max_bytes":4096}' "$(scurl -s "$STRAND_URL/v1/code")"
check "not a name" "400 a code package is named by the SHA-256 of its bytes: 64 lowercase hex digits" \
  "$(zcurl -s -X PUT --data-binary @"$dir/project.zip" "$STRAND_URL/v1/code/latest" | status_and_detail)"
check "not a zip type" "415 request bodies must be 'Content-Type: application/zip'" \
  "$(scurl -s -X PUT --data-binary @"$dir/project.zip" "$STRAND_URL/v1/code/$sha" | status_and_detail)"
other=1111111111111111111111111111111111111111111111111111111111111111
check "other bytes than its name" "400 the body's SHA-256 is $sha, not the $other its path names" \
  "$(zcurl -s -X PUT --data-binary @"$dir/project.zip" "$STRAND_URL/v1/code/$other" | status_and_detail)"
head -c 5000 /dev/urandom >"$dir/big.zip"
big=$(sha256sum "$dir/big.zip" | cut -c1-64)
check "over the cap, by its length" \
  "413 the code package's 5000 bytes are over the gateway's 4096 byte cap (--max-code-bytes)" \
  "$(zcurl -s -X PUT --data-binary @"$dir/big.zip" "$STRAND_URL/v1/code/$big" | status_and_detail)"
check "over the cap, sent in chunks (no length)" \
  "413 a code package is over the gateway's 4096 byte cap (--max-code-bytes)" \
  "$(zcurl -s -X PUT -H 'Transfer-Encoding: chunked' --data-binary @"$dir/big.zip" "$STRAND_URL/v1/code/$big" |
    status_and_detail)"
check "nothing of the refused uploads is kept" "" "$(ls -A "$dir/strand-code")"
check "unknown package" 404 "$(scurl -s "$STRAND_URL/v1/code/$sha" | jq .status)"

check "stored" "{\"sha256\":\"$sha\",\"size\":$size} 201" \
  "$(zcurl -s -w ' %{http_code}' -X PUT --data-binary @"$dir/project.zip" "$STRAND_URL/v1/code/$sha")"
check "stored once: 200 the second time" 200 \
  "$(zcurl -s -o /dev/null -w '%{http_code}' -X PUT --data-binary @"$dir/project.zip" "$STRAND_URL/v1/code/$sha")"
check "read back" "{\"sha256\":\"$sha\",\"size\":$size}" "$(scurl -s "$STRAND_URL/v1/code/$sha")"
check "one file in the store" "$sha" "$(ls -A "$dir/strand-code")"

check "a pool naming a package never uploaded" \
  "422 code package $other was never uploaded (PUT /v1/code/$other first)" \
  "$(scurl -s -d "{\"code\":\"$other\"}" "$STRAND_URL/v1/pools" | status_and_detail)"
check "a pool naming no package" \
  "400 field 'code' must be the SHA-256 of an uploaded code package (PUT /v1/code/{sha256}): 64 lowercase hex digits" \
  "$(scurl -s -d '{"code":"../x"}' "$STRAND_URL/v1/pools" | status_and_detail)"

pool=$(scurl -s -d "{\"processes\":2,\"runtime\":\"python\",\"code\":\"$sha\"}" "$STRAND_URL/v1/pools" | jq -r .id)
check "the pool says its package" "$sha" "$(scurl -s "$STRAND_URL/v1/pools/$pool" | jq -r .code)"
job=$(scurl -s -d '{"function":"rt:pkg.calc:scaled","args":[1,2,3,4,5,6]}' "$STRAND_URL/v1/pools/$pool/map" | jq -r .id)
for _ in $(seq 600); do # a page may come before all six are done
  [ "$(scurl -s "$STRAND_URL/v1/jobs/$job" | jq -r .state)" = done ] && break
  sleep 0.1
done
check "its module, reading its data file" "[7,14,21,28,35,42]" \
  "$(scurl -s "$STRAND_URL/v1/jobs/$job/results?limit=6" | jq -c '[.items[].value]')"
check "a command in its folder" '{"from":"the package"}' \
  "$(scurl -s -d '{"command":["cat","data/value.json"],"arg":null}' "$STRAND_URL/v1/pools/$pool/apply?wait=60" | jq -c .value)"
check "run in its folder, the package's SHA-256 its name" "\"$sha\"" \
  "$(scurl -s -d '{"command":["sh","-c","basename \"$(pwd)\" | jq -R ."],"arg":null}' \
    "$STRAND_URL/v1/pools/$pool/apply?wait=60" | jq -c .value)"
# Fetched once for the two workers: in a sandbox into their pool's cache,
# else into this host's user's.
check "fetched once per cache" 1 "$(grep -c "code package ${sha:0:12}: $size bytes fetched" "$dir/gateway.log")"
# A sandboxed pool's cache is its own (in /dev/shm where it is a tmpfs),
# gone with its last worker.
pool_cache=""
if grep -q "run in bubblewrap sandboxes" "$dir/gateway.log" && ! grep -q "each worker fetches its own" "$dir/gateway.log"; then
  pool_cache=$(ls -d /dev/shm/strand-cache-*/"$pool" 2>/dev/null)
  check "the pool's cache, unpacked there" yes "$([ -d "$pool_cache/code/$sha" ] && echo yes || echo no)"
fi

manager=$(scurl -s -d "{\"type\":\"runtime\",\"runtime\":\"python\",\"code\":\"$sha\"}" "$STRAND_URL/v1/managers" | jq -r .id)
check "a manager in the package" "m-" "${manager:0:2}"
process=$(scurl -s -d "{\"function\":\"rt:pkg.calc:scaled\",\"arg\":3,\"runtime\":\"python\",\"code\":\"$sha\"}" \
  "$STRAND_URL/v1/processes" | jq -r .id)
check "a Process in the package" "exited 0" \
  "$(scurl -s "$STRAND_URL/v1/processes/$process?wait=60" | jq -r '"\(.state) \(.exit_code)"')"
check "... and what it printed" 21 "$(scurl -s "$STRAND_URL/v1/processes/$process/logs" | tail -1)"

# A package that is not a zip: its workers cannot start, and the pool
# fails.
printf 'not a zip' >"$dir/bad.zip"
bad=$(sha256sum "$dir/bad.zip" | cut -c1-64)
zcurl -s -o /dev/null -X PUT --data-binary @"$dir/bad.zip" "$STRAND_URL/v1/code/$bad"
broken=$(scurl -s -d "{\"processes\":1,\"code\":\"$bad\"}" "$STRAND_URL/v1/pools" | jq -r .id)
for _ in $(seq 300); do
  [ "$(scurl -s "$STRAND_URL/v1/pools/$broken" | jq -r .state)" = failed ] && break
  sleep 0.1
done
check "a pool of a broken package fails" failed "$(scurl -s "$STRAND_URL/v1/pools/$broken" | jq -r .state)"
grep -q "strand-worker: code package ${bad:0:12}: the package is not a zip" "$dir/gateway.log"
check "... and its workers say why" 0 $?

if [ -n "$pool_cache" ]; then
  # A gateway killed while the pool runs: the next adopts its workers,
  # whose cache stays theirs.
  kill -KILL "$GATEWAY_PID"
  wait "$GATEWAY_PID" 2>/dev/null
  start_gateway "$bin" "$dir" || exit 1
  check "an adopted pool's cache stays" yes "$([ -d "$pool_cache/code/$sha" ] && echo yes || echo no)"
  check "... and its tasks read their data" '{"from":"the package"}' \
    "$(scurl -s -d '{"command":["cat","data/value.json"],"arg":null}' "$STRAND_URL/v1/pools/$pool/apply?wait=60" |
      jq -c .value)"
  scurl -s -o /dev/null -X DELETE "$STRAND_URL/v1/pools/$pool"
  for _ in $(seq 300); do
    [ -e "$pool_cache" ] || break
    sleep 0.1
  done
  check "a deleted pool's cache goes with its workers" gone "$([ -e "$pool_cache" ] && echo left || echo gone)"
fi

# Across a restart: the packages stay, the pool's workers fetch nothing anew.
stop_gateway
start_gateway "$bin" "$dir" --max-code-bytes 4096 || exit 1
check "kept across a restart" "{\"sha256\":\"$sha\",\"size\":$size}" "$(scurl -s "$STRAND_URL/v1/code/$sha")"
checks_passed
