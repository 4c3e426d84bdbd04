"""A request's JSON body as pieces of bytes, written one after another
(socket.sendmsg), not joined: a task's pickled argument is base64 bytes,
and json.dumps of a map's 530 KB of them, with its encode, copied every
byte twice into fresh memory and checked each for escapes (3.5 ms of a
22 ms map of a list of 100,000 numbers). Bytes in the body are such text
(A-Z, a-z, 0-9, +, /, =: nothing to escape) and go out as a JSON string
as they are; everything else is json's, without spaces."""

import json

# A list of more bytes than this is joined into one piece (b'","'.join,
# C's speed): a map of 100,000 one-input tasks would be 200,000 pieces.
FEW = 64
# Pieces under this are joined with their neighbours: a write takes at
# most IOV_MAX (1,024) of them, and each costs the kernel a copy of its own.
SMALL = 4096
_dumps = json.JSONEncoder(separators=(",", ":")).encode  # no spaces, in C


def pieces(body):
    """body (dicts, lists, tuples, bytes and what json.dumps takes) as a
    list of bytes-like pieces whose concatenation is its JSON."""
    out = []
    _add(body, out)
    return _merged(out)


def _add(value, out):
    kind = type(value)
    if kind is bytes:
        out += (b'"', value, b'"')
    elif kind is dict:
        out.append(b"{")
        for n, (key, item) in enumerate(value.items()):
            # A key that is not a string becomes one, as json makes it (1: "1").
            key = key if type(key) is str else _dumps(key)
            out.append((b"," if n else b"") + _dumps(key).encode() + b":")
            _add(item, out)
        out.append(b"}")
    elif kind is list or kind is tuple:
        _add_list(value, out)
    else:
        out.append(_dumps(value).encode())


def _add_list(items, out):
    if len(items) > FEW:
        try:
            out += (b'["', b'","'.join(items), b'"]')  # all bytes: one piece, in C
            return
        except TypeError:
            pass
    try:
        out.append(_dumps(items).encode())  # no bytes in it
        return
    except TypeError:
        pass
    out.append(b"[")
    for n, item in enumerate(items):
        if n:
            out.append(b",")
        _add(item, out)
    out.append(b"]")


def _merged(out):
    """out with each run of small pieces joined into one."""
    merged, run = [], []
    for piece in out:
        if len(piece) < SMALL:
            run.append(piece)
            continue
        if run:
            merged.append(b"".join(run))
            run = []
        merged.append(piece)
    if run:
        merged.append(b"".join(run))
    return merged
