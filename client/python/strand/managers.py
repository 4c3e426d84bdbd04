"""strand's managers: multiprocessing's Manager and Fiber's AsyncManager
over a strand gateway.

A manager is one gateway manager of type "runtime" (POST /v1/managers):
one worker whose Python runtime holds the manager's objects between calls.
Each operation is one call, {"method": "pickle", "args": [payload]}, that
runs one of this module's functions there (_create, _call, ...), so the
objects live in that one remote process and its calls run in the order they
were made. Many managers run in parallel.

    with strand.Manager() as m:          # SyncManager: dict, list, Namespace, Queue, Value
        d = m.dict(); d["k"] = 1

    class EnvManager(strand.AsyncManager): pass
    EnvManager.register("Env", make_env)
    m = EnvManager(); m.start()
    env = m.Env()                        # made remotely, at once
    handle = env.step(0)                 # an AsyncManager's calls return handles
    handle.get()

Proxies pickle as (manager, object) and may be stored in other managed
objects. They reach their manager from the caller over HTTP, and from a
Process or a pool's task through its worker (_call_from_task): the call
waits there for its result, so an AsyncManager's proxy gives a Handle
that is ready. In the manager's own runtime (a method using a proxy of
its own manager) the call runs at once.
"""

import base64
import itertools
import json
import os
import queue as _queue
import threading
import time

from . import _code, _polling, _worker
from . import gateway as _gateway
from . import output as _output

WAIT_S = 30
# A call pickled past this goes as a value of its own (its bytes uploaded,
# not base64 in JSON), up to the gateway's --max-value-bytes.
CALL_INLINE = 1 << 20
# How long a call from a task waits for its result; past it, it fails.
TASK_CALL_WAIT_MS = 7 * 24 * 3600 * 1000


# ---- what runs in the manager's runtime ----------------------------------

_objects = {}  # id -> object, in the manager's runtime process
_ids = itertools.count(1)


def _create(factory, args, kwargs):
    oid = next(_ids)
    _objects[oid] = factory(*args, **kwargs)
    return oid


def _call(oid, method, args, kwargs):
    return getattr(_objects[oid], method)(*args, **kwargs)


def _getattr(oid, name):
    return getattr(_objects[oid], name)


def _setattr(oid, name, value):
    setattr(_objects[oid], name, value)


def _delattr(oid, name):
    delattr(_objects[oid], name)


def _repr(oid):
    return repr(_objects[oid])


def _copy(oid):
    """A list or dict's contents, for iteration and comparison."""
    obj = _objects[oid]
    return dict(obj) if isinstance(obj, dict) else list(obj)


def _release(oid):
    _objects.pop(oid, None)


def _attempt(oid, method, args, busy):
    """The method's (True, result), or (False, None) when it raised busy:
    what it raises instead of waiting (queue.Empty for get(False))."""
    try:
        return True, getattr(_objects[oid], method)(*args)
    except busy:
        return False, None


# ---- handles ---------------------------------------------------------------


class Handle:
    """An AsyncManager call under way: get(timeout) gives its result (or
    raises its exception), ready() says whether it is there."""

    def __init__(self, manager, call_id, uploaded=None):
        self._manager, self._call = manager, call_id
        self._uploaded = uploaded  # the value its argument went as, removed once it is done
        self._done = False
        self._value = self._error = None
        self._output_last = None  # once done: the number of the manager's last line then

    def _fetch(self, wait_s):
        if self._done:
            return True
        view = self._manager._gw.request(
            "GET", "/v1/managers/%s/calls/%s?wait=%d" % (self._manager.id, self._call, wait_s), timeout=wait_s + 30
        )
        return self._take(view)

    def _take(self, view):
        """Whether the call's view says it is done; if so, keeps its result."""
        if view.get("state") != "done":
            return False
        self._output_last = view.get("output_last", 0)
        from .pool import _error, _decode

        if view.get("ok"):
            self._value = _decode(view["result"], self._manager._gw)
        else:
            self._error = _error(view.get("error", "failed"))
        self._done = True
        if self._uploaded:
            self._manager._gw.request("DELETE", "/v1/values/" + self._uploaded)
        return True

    def ready(self):
        """Whether the call's result is in."""
        return self._fetch(0)

    def wait(self, timeout=None):
        """Waits until the result is in, or timeout seconds (None: no
        limit)."""
        self._wait_done(timeout)

    def _wait_done(self, timeout):
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._fetch(WAIT_S if deadline is None else max(0, min(WAIT_S, int(deadline - time.monotonic())))):
            if deadline is not None and time.monotonic() >= deadline:
                return False
        return True

    def get(self, timeout=None):
        """The call's value, or its exception raised here;
        multiprocessing.TimeoutError when it is not in within timeout seconds
        (None: no limit)."""
        if not self._wait_done(timeout):
            from .pool import TimeoutError as _TimeoutError

            raise _TimeoutError("the call's result is not there after %s s" % timeout)
        self._manager._drain(self._output_last)  # what the method printed, before its result
        if self._error is not None:
            raise self._error
        return self._value


