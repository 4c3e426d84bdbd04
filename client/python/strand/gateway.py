"""The connection to a strand gateway: its URL and API token (strand.init,
or $STRAND_URL and $STRAND_TOKEN / $STRAND_TOKEN_FILE / ./strand.token, as
the strand command reads them), and JSON requests whose refusals (RFC 9457
problem+json) become StrandError.

Each thread keeps one keep-alive connection, as libstrand does: urllib
opened and closed a TCP connection for every request, a handshake and an
accept on the gateway per apply. A request goes in one write (http.client
writes its head and its body apart: two segments, and the gateway's HTTP
thread woken for each), its body in pieces (strand._body) that are never
joined into one buffer. Its answer is read here (_read_answer):
http.client parses headers with the email package, a third of a small
request's time in the client. A request that finds its reused connection
closed before any byte of the answer came (the gateway closed it idle,
past --http-idle, or restarted) goes once more on a new one. A process
forked from one that had a connection makes its own: the socket it
inherited is its parent's."""

import atexit
import json
import os
import sys
import socket
import threading

from . import _body, _pid, _worker


IOV_MAX = 1024  # pieces a write takes (Linux's)
JOIN_MAX = 1 << 20  # a request over TLS up to this is copied into one write
HEAD_MAX = 64 << 10  # an answer's status line and headers, at most (the gateway's are a few hundred bytes)


class _Closed(ConnectionError):
    """The connection ended before any byte of the answer came."""


def _printable(text):
    """Nothing in text may end a line or a field of a request's head."""
    return text.isascii() and text.isprintable() and " " not in text


def _read_answer(rfile, method):
    """One HTTP/1.1 answer from rfile: (status, reason, body bytes, whether
    the gateway closes the connection after it)."""
    status_line = rfile.readline(HEAD_MAX)
    if not status_line:
        raise _Closed("the gateway closed the connection")
    version, _, rest = status_line.decode("latin-1").rstrip("\r\n").partition(" ")
    code, _, reason = rest.partition(" ")
    if not version.startswith("HTTP/1.") or not code.isdigit():
        raise ConnectionError("not an HTTP answer: %r" % status_line[:80])
    status = int(code)
    length, chunked, close, size = None, False, version == "HTTP/1.0", 0
    while True:
        line = rfile.readline(HEAD_MAX)
        size += len(line)
        if not line or size > HEAD_MAX:
            raise ConnectionError("the answer's head ended early or is too long")
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("latin-1").partition(":")
        name, value = name.strip().lower(), value.strip()
        if name == "content-length":
            length = int(value)
        elif name == "transfer-encoding":
            chunked = value.lower() == "chunked"
        elif name == "connection":
            close = value.lower() == "close"
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        return status, reason, b"", close
    if chunked:
        parts = []
        while True:
            n = int(rfile.readline(HEAD_MAX).split(b";")[0], 16)
            if n == 0:
                while rfile.readline(HEAD_MAX) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return status, reason, b"".join(parts), close
            parts.append(_read_exactly(rfile, n))
            rfile.readline(HEAD_MAX)
    if length is None:  # to the connection's end
        return status, reason, rfile.read(), True
    return status, reason, _read_exactly(rfile, length), close


def _write(sock, pieces, tls):
    """Writes pieces (bytes-like) in order: a request, its head and body
    in one system call (and one segment) when they fit, never copied into
    one buffer. A TLS socket has no sendmsg: a request up to JOIN_MAX is
    joined and written at once, a larger one a piece at a time."""
    if tls:
        for piece in [b"".join(pieces)] if sum(map(len, pieces)) <= JOIN_MAX else pieces:
            sock.sendall(piece)
        return
    at = 0
    while at < len(pieces):
        sent = sock.sendmsg(pieces[at : at + IOV_MAX])
        while at < len(pieces) and sent >= len(pieces[at]):
            sent -= len(pieces[at])
            at += 1
        if sent:
            pieces[at] = memoryview(pieces[at])[sent:]


def _read_exactly(rfile, n):
    data = rfile.read(n)
    if len(data) != n:
        raise ConnectionError("the answer ended after %d of its %d bytes" % (len(data), n))
    return data


class StrandError(Exception):
    """The gateway refused a request: its status and its words."""

    def __init__(self, status, detail):
        super().__init__("strand gateway %s: %s" % (status, detail))
        self.status = status
        self.detail = detail


