"""The capture's local spool: what makes a hook that returned survive
``kill -9`` of the Python process.

Format (the same as the Rust crate rlrec-hooks' spool, so one tool reads
both): a spool directory holds, per captured run, one or more segments,
each two files named ``RUN-NNNNNN`` (RUN the run's nonce as 32 lowercase
hex digits, NNNNNN the segment's number from 000001; a run's events are
its segments in name order):

- ``RUN-NNNNNN.events``: the segment's events, each an
  ``rlrec.events.v1.Event`` preceded by its length as a base-128 varint
  (the stream ``rlrec ingest`` reads: ``cat RUN-*.events | rlrec ingest
  --out ROOT -``). A hook's events are written with one ``os.writev`` (one write(2) call)
  before the hook returns: they are then in the kernel's page cache and
  outlive the process (not a power cut: the spool is never fsynced).
  Events carry their sequence numbers and the run's nonce, so a resend
  is recognised by ``rlrec serve``, which drops what it has.
- ``RUN-NNNNNN.acked``: 8 bytes, little-endian: the length of the prefix
  of the events file that ``rlrec serve`` has acknowledged. It may lag:
  what lies between the true and the written acknowledgement is resent
  and dropped by the server as already recorded.

A live capture holds an exclusive ``flock`` on each of its events files;
the kernel releases it when the process dies. A starting capture takes
over every events file of the directory it can lock (a dead run), cuts a
torn last event (a hook that never returned), and resends what lies past
its acknowledgement. A segment whose events are all acknowledged is
removed; a run starts a new segment past ``segment_bytes``. The names and
sizes here are on-disk format: do not change them.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections import deque
from dataclasses import dataclass

__all__ = ["ACKED_SUFFIX", "EVENTS_SUFFIX", "Recovered", "Segment", "Spool", "frame", "recover", "split", "varint"]

EVENTS_SUFFIX = ".events"  # on-disk name: do not change
ACKED_SUFFIX = ".acked"  # on-disk name: do not change
ACKED_LEN = 8  # one u64, little-endian: do not change
_IOV_MAX = 1024  # Linux's limit of buffers in one writev


def segment_name(run: str, n: int) -> str:
    """The name of run's segment n, without suffix. On-disk: do not change."""
    return f"{run}-{n:06d}"


def varint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def frame(data: bytes) -> bytes:
    """data with its length prefix, as the spool and rlrec ingest hold it."""
    return varint(len(data)) + data


def split(data: bytes) -> tuple[list[tuple[bytes, int]], int]:
    """The complete events of a spool's bytes, each with the offset just
    after it, and the offset where the complete events end."""
    out: list[tuple[bytes, int]] = []
    pos, n = 0, len(data)
    while pos < n:
        v = shift = 0
        i = pos
        while i < n and i - pos < 10:
            b = data[i]
            v |= (b & 0x7F) << shift
            shift += 7
            i += 1
            if not b & 0x80:
                break
        else:
            break
        if data[i - 1] & 0x80 or i + v > n:
            break
        out.append((data[i : i + v], i + v))
        pos = i + v
    return out, pos


class SpoolError(OSError):
    """The spool could not be written or read: the message names the file."""


def _err(what: str, path: str, exc: OSError) -> SpoolError:
    return SpoolError(exc.errno, f"rlrec spool: {what} {path}: {exc.strerror or exc}")