# ---- managers --------------------------------------------------------------


class BaseManager:
    """multiprocessing.managers.BaseManager: register(typeid, callable),
    start(), shutdown(), with."""

    _registry = {}
    _asynchronous = False

    @classmethod
    def register(cls, typeid, callable=None, proxytype=None, exposed=None, method_to_typeid=None, create_method=True):
        """Registers a type the manager can make: callable(*args, **kwargs)
        makes it in the manager's process, and manager.TYPEID(...) returns a
        proxytype (AutoProxy: every public method) to it."""
        if "_registry" not in cls.__dict__:
            cls._registry = dict(cls._registry)
        cls._registry[typeid] = (callable, proxytype or AutoProxy)
        if create_method:

            def create(self, *args, **kwargs):
                return self._create(typeid, args, kwargs)

            create.__name__ = typeid
            create.__doc__ = "A new %s in the manager's process, as %s(*args, **kwargs) makes it: its proxy." % (
                typeid,
                getattr(callable, "__name__", typeid),
            )
            setattr(cls, typeid, create)

    def __init__(self, address=None, authkey=None, backend=None, image=None, gateway=None, detached=False):
        self._gw = gateway
        self._backend, self._image = backend, image
        self._detached = detached
        self.id = None

    def __getstate__(self):
        return {"id": self.id}

    def __setstate__(self, state):
        self.id = state["id"]
        self._gw = None if _worker.inside() else _gateway.default()

    def start(self, initializer=None, initargs=()):
        """Starts the manager's process on the gateway's backend;
        initializer(*initargs) runs there first."""
        if self.id is not None:
            raise RuntimeError("the manager has already started")
        self._gw = self._gw or _gateway.default()
        spec = {"type": "runtime", "runtime": "python"}
        backend = self._backend or getattr(self._gw, "backend", None)
        image = self._image or getattr(self._gw, "image", None)
        if backend:
            spec["backend"] = backend
        if image:
            spec["image"] = image
        code = _code.ensure(self._gw)
        if code:
            spec["code"] = code
        if not self._detached:
            spec["lease"] = self._gw.lease()
        self.id = self._gw.request("POST", "/v1/managers", spec)["id"]
        self._output = _output.Output(self._gw, self.id, "managers", spec.get("lease"))
        if initializer:
            self._run(initializer, initargs, {})

    def shutdown(self):
        """Ends the manager's process and the objects in it, after showing what
        it printed."""
        if self.id is not None and self._gw is not None:
            self._drain()
            self._gw.request("DELETE", "/v1/managers/%s" % self.id)
            self._gw = None

    def __enter__(self):
        """The manager, started if it was not."""
        if self.id is None:
            self.start()
        return self

    def __exit__(self, *exc):
        """shutdown()."""
        self.shutdown()

    # ---- calls -----------------------------------------------------------
    def _submit(self, func, *args, wait=False):
        """One call running func(*args) in the manager's runtime: a Handle;
        with wait, one whose result came with the call's answer when it was
        there in time (POST ...?wait=: one round trip, not two)."""
        import cloudpickle

        if self._gw is None:
            if _worker.inside() and self.id is not None:
                return self._call_from_task(func, args)
            raise RuntimeError("the manager is not running (start it, or it was shut down)")
        pickled = cloudpickle.dumps((func, args, {}))
        uploaded = None
        if len(pickled) > CALL_INLINE:
            # Its own value (16 random bytes after the pickle, which
            # unpickling ignores), removed once the call is done.
            payload = self._gw.put_value(pickled, fresh=True, tail=os.urandom(16))
            uploaded = payload["$value"]
        else:
            payload = base64.b64encode(pickled).decode("ascii")
        body = {"method": "pickle", "args": [payload]}
        if not wait:
            call = self._gw.request("POST", "/v1/managers/%s/calls" % self.id, body)
            return Handle(self, call["id"], uploaded)
        call = self._gw.request(
            "POST", "/v1/managers/%s/calls?wait=%d" % (self.id, WAIT_S), body, timeout=WAIT_S + 30
        )
        handle = Handle(self, call["id"], uploaded)
        handle._take(call)
        return handle

    def _call_from_task(self, func, args):
        """A call made inside a worker: through the worker, which waits for
        its result (a Handle that is ready); in the manager's own runtime,
        at once. A call pickled past CALL_INLINE goes as a value the worker
        stores, and a result past it comes as a file the worker fetched."""
        import cloudpickle

        from .pool import RemoteError, _error

        handle = Handle(self, None)
        handle._done = True
        if self.id == os.environ.get("STRAND_POOL_ID"):  # this is the manager's runtime: a manager is a pool of one
            try:
                handle._value = func(*args)
            except Exception as e:
                handle._error = e
            return handle
        pickled = cloudpickle.dumps((func, args, {}))
        if len(pickled) > CALL_INLINE:
            arg = _worker.read_once_file(pickled)
        else:
            arg = base64.b64encode(pickled).decode("ascii")
        status, text = _worker.call("manager", manager=self.id, arg=arg, wait_ms=TASK_CALL_WAIT_MS)
        if status != "ok":
            raise RemoteError("strand: a call on manager %s failed: %s" % (self.id, text or "see the worker's log"))
        item = json.loads(text)
        handle._call = item.get("job")
        if not item.get("ok"):
            handle._error = _error(item.get("error", "failed"))
            return handle
        result = item["value"]["result"]
        if isinstance(result, dict) and "$value_file" in result:
            handle._value = _worker.unpickle_file(result["$value_file"])
        else:
            handle._value = cloudpickle.loads(base64.b64decode(result))
        return handle

    def _run(self, func, *args):
        return self._submit(func, *args, wait=True).get()

    def _drain(self, upto=None):
        """What the manager's methods printed so far (up to line upto,
        when given: Output.drain), shown before the caller goes on."""
        output = getattr(self, "_output", None)
        if output is not None:
            output.drain(upto)

    def _create(self, typeid, args, kwargs):
        factory, proxytype = self._registry[typeid]
        if self.id is None:
            raise RuntimeError("start the manager first")
        proxy = proxytype(self, self._run(_create, factory, args, kwargs))
        object.__setattr__(proxy, "_typeid", typeid)
        return proxy


