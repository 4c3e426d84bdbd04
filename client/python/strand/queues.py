"""strand.SimpleQueue and strand.Pipe: multiprocessing's queue and pipe as
gateway objects. Made in the caller (over HTTP), they can be passed to
tasks: inside a worker they carry only their id and reach the gateway
through the worker. Items are Python objects, as base64 of their
cloudpickle bytes (a REST client sees those strings); one whose pickle
passes ITEM_INLINE travels as a value of its own ({"$value": SHA256}),
read once."""

import atexit
import base64
import binascii
import collections
import json
import os
import pickle
import sys
import threading
import time
import weakref

from . import _pickling, _pid, _polling, _worker
from . import gateway as _gateway

WAIT_S = 30
# An item pickled past this goes as a value: its bytes uploaded apart (not
# base64 in JSON), up to the gateway's --max-value-bytes.
ITEM_INLINE = 1 << 20


# A queue that is its program's own holds up to this many bytes of items
# (pickled) in the program; past it, it goes to the gateway's queue as if
# handed on: a program that puts gigabytes before it starts their readers
# keeps them on the gateway's disk, not in its memory.
OWN_BYTES = 64 << 20


# What follows the bytes of an item that went as a value: 16 random bytes
# (_worker.read_once_file's too), which unpickling ignores.
VALUE_TAIL = 16


def _enc(obj, gw):
    """An item as a put carries it: base64 text, or the value holding it."""
    return _enc_bytes(_pickling.dumps(obj), gw)


def _enc_bytes(data, gw):
    """An item of these bytes (a pickle, or send_bytes's as they are):
    base64 text, or the value holding them. A value read once is named
    uniquely (VALUE_TAIL random bytes after them), so that its reader may
    remove it."""
    if len(data) <= ITEM_INLINE:
        return base64.b64encode(data).decode("ascii")
    if _worker.inside():  # the worker stores it (as a task's large result)
        return _worker.read_once_file(data)
    return gw.put_value(data, fresh=True, tail=os.urandom(VALUE_TAIL))


def _dec(item, gw):
    """An item as a get gives it: base64 text, or the value holding it,
    fetched and removed (in a task, the worker did both and gives its
    file)."""
    import cloudpickle

    if isinstance(item, dict) and "$value_file" in item:
        return _worker.unpickle_file(item["$value_file"])
    if isinstance(item, dict):
        return cloudpickle.loads(gw.take_value(item["$value"]))
    return cloudpickle.loads(base64.b64decode(item))


def _dec_bytes(item, gw):
    """The bytes an item carries, unpickled or not (recv_bytes)."""
    if isinstance(item, dict) and "$value_file" in item:
        with open(item["$value_file"], "rb") as f:
            return f.read(os.fstat(f.fileno()).st_size - VALUE_TAIL)
    if isinstance(item, dict):
        return gw.take_value(item["$value"])[:-VALUE_TAIL]
    return base64.b64decode(item)


def _made_with(gw, body, detached):
    """A queue's or pipe's request body, with the program's lease: it goes
    when the program ends, as its pools do. One made in a task names none
    (the task holds no lease of its own) and stays until deleted."""
    if not detached and not _worker.inside():
        body["lease"] = gw.lease()
    return body


class QueueError(Exception):
    """A queue or pipe call failed inside a worker (its log says why)."""