class Gateway:
    def __init__(self, url=None, token=None, ca_file=None):
        self.url = (url or os.environ.get("STRAND_URL") or "http://127.0.0.1:8080").rstrip("/")
        self._value_max = None  # the gateway's --max-value-bytes, asked once
        self.token = token or os.environ.get("STRAND_TOKEN") or self._token_file()
        ca = ca_file or os.environ.get("STRAND_CA_FILE")
        # ssl and urllib.parse here, not at the top: a program's modules
        # import this one on every worker (ssl alone is 7 ms of a runtime's
        # start), and a worker seldom reaches a gateway itself.
        if ca:
            import ssl

            self.context = ssl.create_default_context(cafile=ca)
        else:
            self.context = None
        import urllib.parse

        where = urllib.parse.urlsplit(self.url)
        if where.scheme not in ("http", "https") or not where.hostname or where.query or where.fragment:
            raise ValueError("a gateway URL is http:// or https://HOST[:PORT][/PATH], not %r" % self.url)
        self._https = where.scheme == "https"
        self._host = where.hostname
        self._port = where.port
        self._authority = where.netloc.rpartition("@")[2]  # HOST[:PORT] as written: [v6] keeps its brackets
        self._prefix = where.path
        self._local = threading.local()

    @staticmethod
    def _token_file():
        path = os.environ.get("STRAND_TOKEN_FILE", "strand.token")
        try:
            with open(path) as f:
                return f.read().strip()
        except OSError:
            return None

    def request(self, method, path, body=None, timeout=None):
        """The answer's JSON, or StrandError."""
        text = self._send(method, path, body, timeout)
        return json.loads(text) if text else None

    def request_bytes(self, method, path, data, content_type, timeout=None, tail=b""):
        """Sends data (bytes), then tail, as the body (neither copied into
        the other); the answer's JSON, or StrandError."""
        text = self._send(method, path, None, timeout, raw=(data, content_type), tail=tail)
        return json.loads(text) if text else None

    def put_value(self, data, fresh=False, name=None, tail=b""):
        """Uploads data (bytes) and tail as a value (PUT
        /v1/values/{sha256}) unless the gateway holds it already (fresh:
        named uniquely, so not asked); what a task's argument is to name
        it. name: its SHA-256 (hex) when the caller hashed it already."""
        # Past the cap it would be refused before its body is read, and a
        # client still sending may lose that answer to the connection's reset.
        if self._value_max is None:
            self._value_max = self.request("GET", "/v1/values")["max_bytes"]
        if len(data) + len(tail) > self._value_max:
            raise StrandError(
                413,
                "a value of %d bytes (pickled) is over the gateway's %d byte cap (--max-value-bytes)"
                % (len(data) + len(tail), self._value_max),
            )
        if name is None:
            import hashlib

            hashed = hashlib.sha256(data)
            hashed.update(tail)
            name = hashed.hexdigest()
        try:
            if fresh:
                raise StrandError(404, "not asked")
            self._send("HEAD", "/v1/values/" + name, None, 60)
        except StrandError as e:
            if e.status != 404:
                raise
            self.request_bytes("PUT", "/v1/values/" + name, data, "application/octet-stream", timeout=600, tail=tail)
        return {"$value": name}

    def get_value(self, name):
        """The bytes of the value named name."""
        return self._send("GET", "/v1/values/" + name, None, 600)

    def take_value(self, name):
        """The bytes of the value named name, which is then removed: a
        task's result too large to come inline, read once."""
        data = self.get_value(name)
        self.request("DELETE", "/v1/values/" + name)
        return data

    def request_text(self, method, path, timeout=None):
        """The answer as text (a process's logs), or StrandError."""
        return self._send(method, path, None, timeout).decode("utf-8", "replace")

    def _connection(self, timeout):
        """This thread's socket to the gateway, and whether it served before."""
        line = getattr(self._local, "line", None)
        if line is not None and line.pid == _pid.current():
            line.sock.settimeout(timeout)
            return line, True
        sock = socket.create_connection((self._host, self._port or (443 if self._https else 80)), timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._https:
                import ssl  # see __init__

                context = self.context or ssl.create_default_context()
                sock = context.wrap_socket(sock, server_hostname=self._host)
        except BaseException:
            sock.close()
            raise
        # A forked process's copy of its parent's line is closed here: its
        # descriptor only, the parent's connection goes on.
        self._local.line = line = _Line(sock)
        return line, False

    def close(self):
        """Closes this thread's connection (the next request opens one)."""
        self._local.line = None

    def lease(self):
        """The id of this program's lease, made at its first use."""
        with _lease_lock:
            held = getattr(self, "_lease", None)
            if held is None or held.pid != _pid.current() or held.ended.is_set():
                held = self._lease = _Lease(self)
            return held.id

    def lease_lost(self):
        """The gateway answered that this program's lease ended (it ran
        out): the next lease() makes another."""
        with _lease_lock:
            held = getattr(self, "_lease", None)
            if held is not None and held.pid == _pid.current():
                held.ended.set()

    def _send(self, method, path, body, timeout, raw=None, tail=b""):
        if raw:
            data, content_type = raw
            pieces = [data]
        else:
            pieces, content_type = (_body.pieces(body) if body is not None else []), "application/json"
        if tail:
            pieces.append(tail)
        target = self._prefix + path
        # Written into the request as they are: nothing in them may end a
        # line or a field (a pool id from the caller, a token from a file).
        for text in (method, target, self.token or ""):
            if not _printable(text):
                raise ValueError("a request's method, path or token with a space or a control character: %r" % text)
        head = "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\n" % (
            method,
            target,
            self._authority,
            content_type,
        )
        if self.token:
            head += "Authorization: Bearer %s\r\n" % self.token
        if body is not None or raw or method in ("POST", "PUT", "PATCH"):
            head += "Content-Length: %d\r\n" % sum(map(len, pieces))
        head = (head + "\r\n").encode("latin-1")
        for attempt in (0, 1):
            line, reused = self._connection(timeout)
            try:
                _write(line.sock, [head] + pieces, self._https)
                status, reason, text, close = _read_answer(line.rfile, method)
            except (_Closed, BrokenPipeError, ConnectionResetError):
                # Nothing of the answer came: the gateway had closed it.
                self.close()
                if reused and attempt == 0:
                    continue
                raise
            except BaseException:
                self.close()
                raise
            if close:
                self.close()
            if status >= 400:
                try:
                    detail = json.loads(text).get("detail", reason)
                except (ValueError, AttributeError):
                    detail = reason
                raise StrandError(status, detail)
            return text


LEASE_S = 10  # a program killed (kill -9) ends what it made this long after
# Called as the program's lease ends at its exit, before the gateway hears
# it: what the program holds under the lease is settled first (a queue's
# items read ahead, told used or given back: strand.queues).
before_lease_ends = []


class _Lease:
    """This program's lease (POST /v1/leases) on the pools, processes and
    managers it makes: renewed by a daemon thread four times a lease, and
    deleted at exit (a normal end, an exception, Ctrl-C, a multiprocessing
    child's end), which terminates them; a program killed outright stops
    renewing, and they end one lease later. Resources made with
    detached=True hold none."""

    def __init__(self, gw):
        self.id = gw.request("POST", "/v1/leases", {"lease_s": LEASE_S})["id"]
        self.pid = _pid.current()
        self.ended = threading.Event()
        threading.Thread(target=self._renew, args=(gw,), name="strand-lease", daemon=True).start()
        atexit.register(self.end, gw)
        mp_process = sys.modules.get("multiprocessing.process")
        if mp_process is not None and mp_process.parent_process() is not None:
            # A multiprocessing child leaves by os._exit, past atexit, after
            # its own exit hooks: the lease ends there, not a lease later.
            sys.modules["multiprocessing.util"].Finalize(None, self.end, args=(gw,), exitpriority=0)

    def _renew(self, gw):
        while not self.ended.wait(LEASE_S / 4):
            try:
                gw.request("POST", "/v1/leases/%s/renew" % self.id, timeout=LEASE_S)
            except StrandError as e:
                if e.status == 404:  # it ran out (the program stood still): what it held is gone
                    print("strand: lease %s ended: the gateway terminated what this program made" % self.id,
                          file=sys.stderr)
                    self.ended.set()
            except OSError:
                pass  # the gateway restarts: it gives the lease its whole time again

    def end(self, gw):
        if _pid.current() != self.pid or self.ended.is_set():
            return  # a forked child's copy: the parent's lease is the parent's
        for settle in list(before_lease_ends):
            settle()
        self.ended.set()
        try:
            gw.request("DELETE", "/v1/leases/" + self.id, timeout=5)
        except (StrandError, OSError):
            pass


class _Line:
    """A thread's socket to the gateway, closed once nothing holds it (the
    thread ended, the connection was dropped)."""

    def __init__(self, sock):
        self.sock = sock
        self.rfile = sock.makefile("rb")
        self.pid = _pid.current()

    def __del__(self):
        self.rfile.close()
        self.sock.close()


_default = None
_lease_lock = threading.Lock()


def init(url=None, token=None, ca_file=None, backend=None, image=None, working_dir=".", py_modules=None, excludes=None):
    """Where the gateway is, and defaults for new pools, like fiber.init.

    What the workers run in (strand._code): working_dir (default: the
    current directory; None: no folder) is their working directory and on
    their sys.path, with py_modules (modules or paths) and the modules the
    program imported from outside it and the interpreter's library; names
    matching excludes (fnmatch patterns; a pattern with a slash matches the
    path from working_dir) stay behind."""
    global _default
    _default = Gateway(url, token, ca_file)
    _default.backend = backend
    _default.image = image
    _default.working_dir = working_dir
    _default.py_modules = list(py_modules or ())
    _default.excludes = list(excludes or ())
    return _default


def default():
    global _default
    if _default is None:
        if _worker.inside() and not os.environ.get("STRAND_URL"):
            # A task holds no API token (it reaches its own work only):
            # said plainly, not as a refused connection to the default URL.
            raise RuntimeError(
                "strand: a task (or a process it started) cannot make pools, processes, managers or queues: "
                "make them in the program and pass them to it, or name a gateway with strand.init(url, token)"
            )
        init()
    return _default
