"""strand's Python runtime: `python3 -m strand.runtime`.

A strand worker starts it once and feeds it tasks named rt:NAME over stdin
and stdout, in the frames of worker/runtime.h (docs/tasks.md, "Runtimes"):
type (1 byte), id (u64), a_len (u32), b_len (u32), little-endian, then a
and b. NAME is one of:

  module:qualname   the function is imported; the task's argument (JSON) is
                    its one argument, its return value the result (JSON)
  pickle[:LABEL]    (LABEL: the function's module.qualname, for people to
                    read; the pickled bytes say what runs, so the module
                    named pickle is not reached as pickle:qualname)
                    the argument is a JSON string holding base64 of
                    cloudpickle((function, args, kwargs)), where function may
                    be the function's own cloudpickle bytes (unpickled once
                    per runtime); with a job context, the context is that
                    of the function and the argument that of (args, kwargs).
                    The result is a JSON string holding base64 of
                    cloudpickle(return value)

An argument too large to travel inline was uploaded as a value
(PUT /v1/values/{sha256}); the worker fetched it and sends its file
instead, {"$value_file": PATH}: a pickle task's argument is then the
pickled bytes themselves (no base64), any other task's its JSON text. A
pickled result past RESULT_INLINE goes the same way back: written to a
file, {"$value_file": PATH}, which the worker stores as a value, the
task's result naming it ({"$value": SHA256}).

An exception is an error result: its type, then its message and the
remote traceback (for pickle tasks also the pickled exception, after
EXCEPTION_MARK, so that strand.Pool raises it again). A task of several
inputs (a map's chunk) whose function raised _worker.InputsFailed failed
only in part: a 'P' frame says how many of its inputs failed, and its
error is JSON, {"failed": [[OFFSET, ERROR], ...], "value": VALUE}, each
failed input's error as above and VALUE the values of them all. What the function
prints on sys.stdout and sys.stderr goes to the worker as 'O' frames, a
line at a time and before its result (the pool's output: GET
/v1/pools/{id}/logs), so it cannot break a frame.
"""

import atexit
import base64
import binascii
import collections
import importlib
import io
import json
import os
import pickle
import struct
import sys
import threading
import time
import traceback

from strand import _pickling, _pid, _relay, _worker

HEADER = struct.Struct("<cQII")
EXCEPTION_MARK = "strand-pickled-exception: "  # strand.pool reads it
HEARTBEAT_S = 1.0


def _resolve(name):
    module, _, qualname = name.partition(":")
    if not module or not qualname:
        raise ValueError("rt:%s is not rt:module:qualname or rt:pickle[:LABEL]" % name)
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


CONTEXTS_KEPT = 32  # as worker/runtime.h: the texts of the last 32 contexts sent


class _Contexts:
    """The contexts the worker sent ('C'): their texts, and what the
    function of each text is once unpickled. Every apply is a job of its
    own, a context key of its own and the same text: its function is
    unpickled once, not once an apply (a fifth of a no-op apply's time in
    the runtime)."""

    def __init__(self):
        self.texts = collections.OrderedDict()
        self.functions = {}  # by text
        self.current = 0

    def name(self, key, text):
        if text:
            self.texts.pop(key, None)
            self.texts[key] = text
            if len(self.texts) > CONTEXTS_KEPT:
                self.texts.popitem(last=False)
            if len(self.functions) > CONTEXTS_KEPT:  # those of texts no key names
                named = set(self.texts.values())
                self.functions = {t: f for t, f in self.functions.items() if t in named}
        self.current = key

    def function(self):
        """The current context's function (a pickle task's)."""
        text = self.texts.get(self.current)
        if text is None:
            raise RuntimeError("the worker named context %d, which it never sent" % self.current)
        function = self.functions.get(text)
        if function is None:
            pickled = base64.b64decode(json.loads(text))
            function = self.functions[text] = _worker.unpickle_function(pickled)
        return function


def _is_pickled(name):
    # pickle:LABEL is pickle with the function's name for people to read
    # (the client's _pickling.function_name); the bytes say what runs.
    return name == "pickle" or name.startswith("pickle:")


VALUE_FILE = b'{"$value_file":'
RESULT_INLINE = 1 << 20  # a pickled result past this goes as a value (_result_file)


def _value_file(arg):
    """The bytes of the value a task's argument names by its file, or None."""
    if not arg.startswith(VALUE_FILE):
        return None
    with open(json.loads(arg)["$value_file"], "rb") as f:
        return f.read()