def _take(gw, relay_op, timeout, raw=False, **relay_args):
    """One item from a queue or pipe end, inside a worker (through it),
    waiting up to timeout (None: forever); queue.Empty-like TimeoutError
    when nothing came. raw: its bytes, not unpickled."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = WAIT_S if deadline is None else max(0.0, min(WAIT_S, deadline - time.monotonic()))
        status, item = _worker.call(relay_op, wait_ms=int(left * 1000), **relay_args)
        if status == "error":
            raise QueueError("strand: the %s call failed (see the worker's log)" % relay_op)
        if status == "ok":
            return (_dec_bytes if raw else _dec)(json.loads(item), gw)
        if deadline is not None and time.monotonic() >= deadline:
            raise TimeoutError("nothing came within %s s" % timeout)


class _Reader:
    """A program's gets from one queue or pipe end, read ahead: a take asks
    for as many items as the program would use in AHEAD_S at the pace it
    used the last ones (doubling at most; one at first), so that a loop of
    gets costs a round trip per batch, not per item (0.25 ms each), and a
    program that works between gets takes one at a time, as before.

    The items come held under the program's lease: the gateway keeps them
    until told how many were used (with the next take, or at exit), and
    puts back at the queue's head those a program that died had not used;
    it gives more than one only while no other reader waits. An item
    that is a value (a large one) is told used at once, the rest of its
    batch given back, and only then its value removed: an item put back
    always has its value."""

    AHEAD_S = 0.02
    AHEAD_MAX = 1024

    def __init__(self, gw, base, take):
        self.gw, self.base, self.take_path = gw, base, take
        self.pid = _pid.current()
        self.lock = threading.Lock()
        self.items = collections.deque()
        self.hold = None  # what self.items came under: the last batch
        self.got = 0  # its items handed out
        self.asked = 1
        self.since = 0.0  # when it came

    def get(self, timeout, raw=False):
        """The next item, unpickled (raw: its bytes as they came)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self.lock.acquire(timeout=-1 if timeout is None else max(0.0, timeout)):
            raise TimeoutError("nothing came within %s s" % timeout)
        try:
            while not self.items:
                self._refill(deadline, timeout)
            item = self.items[0]
            # An item sent as a value stays the next until its value came.
            data = self.gw.get_value(item["$value"]) if isinstance(item, dict) else None
            self.items.popleft()
            self.got += 1
            if data is not None:
                try:
                    self._release()
                    self.gw.request("DELETE", "/v1/values/" + item["$value"])
                except (_gateway.StrandError, OSError):
                    pass  # told used with the next take; the value stays, not the item
                return data[:-VALUE_TAIL] if raw else pickle.loads(data)
        finally:
            self.lock.release()
        data = binascii.a2b_base64(item)
        # cloudpickle's pickles are pickle's (what they name, pickle imports)
        return data if raw else pickle.loads(data)

    def poll(self, timeout):
        """Whether an item is here, or came within timeout (None: waits
        for one); it stays for the next get."""
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        if not self.lock.acquire(timeout=-1 if timeout is None else max(0.0, timeout)):
            return False
        try:
            while not self.items:
                try:
                    self._refill(deadline, timeout)
                except TimeoutError:
                    return False
            return True
        finally:
            self.lock.release()

    def _refill(self, deadline, timeout):
        now = time.monotonic()
        if self.hold is not None:
            pace = self.got * self.AHEAD_S / max(now - self.since, 1e-6)
            grown = 2 * self.asked if self.got >= self.asked else self.asked
            self.asked = max(1, min(self.AHEAD_MAX, grown, int(pace)))
        left = WAIT_S if deadline is None else max(0.0, min(WAIT_S, deadline - now))
        query = "?max=%d&wait=%d&lease=%s" % (self.asked, int(left), self.gw.lease())
        if self.hold is not None:
            query += "&used=" + self.hold
        try:
            page = self.gw.request("POST", self.take_path + query)
        except _gateway.StrandError as e:
            if e.status == 404 and "lease" in e.detail:
                # It ran out (the program stood still): the gateway put back
                # what it held; the next take makes a new lease.
                self.gw.lease_lost()
                self.hold = None
                _holding.discard(self)
            raise
        self.items.extend(page["items"])
        self.hold, self.got, self.since = page.get("hold"), 0, time.monotonic()
        if self.hold is None:
            _holding.discard(self)
        else:
            _holding.add(self)
        if not self.items and deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("nothing came within %s s" % timeout)
            if left < 1:  # a take waits whole seconds: under one, look again soon, not at once
                time.sleep(min(left, POLL_S))

    def _release(self):
        """Tells the gateway how many of the hold's items were used; the
        others are back at the queue's head, no longer here."""
        if self.hold is not None:
            self.gw.request("DELETE", "%s/holds/%s?used=%d" % (self.base, self.hold, self.got), timeout=SETTLE_S)
            self.drop()

    def drop(self):
        """What it held is settled (released, or gone with its queue)."""
        self.hold, self.items = None, collections.deque()
        _holding.discard(self)

    def settle(self):
        """At the program's exit: its hold released. A get still waiting
        for its take (a thread blocked in get) told the hold before it used
        on arrival, and what its take brings goes back with the lease."""
        if self.pid != _pid.current() or not self.lock.acquire(timeout=0.2):
            return
        try:
            self._release()
        except (_gateway.StrandError, OSError) as e:
            # 404: the queue is gone (another removed it), its items with it.
            if getattr(e, "status", None) != 404:
                sys.stderr.write("strand: items read ahead went back with the lease: %s\n" % e)
        finally:
            self.lock.release()


