"""fiber.experimental.Ring over strand: processes ranks 0 .. size-1, each
running initializer(ring) then func(rank, size), made as one strand ring
(POST /v1/rings): every member gets RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT, torch.distributed's env:// names, which rank 0 listens on.
In the initializer, ring.rank is the member's rank and ring.members[0]
holds the master's ip and port (as Fiber's RingNode), so Fiber's
initializers (dist.init_process_group with MASTER_ADDR and MASTER_PORT
from there) run as they are."""

import base64
import os
import time

from ... import _code, _pickling
from ... import gateway as _gateway
from ...meta import resources_of

__all__ = ["Ring", "RingNode"]

WAIT_S = 30


class RingNode:
    """A member of a Ring: its rank, and for rank 0, where it listens."""

    def __init__(self, rank, ip=None, port=None):
        self.rank = rank
        self.ip, self.port = ip, port
        self.connected = ip is not None

    def __repr__(self):
        return "RingNode(rank=%d, ip=%r, port=%r)" % (self.rank, self.ip, self.port)


def _member(ring):
    """A member's body, in its process: its place in the ring from the
    variables its strand ring gave it, then initializer(ring) and
    func(rank, size)."""
    ring.rank = int(os.environ["RANK"])
    ring.size = int(os.environ["WORLD_SIZE"])
    master = RingNode(0, os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
    ring.members = [master] + [RingNode(r) for r in range(1, ring.size)]
    if ring.initializer is not None:
        ring.initializer(ring)
    ring.func(ring.rank, ring.size)


class Ring:
    """Ring(processes, func, initializer, initargs=None): processes members
    (1 to 64), each running initializer(ring) and then func(rank, size).
    run() starts them as one strand ring and returns once every member
    ended; a member that failed fails the run (RuntimeError, with its
    output)."""

    def __init__(self, processes, func, initializer, initargs=None, gateway=None):
        self.size = processes
        self.func, self.initializer, self.initargs = func, initializer, initargs
        self.rank = 0
        self.members = [RingNode(r) for r in range(processes)]
        self._gw = gateway
        self.id = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_gw"] = None
        return state

    def run(self):
        """Starts the members as one strand ring and returns once every member
        has ended; RuntimeError, with the member's output, when one failed. A
        Ring of no members does nothing, as Fiber's."""
        import cloudpickle

        if self.size <= 0:
            return
        gw = self._gw or _gateway.default()
        payload = base64.b64encode(cloudpickle.dumps((_member, (self,), {}))).decode("ascii")
        spec = {"size": self.size, "function": _pickling.function_name(self.func), "arg": payload, "runtime": "python"}
        for key in ("backend", "image"):
            if getattr(gw, key, None):
                spec[key] = getattr(gw, key)
        resources = resources_of(self.func)
        if resources:
            spec["resources"] = resources
        code = _code.ensure(gw)
        if code:
            spec["code"] = code
        spec["lease"] = gw.lease()
        self.id = gw.request("POST", "/v1/rings", spec)["id"]
        while True:
            view = gw.request("GET", "/v1/rings/%s?wait=%d" % (self.id, WAIT_S), timeout=WAIT_S + 30)
            if view["state"] != "running":
                break
            time.sleep(0)
        if view["state"] != "done":
            logs = []
            for m in view.get("members", ()):
                pid = m.get("id") if isinstance(m, dict) else m
                try:
                    logs.append("%s:\n%s" % (pid, gw.request_text("GET", "/v1/processes/%s/logs" % pid)))
                except _gateway.StrandError:
                    pass
            raise RuntimeError("strand.fiber: ring %s %s\n%s" % (self.id, view["state"], "\n".join(logs)))
