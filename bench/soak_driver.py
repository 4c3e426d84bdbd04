"""bench/soak's churn: for MINUTES, rounds that each make and delete one of
every kind (a pool that maps, a queue, a pipe, a process, a manager that
is called), while the gateway's RSS, database size (with its log), open
files and threads are sampled every SAMPLE_S seconds. Prints the samples,
then each figure's slope over the second half of the run (the first
half warms caches and pages up) per hour, and whether it is flat: a
slope that would add at most 10% of the figure's mean in an hour (or at
most one thread, or one open file). The log (strand.db-wal) is not a
slope but a saw (grown, then started again by a checkpoint): its
largest is printed against the bound the store keeps it under.
  soak_driver.py URL TOKEN_FILE GATEWAY_PID DB MINUTES SAMPLE_S"""

import os
import sys
import time

from gateway_http import connect


# store/store_int.h's STORE_LOG_LIMIT_BYTES: a log started again is cut to it.
LOG_LIMIT_MB = 160 * 1.048576


def figures(pid, db):
    status = dict(line.split(":", 1) for line in open("/proc/%d/status" % pid))
    log = os.path.getsize(db + "-wal") if os.path.exists(db + "-wal") else 0
    return {
        "rss_mb": int(status["VmRSS"].split()[0]) / 1024,
        "db_mb": os.path.getsize(db) / 1e6,
        "log_mb": log / 1e6,
        "open_files": len(os.listdir("/proc/%d/fd" % pid)),
        "threads": int(status["Threads"]),
    }


def wait_state(api, path, states, seconds=60):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        view = api("GET", path)
        if view["state"] in states:
            return view
        time.sleep(0.05)
    raise SystemExit("%s: not %s in %d s" % (path, "/".join(states), seconds))


def churn(api):
    pool = api("POST", "/v1/pools", b'{"processes": 1}')["id"]
    job = api("POST", "/v1/pools/%s/map" % pool, b'{"function": "echo", "args": [1, 2, 3, 4, 5, 6, 7, 8]}')["id"]
    wait_state(api, "/v1/jobs/" + job, ("done",))
    api("DELETE", "/v1/jobs/" + job)
    api("DELETE", "/v1/pools/" + pool)
    wait_state(api, "/v1/pools/" + pool, ("terminated",))
    api("DELETE", "/v1/pools/" + pool)

    queue = api("POST", "/v1/queues")["id"]
    api("POST", "/v1/queues/%s/items" % queue, b'{"items": [1, "two", {"three": 3}]}')
    api("POST", "/v1/queues/%s/take?max=3" % queue)
    api("DELETE", "/v1/queues/" + queue)
    pipe = api("POST", "/v1/pipes", b'{"duplex": true}')["id"]
    api("POST", "/v1/pipes/%s/ends/0/send" % pipe, b'{"items": ["hello"]}')
    api("POST", "/v1/pipes/%s/ends/1/recv?max=1" % pipe)
    api("DELETE", "/v1/pipes/" + pipe)

    process = api("POST", "/v1/processes", b'{"command": ["true"]}')["id"]
    api("GET", "/v1/processes/%s?wait=30" % process)  # ended ones go with --retain

    manager = api("POST", "/v1/managers", b'{"type": "dict"}')["id"]
    call = api("POST", "/v1/managers/%s/calls" % manager, b'{"method": "set", "args": ["k", 1]}')["id"]
    api("GET", "/v1/managers/%s/calls/%s?wait=30" % (manager, call))
    api("DELETE", "/v1/managers/" + manager)
    wait_state(api, "/v1/managers/" + manager, ("terminated",))
    api("DELETE", "/v1/managers/" + manager)


def slope_per_hour(points):
    n = len(points)
    mt = sum(t for t, _ in points) / n
    mv = sum(v for _, v in points) / n
    var = sum((t - mt) ** 2 for t, _ in points)
    return (sum((t - mt) * (v - mv) for t, v in points) / var * 3600 if var else 0.0), mv


def main():
    url, token_file, pid, db, minutes, sample_s = sys.argv[1:7]
    pid, minutes, sample_s = int(pid), float(minutes), float(sample_s)
    api = connect(url, open(token_file).read().strip())
    start = time.monotonic()
    end = start + minutes * 60
    samples, rounds, next_sample = [], 0, start
    names = ("rss_mb", "db_mb", "open_files", "threads")
    print("%8s %8s %10s %10s %10s %11s %8s" % ("min", "rounds", *names[:2], "log_mb", *names[2:]), flush=True)
    while True:
        now = time.monotonic()
        if now >= next_sample:
            f = figures(pid, db)
            samples.append((now - start, f))
            print("%8.1f %8d %10.1f %10.2f %10.2f %11d %8d"
                  % ((now - start) / 60, rounds, f["rss_mb"], f["db_mb"], f["log_mb"], f["open_files"], f["threads"]),
                  flush=True)
            next_sample += sample_s
        if now >= end:
            break
        churn(api)
        rounds += 1
    late = [s for s in samples if s[0] >= minutes * 30]
    if len(late) < 3:
        raise SystemExit("too few samples in the second half: run longer or sample more often")
    print("\nslope over the second half (%d samples), per hour:" % len(late))
    flat_all = True
    for k in names:
        slope, mean = slope_per_hour([(t, f[k]) for t, f in late])
        allowed = max(0.1 * mean, 1.0 if k in ("open_files", "threads") else 0.0)
        flat = abs(slope) <= allowed
        flat_all &= flat
        print("  %-11s %+10.2f /h (mean %.2f)  %s" % (k, slope, mean, "flat" if flat else "GROWS"))
    log_max = max(f["log_mb"] for _, f in samples)
    print("  %-11s %10.2f MB at most (the store keeps it under %.1f MB)" % ("log", log_max, LOG_LIMIT_MB))
    flat_all &= log_max <= LOG_LIMIT_MB
    print("%d rounds in %.1f min: %s" % (rounds, minutes, "every figure flat" if flat_all else "something grows"))
    sys.exit(0 if flat_all else 1)


main()
