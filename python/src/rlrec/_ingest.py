"""Recording into a ROOT through `rlrec ingest -` in a subprocess."""

from __future__ import annotations

import os
import subprocess
import tempfile

from ._command import INSTALL_HINT, find_rlrec
from ._pb import events_pb2

__all__ = ["IngestProcess", "IngestError", "write_delimited"]


class IngestError(RuntimeError):
    """rlrec ingest failed or refused a recording."""


def _varint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def write_delimited(f, event: events_pb2.Event) -> None:
    """Writes event to f as one frame of a length-delimited event stream
    (its length as a varint, then its bytes), the input of rlrec ingest."""
    data = event.SerializeToString()
    f.write(_varint(len(data)) + data)


class IngestProcess:
    """One `rlrec ingest --out ROOT -` reading the events written to it.

    finish() closes its standard input and waits: once it returns, every
    event is durable and published in ROOT.
    """

    def __init__(self, root: str, *, rlrec: str | None = None, layout: str | None = None) -> None:
        rlrec = find_rlrec(rlrec)
        argv = [rlrec, "ingest", "--out", os.fspath(root)]
        if layout is not None:
            argv += ["--layout", layout]
        argv.append("-")
        self.argv = argv
        self._stderr = tempfile.TemporaryFile()
        try:
            self._proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self._stderr, bufsize=1 << 16
            )
        except OSError as exc:
            self._stderr.close()
            raise IngestError(f"cannot run {rlrec!r} ({exc}); {INSTALL_HINT}") from exc
        self.events = 0
        self._done: tuple[int, str] | None = None

    def send(self, event: events_pb2.Event) -> None:
        try:
            write_delimited(self._proc.stdin, event)
        except BrokenPipeError:
            self.finish()  # raises with what rlrec ingest said
            raise IngestError(f"{' '.join(self.argv)} stopped reading") from None
        self.events += 1

    def flush(self) -> None:
        try:
            self._proc.stdin.flush()
        except BrokenPipeError:
            self.finish()
            raise IngestError(f"{' '.join(self.argv)} stopped reading") from None

    def finish(self, timeout: float | None = None) -> str:
        """Ends the stream, waits for rlrec ingest and returns what it
        reported on standard error; IngestError if it exited non-zero."""
        if self._done is None:
            if self._proc.stdin and not self._proc.stdin.closed:
                try:
                    self._proc.stdin.close()
                except BrokenPipeError:
                    pass
            rc = self._proc.wait(timeout)
            self._stderr.seek(0)
            self._done = (rc, self._stderr.read().decode("utf-8", "replace"))
            self._stderr.close()
        rc, report = self._done
        if rc != 0:
            raise IngestError(f"{' '.join(self.argv)} exited {rc}: {report.strip()}")
        return report

    @property
    def running(self) -> bool:
        return self._proc.poll() is None
