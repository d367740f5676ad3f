"""A client of `rlrec serve` (the rlrec.ingest.v1 Ingest service).

It follows the Go client (package client): events are numbered per
recording (session_id, route.env_id) from 1 and kept until the server
acknowledges them durable; one thread streams them in batches and, when
the stream breaks, reconnects with backoff and resends every event not
acknowledged, which the server drops if it already has it. The events not
yet acknowledged are bounded (max_unacked_bytes): past that, record()
waits.

The gRPC stub is written by hand (one bidirectional-streaming method), so
only grpcio and protobuf are needed.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from typing import Any

import grpc

from ._pb import events_pb2, ingest_pb2

__all__ = ["IngestClient", "RefusedError", "UnauthenticatedError"]

RECORD_METHOD = "/rlrec.ingest.v1.Ingest/Record"
AUTHORIZATION_KEY = "authorization"  # metadata key; value "Bearer TOKEN"

log = logging.getLogger("rlrec")


class RefusedError(RuntimeError):
    """The server refused events (a recording its ROOT already holds, an
    event too large for its log): they are not resent."""

    def __init__(self, refusals: list[ingest_pb2.Refusal]):
        first = refusals[0]
        super().__init__(
            f"{len(refusals)} events refused by rlrec serve, the first: event {first.sequence} of "
            f"recording (session {first.session_id!r}, env {first.env_id!r}): "
            f"{ingest_pb2.RefusalReason.Name(first.reason)}: {first.message}"
        )
        self.refusals = refusals


class UnauthenticatedError(RuntimeError):
    """The server refused the token: the client stops."""


class _Stream:
    """The state of one Record call."""

    def __init__(self) -> None:
        self.done = False
        self.call: Any = None


class IngestClient:
    """Streams rlrec.events.v1 events to an `rlrec serve` at addr ("host:port").

    The constructor waits up to connect_timeout seconds for the connection;
    after that the client reconnects by itself. Safe to use from several
    threads; the events of one recording must be handed over in order.
    """

    def __init__(
        self,
        addr: str,
        *,
        token: str | None = None,
        root_certificates: bytes | None = None,
        max_unacked_bytes: int = 64 << 20,
        max_message_bytes: int = 64 << 20,
        batch_bytes: int = 1 << 20,
        min_backoff: float = 0.05,
        max_backoff: float = 5.0,
        connect_timeout: float = 10.0,
        on_acked: Callable[[int], None] | None = None,
    ) -> None:
        if max_unacked_bytes < 1 << 20:
            raise ValueError("max_unacked_bytes below 1 MiB")
        if max_message_bytes < 64 << 10:
            raise ValueError("max_message_bytes below 64 KiB")
        if not 0 < min_backoff <= max_backoff:
            raise ValueError("want 0 < min_backoff <= max_backoff")
        self.addr = addr
        # Called on the client's thread with the number of events just
        # acknowledged (in the order they were queued).
        self._on_acked = on_acked
        self._max_unacked = max_unacked_bytes
        self._max_message = max_message_bytes
        self._batch_bytes = batch_bytes
        self._min_backoff, self._max_backoff = min_backoff, max_backoff
        self._metadata = ((AUTHORIZATION_KEY, "Bearer " + token),) if token else ()
        options = [
            ("grpc.max_send_message_length", max_message_bytes),
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.initial_reconnect_backoff_ms", int(min_backoff * 1000)),
            ("grpc.max_reconnect_backoff_ms", int(max_backoff * 1000)),
        ]
        if root_certificates is not None:
            creds = grpc.ssl_channel_credentials(root_certificates=root_certificates)
            self._channel = grpc.secure_channel(addr, creds, options=options)
        else:
            self._channel = grpc.insecure_channel(addr, options=options)
        try:
            grpc.channel_ready_future(self._channel).result(timeout=connect_timeout)
        except grpc.FutureTimeoutError:
            self._channel.close()
            raise ConnectionError(
                f"no connection to {addr} within {connect_timeout:g} s; is rlrec serve listening there?"
            ) from None
        self._record = self._channel.stream_stream(
            RECORD_METHOD,
            request_serializer=ingest_pb2.RecordRequest.SerializeToString,
            response_deserializer=ingest_pb2.RecordResponse.FromString,
        )
        self._cv = threading.Condition()
        self._next: dict[tuple[str, str], int] = {}  # last sequence given per recording
        self._q: list[bytes] = []  # unacknowledged events, oldest first
        self._sent = 0  # q[:sent] went out on the current stream
        self._batches: list[tuple[int, int]] = []  # (batch number, events) sent on it
        self._bytes = 0
        self.queued = 0  # events ever queued
        self.acked = 0  # events ever acknowledged (refused ones included)
        self.streams = 0
        self.refused_total = 0
        self._refused: list[ingest_pb2.Refusal] = []  # since the last flush
        self._closing = False
        self._stopped = False
        self._fatal: BaseException | None = None
        self._current: _Stream | None = None
        self._thread = threading.Thread(target=self._run, name=f"rlrec-serve {addr}", daemon=True)
        self._thread.start()

    # The producer side.

    def record(self, event: events_pb2.Event, timeout: float | None = None) -> int:
        """Numbers event in its recording, queues it and returns its sequence.

        Sets event.sequence. Waits (up to timeout seconds, None: without
        limit) while the unacknowledged events fill max_unacked_bytes.
        """
        key = (event.session_id, event.route.env_id)
        size = event.ByteSize() + 11  # and the sequence field, at most 11 bytes
        return self._enqueue(key, size, event, None, timeout)

    def record_encoded(self, key: tuple[str, str], sequence: int, data: bytes, timeout: float | None = None) -> int:
        """Queues an event already numbered and serialized (data carries
        sequence, the event's number in its recording key = (session_id,
        env_id)); later record() calls for key number on from it."""
        return self._enqueue(key, len(data), None, (sequence, data), timeout)

    def _enqueue(self, key, size, event, encoded, timeout) -> int:
        if size + 64 > self._max_message:
            raise ValueError(
                f"event of {size} bytes is over the {self._max_message}-byte message limit "
                "(max_message_bytes, the server's --max-message)"
            )
        with self._cv:
            self._usable()
            ok = self._cv.wait_for(
                lambda: (
                    self._bytes == 0
                    or self._bytes + size <= self._max_unacked
                    or self._fatal is not None
                    or self._stopped
                ),
                timeout,
            )
            if not ok:
                raise TimeoutError(f"waited {timeout} s for room among the events {self.addr} has not acknowledged")
            self._usable()
            # Numbered and queued in one step, so the queue holds each
            # recording's events in sequence order.
            if encoded is None:
                seq = self._next.get(key, 0) + 1
                event.sequence = seq
                data = event.SerializeToString()
            else:
                seq, data = encoded
            self._next[key] = max(seq, self._next.get(key, 0))
            self._q.append(data)
            self._bytes += len(data)
            self.queued += 1
            self._cv.notify_all()
        return seq

    def _usable(self) -> None:
        if self._fatal is not None:
            raise self._fatal
        if self._closing or self._stopped:
            raise RuntimeError("rlrec serve client is closed")

    def flush(self, timeout: float | None = None) -> None:
        """Returns once every event queued so far is acknowledged: durable
        on the server, or refused (RefusedError, once per refusal)."""
        with self._cv:
            target = self.queued
            ok = self._cv.wait_for(lambda: self.acked >= target or self._fatal is not None, timeout)
            if self._fatal is not None:
                raise self._fatal
            if not ok:
                raise TimeoutError(
                    f"{target - self.acked} events still unacknowledged by {self.addr} after {timeout} s"
                )
            if self._refused:
                refused, self._refused = self._refused, []
                raise RefusedError(refused)

    @property
    def unacked_bytes(self) -> int:
        with self._cv:
            return self._bytes

    def close(self, timeout: float | None = 60.0) -> None:
        """Flushes, ends the stream and closes the channel. Events not
        acknowledged within timeout are lost to this client: the error
        says how many."""
        err: BaseException | None = None
        with self._cv:
            if self._closing or self._stopped:
                return
            target = self.queued
            ok = self._cv.wait_for(lambda: self.acked >= target or self._fatal is not None, timeout)
            if self._fatal is not None:
                err = self._fatal
            elif not ok:
                err = TimeoutError(
                    f"closing: {target - self.acked} events not acknowledged by {self.addr} after {timeout} s"
                )
            elif self._refused:
                err, self._refused = RefusedError(self._refused), []
            self._closing = True
            if err is not None and not isinstance(err, RefusedError):
                self._stop_locked()
            self._cv.notify_all()
        self._thread.join(timeout)
        with self._cv:
            self._stop_locked()
        self._thread.join(5)
        self._channel.close()
        if err is not None:
            raise err

    def _stop_locked(self) -> None:
        self._stopped = True
        s = self._current
        if s is not None and s.call is not None:
            s.call.cancel()
        self._cv.notify_all()

    # The sender thread.

    def _run(self) -> None:
        delay = self._min_backoff
        while True:
            with self._cv:
                if self._stopped:
                    return
                before = self.acked
            try:
                if self._stream():
                    return
                err: Any = "the server ended the stream"
            except grpc.RpcError as e:
                code = e.code() if hasattr(e, "code") else None
                if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
                    with self._cv:
                        self._fatal = UnauthenticatedError(
                            f"rlrec serve at {self.addr} refused the token: {e.details()}"
                        )
                        self._cv.notify_all()
                    log.error("rlrec serve at %s refused the token; the client stops", self.addr)
                    return
                err = f"{code}: {e.details() if hasattr(e, 'details') else e}"
            except Exception as e:  # a bug or a protocol violation: reconnecting is the safe move
                err = repr(e)
            with self._cv:
                if self._stopped:
                    return
                if self.acked > before:
                    delay = self._min_backoff
                log.warning(
                    "stream to rlrec serve at %s broke (%s); resending %d unacknowledged events in %.2f s",
                    self.addr,
                    err,
                    len(self._q),
                    delay,
                )
                wait = delay / 2 + random.uniform(0, delay / 2)
                self._cv.wait_for(lambda: self._stopped, wait)
                delay = min(2 * delay, self._max_backoff)

    def _stream(self) -> bool:
        """Runs one Record stream; True when it ended because the client
        closed with everything acknowledged."""
        s = _Stream()
        with self._cv:
            if self._stopped:
                return True
            self._sent, self._batches = 0, []
            self._current = s
            self.streams += 1
        try:
            call = self._record(self._requests(s), metadata=self._metadata, wait_for_ready=True)
            with self._cv:
                s.call = call
                if self._stopped:
                    call.cancel()
            for resp in call:
                self._ack(resp)
            with self._cv:
                return self._closing and not self._q
        finally:
            with self._cv:
                s.done = True
                self._current = None
                self._cv.notify_all()

    def _requests(self, s: _Stream):
        """The request iterator of one stream: batches of what is not sent,
        ending (half-close) once the client closes with nothing left."""
        no = 0
        limit = min(self._batch_bytes, self._max_message - 64)
        while True:
            with self._cv:
                while self._sent == len(self._q):
                    if s.done or self._stopped or (self._closing and not self._q):
                        return
                    self._cv.wait()
                if s.done or self._stopped:
                    return
                events: list[bytes] = []
                size = 0
                while self._sent < len(self._q):
                    b = self._q[self._sent]
                    if events and size + len(b) + 8 > limit:
                        break
                    events.append(b)
                    size += len(b) + 8
                    self._sent += 1
                no += 1
                self._batches.append((no, len(events)))
            yield ingest_pb2.RecordRequest(batch=no, events=events)

    def _ack(self, resp: ingest_pb2.RecordResponse) -> None:
        with self._cv:
            n = 0
            i = 0
            while i < len(self._batches) and self._batches[i][0] <= resp.durable_batch:
                n += self._batches[i][1]
                i += 1
            if n > self._sent:
                raise RuntimeError(f"server acknowledged batch {resp.durable_batch}, beyond what was sent")
            del self._batches[:i]
            self._bytes -= sum(len(b) for b in self._q[:n])
            del self._q[:n]
            self._sent -= n
            self.acked += n
            if n and self._on_acked is not None:
                self._on_acked(n)
            for r in resp.refused:
                self._refused.append(r)
                self.refused_total += 1
                log.warning(
                    "rlrec serve refused event %d of recording (session %r, env %r): %s: %s",
                    r.sequence,
                    r.session_id,
                    r.env_id,
                    ingest_pb2.RefusalReason.Name(r.reason),
                    r.message,
                )
            self._cv.notify_all()
