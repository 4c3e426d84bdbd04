"""bench/submit's driver: a map of N no-op tasks sent in parts of PART
arguments (the map with its "total", then POST /v1/jobs/{id}/args), while
a second connection, from a process of its own (a thread would wait for
this one's GIL while it writes a part), reads the pool every 5 ms and the
gateway's resident memory is sampled every 20 ms, until the job is done.
Prints one line:
  tasks submit_s done_s rss_peak_mb probe_p50_ms probe_p99_ms probe_max_ms probes
(the probes and their latencies are those made while the parts went in).
  submit_driver.py URL TOKEN_FILE GATEWAY_PID N PART
"""

import json
import multiprocessing
import sys
import threading
import time

from gateway_http import connect


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def main():
    url, token_file, pid, n, part = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    token = open(token_file).read().strip()
    request = connect(url, token)
    pool = request("POST", "/v1/pools", json.dumps({"processes": 2}))["id"]
    while sum(w.get("state") == "connected" for w in request("GET", "/v1/pools/" + pool)["workers"]) < 2:
        time.sleep(0.05)

    stop = threading.Event()
    submitting = multiprocessing.Event()
    probing = multiprocessing.Event()
    latencies, sent = multiprocessing.Pipe(duplex=False)
    peak = [0.0]

    def probe():
        ask = connect(url, token)
        probes = []
        while probing.is_set():
            t = time.monotonic()
            ask("GET", "/v1/pools/" + pool)
            if submitting.is_set():
                probes.append(time.monotonic() - t)
            time.sleep(0.005)
        sent.send(probes)

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], rss_mb(pid))
            time.sleep(0.02)

    probing.set()
    prober = multiprocessing.get_context("fork").Process(target=probe)
    prober.start()
    threads = [threading.Thread(target=sample)]
    for t in threads:
        t.start()
    submitting.set()
    t0 = time.monotonic()
    body = {"function": "noop", "args": list(range(min(part, n))), "total": n}
    job = request("POST", "/v1/pools/%s/map" % pool, json.dumps(body))["id"]
    for offset in range(part, n, part):
        part_body = {"offset": offset, "args": list(range(offset, min(offset + part, n)))}
        request("POST", "/v1/jobs/%s/args" % job, json.dumps(part_body))
    t1 = time.monotonic()
    submitting.clear()
    while request("GET", "/v1/jobs/" + job)["state"] != "done":
        time.sleep(0.1)
    t2 = time.monotonic()
    stop.set()
    probing.clear()
    probes = sorted(latencies.recv())
    prober.join()
    for t in threads:
        t.join()
    q = lambda f: probes[min(len(probes) - 1, int(f * len(probes)))] * 1000 if probes else 0.0
    print("%d %.3f %.3f %.1f %.2f %.2f %.2f %d" % (n, t1 - t0, t2 - t0, peak[0], q(0.5), q(0.99), q(1.0), len(probes)))


main()
