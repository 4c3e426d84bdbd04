"""The connection to a strand gateway: its URL and API token (strand.init,
or $STRAND_URL and $STRAND_TOKEN / $STRAND_TOKEN_FILE / ./strand.token, as
the strand command reads them), and JSON requests whose refusals (RFC 9457
problem+json) become StrandError.

Each thread keeps one keep-alive connection (http.client), as libstrand
does: urllib opened and closed a TCP connection for every request, a
handshake and an accept on the gateway per apply. A request that finds its
reused connection closed before any byte of the answer came (the gateway
closed it idle, past --http-idle, or restarted) goes once more on a new
one. A process forked from one that had a connection makes its own: the
socket it inherited is its parent's."""

import http.client
import json
import os
import ssl
import threading
import urllib.parse


class StrandError(Exception):
    """The gateway refused a request: its status and its words."""

    def __init__(self, status, detail):
        super().__init__("strand gateway %s: %s" % (status, detail))
        self.status = status
        self.detail = detail


class Gateway:
    def __init__(self, url=None, token=None, ca_file=None):
        self.url = (url or os.environ.get("STRAND_URL") or "http://127.0.0.1:8080").rstrip("/")
        self.token = token or os.environ.get("STRAND_TOKEN") or self._token_file()
        ca = ca_file or os.environ.get("STRAND_CA_FILE")
        self.context = ssl.create_default_context(cafile=ca) if ca else None
        where = urllib.parse.urlsplit(self.url)
        if where.scheme not in ("http", "https") or not where.hostname or where.query or where.fragment:
            raise ValueError("a gateway URL is http:// or https://HOST[:PORT][/PATH], not %r" % self.url)
        self._https = where.scheme == "https"
        self._host = where.hostname
        self._port = where.port
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

    def request_text(self, method, path, timeout=None):
        """The answer as text (a process's logs), or StrandError."""
        return self._send(method, path, None, timeout).decode("utf-8", "replace")

    def _connection(self, timeout):
        """This thread's connection, and whether it served before."""
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            conn.timeout = timeout
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
            return conn, conn.sock is not None
        if self._https:
            conn = http.client.HTTPSConnection(self._host, self._port, timeout=timeout, context=self.context)
        else:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
        self._local.conn, self._local.pid = conn, os.getpid()
        return conn, False

    def _drop(self):
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            conn.close()
        self._local.conn = None

    def _send(self, method, path, body, timeout):
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        for attempt in (0, 1):
            conn, reused = self._connection(timeout)
            try:
                conn.request(method, self._prefix + path, body=data, headers=headers)
                answer = conn.getresponse()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                # Nothing of the answer came: the gateway had closed it.
                self._drop()
                if reused and attempt == 0:
                    continue
                raise
            except BaseException:
                self._drop()
                raise
            try:
                text = answer.read()
            except BaseException:
                self._drop()
                raise
            if answer.will_close:
                self._drop()
            if answer.status >= 400:
                try:
                    detail = json.loads(text).get("detail", answer.reason)
                except (ValueError, AttributeError):
                    detail = answer.reason
                raise StrandError(answer.status, detail)
            return text


_default = None


def init(url=None, token=None, ca_file=None, backend=None, image=None):
    """Where the gateway is, and defaults for new pools, like fiber.init."""
    global _default
    _default = Gateway(url, token, ca_file)
    _default.backend = backend
    _default.image = image
    return _default


def default():
    global _default
    if _default is None:
        init()
    return _default