POLL_S = 0.01  # between takes when under a second is left of a get's timeout

# Readers that hold items: settled before the program's lease ends (the
# lease's end would put back those it used too).
_holding = set()
SETTLE_S = 5


def _settle_all():
    for reader in list(_holding):
        reader.settle()


_gateway.before_lease_ends.append(_settle_all)


def _reader(owner, base, take):
    """owner's reader in this program (a forked child reads for itself),
    or None inside a worker (which reads through the worker)."""
    reader = owner.__dict__.get("_read")
    if reader is None or reader.pid != _pid.current():
        if _worker.inside():
            return None
        reader = owner._read = _Reader(owner._gw, base, take)
    return reader


def _text_bytes(item):
    """About what an item (_enc's) adds to a request's body."""
    return len(item) if isinstance(item, str) else 100


class _Feeder:
    """multiprocessing's queue feeder thread: put() returns once its item is
    pickled (and, past ITEM_INLINE, uploaded); a thread of the queue's
    sends the items in order, all that came while it sent the last ones
    in one request (a put a round trip took 0.3 ms: 3,000 items a second).
    A request that fails is raised by the next put, flush or empty(); the
    program's exit waits for what was put, as multiprocessing's does."""

    BATCH_BYTES = 8 << 20  # of item text a request; the gateway takes 64 MiB

    def __init__(self, gw, path):
        self.gw, self.path, self.pid = gw, path, _pid.current()
        self.cond = threading.Condition()
        self.items = collections.deque()
        self.sending = False
        self.error = None
        self.thread = None

    def put(self, item):
        with self.cond:
            self._raise()
            self.items.append(item)
            if self.thread is None:
                self.thread = threading.Thread(target=self._send, name="strand-queue-feeder", daemon=True)
                self.thread.start()
                _feeders.add(self)
            self.cond.notify()

    def flush(self, timeout=None):
        """Waits until every item put is in the gateway's queue (at most
        timeout s): True when they are."""
        with self.cond:
            done = self.cond.wait_for(lambda: not self.items and not self.sending, timeout)
            self._raise()
            return done

    def _raise(self):
        if self.error is not None:
            error, self.error = self.error, None
            raise error

    def _send(self):
        while True:
            with self.cond:
                if not self.cond.wait_for(lambda: self.items, FEEDER_IDLE_S):
                    self.thread = None  # the next put starts another: a program's many queues hold no thread each
                    return
                batch, size = [], 0
                while self.items and (not batch or size + _text_bytes(self.items[0]) <= self.BATCH_BYTES):
                    item = self.items.popleft()
                    size += _text_bytes(item)
                    batch.append(item)
                self.sending = True
            try:
                self.gw.request("POST", self.path, {"items": batch})
            except Exception as e:  # the queue deleted, the gateway gone: said at the next call
                with self.cond:
                    self.error = self.error or e
            with self.cond:
                self.sending = False
                self.cond.notify_all()


_feeders = weakref.WeakSet()

# The queues that are still their program's own: handed on before it
# forks, so that parent and child do not each keep a copy of their items.
_own_queues = weakref.WeakSet()


def _share_own():
    for queue in list(_own_queues):
        if queue._owner == _pid.current():
            queue._share()


os.register_at_fork(before=_share_own)


@atexit.register
def _flush_all():
    """At exit, what was put reaches the gateway first (registered before
    a program's first pool or queue: atexit runs it after their own)."""
    for feeder in list(_feeders):
        if feeder.pid == _pid.current():
            try:
                feeder.flush(FLUSH_AT_EXIT_S)
            except Exception as e:
                sys.stderr.write("strand: items put on a queue were lost at exit: %s\n" % e)


