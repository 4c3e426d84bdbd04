"""bench/lists' driver: N pools (autoscaled from 0, so no worker starts),
N client leases, N queues and N one-task jobs on one pool, then REPS reads
of each list's page. Per page: the wall time, and the CPU of the gateway's
engine thread and of its HTTP threads (from /proc's schedstat, by thread
name), so that what a page costs the engine shows apart from the HTTP
thread that writes it.
    lists_driver.py URL TOKEN_FILE GATEWAY_PID N REPS"""

import os
import sys
import time

from gateway_http import connect


def cpu_ns(pid, name):
    """CPU time of pid's threads called name, in ns."""
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                if f.read().strip() != name:
                    continue
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:  # a thread that ended meanwhile
            pass
    return total


def main():
    url, token_file, pid, n, reps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    api = connect(url, open(token_file).read().strip())
    for _ in range(n):
        api("POST", "/v1/pools", b'{"autoscale": {"min": 0, "max": 1}}')
        api("POST", "/v1/leases", b'{"lease_s": 3600}')
        api("POST", "/v1/queues")
    pool = api("POST", "/v1/pools", b'{"processes": 1}')["id"]
    for _ in range(n):
        api("POST", "/v1/pools/%s/map" % pool, b'{"function": "noop", "args": [1]}')
    print("%-34s %6s %9s %11s %11s" % ("page", "items", "wall, ms", "engine, us", "HTTP, us"))
    for path in ("/v1/pools?limit=1000", "/v1/pools?limit=100", "/v1/leases?limit=1000", "/v1/queues?limit=1000",
                 "/v1/jobs?limit=1000", "/v1/pools/%s/jobs?limit=100" % pool):
        page = api("GET", path)
        items = len(next(v for k, v in page.items() if k != "next_cursor"))
        engine0, http0, t0 = cpu_ns(pid, "engine"), cpu_ns(pid, "MHD-worker"), time.perf_counter()
        for _ in range(reps):
            api("GET", path)
        t1, engine1, http1 = time.perf_counter(), cpu_ns(pid, "engine"), cpu_ns(pid, "MHD-worker")
        shown = path if len(path) < 34 else path[:14] + "…" + path[-19:]
        print("%-34s %6d %9.2f %11.0f %11.0f" % (shown, items, 1e3 * (t1 - t0) / reps,
                                                 (engine1 - engine0) / 1e3 / reps, (http1 - http0) / 1e3 / reps))


main()
