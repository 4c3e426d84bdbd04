"""What the bench drivers share: one keep-alive connection to a gateway
(HTTPS checked against ca_file when the URL says https),
as a function that sends a request with the API token and returns the
parsed answer (any status of 300 or more ends the bench with it); a GET
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
        try:
            conn.request(method, path, body=body, headers=headers)
            r = conn.getresponse()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            # The gateway closes a keep-alive connection idle past its
            # --http-idle; a GET is asked again on a new one (a client
            # starved of CPU by a thousand workers waits that long).
            if method != "GET":
                raise
            conn.close()
            conn.request(method, path, body=body, headers=headers)
            r = conn.getresponse()
        data = r.read()
        if r.status >= 300:
            raise SystemExit("%s %s: %d %s" % (method, path, r.status, data[:300]))
        return json.loads(data)

    return request