FLUSH_AT_EXIT_S = 60
FEEDER_IDLE_S = 5


class SimpleQueue:
    """multiprocessing's SimpleQueue: each item goes to the reader that
    asks first. turns=True deals the items to the queue's readers in turn
    instead (a reader is a process that asked it for an item, until it
    ends), as Fiber's SimpleQueuePush does: with four readers each gets a
    quarter, however fast it reads.

    A queue the program made is its own until it is handed on (pickled for
    a task, a Process or another queue, its id read, the program forked,
    flush or close called, OWN_BYTES of items held): until then no other
    process can reach it, and its items stay in the program (pickled, as a
    put's are), as multiprocessing's queue is a pipe of its own: a put and
    a get in turn cost microseconds, not two round trips. Handing it on
    sends them to the gateway's queue first, in order.

    The gateway deletes it, with its items, when the program that made it
    ends (under the program's lease, as its pools), unless detached=True."""

    _turns = False

    def __init__(self, gateway=None, turns=None, detached=False):
        self._gw = gateway or _gateway.default()
        turns = self._turns if turns is None else turns
        body = _made_with(self._gw, {"kind": "turns"} if turns else {}, detached)
        self._id = self._gw.request("POST", "/v1/queues", body)["id"]
        self._cond = threading.Condition()
        # The items while the queue is the program's own; None once handed on.
        self._own = None if _worker.inside() else collections.deque()
        if self._own is not None:
            self._owner = _pid.current()
            self._own_bytes = 0
            _own_queues.add(self)

    @property
    def id(self):
        """The gateway's id of the queue. Whoever reads it may hand it on:
        the queue is shared from then on."""
        self._share()
        return self._id

    def __getstate__(self):
        self._share()
        return {"id": self._id}

    def __setstate__(self, state):
        self._id = state["id"]
        self._gw = None if _worker.inside() else _gateway.default()
        self._cond = threading.Condition()
        self._own = None

    def _share(self):
        """From now on other processes may have the queue: the items put
        while it was the program's own go to the gateway's queue, in order,
        before any put after (gets waiting here take from there)."""
        if self._own is None:
            return
        with self._cond:
            if self._own is None:
                return
            own, self._own = self._own, None
            _own_queues.discard(self)
            if own:
                feeder = self._feeder()
                for data in own:
                    feeder.put(_enc_bytes(data, self._gw))
            self._cond.notify_all()

    def _feeder(self):
        feeder = self.__dict__.get("_fed")
        if feeder is None or feeder.pid != _pid.current():  # a forked child starts its own
            feeder = self._fed = _Feeder(self._gw, "/v1/queues/%s/items" % self._id)
        return feeder

    def _check_open(self):
        if self.__dict__.get("_closed"):
            raise OSError("handle is closed")

    def put(self, obj):
        """Puts obj at the queue's end. From the program it returns at once: a
        thread of its own sends what was put, in order (flush waits for it); in
        a task it returns once the item is in the queue."""
        self._check_open()
        if _worker.inside():
            if _worker.call("put", queue=self._id, item=_enc(obj, None))[0] != "ok":
                raise QueueError("strand: put on %s failed (see the worker's log)" % self._id)
            return
        data = _pickling.dumps(obj)
        if self._own is not None:
            with self._cond:
                if self._own is not None and self._own_bytes + len(data) > OWN_BYTES:
                    self._share()
                if self._own is not None:
                    self._own.append(data)
                    self._own_bytes += len(data)
                    self._cond.notify()
                    return
        self._feeder().put(_enc_bytes(data, self._gw))

    def flush(self, timeout=None):
        """strand's own: waits until every item put here is in the gateway's
        queue (the queue is shared from then on)."""
        if not _worker.inside():
            self._share()
            return self._feeder().flush(timeout)
        return True

    def get(self, timeout=None):
        """The item at the queue's head, waiting for one up to timeout seconds
        (None: no limit); TimeoutError when none came."""
        self._check_open()
        if self._own is not None:
            deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
            with self._cond:
                while self._own is not None and not self._own:
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        raise TimeoutError("nothing came within %s s" % timeout)
                    self._cond.wait(left)
                if self._own is not None:
                    data = self._own.popleft()
                    self._own_bytes -= len(data)
                    return pickle.loads(data)
            # Handed on while this get waited: the rest of its wait there.
            if deadline is not None:
                timeout = max(0.0, deadline - time.monotonic())
        reader = _reader(self, "/v1/queues/%s" % self._id, "/v1/queues/%s/take" % self._id)
        if reader is None:
            return _take(self._gw, "get", timeout, queue=self._id)
        return reader.get(timeout)

    def empty(self):
        """Whether the queue holds no item now, counting what this program put
        and has not read."""
        self._check_open()
        if _worker.inside():
            return _size_inside(queue=self._id) == 0
        if self._own is not None:
            with self._cond:
                if self._own is not None:
                    return not self._own
        self.flush()  # what this program put counts, and what it read ahead
        read = self.__dict__.get("_read")
        if read is not None and read.pid == _pid.current() and read.items:
            return False
        return self._gw.request("GET", "/v1/queues/%s" % self._id)["size"] == 0

    def close(self):
        """Closes the queue here, as multiprocessing's close() does: what
        this process put is sent first and what it read ahead goes back to
        the queue's head; then put, get and empty raise OSError. The queue
        lives on for the other processes that have it."""
        if self.__dict__.get("_closed"):
            return
        if not _worker.inside():
            self._share()
        fed = self.__dict__.get("_fed")
        if fed is not None and fed.pid == _pid.current():
            fed.flush()
        read = self.__dict__.get("_read")
        if read is not None and read.pid == _pid.current():
            read.settle()
        self._closed = True

    @property
    def reader(self):
        """Fiber's queues have a reading and a writing connection; here
        both ends are the queue itself (docs/fiber.md)."""
        return self

    writer = reader

    def _remove(self):
        """Removes the queue from the gateway; what this program read ahead
        goes with it."""
        self._gw.request("DELETE", "/v1/queues/%s" % self._id)
        read = self.__dict__.get("_read")
        if read is not None and read.pid == _pid.current():
            read.drop()

    def __repr__(self):
        return "<strand.SimpleQueue %s>" % self.id


