"""The connection to a strand gateway: its URL and API token (strand.init,
or $STRAND_URL and $STRAND_TOKEN / $STRAND_TOKEN_FILE / ./strand.token, as
the strand command reads them), and JSON requests whose refusals (RFC 9457
problem+json) become StrandError."""

import json
import os
import ssl
import urllib.error
import urllib.request


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

    def _send(self, method, path, body, timeout):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=self.context) as r:
                return r.read()
        except urllib.error.HTTPError as e:
            try:
                detail = json.loads(e.read()).get("detail", e.reason)
            except ValueError:
                detail = e.reason
            raise StrandError(e.code, detail) from None


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
