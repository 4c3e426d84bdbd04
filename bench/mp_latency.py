"""The baseline of bench/latency: multiprocessing's Pool(2).apply, one call
after another, the pool started and warmed up before the clock runs.
Prints: mp P50 P90 P99 (ms).
"""
import multiprocessing
import sys
import time

WARMUP = 50


def echo(x):
    return x


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    ms = []
    with multiprocessing.Pool(2) as pool:
        for i in range(-WARMUP, rounds):
            t0 = time.perf_counter()
            got = pool.apply(echo, (i,))
            t1 = time.perf_counter()
            assert got == i
            if i >= 0:
                ms.append((t1 - t0) * 1000.0)
    ms.sort()
    print(f"mp {ms[rounds // 2]:.3f} {ms[rounds * 9 // 10]:.3f} {ms[rounds * 99 // 100]:.3f}", flush=True)


if __name__ == "__main__":
    main()