class Segment:
    """One open segment (events file locked by this process, acked file)."""

    def __init__(self, events_path: str, fd: int, acked_fd: int, end: int) -> None:
        self.events_path = events_path
        self.fd, self.acked_fd, self.end = fd, acked_fd, end
        self.acked = 0

    @classmethod
    def create(cls, directory: str, name: str) -> Segment:
        path = os.path.join(directory, name + EVENTS_SUFFIX)
        apath = os.path.join(directory, name + ACKED_SUFFIX)
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise _err("create", path, exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            afd = os.open(apath, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            os.pwrite(afd, bytes(ACKED_LEN), 0)
            # The names must survive a crash of the machine too; once per segment.
            dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError as exc:
            os.close(fd)
            raise _err("create", apath, exc) from None
        return cls(path, fd, afd, 0)

    def append(self, bufs: list[bytes], size: int) -> int:
        """Writes framed events, given as buffers of size bytes in all, with
        one write(2) (writev: no copy into one buffer); the file's new
        length. A short write (disk full) is cut back and raised."""
        try:
            n = os.writev(self.fd, bufs) if len(bufs) <= _IOV_MAX else os.write(self.fd, b"".join(bufs))
        except OSError as exc:
            raise _err("append to", self.events_path, exc) from None
        if n != size:
            try:
                os.ftruncate(self.fd, self.end)
            except OSError:
                pass
            raise SpoolError(28, f"rlrec spool: short write to {self.events_path} ({n} of {size} bytes)")
        self.end += n
        return self.end

    def set_acked(self, offset: int) -> None:
        os.pwrite(self.acked_fd, offset.to_bytes(ACKED_LEN, "little"), 0)
        self.acked = offset

    def close(self) -> None:
        for fd in (self.fd, self.acked_fd):
            try:
                os.close(fd)
            except OSError:
                pass

    def remove(self) -> None:
        for p in (self.events_path[: -len(EVENTS_SUFFIX)] + ACKED_SUFFIX, self.events_path):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass
        self.close()


@dataclass
class Recovered:
    """A dead run's segment taken over: its events past the acknowledgement
    (bytes without length prefix, and the offset after each), and the
    bytes cut from its end (a torn last event)."""

    segment: Segment
    events: list[tuple[bytes, int]]
    torn: int


def recover(directory: str) -> list[Recovered]:
    """Takes over every segment in directory no live process holds, in name
    order (a missing directory has none)."""
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(EVENTS_SUFFIX))
    except FileNotFoundError:
        return []
    out = []
    for name in names:
        path = os.path.join(directory, name)
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)
        except FileNotFoundError:
            continue  # removed by its owner meanwhile
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue  # a live capture's or forwarder's
        apath = path[: -len(EVENTS_SUFFIX)] + ACKED_SUFFIX
        try:
            afd = os.open(apath, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            raw = os.pread(afd, ACKED_LEN, 0)
            acked = int.from_bytes(raw, "little") if len(raw) == ACKED_LEN else 0
            with open(path, "rb") as f:
                data = f.read()
            events, whole = split(data)
            # An acknowledgement that is no event boundary cannot be
            # trusted: resend everything (the server drops what it has).
            if acked and not any(end == acked for _, end in events):
                acked = 0
            torn = len(data) - whole
            if torn:
                os.ftruncate(fd, whole)
        except OSError as exc:
            os.close(fd)
            raise _err("recover", path, exc) from None
        seg = Segment(path, fd, afd, whole)
        seg.acked = acked
        out.append(Recovered(seg, [(b, end) for b, end in events if end > acked], torn))
    return out


class Spool:
    """The spool of one process: appends a run's events to its current
    segment and records acknowledgements, in the order events reach the
    server (the order they were appended, recovered ones first).

    ack(n) says the next n events handed to the server are acknowledged;
    a segment none of whose events waits any more, and which is not being
    written, is removed."""

    def __init__(self, directory: str, *, segment_bytes: int = 64 << 20) -> None:
        if segment_bytes < 1:
            raise ValueError(f"spool segment_bytes must be positive, got {segment_bytes}")
        self.directory = directory
        self.segment_bytes = segment_bytes
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as exc:
            raise _err("create directory", directory, exc) from None
        self._lock = threading.Lock()
        # (segment or None for an event kept in memory only, offset after it)
        self._order: deque[tuple[Segment | None, int]] = deque()
        self._waiting: dict[Segment, int] = {}  # events not acknowledged, per segment
        self._run: str | None = None
        self._number = 0
        self._current: Segment | None = None

    def start_run(self, run: str) -> None:
        """Starts run's first segment at its first append."""
        with self._lock:
            self._retire_current_locked()
            self._run, self._number = run, 0

    def append(self, events: list[bytes | tuple[bytes, ...]]) -> None:
        """Writes serialized events (one hook's) with one write(2); an event
        may come in parts (its bytes are their concatenation)."""
        bufs: list[bytes] = []
        lengths = []
        for e in events:
            parts = (e,) if isinstance(e, bytes) else e
            n = sum(len(p) for p in parts)
            head = varint(n)
            bufs.append(head)
            bufs.extend(parts)
            lengths.append(len(head) + n)
        size = sum(lengths)
        with self._lock:
            seg = self._current
            if seg is None or (seg.end and seg.end + size > self.segment_bytes):
                self._retire_current_locked()
                self._number += 1
                seg = self._current = Segment.create(self.directory, segment_name(self._run, self._number))
                self._waiting[seg] = 0
            start = seg.end
            seg.append(bufs, size)
            for n in lengths:
                start += n
                self._order.append((seg, start))
            self._waiting[seg] += len(events)

    def unspooled(self, n: int) -> None:
        """n events that go to the server without a spool entry (their
        write failed); keeps ack() in step."""
        with self._lock:
            self._order.extend([(None, 0)] * n)

    def adopt(self, rec: Recovered) -> None:
        """A dead run's segment whose events are about to be resent."""
        with self._lock:
            if not rec.events:
                rec.segment.remove()
                return
            self._waiting[rec.segment] = len(rec.events)
            for _, end in rec.events:
                self._order.append((rec.segment, end))

    def ack(self, n: int) -> None:
        """The next n events handed to the server are acknowledged."""
        with self._lock:
            last: dict[Segment, int] = {}
            for _ in range(min(n, len(self._order))):
                seg, end = self._order.popleft()
                if seg is not None:
                    last[seg] = end
                    self._waiting[seg] -= 1
            for seg, end in last.items():
                if self._waiting[seg] == 0 and seg is not self._current:
                    del self._waiting[seg]
                    seg.remove()
                else:
                    try:
                        seg.set_acked(end)
                    except OSError:
                        pass  # it lags: the server drops what is resent

    def end_run(self) -> None:
        """The run's last segment is no longer written; removed once all
        its events are acknowledged."""
        with self._lock:
            self._retire_current_locked()

    def pending(self) -> int:
        with self._lock:
            return len(self._order)

    def close(self) -> None:
        """Closes every segment; those with events not acknowledged stay for
        the next capture on this directory."""
        with self._lock:
            self._retire_current_locked()
            for seg in list(self._waiting):
                seg.close()
            self._waiting.clear()

    def _retire_current_locked(self) -> None:
        seg, self._current = self._current, None
        if seg is not None and self._waiting.get(seg) == 0:
            del self._waiting[seg]
            seg.remove()
