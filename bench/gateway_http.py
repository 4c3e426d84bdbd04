"""What the bench drivers share: one keep-alive connection to a gateway
(HTTPS checked against ca_file when the URL says https),
as a function that sends a request with the API token and returns the
parsed answer, or its text when it is not JSON (/metrics) (any status
of 300 or more ends the bench with it); a GET
on a connection the gateway closed meanwhile is sent again."""

import http.client
import json
import ssl
import urllib.parse


def connect(url, token, ca_file=None):
    u = urllib.parse.urlsplit(url)
    if u.scheme == "https":
        conn = http.client.HTTPSConnection(u.hostname, u.port, context=ssl.create_default_context(cafile=ca_file))
    else:
        conn = http.client.HTTPConnection(u.hostname, u.port)
    headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}

    def request(method, path, body=None):
        # The gateway closes a keep-alive connection idle past its
        # --http-idle (a client starved of CPU by a thousand workers, or
        # one that ran something else meanwhile, waits that long): a
        # request whose sending failed never reached it and goes again on
        # a new connection; one whose answer did not come, only if a GET.
        try:
            conn.request(method, path, body=body, headers=headers)
        except (ssl.SSLEOFError, ConnectionResetError, BrokenPipeError):
            conn.close()
            conn.request(method, path, body=body, headers=headers)
        try:
            r = conn.getresponse()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            if method != "GET":
                raise
            conn.close()
            conn.request(method, path, body=body, headers=headers)
            r = conn.getresponse()
        data = r.read()
        if r.status >= 300:
            raise SystemExit("%s %s: %d %s" % (method, path, r.status, data[:300]))
        if not r.getheader("Content-Type", "").startswith("application/json"):
            return data.decode()
        return json.loads(data)

    return request