def _rebuild_proxy(proxytype, manager, oid, typeid):
    proxy = proxytype(manager, oid)
    object.__setattr__(proxy, "_typeid", typeid)
    return proxy


class BaseProxy:
    """A managed object: its manager and its id there. repr() names it
    without a call, as multiprocessing's proxies do (so a managed list
    holding another prints in the manager, where no call leaves); str()
    is the object's own repr, asked of the manager."""

    _typeid = None

    def __init__(self, manager, oid):
        object.__setattr__(self, "_manager", manager)
        object.__setattr__(self, "_id", oid)

    def __reduce__(self):
        return (_rebuild_proxy, (type(self), self._manager, self._id, self._typeid))

    def _callmethod(self, method, args=(), kwds=None):
        """The method's result (an AsyncManager's proxy: a Handle)."""
        sync = not self._manager._asynchronous
        handle = self._manager._submit(_call, self._id, method, tuple(args), dict(kwds or {}), wait=sync)
        return handle.get() if sync else handle

    def _sync(self, func, *args):
        return self._manager._run(func, self._id, *args)

    def __repr__(self):
        return "<%s object, typeid %r at %#x>" % (type(self).__name__, self._typeid, id(self))

    def __str__(self):
        return self._sync(_repr)


class AutoProxy(BaseProxy):
    """Any registered type: every attribute is a remote method."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)

        def method(*args, **kwargs):
            return self._callmethod(name, args, kwargs)

        method.__name__ = name
        return method


def _forward(name):
    """A method of a list or dict proxy; the operators (len(), d[k]) answer
    at once even on an AsyncManager, as Python expects."""
    if name.startswith("__"):

        def method(self, *args):
            return self._manager._run(_call, self._id, name, args, {})

    else:

        def method(self, *args):
            return self._callmethod(name, args)

    method.__name__ = name
    return method


class ListProxy(BaseProxy):
    def __iter__(self):
        return iter(self._sync(_copy))

    def __eq__(self, other):
        return self._sync(_copy) == (list(other) if isinstance(other, ListProxy) else other)

    def __iadd__(self, other):
        self._callmethod("extend", (other,))
        return self


for _name in ("__getitem__", "__setitem__", "__delitem__", "__len__", "__contains__", "append", "extend",
              "insert", "pop", "remove", "index", "count", "sort", "reverse", "clear"):
    setattr(ListProxy, _name, _forward(_name))


class DictProxy(BaseProxy):
    def __iter__(self):
        return iter(self._sync(_copy))

    def __eq__(self, other):
        return self._sync(_copy) == (dict(other) if isinstance(other, DictProxy) else other)

    def copy(self):
        return self._sync(_copy)

    def keys(self):
        return list(self._callmethod("keys"))

    def values(self):
        return list(self._callmethod("values"))

    def items(self):
        return list(self._callmethod("items"))


for _name in ("__getitem__", "__setitem__", "__delitem__", "__len__", "__contains__", "get", "pop", "popitem",
              "setdefault", "update", "clear"):
    setattr(DictProxy, _name, _forward(_name))


class NamespaceProxy(BaseProxy):
    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return self._sync(_getattr, name)

    def __setattr__(self, name, value):
        self._sync(_setattr, name, value)

    def __delattr__(self, name):
        self._sync(_delattr, name)


class ValueProxy(BaseProxy):
    @property
    def value(self):
        return self._sync(_call, "get", (), {})

    @value.setter
    def value(self, v):
        self._sync(_call, "set", (v,), {})

    def get(self):
        return self._callmethod("get")

    def set(self, v):
        self._callmethod("set", (v,))


# ---- waiting without holding up the manager --------------------------------
# A manager runs one call at a time: a get that waited inside it for an
# item would hold up the put it waits for, and the program would hang. So
# a queue's get and put, a lock's acquire and an event's wait that would
# wait ask their manager again and again without waiting (_polling). An
# AsyncManager's proxies call as they are: each call is a Handle, whose
# wait is the caller's choice.


def _check_timeout(timeout):
    if timeout is not None and timeout < 0:
        raise ValueError("'timeout' must be a non-negative number")


class QueueProxy(AutoProxy):
    """A managed queue.Queue (Queue() and JoinableQueue()): get, put, qsize,
    empty, full, get_nowait, put_nowait, task_done and join, as
    multiprocessing's proxies have them."""

    def get(self, block=True, timeout=None):
        """The item at the queue's head, waiting up to timeout seconds (None:
        no limit) when block; queue.Empty when none came."""
        if not block or self._manager._asynchronous:
            return self._callmethod("get", (block, timeout))
        _check_timeout(timeout)
        got, item = _polling.until(lambda: self._manager._run(_attempt, self._id, "get", (False,), _queue.Empty), timeout)
        if not got:
            raise _queue.Empty
        return item

    def put(self, obj, block=True, timeout=None):
        """Puts obj at the queue's end, waiting up to timeout seconds (None: no
        limit) while a queue of maxsize is full, when block; queue.Full when
        it stayed full."""
        if not block or self._manager._asynchronous:
            return self._callmethod("put", (obj, block, timeout))
        _check_timeout(timeout)
        put, _ = _polling.until(lambda: self._manager._run(_attempt, self._id, "put", (obj, False), _queue.Full), timeout)
        if not put:
            raise _queue.Full

    def join(self):
        """Waits until task_done() was called for every item put."""
        if self._manager._asynchronous:
            return self._callmethod("join")
        _polling.until(lambda: (self._sync(_getattr, "unfinished_tasks") == 0, None), None)


