"""The baseline of bench/overhead: Python's multiprocessing on the same work.

Pool(W).imap_unordered(f, range(N), chunksize=1), the pool started before the
clock runs; and noop_map as most programs call it: Pool(W).map(f, range(N))
with its default chunking (N / (4 W) per chunk), N = 900,000 (the most one
strand request takes). Prints one line per
workload: NAME TASKS SECONDS.
"""
import multiprocessing
import sys
import time


def sleep_ms(ms):
    time.sleep(ms / 1000.0)
    return ms


def noop(x):
    return None


def main():
    workers = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    loads = [
        ("sleep_1ms", sleep_ms, 1, 1000 * workers),
        ("sleep_10ms", sleep_ms, 10, 100 * workers),
        ("sleep_100ms", sleep_ms, 100, 10 * workers),
        ("noop_100k", noop, None, 100000),
        ("noop_map", noop, None, 900000),
    ]
    for name, fn, arg, n in loads:
        with multiprocessing.Pool(workers) as pool:
            pool.map(noop, range(workers))  # workers up before the clock runs
            args = [arg] * n if arg is not None else range(n)
            t0 = time.perf_counter()
            if name == "noop_map":
                got = len(pool.map(fn, args))
            else:
                got = sum(1 for _ in pool.imap_unordered(fn, args, chunksize=1))
            t1 = time.perf_counter()
        assert got == n
        print(f"{name} {n} {t1 - t0:.4f}", flush=True)


if __name__ == "__main__":
    main()
