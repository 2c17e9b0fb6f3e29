"""HTTP for the suite: one-shot and keep-alive HTTP/1.1 calls, a JSON GET. (Ports: rrsuite.ports.)"""

import http.client
import json


def http_call(port, method, path, body=None, headers=None, timeout=5.0):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        data = response.read()
        return response.status, dict((k.lower(), v) for k, v in response.getheaders()), data
    finally:
        conn.close()


class KeptConnection:
    """One client's keep-alive connection: reused while the server keeps it, opened again after
    a "Connection: close", an error or a timeout (the request's answer is then unknown)."""

    def __init__(self):
        self.conn = None
        self.port = None

    def call(self, port, method, path, body, headers, timeout):
        if self.conn is None or self.port != port:
            self.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
            self.port = port
        elif self.conn.sock is not None:
            self.conn.sock.settimeout(timeout)
        else:
            self.conn.timeout = timeout
        try:
            self.conn.request(method, path, body=body, headers=headers or {})
            response = self.conn.getresponse()
            data = response.read()
        except BaseException:
            self.close()
            raise
        if response.will_close:
            self.close()
        return response.status, dict((k.lower(), v) for k, v in response.getheaders()), data

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def http_get_json(host, port, path, timeout=2.0):
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        data = response.read()
        return response.status, json.loads(data) if data else None
    finally:
        conn.close()
