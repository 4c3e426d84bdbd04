"""A request's body as pieces (strand._body) and their writing
(strand.gateway._write), without a gateway: the pieces make the JSON
json.dumps makes of the same body with its bytes as text (no spaces), and every byte
goes out once, in order, however little each system call takes."""

import base64
import json
import os
import socket
import threading
import unittest

from strand import _body, gateway


def as_text(value):
    """value with its bytes made str: what json.dumps must write."""
    if isinstance(value, bytes):
        return value.decode("ascii")
    if isinstance(value, dict):
        return {key: as_text(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_text(item) for item in value]
    return value


def b64(n, seed=0):
    return base64.b64encode(bytes((seed + i) % 251 for i in range(n)))


class PiecesTest(unittest.TestCase):
    def same_json(self, body):
        got = b"".join(_body.pieces(body))
        self.assertEqual(got, json.dumps(as_text(body), separators=(",", ":")).encode())
        self.assertEqual(json.loads(got), as_text(body))

    def test_bodies_without_bytes_are_json_dumps_own(self):
        for body in ({}, [], {"a": None, "b": [1, 2.5, True], "é": "ü\n\"\\"}, {"n": list(range(1000))}):
            self.same_json(body)

    def test_keys_that_are_not_strings_become_json_s_strings(self):
        body = {1: "a", None: 2, 2.5: [b"eA=="], False: {3: b""}}
        got = b"".join(_body.pieces(body))
        self.assertEqual(got, json.dumps(as_text(body), separators=(",", ":")).encode())
        self.assertEqual(json.loads(got), {"1": "a", "null": 2, "2.5": ["eA=="], "false": {"3": ""}})

    def test_a_map_of_a_few_large_arguments(self):
        self.same_json({"function": "m.f", "context": "eA==", "args": [b64(70000, s) for s in range(8)], "total": 8})

    def test_a_map_of_many_small_arguments(self):
        self.same_json({"args": [b64(n % 40) for n in range(100000)], "inputs": [1] * 100000})

    def test_arguments_mixed_with_values_and_references(self):
        args = [b64(10), {"$value": "ab" * 32}, {"$refs": ["cd" * 32], "arg": b64(5000)}, b64(0)]
        self.same_json({"args": args * 30, "apply": {"arg": b64(9000)}, "nested": [[b64(3)], (b64(4), 5)]})

    def test_bytes_stay_pieces_of_their_own(self):
        # The large arguments are the caller's own bytes, not copies.
        args = [b64(70000, s) for s in range(3)]
        out = _body.pieces({"args": args})
        for arg in args:
            self.assertTrue(any(piece is arg for piece in out))
        self.assertEqual(len(out), 7)  # each argument, and what is between them joined

    def test_anything_else_json_refuses_is_refused(self):
        for body in ({"x": object()}, [b64(4), {1, 2}], {"x": bytearray(b"ab")}):
            with self.assertRaises(TypeError):
                _body.pieces(body)


class TakesSome:
    """A socket whose every sendmsg takes at most `most` bytes (a fake: a
    real one takes what its buffer holds, which a test cannot choose)."""

    def __init__(self, most):
        self.most, self.sent, self.calls = most, bytearray(), []

    def sendmsg(self, buffers):
        self.calls.append(len(buffers))
        room = self.most
        for buf in buffers:
            part = bytes(buf[:room])
            self.sent += part
            room -= len(part)
            if not room:
                break
        return self.most - room


class Writes:
    """A TLS socket's stand-in (a fake: no sendmsg, each sendall kept)."""

    def __init__(self):
        self.writes = []

    def sendall(self, data):
        self.writes.append(bytes(data))


class WriteTest(unittest.TestCase):
    def test_over_tls_one_write_unless_large(self):
        small = [b"POST / HTTP/1.1\r\n\r\n"] + _body.pieces({"args": [b64(9000, s) for s in range(4)]})
        sock = Writes()
        gateway._write(sock, list(small), True)
        self.assertEqual(sock.writes, [b"".join(small)])
        large = [b"PUT / HTTP/1.1\r\n\r\n", os.urandom(gateway.JOIN_MAX), b"tail"]
        sock = Writes()
        gateway._write(sock, list(large), True)
        self.assertEqual(sock.writes, large)

    def test_every_byte_once_in_order_whatever_each_call_takes(self):
        pieces = [os.urandom(n) for n in (0, 1, 3, 4096, 70000, 5, 0, 2)] + [b"x%d" % i for i in range(3000)]
        whole = b"".join(pieces)
        for most in (1, 7, 4096, 65536, 1 << 30):
            sock = TakesSome(most)
            gateway._write(sock, list(pieces), False)
            self.assertEqual(bytes(sock.sent), whole, most)
            self.assertTrue(all(n <= gateway.IOV_MAX for n in sock.calls))

    def test_a_small_request_is_one_call(self):
        sock = TakesSome(1 << 30)
        gateway._write(sock, [b"POST / HTTP/1.1\r\n\r\n"] + _body.pieces({"arg": b64(300)}), False)
        self.assertEqual(sock.calls, [2])

    def test_over_a_real_socket_with_a_slow_reader(self):
        pieces = [b64(200000, s) for s in range(5)] + [b"," * 10] * 2000
        whole = b"".join(pieces)
        ours, theirs = socket.socketpair()
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        got = bytearray()

        def read():
            while len(got) < len(whole):
                got.extend(theirs.recv(3000))

        reader = threading.Thread(target=read)
        reader.start()
        ours.settimeout(30)
        gateway._write(ours, pieces, False)
        reader.join(30)
        self.assertEqual(bytes(got), whole)
        ours.close()
        theirs.close()


if __name__ == "__main__":
    unittest.main()
