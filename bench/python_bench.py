"""bench/python's driver: Python function tasks through strand (strand.Pool,
every result durably recorded before it is fetched) and through Python's
multiprocessing.Pool, the same work in the same run. One line per workload:
NAME TASKS STRAND_SECONDS MP_SECONDS, each the best of ROUNDS alternating
rounds. Both pools are started (and warm) before the clock runs, but for
new_pool_first_result: a new pool made, its first map's results back.
Large values are new bytes each round (a value strand holds already is not
sent again: that would measure its cache). Lines starting with # are
notes: the gateway's peak memory after the large values.

    python_bench.py WORKERS [GATEWAY_PID]   (STRAND_URL and the token as strand.init reads them)
"""

import multiprocessing
import os
import sys
import time

import strand

ROUNDS = 3


def noop(x):
    return None


def sleep_1ms(x):
    time.sleep(0.001)
    return x


def peak_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))


def large_values(workers):
    """Each round's run with values made for it, outside the clock."""
    return [
        ("map_100_distinct_10MB", lambda: [os.urandom(10 << 20) for _ in range(100)], lambda p, v: sum(p.map(len, v)) // (10 << 20)),
        # 1 GiB less a page: pickled, with its tuple, within --max-value-bytes.
        ("apply_1GiB_argument", lambda: os.urandom((1 << 30) - 4096), lambda p, v: p.apply(len, (v,)) >> 29),
    ]


def timed(fn):
    t0 = time.perf_counter()
    n = fn()
    return n, time.perf_counter() - t0


def workloads(workers):
    n_small, n_map, n_sleep, n_apply = 20000, 200000, 1000 * workers, 300
    return [
        ("noop_imap_unordered_c1", lambda p: sum(1 for _ in p.imap_unordered(noop, range(n_small), chunksize=1))),
        ("noop_map_default_chunks", lambda p: len(p.map(noop, range(n_map)))),
        ("sleep_1ms_imap_unordered_c1", lambda p: sum(1 for _ in p.imap_unordered(sleep_1ms, range(n_sleep), chunksize=1))),
        ("apply_round_trip", lambda p: sum(1 for i in range(n_apply) if p.apply(noop, (i,)) is None)),
    ]


def first_result(make, workers):
    """A new pool of workers, and its first map's results (a task a
    worker): what a program waits for before its work begins."""
    t0 = time.perf_counter()
    pool = make(workers)
    try:
        n = len(pool.map(noop, range(workers), chunksize=1))
        return n, time.perf_counter() - t0
    finally:
        pool.terminate()


def main():
    workers = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    sp = strand.Pool(workers)
    sp.map(noop, range(workers * 4), chunksize=1)  # every runtime up and warm
    with multiprocessing.Pool(workers) as mp:
        mp.map(noop, range(workers * 4), chunksize=1)
        for name, run in workloads(workers):
            # Alternating rounds, the best of each: one round of either
            # varies by a factor of two on a small machine.
            s = t = float("inf")
            for _ in range(ROUNDS):
                n, s1 = timed(lambda: run(sp))
                m, t1 = timed(lambda: run(mp))
                assert n == m, (name, n, m)
                s, t = min(s, s1), min(t, t1)
            print("%s %d %.4f %.4f" % (name, n, s, t), flush=True)
        for name, make, run in large_values(workers):
            s = t = float("inf")
            for _ in range(ROUNDS):
                values = make()
                n, s1 = timed(lambda: run(sp, values))
                m, t1 = timed(lambda: run(mp, values))
                assert n == m, (name, n, m)
                s, t = min(s, s1), min(t, t1)
                values = None  # its hundreds of MB go before the next round makes its own
            print("%s %d %.4f %.4f" % (name, n, s, t), flush=True)
    if len(sys.argv) > 2:
        print("# gateway peak memory after them: %d MiB" % (peak_kib(int(sys.argv[2])) >> 10), flush=True)
    sp.terminate()
    s = t = float("inf")
    for _ in range(ROUNDS):
        n, s1 = first_result(strand.Pool, workers)
        m, t1 = first_result(multiprocessing.Pool, workers)
        assert n == m == workers, (n, m)
        s, t = min(s, s1), min(t, t1)
    print("new_pool_first_result %d %.4f %.4f" % (n, s, t), flush=True)


if __name__ == "__main__":
    main()
