"""How a task's own child processes (multiprocessing's, subprocess's
Python) reach the worker: through the runtime that runs the task.

Only the runtime speaks frames to the worker (docs/tasks.md, "Runtimes").
It listens on a Unix socket in a folder of its own (0700, in the task's
sandbox) named in STRAND_RUNTIME_RELAY, which its children inherit; a
child's queue, pipe or manager call goes there, a length-prefixed JSON
request, and a thread of the runtime makes it on the line (a 'Q' frame
of its own id) and sends back the answer. A forked child, whose copy of
the line's descriptors is its parent's, goes the same way."""

import json
import os
import socket
import struct
import threading

from . import _pid

ENV = "STRAND_RUNTIME_RELAY"
SOCKET = "socket"  # the folder holds nothing else
LENGTH = struct.Struct("!I")
REQUEST_MAX = 64 << 20  # a call's JSON: items past 1 MiB travel as files


def _send(sock, obj):
    data = json.dumps(obj).encode()
    sock.sendall(LENGTH.pack(len(data)) + data)


def _recv(sock):
    """The next message, or None once the peer closed."""
    head = _exactly(sock, LENGTH.size)
    if head is None:
        return None
    (n,) = LENGTH.unpack(head)
    if n > REQUEST_MAX:
        raise ConnectionError("a relay message of %d bytes" % n)
    body = _exactly(sock, n)
    return None if body is None else json.loads(body)


def _exactly(sock, n):
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _private_folder():
    """A new folder of ours (0700) in the temporary one, as
    tempfile.mkdtemp makes it: tempfile (and shutil, random) were 8 ms of
    each runtime's start, before its first task."""
    where = os.environ.get("TMPDIR") or "/tmp"
    while True:
        folder = os.path.join(where, "strand-relay-" + os.urandom(8).hex())
        try:
            os.mkdir(folder, 0o700)
            return folder
        except FileExistsError:
            continue


def serve(call):
    """In the runtime: listens for its children, each call answered with
    call(op, **args) -> (status, item); returns the folder to remove."""
    folder = _private_folder()
    path = os.path.join(folder, SOCKET)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(64)
    os.environ[ENV] = path

    def answer(conn):
        with conn:
            while True:
                try:
                    request = _recv(conn)
                    if request is None:
                        return
                    status, item = call(request["op"], **request["args"])
                    _send(conn, {"status": status, "item": item})
                except (OSError, ValueError, KeyError, TypeError):
                    return  # the child went, or sent what is not a call

    def accept():
        while True:
            conn, _ = server.accept()
            threading.Thread(target=answer, args=(conn,), name="strand-relay", daemon=True).start()

    threading.Thread(target=accept, name="strand-relay-accept", daemon=True).start()
    return folder


def remove(folder):
    try:
        os.unlink(os.path.join(folder, SOCKET))
        os.rmdir(folder)
    except OSError:
        pass


_client = threading.local()


def call(op, args):
    """In a child: one call through the runtime, ("ok", item JSON text),
    ("empty", "") or ("error", why). One connection a thread and process."""
    conn = getattr(_client, "conn", None)
    if conn is None or _client.pid != _pid.current():
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(os.environ[ENV])
        _client.conn, _client.pid = conn, _pid.current()
    try:
        _send(conn, {"op": op, "args": args})
        answer = _recv(conn)
    except OSError:
        _client.conn = None
        raise
    if answer is None:
        _client.conn = None
        raise ConnectionError("strand: the runtime that ran this process's task is gone")
    return answer["status"], answer["item"]