class AcquirerProxy(AutoProxy):
    """A managed Lock, Semaphore or BoundedSemaphore: acquire, release, with."""

    def acquire(self, blocking=True, timeout=None):
        """Takes it, waiting up to timeout seconds (None: no limit) when
        blocking: whether it was taken."""
        if not blocking or self._manager._asynchronous:
            return self._callmethod("acquire", (blocking,) if timeout is None else (blocking, timeout))
        if timeout is not None and timeout < 0:  # threading's -1: no limit
            timeout = None
        taken, _ = _polling.until(lambda: (self._callmethod("acquire", (False,)), None), timeout)
        return taken

    def release(self):
        """Gives it back."""
        return self._callmethod("release")

    def __enter__(self):
        """acquire()."""
        return self.acquire()

    def __exit__(self, *exc):
        """release()."""
        self.release()


class EventProxy(AutoProxy):
    """A managed Event: is_set, set, clear, wait."""

    def wait(self, timeout=None):
        """Waits until the event is set, or timeout seconds pass (None: no
        limit): whether it is set."""
        if self._manager._asynchronous:
            return self._callmethod("wait", (timeout,))
        is_set, _ = _polling.until(lambda: (self._callmethod("is_set"), None), timeout)
        return is_set


class Namespace:
    """The object behind a manager's Namespace(): attributes only."""

    def __init__(self, **kwds):
        self.__dict__.update(kwds)

    def __repr__(self):
        return "Namespace(%s)" % ", ".join("%s=%r" % kv for kv in sorted(self.__dict__.items()))


