"""Fiber's examples/ring.py, with an all-reduce that needs no torch.

A Ring of members, each with its own part of a dataset, fits one line
y = w * x + b by gradient descent: every step each member computes the
gradient on its part, the members average their gradients with an
all-reduce, and each takes the same step. Every member ends with the same
w and b, as the members of a torch.distributed ring do.

The all-reduce is plain sockets, as torch's env:// rendezvous is: the
Ring gives each member RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT;
rank 0 listens on MASTER_PORT, every other member sends it its vector,
and rank 0 sends back the sum, added in rank order (so every member holds
the very same floats).

    python3 ring_sgd.py [MEMBERS]       (with STRAND_URL and a token, as strand.init reads them)
"""

import os
import pickle
import random
import socket
import struct
import sys
import time

from strand.fiber.experimental import Ring

STEPS = 200
RATE = 0.1
CONNECT_S = 30  # how long a member tries to reach rank 0


def _send(sock, obj):
    data = pickle.dumps(obj)
    sock.sendall(struct.pack("!Q", len(data)) + data)


def _recv_exactly(sock, n):
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            raise ConnectionError("a ring member went away")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _recv(sock):
    (n,) = struct.unpack("!Q", _recv_exactly(sock, 8))
    return pickle.loads(_recv_exactly(sock, n))


class AllReduce:
    """The members' sockets: rank 0 holds one to each other member, the
    others one to rank 0. Made once, in the ring's initializer."""

    def __init__(self):
        self.rank = int(os.environ["RANK"])
        self.size = int(os.environ["WORLD_SIZE"])
        address = (os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
        if self.rank == 0:
            server = socket.create_server(address)
            self.peers = [None] * self.size
            for _ in range(self.size - 1):
                conn, _ = server.accept()
                self.peers[_recv(conn)] = conn
            server.close()
        else:
            deadline = time.monotonic() + CONNECT_S
            while True:
                try:
                    self.master = socket.create_connection(address, timeout=CONNECT_S)
                    break
                except OSError:
                    if time.monotonic() >= deadline:
                        raise
                    time.sleep(0.05)
            _send(self.master, self.rank)

    def sum(self, vector):
        """The element-wise sum of every member's vector."""
        if self.rank != 0:
            _send(self.master, vector)
            return _recv(self.master)
        total = list(vector)
        for peer in self.peers[1:]:
            total = [a + b for a, b in zip(total, _recv(peer))]
        for peer in self.peers[1:]:
            _send(peer, total)
        return total


def dataset(rank, size, n=400, seed=7):
    """This member's part of the points of y = 3x + 2 with some noise."""
    rng = random.Random(seed)
    points = [(x, 3 * x + 2 + rng.gauss(0, 0.1)) for x in (rng.uniform(-1, 1) for _ in range(n))]
    return points[rank::size]


def ring_init(ring):
    """Fiber's pytorch_ring_init, without torch: the all-reduce's sockets."""
    global all_reduce
    all_reduce = AllReduce()


def run_sgd(rank, size, report=None):
    """Fiber's pytorch_run_sgd: gradient descent with averaged gradients."""
    points = dataset(rank, size)
    w = b = 0.0
    for _ in range(STEPS):
        gw = sum(2 * (w * x + b - y) * x for x, y in points)
        gb = sum(2 * (w * x + b - y) for x, y in points)
        total_gw, total_gb, count = all_reduce.sum([gw, gb, len(points)])
        w -= RATE * total_gw / count
        b -= RATE * total_gb / count
    print("rank %d of %d: w = %.4f, b = %.4f" % (rank, size, w, b))
    if report is not None:
        report.put((rank, w, b))


def main():
    members = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    Ring(members, run_sgd, ring_init).run()


if __name__ == "__main__":
    main()