class Connection:
    """One end of a Pipe, as multiprocessing's Connection: send and recv
    objects (pickled), send_bytes and recv_bytes bytes as they are (the
    bytes recv_bytes gives of a send are its pickle), poll, close, with."""

    def __init__(self, pipe, end, gw, readable=True, writable=True):
        self.pipe, self.end, self._gw = pipe, end, gw
        self._readable, self._writable = readable, writable

    def __getstate__(self):
        return {"pipe": self.pipe, "end": self.end, "readable": self._readable, "writable": self._writable}

    def __setstate__(self, state):
        self.pipe, self.end = state["pipe"], state["end"]
        self._readable, self._writable = state.get("readable", True), state.get("writable", True)
        self._gw = None if _worker.inside() else _gateway.default()

    @property
    def closed(self):
        """Whether close() was called on this end here."""
        return self.__dict__.get("_closed", False)

    @property
    def readable(self):
        """Whether this end receives (not the sending end of Pipe(False))."""
        return self._readable

    @property
    def writable(self):
        """Whether this end sends (not the receiving end of Pipe(False))."""
        return self._writable

    def close(self):
        """This end is done here (the pipe lives on for the other end and
        for copies of this one, as a multiprocessing Connection's peer)."""
        self._closed = True

    def __enter__(self):
        """The connection, closed when the with block ends."""
        return self

    def __exit__(self, *exc):
        """close()."""
        self.close()

    def _check(self, receiving):
        if self.closed:
            raise OSError("handle is closed")
        if receiving and not self._readable:
            raise OSError("connection is write-only")
        if not receiving and not self._writable:
            raise OSError("connection is read-only")

    def _send_item(self, item):
        if _worker.inside():
            if _worker.call("send", pipe=self.pipe, end=self.end, item=item)[0] != "ok":
                raise QueueError("strand: send on %s failed (see the worker's log)" % self.pipe)
        else:
            self._gw.request("POST", "/v1/pipes/%s/ends/%d/send" % (self.pipe, self.end), {"item": item})

    def _end_reader(self):
        """This end's reader in this program, or None in a task."""
        base = "/v1/pipes/%s/ends/%d" % (self.pipe, self.end)
        return _reader(self, base, base + "/recv")

    def _recv(self, timeout, raw):
        reader = self._end_reader()
        if reader is None:
            return _take(self._gw, "recv", timeout, raw, pipe=self.pipe, end=self.end)
        return reader.get(timeout, raw)

    def send(self, obj):
        """Sends obj to the other end."""
        self._check(False)
        self._send_item(_enc(obj, self._gw))

    def recv(self, timeout=None):
        """The next object the other end sent, waiting up to timeout seconds
        (None: no limit); TimeoutError when none came."""
        self._check(True)
        return self._recv(timeout, False)

    def send_bytes(self, buf, offset=0, size=None):
        """Sends size bytes of buf (a bytes-like object) from offset, as they
        are."""
        self._check(False)
        with memoryview(buf) as view:
            data = view.cast("B") if view.itemsize > 1 else view
            n = data.nbytes
            if offset < 0:
                raise ValueError("offset is negative")
            if n < offset:
                raise ValueError("buffer length < offset")
            if size is None:
                size = n - offset
            elif size < 0:
                raise ValueError("size is negative")
            elif offset + size > n:
                raise ValueError("buffer length < offset + size")
            chunk = bytes(data[offset : offset + size])
        self._send_item(_enc_bytes(chunk, self._gw))

    def recv_bytes(self, maxlength=None):
        """The next message's bytes (a send's: its pickle), waiting for one;
        OSError when it is longer than maxlength."""
        if maxlength is not None and maxlength < 0:
            raise ValueError("negative maxlength")
        self._check(True)
        data = self._recv(None, True)
        if maxlength is not None and len(data) > maxlength:
            raise OSError("bad message length")
        return data

    def recv_bytes_into(self, buf, offset=0):
        """Writes the next message's bytes into buf (a writable bytes-like
        object) from byte offset, and returns their number;
        multiprocessing.BufferTooShort, holding them, when they do not fit."""
        self._check(True)
        with memoryview(buf) as view:
            data = view.cast("B") if view.itemsize > 1 else view
            if offset < 0:
                raise ValueError("negative offset")
            if offset > data.nbytes:
                raise ValueError("offset too large")
            message = self._recv(None, True)
            if data.nbytes - offset < len(message):
                import multiprocessing

                raise multiprocessing.BufferTooShort(message)
            data[offset : offset + len(message)] = message
        return len(message)

    def poll(self, timeout=0.0):
        """Whether a message is waiting, or comes within timeout seconds
        (None: waits for one); it stays for the next recv."""
        self._check(True)
        reader = self._end_reader()
        if reader is None:
            return _poll_inside(timeout, pipe=self.pipe, end=self.end)
        return reader.poll(timeout)


def _size_inside(**names):
    """In a task: how many items wait in the queue, or for the pipe's end,
    names names (asked through the worker)."""
    status, item = _worker.call("size", **names)
    if status != "ok":
        raise QueueError("strand: the size call failed (see the worker's log)")
    return int(item)


def _poll_inside(timeout, **names):
    """In a task: whether an item waits, asking again and again until
    timeout (None: until one does; _polling). Nothing is taken: an item a
    task polled and never received is not lost with it."""
    return _polling.until(lambda: (_size_inside(**names) > 0, None), timeout)[0]


def Pipe(duplex=True, gateway=None, detached=False):
    """Two Connections; with duplex False the first only receives and the
    second only sends, as in multiprocessing. The gateway deletes the pipe
    when the program that made it ends, unless detached=True."""
    gw = gateway or _gateway.default()
    pipe = gw.request("POST", "/v1/pipes", _made_with(gw, {"duplex": duplex}, detached))["id"]
    if duplex:
        return Connection(pipe, 0, gw), Connection(pipe, 1, gw)
    # The gateway's simplex pipe sends at end 0 and receives at end 1.
    return Connection(pipe, 1, gw, writable=False), Connection(pipe, 0, gw, readable=False)
