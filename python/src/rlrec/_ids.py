"""UUIDv7 ids (RFC 9562) and episode record ids.

Python 3.11's uuid module has no uuid7, so it is built here: 48 bits of
Unix milliseconds, version 7, 12 bits that count up within one millisecond
(so ids minted by one process sort in minting order), the RFC variant and
62 random bits.
"""

from __future__ import annotations

import os
import threading
import time
import uuid

_lock = threading.Lock()
_last_ms = 0
_counter = 0


def uuid7(now_ns: int | None = None) -> str:
    """A new UUIDv7 as its canonical lowercase string."""
    global _last_ms, _counter
    ms = (time.time_ns() if now_ns is None else now_ns) // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    with _lock:
        if ms > _last_ms:
            _last_ms, _counter = ms, (rand >> 68) & 0x3FF  # start low in the 12 bits
        else:
            _counter += 1
            if _counter > 0xFFF:  # 4,096 ids in one millisecond: borrow the next
                _last_ms, _counter = _last_ms + 1, 0
            ms = _last_ms
        seq = _counter
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= seq << 64
    value |= 0b10 << 62
    value |= rand & ((1 << 62) - 1)
    return str(uuid.UUID(int=value))


def record_id(index: int) -> str:
    """The episode record id of the index-th episode of a run: ep-000001."""
    return f"ep-{index:06d}"
