"""What the bench drivers share: one keep-alive connection to a gateway,
as a function that sends a request with the API token and returns the
parsed answer (any status of 300 or more ends the bench with it)."""

import http.client
import json
import urllib.parse


def connect(url, token):
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port)
    headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}

    def request(method, path, body=None):
        conn.request(method, path, body=body, headers=headers)
        r = conn.getresponse()
        data = r.read()
        if r.status >= 300:
            raise SystemExit("%s %s: %d %s" % (method, path, r.status, data[:300]))
        return json.loads(data)

    return request
