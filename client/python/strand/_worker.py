"""Inside a worker's Python runtime: the line to the worker, through which a
task's queue and pipe calls reach the gateway (frames 'Q' and 'A', README
"Runtimes"). Set by strand.runtime while it runs tasks; None elsewhere."""

import json

line = None  # (send, read_frame) from strand.runtime


def inside():
    return line is not None


def call(op, **args):
    """One call: ("ok", item JSON text), ("empty", "") or ("error", "")."""
    send, read_frame = line
    send(b"Q", 0, op.encode(), json.dumps(args).encode())
    kind, _, status, item = read_frame()
    if kind != b"A":
        raise RuntimeError("strand runtime: the worker answered a queue call with %r" % kind)
    return status.decode(), item.decode()
