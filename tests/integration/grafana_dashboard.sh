#!/usr/bin/env bash
# deploy/grafana/strand-dashboard.json against a real gateway: valid JSON
# with panels of PromQL targets, and every metric family a target names
# is one the gateway's /metrics exports (after a pool ran a job, so that
# the per-pool families have samples).
set -uo pipefail
bin="$1"
src="$(cd "$(dirname "$0")/../.." && pwd)"
. "$src/tests/integration/lib.sh"
dir=$(mktemp -d /tmp/strand-test-grafana-XXXXXX)
trap 'show_log_on_failure; stop_gateway; rm -rf "$dir"' EXIT
start_gateway "$bin" "$dir" || exit 1
pool=$(scurl -s "$STRAND_URL/v1/pools" -d '{"processes": 1}' | jq -r .id)
job=$(scurl -s "$STRAND_URL/v1/pools/$pool/map" -d '{"function": "echo", "args": [1, 2]}' | jq -r .id)
scurl -s "$STRAND_URL/v1/jobs/$job/results?wait=30" >/dev/null
scurl -s "$STRAND_URL/metrics" >"$dir/metrics"
# check.py DASHBOARD METRICS: each panel has a title and targets, and each
# family a target names (a histogram's by its _bucket, _sum or _count) is
# exported; or what is not.
cat >"$dir/check.py" <<'PY'
import json, re, sys
dash = json.load(open(sys.argv[1]))
families = {line.split()[2] for line in open(sys.argv[2]) if line.startswith("# TYPE ")}
used, bad = set(), []
for panel in dash["panels"]:
    if not panel.get("title") or not panel.get("targets"):
        bad.append("panel %s: no title or no targets" % panel.get("id"))
    for target in panel.get("targets") or []:
        for name in re.findall(r"\b((?:strand|process)_[a-z_]+)\b", target["expr"]):
            family = re.sub(r"_(bucket|sum|count)$", "", name)
            used.add(family)
            if family not in families:
                bad.append("%s is not exported (panel %r)" % (family, panel["title"]))
print("\n".join(bad) if bad else "%d panels, %d families, all exported" % (len(dash["panels"]), len(used)))
PY
out=$(/usr/bin/python3 "$dir/check.py" "$src/deploy/grafana/strand-dashboard.json" "$dir/metrics")
echo "$out"
grep -q "all exported" <<<"$out"; check "every metric the dashboard uses is exported" 0 $?
# Not blind: a family the gateway does not export is named.
sed 's/strand_tasks_queued/strand_tasks_in_a_queue/' "$src/deploy/grafana/strand-dashboard.json" >"$dir/renamed.json"
check "a family it does not export is caught" "strand_tasks_in_a_queue is not exported (panel 'Queue depth')" \
  "$(/usr/bin/python3 "$dir/check.py" "$dir/renamed.json" "$dir/metrics")"
checks_passed
