"""bench/hosts' driver, run on the gateway's host. First two workers on
FAR_HOST (its link delayed) and two on the first worker host each run a
map of 2,000 sleeps of 1 ms, timed to the last result. Then for each count of
workers (10, 100, 1,000, up to MAX), an external pool, that many workers
joining it from the worker hosts (network namespaces, taken in turn; 100
at a time, each wave connected before the next),
and a map of 1,000 sleeps of TASK_MS a worker. Checks every result (each
index once, its own value, none failed) and prints a line a count:
  workers tasks join_s map_s ideal_s alone_s busy_pct in_task_pct host_cpu_pct gw_cpu_us/task
busy_pct is the ideal time (tasks x TASK_MS / workers) over the map's;
in_task_pct the time the workers spent in tasks by their own clocks (the
gateway's strand_task_run_seconds) over the map's: what is left of 100 is
the time workers waited for tasks while tasks waited. Between the two,
sleeps that ran late: host_cpu_pct is how busy this host's CPUs were
during the map (everything on them: the hosts are namespaces of one
kernel). alone_s is the same sleeps in as many plain processes, with no
strand (SLEEPERS_BIN; its CPUs' use follows it): what this host allows at
best. The last lines are each count's map over alone_s, and its gateway
CPU per task over the 10 workers' figure.
  hosts_driver.py URL TOKEN_FILE CA_FILE GATEWAY_PID WORKER_BIN SLEEPERS_BIN MAX TASK_MS LOG_DIR FAR_HOST HOST...
"""

import json
import os
import subprocess
import sys
import time

from gateway_http import connect

TASKS_PER_WORKER = 1000
JOIN_WAVE = 100


def cpu_s(pid):
    """The process's user and system CPU so far, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def host_cpu():
    """This host's CPU time, busy and in all, in clock ticks (/proc/stat)."""
    with open("/proc/stat") as f:
        ticks = [int(t) for t in f.readline().split()[1:9]]
    return sum(ticks) - ticks[3] - ticks[4], sum(ticks)


def alone(sleepers_bin, processes, count, task_ms):
    """The same sleeps with no strand: seconds until the last ended, and
    how busy this host's CPUs were meanwhile (percent)."""
    busy0, all0 = host_cpu()
    took = float(subprocess.run([sleepers_bin, str(processes), str(count), str(task_ms)], check=True,
                                capture_output=True, text=True).stdout.split()[0])
    busy, all_ticks = host_cpu()
    return took, 100.0 * (busy - busy0) / (all_ticks - all0)


def in_tasks_s(request, pool):
    """The seconds pool's workers have spent in tasks, by their own clocks."""
    sample = 'strand_task_run_seconds_sum{pool="%s"} ' % pool
    for line in request("GET", "/metrics").splitlines():
        if line.startswith(sample):
            return float(line[len(sample):])
    raise SystemExit("bench/hosts: /metrics has no strand_task_run_seconds_sum for pool %s" % pool)


def wait_for(what, test, limit_s):
    end = time.monotonic() + limit_s
    while not test():
        if time.monotonic() > end:
            raise SystemExit("bench/hosts: %s not within %d s" % (what, limit_s))
        time.sleep(0.2)


def check_results(request, job, args):
    seen = bytearray(len(args))
    cursor = 0
    while True:
        page = request("GET", "/v1/jobs/%s/results?cursor=%s&limit=100000" % (job, cursor))
        for r in page["items"]:
            i = r["index"]
            if not r["ok"] or seen[i] or abs(r["value"] - args[i]) > 1e-9:
                raise SystemExit("bench/hosts: result %d wrong or twice: %s" % (i, r))
            seen[i] = 1
        if page["complete"]:
            break
        cursor = page["next_cursor"]
    if sum(seen) != len(args):
        raise SystemExit("bench/hosts: %d results of %d" % (sum(seen), len(args)))


