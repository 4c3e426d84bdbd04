"""bench/scaling's driver: one map of N sleeps of MS each on a pool made
from SPEC (JSON), timed from its submit: until the pool first has MAX
connected workers, and until the map's last result. The pool is deleted
after. Prints one line:
  seconds_to_max_workers seconds_to_done most_workers
  scaling_driver.py URL TOKEN_FILE SPEC MAX N MS
"""

import json
import sys
import time

from gateway_http import connect


def main():
    url, token_file, spec, most_wanted, n, ms = sys.argv[1:7]
    most_wanted, n, ms = int(most_wanted), int(n), float(ms)
    with open(token_file) as f:
        request = connect(url, f.read().strip())

    def connected(pool):
        return sum(w["state"] == "connected" for w in pool["workers"])

    pool = request("POST", "/v1/pools", spec)["id"]
    if "autoscale" not in json.loads(spec):  # a fixed pool: all its workers up before the clock runs
        while connected(request("GET", "/v1/pools/" + pool)) < most_wanted:
            time.sleep(0.01)
    body = json.dumps({"function": "sleep", "args": [ms] * n})
    start = time.monotonic()
    job = request("POST", "/v1/pools/%s/map" % pool, body)["id"]
    to_max = None
    most = 0
    while True:
        p = request("GET", "/v1/pools/" + pool)
        c = connected(p)
        most = max(most, c)
        if to_max is None and c >= most_wanted:
            to_max = time.monotonic() - start
        if request("GET", "/v1/jobs/" + job)["state"] != "running":
            break
        time.sleep(0.01)
    done = time.monotonic() - start
    request("DELETE", "/v1/pools/" + pool)
    print("%.3f %.3f %d" % (to_max if to_max is not None else float("nan"), done, most))


main()
