"""strand's Python runtime: `python3 -m strand.runtime`.

A strand worker starts it once and feeds it tasks named rt:NAME over stdin
and stdout, in the frames of worker/runtime.h (README, "Runtimes"):
type (1 byte), id (u64), a_len (u32), b_len (u32), little-endian, then a
and b. NAME is one of:

  module:qualname   the function is imported; the task's argument (JSON) is
                    its one argument, its return value the result (JSON)
  pickle            the argument is a JSON string holding base64 of
                    cloudpickle((function, args, kwargs)), where function may
                    be the function's own cloudpickle bytes (unpickled once
                    per runtime); the result is a JSON string holding base64
                    of cloudpickle(return value)

An exception is an error result: its type, then its message and the
remote traceback (for pickle tasks also the pickled exception, after
EXCEPTION_MARK, so that strand.Pool raises it again). What the function
prints goes to stderr (the pool's logs), so it cannot break a frame.
"""

import base64
import importlib
import json
import pickle
import struct
import sys
import threading
import time
import traceback

from strand import _pickling, _worker

HEADER = struct.Struct("<cQII")
EXCEPTION_MARK = "strand-pickled-exception: "  # strand.pool reads it
HEARTBEAT_S = 1.0


def _read_exact(stream, n):
    data = b""
    while len(data) < n:
        chunk = stream.read(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _resolve(name):
    module, _, qualname = name.partition(":")
    if not module or not qualname:
        raise ValueError("rt:%s is not rt:module:qualname or rt:pickle" % name)
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _run(name, arg):
    if name == "pickle":
        # cloudpickle's bytes read back with pickle (they name cloudpickle's
        # helpers, imported then).
        function, args, kwargs = pickle.loads(base64.b64decode(json.loads(arg)))
        if isinstance(function, bytes):  # pickled apart, once per call
            function = _worker.unpickle_function(function)
        value = function(*args, **kwargs)
        return json.dumps(base64.b64encode(_pickling.dumps(value)).decode("ascii")).encode()
    value = _resolve(name)(json.loads(arg))
    return json.dumps(value).encode()


def _pickled(exc):
    """The exception itself, for a Python caller to raise again (strand.Pool)."""
    try:
        import cloudpickle

        return "\n%s%s" % (EXCEPTION_MARK, base64.b64encode(cloudpickle.dumps(exc)).decode("ascii"))
    except Exception:  # not picklable: the text says what it was
        return ""


class _Channel:
    """The frames to the worker, from the task loop and the heartbeat."""

    def __init__(self, out):
        self.out = out
        self.lock = threading.Lock()
        self.busy = threading.Event()

    def send(self, kind, ident, a=b"", b=b""):
        with self.lock:
            self.out.write(HEADER.pack(kind, ident, len(a), len(b)) + a + b)
            self.out.flush()

    def beat(self):
        while True:
            time.sleep(HEARTBEAT_S)
            if self.busy.is_set():
                self.send(b"H", 0)


def main():
    stdin = sys.stdin.buffer
    channel = _Channel(sys.stdout.buffer)
    # Whatever a function prints must not land between frames.
    sys.stdout = sys.stderr
    channel.send(b"S", 0, b"python", sys.version.split()[0].encode())
    threading.Thread(target=channel.beat, daemon=True).start()

    def read_frame():
        header = _read_exact(stdin, HEADER.size)
        if header is None:
            raise EOFError("the worker closed the runtime's input")
        kind, ident, a_len, b_len = HEADER.unpack(header)
        return kind, ident, _read_exact(stdin, a_len), _read_exact(stdin, b_len)

    # Queues and pipes passed to a task reach the gateway through the worker.
    _worker.line = (channel.send, read_frame)
    while True:
        header = _read_exact(stdin, HEADER.size)
        if header is None:
            return 0  # the worker closed our input: done
        kind, ident, a_len, b_len = HEADER.unpack(header)
        name = _read_exact(stdin, a_len)
        arg = _read_exact(stdin, b_len)
        if name is None or arg is None:
            return 0
        if kind != b"T":
            continue
        channel.busy.set()
        try:
            channel.send(b"R", ident, b"", _run(name.decode(), arg))
        except BaseException as e:  # a task's SystemExit is its error too
            detail = "%s\n\nremote traceback:\n%s" % (e, traceback.format_exc())
            if name == b"pickle":
                detail += _pickled(e)
            channel.send(b"E", ident, type(e).__qualname__.encode(), detail.encode())
        finally:
            channel.busy.clear()


if __name__ == "__main__":
    sys.exit(main())
