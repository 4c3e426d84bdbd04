"""strand.Pool: multiprocessing.Pool's interface over a strand gateway. Each
worker runs strand's Python runtime; functions and arguments travel as
cloudpickle bytes (rt:pickle:MODULE.QUALNAME), results come back the same way, and a task's
exception is raised again in the caller with the remote traceback."""

import base64
import binascii
import builtins
import collections
import functools
import json
import multiprocessing
import os
import sys
import threading

import cloudpickle

from . import _code, _pickling, _runners
from . import refs as _refs
from . import output as _output
from . import gateway as _gateway

EXCEPTION_MARK = "strand-pickled-exception: "
PAGE = 10000
WAIT_S = 30
# Arguments one request brings, and about their bytes (the gateway takes
# 64 MiB a body): a larger job goes in parts (the map with its "total",
# then POST /v1/jobs/{id}/args at each part's offset).
PART = 100000
PART_BYTES = 32 << 20
# A map's chunk, pickled, holds about this many bytes at most: a chunk of
# large items is split (down to one item a task). One item past it goes as
# a value of its own (_Upload): its pickled bytes uploaded once for the job
# (PUT /v1/values/{sha256}; not base64 in JSON, not through the database,
# and fetched once per worker host), the task's argument naming it, and
# removed once the job's results are read (_JobValues).
CHUNK_BYTES = 1 << 20
# A pool keeps the contexts of its last CONTEXTS_KEPT functions pickled.
CONTEXTS_KEPT = 64


class _Upload:
    """A task's argument too large to go inline: its pickled bytes (held,
    not copied), uploaded as a value before the job that runs it is
    submitted."""

    __slots__ = ("data", "future")  # future: its upload's (_JobValues.start)

    def __init__(self, data):
        self.data = data

    def __len__(self):
        return len(self.data)


class _WithRefs:
    """A task's argument (text, or an _Upload) that holds references to
    values (strand.put): their names, which its request lists so that the
    gateway grants them to the worker that runs it."""

    __slots__ = ("arg", "refs")

    def __init__(self, arg, refs):
        self.arg, self.refs = arg, refs

    def __len__(self):
        return len(self.arg) + 70 * len(self.refs)


class _JobValues:
    """The values one job's arguments went as: each _Upload's bytes
    uploaded once for the job (equal ones once), under a name of the job's
    own (16 random bytes of the job's after the pickle, which unpickling
    ignores), and removed once the job's results are read. Another job's
    or program's equal bytes are a value of their own, so removing these
    ends none of theirs. Uploads run on UPLOADS threads of their own, in
    the order the arguments come, so that one value is hashed and sent
    while the gateway stores the one before."""

    UPLOADS = 2

    def __init__(self, gw, context_refs=()):
        self._gw, self._refs = gw, {}  # the bytes' hash: the future of their upload
        self._nonce = os.urandom(16)
        self._context_refs = set(context_refs)  # those the job's function holds: every task names them
        self._lock = threading.Lock()
        self._pool = None

    def start(self, args):
        """Starts uploading each of args that is an _Upload; inline then
        takes its name."""
        for arg in args:
            upload = arg.arg if isinstance(arg, _WithRefs) else arg
            if isinstance(upload, _Upload) and not hasattr(upload, "future"):
                if self._pool is None:
                    import concurrent.futures  # here, as hashlib below: see _code's imports

                    self._pool = concurrent.futures.ThreadPoolExecutor(self.UPLOADS, "strand-upload")
                upload.future = self._pool.submit(self._upload, upload.data)

    def _upload(self, data):
        """One pass over the bytes: their hash (equal ones go once) and,
        from it, that of the bytes with the job's nonce after them."""
        import concurrent.futures
        import hashlib

        hashed = hashlib.sha256(data)
        key = hashed.digest()
        with self._lock:
            first = key not in self._refs
            if first:
                self._refs[key] = concurrent.futures.Future()
            done = self._refs[key]
        if not first:
            return done.result()
        try:
            hashed.update(self._nonce)
            ref = self._gw.put_value(data, fresh=True, name=hashed.hexdigest(), tail=self._nonce)
        except BaseException as e:
            done.set_exception(e)
            raise
        done.set_result(ref)
        return ref

    def inline(self, arg):
        """A task's argument as a request carries it: an _Upload's bytes
        uploaded, and named; one that holds references (or whose function
        does) as {"$refs": [SHA256, ...], "arg": ARG} (docs/tasks.md)."""
        refs = self._context_refs
        if type(arg) is bytes and not refs:  # most: base64 text, no reference
            return arg
        if isinstance(arg, _WithRefs):
            refs, arg = refs | arg.refs, arg.arg
        if isinstance(arg, _Upload):
            self.start([arg])
            try:
                arg = arg.future.result()
            except BaseException:
                self.stop()
                raise
        return {"$refs": sorted(refs), "arg": arg} if refs else arg

    def stop(self):
        """No more uploads (those queued are dropped)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def release(self):
        self.stop()
        for done in self._refs.values():
            try:
                self._gw.request("DELETE", "/v1/values/" + done.result()["$value"])
            except Exception:  # gone already, or never stored: what was wanted
                pass
        self._refs.clear()


class TimeoutError(multiprocessing.TimeoutError, builtins.TimeoutError):
    """A result not there in time: multiprocessing's TimeoutError (what
    its users catch) and the builtin one (what strand raised before)."""


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker (its __cause__)."""

    def __str__(self):
        return self.args[0]