class JoinedPool:
    """An external pool of n workers that join it from hosts, in turn;
    deleted (its workers told to stop) on leaving."""

    def __init__(self, request, url, ca, worker_bin, n, log_dir, hosts):
        self.request, self.n = request, n
        self.id = request("POST", "/v1/pools", json.dumps({"backend": "external", "processes": n}))["id"]
        token = request("POST", "/v1/pools/%s/join" % self.id, json.dumps({"uses": n, "ttl_s": 900}))["token"]
        env = dict(os.environ, STRAND_JOIN_TOKEN=token)
        self.logs = [open(os.path.join(log_dir, "workers-%s.log" % h), "ab") for h in hosts]
        began = time.monotonic()
        self.workers = []
        try:
            # In waves of JOIN_WAVE, each connected before the next starts:
            # on real hosts each worker has its host's CPUs for its TLS
            # handshakes, here a thousand share two cores with the gateway.
            while len(self.workers) < n:
                for i in range(len(self.workers), min(n, len(self.workers) + JOIN_WAVE)):
                    self.workers.append(subprocess.Popen(
                        ["ip", "netns", "exec", hosts[i % len(hosts)], worker_bin, "--join", url, "--ca", ca],
                        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                        stderr=self.logs[i % len(hosts)]))
                wait_for("%d workers joined" % len(self.workers),
                         lambda: self.connected() == len(self.workers), 300)
        except BaseException:
            self.__exit__()
            raise
        self.join_s = time.monotonic() - began

    def connected(self):
        workers = self.request("GET", "/v1/pools/" + self.id)["workers"]
        return sum(w["state"] == "connected" for w in workers)

    def map(self, args, poll_s):
        """Maps sleep over args; the seconds until its last result."""
        body = json.dumps({"function": "sleep", "chunksize": 1, "args": args})
        t0 = time.monotonic()
        job = self.request("POST", "/v1/pools/%s/map" % self.id, body)["id"]
        end = t0 + 3600
        while True:
            j = self.request("GET", "/v1/jobs/" + job)
            if j["failed"]:
                raise SystemExit("bench/hosts: %d tasks failed" % j["failed"])
            if j["state"] == "done":
                break
            if time.monotonic() > end:
                raise SystemExit("bench/hosts: the map of %d tasks not done within an hour" % len(args))
            time.sleep(poll_s)
        took = time.monotonic() - t0
        check_results(self.request, job, args)
        return took

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.request("DELETE", "/v1/pools/" + self.id)
        end = time.monotonic() + 30
        killed = 0
        for w in self.workers:
            try:
                w.wait(max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                w.kill()
                w.wait()
                killed += 1
        if killed:
            print("bench/hosts: %d of %d workers still ran 30 s after their pool was deleted" % (killed, self.n))
        for f in self.logs:
            f.close()


def main():
    url, token_file, ca, gw_pid, worker_bin, sleepers_bin = sys.argv[1:7]
    most, task_ms, log_dir, far, hosts = int(sys.argv[7]), float(sys.argv[8]), sys.argv[9], sys.argv[10], sys.argv[11:]
    gw_pid = int(gw_pid)
    request = connect(url, open(token_file).read().strip(), ca)

    ms1 = [1 + i / 1e7 for i in range(2000)]
    for name, where in (("10 ms away", far), ("undelayed", hosts[0])):
        with JoinedPool(request, url, ca, worker_bin, 2, log_dir, [where]) as pool:
            print("2,000 tasks of 1 ms on 2 workers %s: %.2f s (ideal 1.00 s)" %
                  (name, pool.map(ms1, 0.005)), flush=True)

    print("workers     tasks  join_s   map_s ideal_s alone_s busy_pct in_task_pct host_cpu_pct gw_cpu_us/task",
          flush=True)
    costs, against_alone, alone_cpu = [], [], []
    for n in (10, 100, 1000):
        if n > most:
            break
        with JoinedPool(request, url, ca, worker_bin, n, log_dir, hosts) as pool:
            args = [task_ms + i / 1e7 for i in range(TASKS_PER_WORKER * n)]
            cpu0, in_tasks0, (busy0, all0) = cpu_s(gw_pid), in_tasks_s(request, pool.id), host_cpu()
            took = pool.map(args, 0.2)
            cpu, in_tasks = cpu_s(gw_pid) - cpu0, in_tasks_s(request, pool.id) - in_tasks0
            busy, all_ticks = host_cpu()
            ideal = len(args) * task_ms / 1000.0 / n
            costs.append(cpu / len(args) * 1e6)
        alone_s, alone_busy = alone(sleepers_bin, n, TASKS_PER_WORKER, task_ms)
        against_alone.append(took / alone_s)
        alone_cpu.append(alone_busy)
        print("%7d %9d %7.1f %7.1f %7.1f %7.1f %8.0f %11.0f %12.0f %14.1f" %
              (n, len(args), pool.join_s, took, ideal, alone_s, 100.0 * ideal / took, 100.0 * in_tasks / n / took,
               100.0 * (busy - busy0) / (all_ticks - all0), costs[-1]), flush=True)
    print("map against the sleeps alone: %s (the sleeps alone kept this host's CPUs %s busy)" %
          (", ".join("%.2fx" % a for a in against_alone), ", ".join("%.0f %%" % c for c in alone_cpu)))
    # What grows with the number of workers shows here: each count's
    # cost over the smallest count's (a few workers' tasks come at a
    # lower rate, so fewer share each of the gateway's cycles).
    print("gateway CPU per task against 10 workers': %s (target: at most 2x)" %
          ", ".join("%.2fx" % (c / costs[0]) for c in costs))


if __name__ == "__main__":
    main()