class Value:
    """The object behind a manager's Value(typecode, value): get, set."""

    def __init__(self, typecode, value, lock=True):
        self._typecode, self._value = typecode, value

    def get(self):
        return self._value

    def set(self, value):
        self._value = value

    def __repr__(self):
        return "%s(%r, %r)" % (type(self).__name__, self._typecode, self._value)


class SyncManager(BaseManager):
    """multiprocessing's Manager(): dict, list, Namespace, Value, Queue,
    JoinableQueue, Lock, Semaphore, BoundedSemaphore and Event. Not RLock,
    Condition or Barrier: the manager runs every call on one thread, so
    their owner would be every caller at once (docs/python.md)."""


SyncManager.register("dict", dict, DictProxy)
SyncManager.register("list", list, ListProxy)
SyncManager.register("Namespace", Namespace, NamespaceProxy)
SyncManager.register("Value", Value, ValueProxy)
SyncManager.register("Queue", _queue.Queue, QueueProxy)
SyncManager.register("JoinableQueue", _queue.Queue, QueueProxy)
SyncManager.register("Lock", threading.Lock, AcquirerProxy)
SyncManager.register("Semaphore", threading.Semaphore, AcquirerProxy)
SyncManager.register("BoundedSemaphore", threading.BoundedSemaphore, AcquirerProxy)
SyncManager.register("Event", threading.Event, EventProxy)


class AsyncManager(SyncManager):
    """Fiber's AsyncManager: objects are made at once, and every method
    call on them returns a Handle, so calls to many managers overlap."""

    _asynchronous = True


def Manager(backend=None, image=None, gateway=None, detached=False):
    """A started SyncManager, as multiprocessing.Manager()."""
    manager = SyncManager(backend=backend, image=image, gateway=gateway, detached=detached)
    manager.start()
    return manager