class RemoteError(Exception):
    """A task failed in a way that is not a Python exception (a runtime
    that died, a timeout, a cancelled task), or one that cannot be unpickled."""


def _b64(value):
    return base64.b64encode(_pickling.dumps(value)).decode("ascii")


def _context(runner, init, func):
    """A job's context: what runs each of its tasks (runner with the pool's
    initializer and the function), sent to each runtime once instead of
    with every task (docs/tasks.md, "Runtimes"); and the names of the
    values (strand.put) it holds references to."""
    with _refs.collecting() as refs:
        text = _b64(functools.partial(runner, init, cloudpickle.dumps(func)))
    return text, refs


def _arg(pickled):
    """A task's pickled argument as a request carries it: base64 text (as
    bytes, which a request's body holds as they are: strand._body), or
    _Upload when it passes CHUNK_BYTES."""
    if len(pickled) > CHUNK_BYTES:
        return _Upload(pickled)
    return binascii.b2a_base64(pickled, newline=False)


def _task(*args):
    """A task's argument: what its job's context is called with (_arg);
    _WithRefs when it holds references to values (strand.put)."""
    with _refs.collecting() as refs:
        arg = _arg(_pickling.dumps((args, {})))
    return _WithRefs(arg, refs) if refs else arg


def _single_tasks(items):
    """The task arguments of a map of items, an item a task (what _task
    makes of [item]), pickled by one pickler; None when one holds a
    reference (strand.put), whose names each task must carry (_task)."""
    with _refs.collecting() as refs:
        pickled = _pickling.dumps_each([(([item],), {}) for item in items])
    return None if refs else [_arg(p) for p in pickled]


