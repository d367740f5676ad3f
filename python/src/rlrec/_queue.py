"""A byte-bounded hand-off of events from the run's thread to a sender
thread, so that a hook never waits on the destination longer than a bound.

The run's thread puts groups of events (the events of one hook call); a
thread of the queue's own delivers them in order to the destination
(``rlrec serve``'s client or ``rlrec ingest``'s standard input). Groups
that carry step data are *droppable*: when the queued bytes would pass
``max_bytes``, the hook waits at most ``max_wait`` seconds for room, then
drops the whole group and counts it (``max_wait=None``: it waits for room
however long it takes, and nothing is dropped). Lifecycle groups (a run's and an
episode's start and end, log lines) are never dropped: they are small, and
without them the recording would not be readable. ``drain`` waits until
everything put so far is delivered; an error of the destination is raised
from the next ``put`` or ``drain``.

With a ``spool`` (see _spool.py), ``put`` hands the group to
``spool.write(events, encoded)`` (the events and their serialized bytes,
made here once) when there is room, before queueing it and before the
hook returns: it numbers the events, writes them to the spool and returns
what the sender delivers. When that write fails (a full
disk), a droppable group is dropped and counted like one that found no
room; a lifecycle group goes on in memory only (``spool.memory(events,
encoded)``).
The spool's failures are counted in ``spool_failures``.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._pb import events_pb2

__all__ = ["Drops", "EventQueue"]

# The bytes an event's sequence field adds at most (tag and a varint).
SEQUENCE_BYTES = 11


@dataclass
class Drops:
    """What a queue dropped: groups (hook calls), events and their bytes."""

    groups: int = 0
    events: int = 0
    bytes: int = 0


class EventQueue:
    """Events from hooks to deliver(event), from a thread of its own."""

    def __init__(
        self,
        deliver: Callable[[Any], None],
        *,
        max_bytes: int,
        max_wait: float | None,
        spool: Any = None,
    ) -> None:
        if max_bytes < 1:
            raise ValueError(f"max_queue_bytes must be positive, got {max_bytes}")
        if max_wait is not None and max_wait < 0:
            raise ValueError(f"max_wait must be >= 0 seconds, got {max_wait}")
        self._deliver = deliver
        self.spool = spool
        self.spool_failures = 0
        self.spool_error: OSError | None = None
        self.max_bytes, self.max_wait = max_bytes, max_wait
        self._cv = threading.Condition()
        self._q: deque[tuple[Any, int]] = deque()
        self._queued = 0  # bytes in _q plus the event being delivered
        self._busy = False
        self._error: BaseException | None = None
        self._closed = False
        self.drops = Drops()
        self._thread = threading.Thread(target=self._run, name="rlrec-capture-sender", daemon=True)
        self._thread.start()

    def put(self, events: list[events_pb2.Event], *, droppable: bool) -> bool:
        """Queues events as one group; False if the group was dropped."""
        if self.spool is not None:
            # Serialized once, here: the spool writes these bytes.
            encoded = [ev.SerializeToString() for ev in events]
            sizes = [len(d) + SEQUENCE_BYTES for d in encoded]
        else:
            encoded = None
            sizes = [ev.ByteSize() for ev in events]
        size = sum(sizes)
        with self._cv:
            self._raise_locked()
            if droppable and self._queued + size > self.max_bytes and self._queued > 0:
                deadline = None if self.max_wait is None else time.monotonic() + self.max_wait
                while self._queued + size > self.max_bytes and self._queued > 0 and self._error is None:
                    if deadline is None:
                        self._cv.wait()
                        continue
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cv.wait(left)
                self._raise_locked()
                if self._queued + size > self.max_bytes and self._queued > 0:
                    self._drop_locked(len(events), size)
                    return False
            items: list[Any] = events
            if self.spool is not None:
                try:
                    items = self.spool.write(events, encoded)
                except OSError as exc:
                    self.spool_failures += 1
                    self.spool_error = exc
                    if droppable:
                        self._drop_locked(len(events), size)
                        return False
                    items = self.spool.memory(events, encoded)
            for ev, n in zip(items, sizes, strict=True):
                self._q.append((ev, n))
            self._queued += size
            self._cv.notify_all()
            return True

    def _drop_locked(self, events: int, size: int) -> None:
        self.drops.groups += 1
        self.drops.events += events
        self.drops.bytes += size

    def drain(self, timeout: float | None = None) -> None:
        """Waits until every queued event is delivered (TimeoutError after
        timeout seconds); raises the destination's error."""
        with self._cv:
            ok = self._cv.wait_for(lambda: (not self._q and not self._busy) or self._error is not None, timeout)
            self._raise_locked()
            if not ok:
                raise TimeoutError(
                    f"rlrec: {len(self._q)} events ({self._queued} bytes) still undelivered after {timeout} s"
                )

    def pending(self) -> int:
        """Events put and not yet handed to the destination (the one being
        delivered included)."""
        with self._cv:
            return len(self._q) + (1 if self._busy else 0)

    def take_drops(self) -> Drops:
        """The drops since the last call, reset to zero."""
        with self._cv:
            d, self.drops = self.drops, Drops()
            return d

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify_all()
        self._thread.join()

    def _raise_locked(self) -> None:
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        while True:
            with self._cv:
                self._cv.wait_for(lambda: self._q or self._closed)
                if not self._q:
                    return
                ev, n = self._q.popleft()
                self._busy = True
            try:
                if self._error is None:
                    self._deliver(ev)
            except BaseException as exc:  # handed to the run's thread
                with self._cv:
                    self._error = exc
            finally:
                with self._cv:
                    self._queued -= n
                    self._busy = False
                    self._cv.notify_all()
