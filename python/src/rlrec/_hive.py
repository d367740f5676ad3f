"""Partition directory names of a ROOT, as the Go recorder writes them
(internal/hive): a value is percent-encoded (every byte outside
``A-Za-z0-9-_.~`` as ``%XX``, upper-case hex), ``.`` and ``..`` are
``%2E`` and ``%2E%2E``, the dot of a trailing ``.tmp`` is ``%2E``, and an
escaped value longer than 200 bytes is cut at an escape boundary and
followed by ``~`` and 16 hex digits of the value's SHA-256. These numbers
are part of the on-disk layout: do not change them.
"""

from __future__ import annotations

import hashlib
from urllib.parse import unquote_to_bytes

__all__ = ["decode_value", "encode_value"]

MAX_VALUE_LEN = 200  # do not change: on-disk layout
HASH_DIGITS = 16  # do not change: on-disk layout
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~")


def _escape(s: str) -> str:
    if s == ".":
        return "%2E"
    if s == "..":
        return "%2E%2E"
    out = []
    for c in s.encode("utf-8"):
        out.append(chr(c) if c in _UNRESERVED else f"%{c:02X}")
    e = "".join(out)
    if e.endswith(".tmp"):
        e = e[: -len(".tmp")] + "%2Etmp"
    return e


def encode_value(s: str) -> str:
    """The directory form of partition value s."""
    e = _escape(s)
    if len(e) <= MAX_VALUE_LEN:
        return e
    cut = MAX_VALUE_LEN
    i = e[cut - 2 : cut].rfind("%")
    if i >= 0:
        cut = cut - 2 + i
    return e[:cut] + "~" + hashlib.sha256(s.encode("utf-8")).hexdigest()[:HASH_DIGITS]


def decode_value(name: str) -> str:
    """The value of a directory name's value part (a cut one stays cut)."""
    return unquote_to_bytes(name).decode("utf-8", "replace")
