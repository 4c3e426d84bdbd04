"""bench/python's Fiber workloads: Fiber's own surface (Pool, SimpleQueue)
through strand.fiber, Python's multiprocessing and, given a Fiber
checkout, Fiber itself, each in a process of its own:

    fiber_bench.py IMPL WORKERS     IMPL: strand (strand.fiber), mp, or fiber
                                    (Fiber from FIBER_SRC, on its local backend)

One line per workload, NAME UNIT VALUE: the best of ROUNDS rounds (the
median for apply's round trip, in ms), after the pool is up and warm, but
for pool4_first_map (a new Pool(4) made and its first map back).
"""

import statistics
import sys
import time

ROUNDS = 3
APPLIES = 300
MAP_INPUTS = 100000
IMAP_INPUTS = 20000
QUEUE_PAIRS = 2000


def noop(x):
    return None


def library(impl):
    if impl == "strand":
        import strand.fiber as fiber

        return fiber.Pool, fiber.SimpleQueue
    if impl == "fiber":
        import fiber  # FIBER_SRC on PYTHONPATH

        return fiber.Pool, fiber.SimpleQueue
    import multiprocessing

    return multiprocessing.Pool, multiprocessing.SimpleQueue


def apply_p50_ms(pool):
    times = []
    for i in range(APPLIES):
        t0 = time.perf_counter()
        pool.apply(noop, (i,))
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def seconds(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def queue_rate(make_queue, shared=False):
    """Items a second through a SimpleQueue, put and got by the caller.
    shared: a strand queue handed on first (flush), so that its items go
    through the gateway, as once a Process or a task has it; a queue of
    the program's own keeps them in it (docs/python.md), as
    multiprocessing's and Fiber's are the same either way."""
    q = make_queue()
    if shared and hasattr(q, "flush"):
        q.flush()

    def pairs():
        for i in range(QUEUE_PAIRS):
            q.put(i)
            assert q.get() == i

    return QUEUE_PAIRS / seconds(pairs)


def queue_stream_rate(make_queue, shared=False):
    """Items a second through a SimpleQueue, all put by the caller, then
    all got (shared: as queue_rate's)."""
    q = make_queue()
    if shared and hasattr(q, "flush"):
        q.flush()

    def stream():
        for i in range(QUEUE_PAIRS):
            q.put(i)
        for i in range(QUEUE_PAIRS):
            assert q.get() == i

    return QUEUE_PAIRS / seconds(stream)


def pool4_first_map_ms(make_pool):
    t0 = time.perf_counter()
    pool = make_pool(4)
    try:
        assert pool.map(noop, range(4), chunksize=1) == [None] * 4
        return (time.perf_counter() - t0) * 1000
    finally:
        pool.terminate()


def main():
    impl, workers = sys.argv[1], int(sys.argv[2])
    make_pool, make_queue = library(impl)
    pool = make_pool(workers)
    pool.map(noop, range(workers * 4), chunksize=1)  # every worker up and warm
    best = {}
    inputs = list(range(MAP_INPUTS))

    def keep(name, value, lower_is_better=True):
        old = best.get(name)
        best[name] = value if old is None else (min(old, value) if lower_is_better else max(old, value))

    for _ in range(ROUNDS):
        keep("apply_p50 ms", apply_p50_ms(pool))
        keep("map_100k_noops s", seconds(lambda: pool.map(noop, range(MAP_INPUTS))))
        # The same inputs as a list: a range's chunks go as their bounds,
        # a list's as their numbers, pickled, stored and unpickled.
        keep("map_100k_list s", seconds(lambda: pool.map(noop, inputs)))
        keep("imap_c1_20k_noops s", seconds(lambda: sum(1 for _ in pool.imap(noop, range(IMAP_INPUTS), chunksize=1))))
        keep("queue_put_get items/s", queue_rate(make_queue), lower_is_better=False)
        keep("queue_shared_put_get items/s", queue_rate(make_queue, shared=True), lower_is_better=False)
        keep("queue_puts_then_gets items/s", queue_stream_rate(make_queue), lower_is_better=False)
        keep("queue_shared_puts_then_gets items/s", queue_stream_rate(make_queue, shared=True), lower_is_better=False)
    pool.terminate()
    for _ in range(ROUNDS):
        keep("pool4_first_map ms", pool4_first_map_ms(make_pool))
    for name, value in best.items():
        print("%s %.4f" % (name, value), flush=True)


if __name__ == "__main__":
    main()