def _result_file(data):
    """A result too large for a pull: written to a file of ours, which the
    worker stores as a value and removes ({"$value_file": PATH}). Its
    reader removes it once read: 16 random bytes after the pickle (which
    unpickling ignores) name it apart from another result of equal bytes."""
    import tempfile  # here: a large result is rare, and tempfile slows every start

    fd, path = tempfile.mkstemp(prefix="strand-result-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.write(os.urandom(16))
    return json.dumps({"$value_file": path}).encode()


REF_FILES = b'{"$ref_files":'


def _with_refs(arg):
    """A task's argument that holds references to values (strand.put): the
    worker fetched each and sent {"$ref_files": {SHA256: PATH}, "arg":
    ARG}. Their files are noted for the references to unpickle from
    (_worker.resolve); ARG, as JSON text, is the argument."""
    if not arg.startswith(REF_FILES):
        return arg
    given = json.loads(arg)
    _worker.ref_files.update(given["$ref_files"])
    return json.dumps(given["arg"]).encode()


def _base64_text(arg):
    """The bytes of a JSON string of base64 text (a pickle task's argument):
    read as they are, but for the escapes a JSON writer may add ("\\/")."""
    if arg[:1] == b'"' and arg[-1:] == b'"' and b"\\" not in arg:
        return binascii.a2b_base64(arg[1:-1])
    return binascii.a2b_base64(json.loads(arg))


_result_pickler = _pickling.Dumper()  # the task loop's, for every result


def _run(name, pickled_task, arg, contexts):
    arg = _with_refs(arg)
    if pickled_task:
        # cloudpickle's bytes read back with pickle (they name cloudpickle's
        # helpers, imported then); a value's from its file, mapped.
        if arg.startswith(VALUE_FILE):
            call = _worker.unpickle_file(json.loads(arg)["$value_file"])
        else:
            call = pickle.loads(_base64_text(arg))
        if contexts.current:  # the function is the job's context
            function, (args, kwargs) = contexts.function(), call
        else:
            function, args, kwargs = call
            if isinstance(function, bytes):  # pickled apart, once per call
                function = _worker.unpickle_function(function)
        result = _result_pickler.dumps(function(*args, **kwargs))
        if len(result) > RESULT_INLINE:
            return _result_file(result)
        return b'"' + binascii.b2a_base64(result, newline=False) + b'"'  # JSON: base64 needs no escape
    value = _value_file(arg)
    value = _resolve(name)(json.loads(value if value is not None else arg))
    return json.dumps(value).encode()


def _error_text(exc, trace, name):
    """A failed task's (or input's) error after its type: the message, the
    remote traceback and, for pickle tasks, the exception itself."""
    detail = "%s\n\nremote traceback:\n%s" % (exc, trace)
    return detail + _pickled(exc) if _is_pickled(name) else detail


def _partly(e, name):
    """A task of several inputs some of which failed alone
    (_worker.InputsFailed): its 'P' frame's count and error, JSON of each
    failure by its offset (its type, then as _error_text) and the value of
    them all, as 'R' would carry it (docs/tasks.md)."""
    failed = [[at, "%s: %s" % (type(exc).__qualname__, _error_text(exc, trace, name))] for at, exc, trace in e.failures]
    if _is_pickled(name):
        value = base64.b64encode(_pickling.dumps(e.values)).decode("ascii")
    else:
        value = e.values
    return str(len(failed)).encode(), json.dumps({"failed": failed, "value": value}).encode()


def _pickled(exc):
    """The exception itself, for a Python caller to raise again (strand.Pool)."""
    try:
        import cloudpickle

        return "\n%s%s" % (EXCEPTION_MARK, base64.b64encode(cloudpickle.dumps(exc)).decode("ascii"))
    except Exception:  # not picklable: the text says what it was
        return ""


class _Line:
    """The frames both ways. Input is read in large pieces and cut into
    frames here; output is gathered and written when the input holds no
    whole frame more (the worker sends a run of tasks at once: their
    results go back in one write), when it waited FLUSH_S, or when a queue
    call must reach the worker now."""

    FLUSH_S = 0.01
    FLUSH_BYTES = 1 << 18

    def __init__(self, fd_in, fd_out):
        self.fd_in, self.fd_out = fd_in, fd_out
        self.pid = _pid.current()  # a forked child's copy is not its to use
        self.inbuf = bytearray()
        self.pos = 0  # where the next frame starts in inbuf
        # One thread reads at a time (the task loop, a task's call, a
        # child's call through _relay); what it reads for another waits
        # here: tasks in order, answers by the id of their call.
        self.cond = threading.Condition()
        self.reading = False
        self.sleepers = 0  # threads waiting on cond
        self.ended = False
        self.waiting = collections.deque()
        self.answers = {}
        self.out = []
        self.out_bytes = 0
        self.out_since = 0.0
        self.lock = threading.Lock()
        self.running = False  # a task runs: the heartbeat beats

    def send(self, kind, ident, a=b"", b=b"", now=False):
        with self.lock:
            if not self.out:
                self.out_since = time.monotonic()
            frame = HEADER.pack(kind, ident, len(a), len(b)) + a + b
            self.out.append(frame)
            self.out_bytes += len(frame)
            if now or self.out_bytes >= self.FLUSH_BYTES:
                self._flush()

    def flush(self):
        with self.lock:
            self._flush()

    def _flush(self):
        data = memoryview(b"".join(self.out))
        self.out.clear()
        self.out_bytes = 0
        while data:
            data = data[os.write(self.fd_out, data) :]

    def _cut(self):
        """The next whole frame in inbuf, or None."""
        buf, pos = self.inbuf, self.pos
        if len(buf) - pos < HEADER.size:
            return None
        kind, ident, a_len, b_len = HEADER.unpack_from(buf, pos)
        end = pos + HEADER.size + a_len + b_len
        if len(buf) < end:
            return None
        a = bytes(buf[pos + HEADER.size : pos + HEADER.size + a_len])
        b = bytes(buf[pos + HEADER.size + a_len : end])
        self.pos = end
        return kind, ident, a, b

    def read(self):
        """The next frame; None once the worker closed our input. What
        waits to be written goes first when it would block."""
        while True:
            frame = self._cut()
            if frame is not None:
                return frame
            self.flush()
            del self.inbuf[: self.pos]
            self.pos = 0
            chunk = os.read(self.fd_in, 1 << 16)  # a pipe holds 64 KiB
            if not chunk:
                return None
            self.inbuf += chunk

    def _take(self, pick):
        """The frame pick() takes from those read, reading more (one
        reader at a time) until it takes one; None once the worker closed
        our input."""
        while True:
            with self.cond:
                while True:
                    frame = pick()
                    if frame is not None or self.ended:
                        return frame
                    if not self.reading:
                        self.reading = True
                        break
                    self.sleepers += 1
                    try:
                        self.cond.wait()
                    finally:
                        self.sleepers -= 1
            try:
                frame = self.read()
            except BaseException:
                with self.cond:
                    self.reading = False
                    self.cond.notify_all()
                raise
            with self.cond:
                self.reading = False
                if frame is None:
                    self.ended = True
                # with the rest of the whole frames the read brought: the
                # worker sends a run of tasks at once, which the task
                # loop then takes without the lock (next_task)
                while frame is not None:
                    if frame[0] == b"A":
                        self.answers[frame[1]] = frame
                    else:
                        self.waiting.append(frame)
                    frame = self._cut()
                if self.sleepers:  # none, but while a task's children call
                    self.cond.notify_all()
                frame = pick()
                if frame is not None or self.ended:
                    return frame

    def next_task(self):
        """The next frame for the task loop, in order. Only the task loop
        takes from waiting: a frame already there is taken without the
        lock (a deque's popleft is atomic)."""
        try:
            return self.waiting.popleft()
        except IndexError:
            return self._take(lambda: self.waiting.popleft() if self.waiting else None)

    def answer(self, ident):
        """The answer ('A') to the call of id ident."""
        frame = self._take(lambda: self.answers.pop(ident, None))
        if frame is None:
            raise EOFError("the worker closed the runtime's input")
        return frame

    def keep_flowing(self):
        """Its own thread, waking every FLUSH_S: writes what waited that
        long (the results of short tasks a long one follows), and beats
        every HEARTBEAT_S while a task runs."""
        beat_at = time.monotonic() + HEARTBEAT_S
        while True:
            time.sleep(self.FLUSH_S)
            now = time.monotonic()
            beat = self.running and now >= beat_at
            if beat or (self.out and now - self.out_since >= self.FLUSH_S):
                with self.lock:
                    if beat:
                        self.out.append(HEADER.pack(b"H", 0, 0, 0))
                    self._flush()
            if now >= beat_at:
                beat_at = now + HEARTBEAT_S


def _flush_output():
    """What the task printed and did not end with a newline goes before its
    result (a task may have replaced sys.stdout: that is its own)."""
    out, err = sys.stdout, sys.stderr
    if type(out) is _Output and not out.pending and type(err) is _Output and not err.pending:
        return  # most tasks print nothing
    for stream in (out, err):
        try:
            stream.flush()
        except Exception:
            pass


class _Output(io.TextIOBase):
    """sys.stdout (stream 1) or sys.stderr (2) of the tasks: what they print
    goes to the worker in 'O' frames, a line at a time, on the same line as
    their results, so a line printed before a task returned comes before
    its result."""

    PIECE = 1 << 16  # a frame's part of a long print

    def __init__(self, line, stream):
        super().__init__()
        self.line, self.stream, self.pending = line, stream, []

    @property
    def encoding(self):
        return "utf-8"

    def writable(self):
        return True

    def isatty(self):
        return False

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError("write() argument must be str, not %s" % type(text).__name__)
        self.pending.append(text)
        if "\n" in text:
            self.flush()
        return len(text)

    def flush(self):
        if self.pending:
            data = "".join(self.pending).encode("utf-8", "replace")
            self.pending = []
            if _pid.current() != self.line.pid:  # a forked child: the line is its parent's
                while data:
                    data = data[os.write(self.stream, data) :]
                return
            for at in range(0, len(data), self.PIECE):
                self.line.send(b"O", self.stream, b"", data[at : at + self.PIECE])


def _frames_apart():
    """The frames' descriptors, moved off 0 and 1: a process the task
    starts (multiprocessing, subprocess, os.system) inherits those, and
    would read frames or write between them, as would C code writing to
    fd 1. Its stdin becomes /dev/null, and what is written to fd 1 goes
    through a pipe read here: the tasks' stdout, in 'O' frames. (fd 2 is
    the worker's already: it takes it as the tasks' stderr.)"""
    frames_in, frames_out = os.dup(0), os.dup(1)  # not inherited
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 1)
    os.close(write_end)
    return frames_in, frames_out, read_end