def _chunk_tasks(items, chunksize, tasks=None, counts=None):
    """The task arguments of a map of items, and how many items each
    carries: chunksize items a task, and a chunk whose pickled bytes pass
    CHUNK_BYTES cut into as many pieces as it holds CHUNK_BYTES (again
    while a piece still does), in order."""
    if chunksize == 1 and tasks is None:
        single = _single_tasks(items)
        if single is not None:
            return single, [1] * len(single)
    tasks = [] if tasks is None else tasks
    counts = [] if counts is None else counts
    for start in range(0, len(items), chunksize):
        chunk = items[start : start + chunksize]
        if len(chunk) > 1:
            # Items whose own size (bytes, arrays, strings) says the chunk
            # will not fit are cut first: pickling the whole to learn so
            # copied every byte once more (a map of 10 MB values: 130 MB
            # a chunk, thrown away). Judged from up to 8 of them.
            sample = chunk[:: -(-len(chunk) // 8)]
            held = sum(map(sys.getsizeof, sample)) * len(chunk) // len(sample)
            if held > CHUNK_BYTES:
                step = -(-len(chunk) // min(len(chunk), -(-held // CHUNK_BYTES)))
                for at in range(0, len(chunk), step):
                    _chunk_tasks(chunk[at : at + step], step, tasks, counts)
                continue
        arg = _task(chunk)
        if len(arg) <= CHUNK_BYTES or len(chunk) == 1:
            tasks.append(arg)
            counts.append(len(chunk))
            continue
        pieces = min(len(chunk), -(-len(arg) // CHUNK_BYTES))
        step = -(-len(chunk) // pieces)
        for at in range(0, len(chunk), step):
            _chunk_tasks(chunk[at : at + step], step, tasks, counts)
    return tasks, counts


def _parts(args, inline):
    """args cut into parts of at most PART arguments and about PART_BYTES
    (one argument at least; an _Upload counts its bytes), as (offset,
    part), each argument made what a request carries (inline) as its part
    is cut: a job's first tasks run while its later values upload."""
    start, size, part = 0, 0, []
    for i, arg in enumerate(args):
        if part and (len(part) >= PART or size + len(arg) > PART_BYTES):
            yield start, part
            start, size, part = i, 0, []
        size += len(arg)
        part.append(inline(arg))
    yield start, part


class _Failed:
    """In a map's values: an input that failed alone, and its exception."""

    __slots__ = ("error",)

    def __init__(self, error):
        self.error = error


def _partly(text):
    """A task of several inputs that failed only in part (the runtime's
    'P', docs/tasks.md): its failures [[OFFSET, ERROR], ...] and the value
    of them all; None for any other error."""
    if not text.startswith('{"failed":'):
        return None
    try:
        partly = json.loads(text)
        return partly["failed"], partly["value"]
    except (ValueError, KeyError, TypeError):
        return None


def _raise_at(exc, index, what):
    """exc raised, saying which input of the map it came from (what: None
    for an apply's, which has one)."""
    note = "(strand: %s %d of the map)" % (what, index)
    if what and hasattr(exc, "add_note") and note not in getattr(exc, "__notes__", ()):
        exc.add_note(note)
    raise exc


def _error(text):
    """The exception a failed task's error text stands for."""
    head, mark, pickled = text.rpartition(EXCEPTION_MARK)
    if not mark:
        return RemoteError(text)
    try:
        exc = cloudpickle.loads(base64.b64decode(pickled.strip()))
    except Exception as e:  # (an __init__ its args do not fit): the text still says what it was
        return RemoteError("%s\n\n(the exception itself could not be unpickled here: %s: %s)"
                           % (head.rstrip(), type(e).__name__, e))
    exc.__cause__ = RemoteTraceback(head.rstrip())
    return exc


def _decode(text, gw=None):
    """A value the runtime returned: base64 of its cloudpickle bytes, or
    the value that holds them ({"$value": SHA256}: too large to come
    inline), fetched and removed from the gateway (it is read once)."""
    if isinstance(text, dict):
        return cloudpickle.loads((gw or _gateway.default()).take_value(text["$value"]))
    return cloudpickle.loads(binascii.a2b_base64(text))


def _value(item, gw):
    """An item as an apply answers: its value, or its error raised."""
    ok = bool(item.get("ok"))
    return _outcome(ok, item["value"] if ok else item.get("error", "failed"), gw)


def _outcome(ok, text, gw):
    """A result as a page by columns gives it: its value, or its error raised."""
    if not ok:
        raise _error(text)
    return _decode(text, gw)


def _chunk(ok, text, gw):
    """A map task's result as a page by columns gives it: its inputs'
    values, one that failed alone as _Failed; a task that failed as a
    whole raises its error."""
    if ok:
        return _decode(text, gw)
    partly = _partly(text)
    if partly is None:
        raise _error(text)
    failed, value = partly
    values = _decode(value, gw)
    for at, error in failed:
        if 0 <= at < len(values):
            values[at] = _Failed(_error(error))
    return values


def _chunks(results, gw, decoded=None, single=False):
    """A map's values a task at a time (each task's list of its inputs'
    values), from its tasks' results (ok, text) in input order; an input
    that failed raises its exception where it was, after the values before
    it (each task's values decoded once, into decoded by its index, if
    given). single: an apply's, whose error says no input."""
    index = 0
    for task, (ok, text) in enumerate(results):
        try:
            if ok and decoded is None and type(text) is str:
                # most: a value inline, read as _decode reads it, without
                # its two calls (0.3 us a task of an imap's 2.5)
                values = cloudpickle.loads(binascii.a2b_base64(text))
            elif decoded is None:
                values = _chunk(ok, text, gw)
            elif task in decoded:
                values = decoded[task]
            else:
                values = decoded[task] = _chunk(ok, text, gw)
        except BaseException as e:  # a task's SystemExit is raised again too
            _raise_at(e, index, None if single else "the task from input")
        at = None if ok else next((i for i, value in enumerate(values) if isinstance(value, _Failed)), None)
        if at is not None:  # some of its inputs failed alone: up to the first of them
            yield values[:at]
            _raise_at(values[at].error, index + at, None if single else "input")
        yield values
        index += len(values)


def _inputs(results, gw, decoded=None, single=False):
    """A map's values, input by input (as _chunks)."""
    for values in _chunks(results, gw, decoded, single):
        yield from values


def _all_inputs(results, gw, decoded=None, single=False):
    """A map's values, as a list (as _chunks)."""
    out = []
    for values in _chunks(results, gw, decoded, single):
        out.extend(values)
    return out


class AsyncResult:
    """multiprocessing's AsyncResult: get, wait, ready, successful."""

    def __init__(self, pool, job, single, callback=None, error_callback=None):
        self._pool, self._job, self._single = pool, job, single
        self._event = threading.Event()
        self._items = None
        self._decoded = {}  # each task's values, by its index: decoded once
        self._decoding = threading.Lock()  # get() in _collect (callbacks) and in the caller
        self._callback, self._error_callback = callback, error_callback
        threading.Thread(target=self._collect, daemon=True).start()

    def _collect(self):
        try:
            self._items = list(self._pool._results(self._job, "input")) if self._job else []
        except Exception as e:  # the gateway went away: get() says so
            self._items = e
        self._event.set()
        try:
            value = self.get(0)
            if self._callback:
                self._callback(value)
        except Exception as e:
            if self._error_callback:
                self._error_callback(e)

    def ready(self):
        """Whether the result is in: a value or an error."""
        return self._event.is_set()

    def wait(self, timeout=None):
        """Waits until the result is in, or timeout seconds (None: no
        limit)."""
        self._event.wait(timeout)

    def successful(self):
        """Whether every task returned without raising; ValueError while the
        result is not in."""
        if not self.ready():
            raise ValueError("the result is not ready")
        return not isinstance(self._items, Exception) and all(ok for ok, _ in self._items)

    def get(self, timeout=None):
        """The value (a list, for a map), or the exception a task raised,
        raised here; multiprocessing.TimeoutError when it is not in within
        timeout seconds (None: no limit)."""
        if not self._event.wait(timeout):
            raise TimeoutError("the result is not ready after %s s" % timeout)
        if isinstance(self._items, Exception):
            raise self._items
        # Each task's values decoded once: one that came as a value is
        # fetched once (and gone from the gateway after).
        with self._decoding:
            values = _all_inputs(self._items, self._pool._gw, self._decoded, self._single)
        return values[0] if self._single else values


class Pool:
    """multiprocessing.Pool: processes workers (default: one per CPU of the
    gateway's machine), each running initializer(*initargs) once before its
    first task. backend and image as for strand.init; cpu, memory (MiB) and
    gpu size each worker; max_attempts and retry_errors as the gateway's
    pool fields (a task whose function raised runs again, up to
    max_attempts). It ends with the program (its lease,
    strand.gateway._Lease) unless detached. Each method that submits work
    also takes name=, what its job is called where jobs are listed (the
    dashboard, strand jobs)."""

    def __init__(
        self,
        processes=None,
        initializer=None,
        initargs=(),
        *,
        backend=None,
        image=None,
        max_attempts=None,
        retry_errors=None,
        cpu=None,
        memory=None,
        gpu=None,
        gateway=None,
        detached=False,
    ):
        self._gw = gateway or _gateway.default()
        spec = {"runtime": "python"}
        if processes is not None:
            spec["processes"] = processes
        backend = backend or getattr(self._gw, "backend", None)
        image = image or getattr(self._gw, "image", None)
        if backend:
            spec["backend"] = backend
        if image:
            spec["image"] = image
        if max_attempts:
            spec["max_attempts"] = max_attempts
        if retry_errors is not None:
            spec["retry_errors"] = bool(retry_errors)
        resources = {k: v for k, v in (("cpu", cpu), ("memory_mb", memory), ("gpu", gpu)) if v is not None}
        if resources:
            spec["resources"] = resources
        self._init = (cloudpickle.dumps(initializer), tuple(initargs)) if initializer else None
        self._contexts = collections.OrderedDict()  # (id(runner), id(func)): (runner, func, made of, context, refs)
        self._contexts_lock = threading.Lock()
        code = _code.ensure(self._gw)
        if code:
            spec["code"] = code
        if not detached:
            spec["lease"] = self._gw.lease()
        view = self._gw.request("POST", "/v1/pools", spec)
        self.id = view["id"]
        self._output = _output.Output(self._gw, self.id, lease=spec.get("lease"))
        self._processes = view.get("processes") or 1
        self._state = "running"
        self._job_values = {}  # job: its _JobValues, until its results are read

    # ---- submitting -----------------------------------------------------
    def _keep_values(self, job, values):
        """values (a _JobValues) go once job's results are read."""
        if values._refs:
            self._job_values[job] = values

    def _release(self, job):
        values = self._job_values.pop(job, None)
        if values is not None:
            values.release()

    def _context(self, runner, func):
        """The context of func's jobs (_context), kept for the pool's last
        CONTEXTS_KEPT functions while what their pickle is made of is the
        same objects, each unchangeable (_pickling.captured): then it is
        the pickle a new one would be. (Pickling it again for each apply
        cost 0.25 ms of its 0.85.)"""
        made_of = _pickling.captured(func)
        if made_of is None:
            return _context(runner, self._init, func)
        key = (id(runner), id(func))
        with self._contexts_lock:
            kept = self._contexts.get(key)
            if (
                kept is not None
                and kept[0] is runner
                and kept[1] is func
                and len(kept[2]) == len(made_of)
                and all(a is b for a, b in zip(kept[2], made_of))
            ):
                self._contexts.move_to_end(key)
                return kept[3], kept[4]
        context, refs = _context(runner, self._init, func)
        with self._contexts_lock:
            # What it was made of is kept alive: no other object takes its ids.
            self._contexts[key] = (runner, func, made_of, context, refs)
            if len(self._contexts) > CONTEXTS_KEPT:
                self._contexts.popitem(last=False)
        return context, refs

    def _submit(self, func, runner, args, name=None, counts=None):
        """A job running runner (with the function) on each task argument
        in args (_task's); each task's value is a list. The job's id; name:
        what it is called (shown with it), or None; counts: how many inputs
        each task carries (a map's chunks: the job counts by input), or
        None."""
        if self._state != "running":
            raise ValueError("Pool not running")
        context, refs = self._context(runner, func)
        values = _JobValues(self._gw, refs)
        values.start(args)
        try:
            return self._submit_parts(func, context, args, values, name, counts)
        except BaseException:
            values.release()  # the job holds none of them, or cannot run
            raise
        finally:
            values.stop()

    def _submit_parts(self, func, context, args, values, name, counts):
        """_submit's requests: the map with its first part, then the rest."""
        parts = _parts(args, values.inline)
        _, first = next(parts)
        body = {
            "function": _pickling.function_name(func),
            "context": context,
            "args": first,
            "total": len(args),
        }
        if counts is not None:
            body["inputs"] = counts[: len(first)]
            body["input_total"] = sum(counts)
        if name is not None:
            body["name"] = name
        job = self._gw.request("POST", "/v1/pools/%s/map" % self.id, body)["id"]
        self._keep_values(job, values)
        for offset, part in parts:
            more = {"offset": offset, "args": part}
            if counts is not None:
                more["inputs"] = counts[offset : offset + len(part)]
            self._gw.request("POST", "/v1/jobs/%s/args" % job, more)
        self._keep_values(job, values)  # what its later parts uploaded
        return job

    def _default_chunksize(self, n):
        """multiprocessing's: about four chunks a worker."""
        chunksize, extra = divmod(n, self._processes * 4)
        return chunksize + 1 if extra else max(chunksize, 1)

    def _values(self, job, order):
        """Each input's value, in the job's order, chunks unpacked (by
        completion, an input's index counts in that order)."""
        return _inputs(self._results(job, order), self._gw)

    def _list(self, job):
        """Every value of job, in input order; the first input that failed
        raises, after every task ended, as multiprocessing's map. Every
        line its tasks printed is shown before it returns or raises: a
        request only when lines came that the output's follower has not
        shown yet."""
        ended = {}
        try:
            return _all_inputs(list(self._results(job, "input", ended)), self._gw)
        finally:
            self._output.drain(ended.get("output_last"))

    def _results(self, job, order, ended=None):
        """Each result of job as (ok, its value or error text), paged with
        long polls, by columns: a list of values parses faster than an
        object a result, and is a few bytes a result, not some forty.
        ended (a dict): given the last page's output_last, the number of
        the last line the pool had printed once every task had ended."""
        cursor = ""
        while True:
            page = self._gw.request(
                "GET",
                "/v1/jobs/%s/results?order=%s&shape=columns&cursor=%s&limit=%d&wait=%d"
                % (job, order, cursor, PAGE, WAIT_S),
            )
            failed = set(page["failed"])
            if page.get("complete"):
                self._release(job)  # every task ran: its argument values are done with
                if ended is not None:
                    ended["output_last"] = page.get("output_last")
            for at, text in enumerate(page["values"]):
                yield at not in failed, text
            if page.get("complete"):
                return
            cursor = page["next_cursor"]

    def _map_job(self, func, runner, iterable, chunksize, name):
        """The job of a map or starmap, or None for no input."""
        # A list, tuple or range is chunked as it is: its slices are of its
        # own type, and a range's pickle is its bounds, not its numbers
        # (list(range(100000)) alone took 2.4 to 6 ms of a 20 ms map).
        items = iterable if type(iterable) in (list, tuple, range) else list(iterable)
        if chunksize is None:
            chunksize = self._default_chunksize(len(items))
        if chunksize < 1:
            raise ValueError("chunksize must be at least 1")
        if not items:
            return None
        tasks, counts = _chunk_tasks(items, chunksize)
        # A task an input: the job counts them as they are, with no counts sent.
        return self._submit(func, runner, tasks, name, counts if len(tasks) < len(items) else None)

    # ---- multiprocessing.Pool -------------------------------------------
    def apply(self, func, args=(), kwds=None, name=None):
        """func(*args, **kwds) run on one of the workers: its value, or
        what it raised, raised here (the worker's traceback as its cause).
        What it printed is shown before it returns."""
        # One request that answers with the result (POST …/apply?wait=),
        # not a job and a poll: a round trip, as multiprocessing's.
        if self._state != "running":
            raise ValueError("Pool not running")
        context, refs = self._context(_runners.apply, func)
        values = _JobValues(self._gw, refs)
        body = {
            "function": _pickling.function_name(func),
            "context": context,
            "arg": values.inline(_task(tuple(args), dict(kwds or {}))),
        }
        values.stop()
        if name is not None:
            body["name"] = name
        answer = self._gw.request("POST", "/v1/pools/%s/apply?wait=%d" % (self.id, WAIT_S), body, timeout=WAIT_S + 30)
        if "index" not in answer:  # the wait ran out: the job, still running
            self._keep_values(answer["id"], values)
            return AsyncResult(self, answer["id"], True).get()
        values.release()
        # What it printed, before the program goes on: asked for only when
        # the follower has not shown the pool's lines up to the answer's.
        self._output.drain(answer.get("output_last", 0))
        return _value(answer, self._gw)[0]

    def apply_async(self, func, args=(), kwds=None, callback=None, error_callback=None, name=None):
        """apply, returning an AsyncResult at once. Once the result is in,
        callback is called with the value, or error_callback with the
        exception, on a thread of this program's."""
        job = self._submit(func, _runners.apply, [_task(tuple(args), dict(kwds or {}))], name)
        return AsyncResult(self, job, True, callback, error_callback)

    def map(self, func, iterable, chunksize=None, name=None):
        """[func(x) for x in iterable], run on the workers chunksize inputs a
        task (None: about four tasks a worker, as multiprocessing's). The first
        input that failed raises its exception, once every task has ended; what
        the tasks printed is shown before it returns."""
        job = self._map_job(func, _runners.map_chunk, iterable, chunksize, name)
        return self._list(job) if job else []

    def map_async(self, func, iterable, chunksize=None, callback=None, error_callback=None, name=None):
        """map, returning an AsyncResult at once; callback and error_callback
        as apply_async's."""
        job = self._map_job(func, _runners.map_chunk, iterable, chunksize, name)
        return AsyncResult(self, job, False, callback, error_callback)

    def starmap(self, func, iterable, chunksize=None, name=None):
        """map with each item unpacked into func's arguments: func(*item)."""
        job = self._map_job(func, _runners.starmap_chunk, iterable, chunksize, name)
        return self._list(job) if job else []

    def starmap_async(self, func, iterable, chunksize=None, callback=None, error_callback=None, name=None):
        """starmap, returning an AsyncResult at once; callback and
        error_callback as apply_async's."""
        job = self._map_job(func, _runners.starmap_chunk, iterable, chunksize, name)
        return AsyncResult(self, job, False, callback, error_callback)

    def imap(self, func, iterable, chunksize=1, name=None):
        """An iterator of func(x) for x in iterable, in their order, each value
        as soon as it and those before it are in; chunksize inputs a task. An
        input that failed raises its exception when the iterator reaches it."""
        job = self._map_job(func, _runners.map_chunk, iterable, chunksize, name)
        return self._values(job, "input") if job else iter(())

    def imap_unordered(self, func, iterable, chunksize=1, name=None):
        """As imap, in the order the values come in."""
        job = self._map_job(func, _runners.map_chunk, iterable, chunksize, name)
        return self._values(job, "completion") if job else iter(())

    def close(self):
        """No more work: the workers stop once what was submitted has run."""
        if self._state == "running":
            self._gw.request("POST", "/v1/pools/%s/close" % self.id)
            self._state = "closed"

    def terminate(self):
        """Stops the workers now, dropping work not done; what they printed is
        shown first. Leaving a with block calls it."""
        if self._state != "terminated":
            self._output.drain()
            self._gw.request("DELETE", "/v1/pools/%s" % self.id)
            self._state = "terminated"
            self._output.end()

    def join(self):
        """Waits for a closed or terminated pool's workers to end; ValueError
        while it is still running."""
        if self._state == "running":
            raise ValueError("Pool is still running (close or terminate it first)")
        # A closed pool's workers stop once its queued work is done.
        while self._state == "closed":
            if self._gw.request("GET", "/v1/pools/%s" % self.id)["state"] not in ("active", "closing"):
                break
            threading.Event().wait(0.05)
        self._output.end()

    def __enter__(self):
        """The pool itself, for with."""
        return self

    def __exit__(self, *exc):
        """terminate(), as multiprocessing's."""
        self.terminate()