def _forward(fd, out):
    """What is written to fd, to out, as it comes."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    while True:
        data = os.read(fd, 1 << 16)
        if not data:
            return
        out.write(decoder.decode(data))


def main():
    # The worker set this process's allocator (worker/runtime.c); what a
    # task starts gets the environment it would have had.
    if os.environ.pop("STRAND_MALLOC_TUNED", None):
        os.environ.pop("GLIBC_TUNABLES", None)
    frames_in, frames_out, stdout_pipe = _frames_apart()
    line = _Line(frames_in, frames_out)
    # Whatever a function prints must not land between frames: it goes in
    # frames of its own.
    sys.stdout = _Output(line, 1)
    sys.stderr = _Output(line, 2)
    threading.Thread(target=_forward, args=(stdout_pipe, _Output(line, 1)), daemon=True).start()
    # What every pickle task needs (some 16 ms of CPU), imported before the
    # worker hears the runtime is ready: it asks for work then, and a local
    # gateway starts the pool's next worker then.
    importlib.import_module("cloudpickle")
    line.send(b"S", 0, b"python", sys.version.split()[0].encode(), now=True)
    _worker.name_pool_worker()
    threading.Thread(target=line.keep_flowing, daemon=True).start()
    # Queues, pipes and managers passed to a task reach the gateway through
    # the worker: from the task on the line, from its children through here.
    _worker.line = line
    # Removed at exit after multiprocessing waited for the task's children
    # (registered before a task imports multiprocessing: atexit runs the
    # last registered first).
    atexit.register(_relay.remove, _relay.serve(_worker.call))
    contexts = _Contexts()
    names = {}  # a task's name as sent: its text, and whether it is a pickle task
    while True:
        frame = line.next_task()
        if frame is None:
            return 0  # the worker closed our input: done
        kind, ident, name, arg = frame
        if kind == b"X":  # a Process's body is done: its children are waited for at exit
            return _worker.exit_code
        if kind == b"C":
            contexts.name(ident, arg)
            continue
        if kind != b"T":
            continue
        known = names.get(name)
        if known is None:  # most tasks share a few names
            if len(names) >= CONTEXTS_KEPT:
                names.clear()
            text = name.decode("ascii", "replace")  # the gateway takes printable ASCII only
            known = names[name] = (text, _is_pickled(text))
        name, pickled_task = known
        line.running = True
        try:
            result = _run(name, pickled_task, arg, contexts)
            line.running = False
            _flush_output()
            line.send(b"R", ident, b"", result)
        except _worker.InputsFailed as e:
            line.running = False
            _flush_output()
            if len(e.values) == 1:  # a task of one input failed with it: a plain error
                _, exc, trace = e.failures[0]
                line.send(b"E", ident, type(exc).__qualname__.encode(), _error_text(exc, trace, name).encode())
            else:
                count, text = _partly(e, name)
                line.send(b"P", ident, count, text)
        except BaseException as e:  # a task's SystemExit is its error too
            line.running = False
            detail = _error_text(e, traceback.format_exc(), name)
            _flush_output()
            line.send(b"E", ident, type(e).__qualname__.encode(), detail.encode())


if __name__ == "__main__":
    sys.exit(main())
