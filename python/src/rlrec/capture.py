"""Capture: rlmesh ``RunHooks`` that record a ``Session.run`` with rlrec."""

from __future__ import annotations

import atexit
import math
import os
import sys
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._ids import record_id, uuid7
from ._ingest import IngestProcess
from ._pb import events_pb2, spaces_pb2
from ._telemetry import DURATION_MS, Meter
from .leaves import LeafError, compile_spec, encode_batch
from .spaces import space_spec

__all__ = ["END_REASON", "Capture", "EpisodeInfo", "RunInfo", "meta_map"]

# What the runtime says when a run ends by reaching its episode count.
END_REASON = "completed requested episodes"
LOG_SOURCE = "rlrec"


@dataclass
class EpisodeInfo:
    """One episode of a captured run, as the recording names it."""

    episode_record_id: str
    episode_id: str
    episode_index: int
    seed: int | None
    steps: int = 0
    reward: float = 0.0
    completed: bool = False
    last_info: Any = None
    started_ns: int = 0
    # The reset observation was sent at on_episode_start.
    reset_sent: bool = False


@dataclass
class RunInfo:
    """One captured run: one recording, (session_id, env_id)."""

    session_id: str
    env_id: str
    observation_space: spaces_pb2.SpaceSpec
    action_space: spaces_pb2.SpaceSpec
    episodes: list[EpisodeInfo] = field(default_factory=list)
    total_steps: int = 0
    completed: int = 0
    ended: bool = False
    failed_reason: str | None = None


class Capture:
    """Records rlmesh ``Session.run`` calls into rlrec.

    Pass it as ``hooks=`` to ``Session.run``, the entry point that calls
    hooks (rlmesh's ``Model.run(hooks=...)`` raises: a local model drives
    the native runtime loop, which takes none; served models and
    ``RANDOM_SAMPLE`` go through ``Session.run``): it has the ``RunHooks``
    methods ``on_run_start``, ``on_episode_start``, ``on_step``,
    ``on_episode_end`` and ``on_run_end``, and turns each run into the
    rlrec.events.v1 events the runtime emits for one env with DISABLED
    autoreset, each stamped with the time of its hook call.

    Exactly one destination:

    - ``addr``: an ``rlrec serve`` ("127.0.0.1:7465"); events stream over
      gRPC, numbered per recording, and are resent after a reconnect until
      acknowledged durable. ``token``/``token_file`` and ``tls_ca`` (a PEM
      file) as the server asks. Connecting happens here: no server, no
      Capture.
    - ``root``: a ROOT directory; each run starts ``rlrec ingest --out
      ROOT -`` (``rlrec`` is the binary, ``layout`` its ``--layout``) and
      writes the events to its standard input.

    Ids: one ``session_id`` for the Capture (a UUIDv7 unless given), a new
    UUIDv7 ``env_id`` per run (with the session id it names the recording),
    a UUIDv7 ``episode_id`` and an ``ep-NNNNNN`` record id per episode,
    numbered from 1 in each run.

    Spaces come from ``observation_space``/``action_space`` when given, else
    from the session's env contract at ``on_run_start``. Values are encoded
    against them; a value that does not fit raises LeafError (``strict``),
    or with ``strict=False`` is left out of its event and logged.

    One Capture records one ``Session.run`` at a time: a run started from
    another thread while one is recording raises ``RuntimeError`` from
    ``on_run_start`` (the recording run goes on untouched); give each
    concurrent run its own Capture (they may share ``session_id=``).

    The reset observation of each episode is recorded right after its
    EpisodeStarted, as the runtime emits it, when the session's ``reset``
    can be watched (rlmesh's ``Session``: the capture wraps its ``reset``
    for the run), so an episode that takes no step still has it; otherwise
    it comes with the episode's first step.

    When ``on_run_end`` returns, the run is durable: in ROOT (ingest has
    exited) or acknowledged by the server (``flush_timeout`` seconds at
    most). ``close()`` (also at interpreter exit, and on leaving a ``with``
    block) closes the connection.
    """

    def __init__(
        self,
        addr: str | None = None,
        *,
        root: str | os.PathLike[str] | None = None,
        token: str | None = None,
        token_file: str | os.PathLike[str] | None = None,
        tls_ca: str | os.PathLike[str] | None = None,
        session_id: str | None = None,
        env_component_id: str = "",
        model_component_id: str = "",
        observation_space: Any = None,
        action_space: Any = None,
        rlrec: str | None = None,
        layout: str | None = None,
        strict: bool = True,
        flush_timeout: float | None = 120.0,
        max_unacked_bytes: int = 64 << 20,
    ) -> None:
        if (addr is None) == (root is None):
            raise ValueError("give exactly one of addr (an rlrec serve) and root (a ROOT for rlrec ingest)")
        if token is not None and token_file is not None:
            raise ValueError("give token or token_file, not both")
        if token_file is not None:
            with open(token_file, encoding="utf-8") as f:
                token = f.read().strip()
        self.session_id = session_id if session_id is not None else uuid7()
        self.env_component_id = env_component_id
        self.model_component_id = model_component_id
        self._obs_arg, self._act_arg = observation_space, action_space
        self._root = None if root is None else os.fspath(root)
        self._rlrec = rlrec or os.environ.get("RLREC", "rlrec")
        self._layout = layout
        self._strict = strict
        self._flush_timeout = flush_timeout
        self._client = None
        if addr is not None:
            from ._serve import IngestClient  # grpc only when it is used

            ca = None
            if tls_ca is not None:
                with open(tls_ca, "rb") as f:
                    ca = f.read()
            self._client = IngestClient(addr, token=token, root_certificates=ca, max_unacked_bytes=max_unacked_bytes)
        self.runs: list[RunInfo] = []
        self._run: RunInfo | None = None
        self._proc: IngestProcess | None = None
        self._ep: EpisodeInfo | None = None
        self._meter = Meter()
        self._mark = 0.0
        self._warned: set[str] = set()
        self._closed = False
        # The thread of the run being recorded, and the session whose
        # reset this capture wraps to see reset observations.
        self._lock = threading.Lock()
        self._owner: int | None = None
        self._session: Any = None
        self._own_reset: Any = _NONE
        self._reset_obs: Any = _NONE
        ref = weakref.ref(self)
        atexit.register(lambda: (c := ref()) is not None and c.close())

    # RunHooks.

    def on_run_start(self, session: Any = None) -> None:
        """A run begins: a new recording (env id), SessionStarted."""
        self._check_open()
        with self._lock:
            me = threading.get_ident()
            if self._run is not None and not self._run.ended and self._owner != me:
                raise RuntimeError(
                    f"rlrec: this Capture is recording run {self._run.env_id} in another thread; "
                    "one Capture records one Session.run at a time: give each concurrent run its own "
                    f"Capture (they may share session_id={self.session_id!r})"
                )
            self._owner = me
        if self._run is not None and not self._run.ended:
            self._end_run(failed=f"a new run started before run {self._run.env_id} ended")
        self._watch_resets(session)
        obs_space = self._obs_arg if self._obs_arg is not None else _contract_space(session, "observation_space")
        act_space = self._act_arg if self._act_arg is not None else _contract_space(session, "action_space")
        if obs_space is None or act_space is None:
            raise LeafError(
                "rlrec: the session shows no env contract spaces; pass observation_space= and action_space= to Capture"
            )
        obs_spec, act_spec = space_spec(obs_space), space_spec(act_space)
        self._obs_leaves, self._act_leaves = compile_spec(obs_spec), compile_spec(act_spec)
        run = RunInfo(self.session_id, uuid7(), obs_spec, act_spec)
        self._route = events_pb2.RuntimeEnvContext(
            env_id=run.env_id, env_component_id=self.env_component_id, model_component_id=self.model_component_id
        )
        if self._root is not None:
            self._proc = IngestProcess(self._root, rlrec=self._rlrec, layout=self._layout)
        self._run, self._ep, self._meter = run, None, Meter()
        self.runs.append(run)
        ev = self._event()
        ev.session_started.env_id = run.env_id
        self._send(ev)
        self._mark = time.perf_counter()

    def on_episode_start(self, *, episode: int, seed: int | None = None) -> None:
        """An episode's reset returned: EpisodeStarted (and, before the
        first, the runtime's reset log line)."""
        run = self._active()
        reset_ms = (time.perf_counter() - self._mark) * 1000.0
        self._meter.add("env.reset", "env", "rpc.total", DURATION_MS, reset_ms)
        if self._ep is not None:  # on_episode_end never came for the last one
            self._log(
                events_pb2.LOG_LEVEL_WARN,
                f"episode {self._ep.episode_record_id} had no on_episode_end "
                f"before run episode {episode} started; it is recorded incomplete",
            )
        if not run.episodes:
            self._log(events_pb2.LOG_LEVEL_INFO, f"env reset complete in {round(reset_ms)}ms (1 episode(s) ready)")
        index = len(run.episodes) + 1
        now = time.time_ns()
        ep = EpisodeInfo(record_id(index), uuid7(now), index, seed, started_ns=now)
        run.episodes.append(ep)
        self._ep = ep
        if seed is not None:
            self._log(
                events_pb2.LOG_LEVEL_DEBUG,
                f"episode {ep.episode_record_id} (run episode {episode}) reset with seed {seed}",
            )
        ev = self._event()
        s = ev.episode_started
        s.episode_id, s.episode_record_id, s.episode_index = ep.episode_id, ep.episode_record_id, index
        s.env_index = 0
        s.started_from_auto_reset = index > 1
        self._send(ev)
        # The runtime emits the reset observation right after
        # EpisodeStarted, whether or not the episode takes a step.
        obs, self._reset_obs = self._reset_obs, _NONE
        if obs is not _NONE:
            self._observation(run, ep, obs)
            ep.reset_sent = True

    def on_step(self, event: Any) -> None:
        """One env step: the observation the action came from (the reset
        observation on an episode's first step), ActionReceived,
        StepCompleted."""
        run = self._active()
        ep = self._ep
        if ep is None:
            raise RuntimeError("rlrec: on_step outside an episode (no on_episode_start)")
        ids, rec_ids = [ep.episode_id], [ep.episode_record_id]
        if not (ep.steps == 0 and ep.reset_sent):
            self._observation(run, ep, event.observation)

        step = ep.steps + 1
        ev = self._event()
        a = ev.action_received
        a.episode_id, a.episode_record_id = ep.episode_id, ep.episode_record_id
        a.episode_ids.extend(ids)
        a.episode_record_ids.extend(rec_ids)
        a.step, a.env_index = step, 0
        a.action_space.CopyFrom(run.action_space)
        slabs = self._encode(run.action_space, self._act_leaves, event.action, "action")
        if slabs is not None:
            a.action.leaves.extend(slabs)
        self._send(ev)

        reward = float(event.reward)
        ev = self._event()
        c = ev.step_completed
        c.episode_id, c.episode_record_id = ep.episode_id, ep.episode_record_id
        c.step, c.env_index = step, 0
        c.rewards.append(reward)
        self._send(ev)

        ep.steps = step
        ep.reward += reward
        ep.last_info = getattr(event, "info", None)
        run.total_steps += 1
        predict_ms, step_ms = getattr(event, "predict_ms", None), getattr(event, "step_ms", None)
        if predict_ms is not None:
            self._meter.add("model.predict", "model", "rpc.total", DURATION_MS, predict_ms)
        if step_ms is not None:
            self._meter.add("env.step", "env", "rpc.total", DURATION_MS, step_ms)

    def on_episode_end(self, result: Any) -> None:
        """An episode ended: EpisodeCompleted with the run's own totals and
        the last step's info as final_info."""
        self._active()
        ep = self._ep
        if ep is None:
            raise RuntimeError("rlrec: on_episode_end outside an episode (no on_episode_start)")
        ev = self._event()
        c = ev.episode_completed
        c.episode_id, c.episode_record_id, c.episode_index, c.env_index = (
            ep.episode_id,
            ep.episode_record_id,
            ep.episode_index,
            0,
        )
        c.step_count = int(getattr(result, "steps", ep.steps))
        c.cumulative_reward = float(getattr(result, "reward", ep.reward))
        c.terminated = bool(getattr(result, "terminated", False))
        c.truncated = bool(getattr(result, "truncated", False))
        duration = getattr(result, "duration_s", None)
        # Whole milliseconds, floored, as rlmesh's runtime reports them
        # ((end_ns - start_ns).max(0) / 1_000_000).
        if duration is not None:
            c.duration_ms = max(0, math.floor(float(duration) * 1000))
        else:
            c.duration_ms = max(0, time.time_ns() - ep.started_ns) // 1_000_000
        if isinstance(ep.last_info, Mapping):
            c.final_info.CopyFrom(meta_map(ep.last_info))
        self._send(ev)
        ep.completed = True
        self._run.completed += 1
        self._ep = None
        self._mark = time.perf_counter()

    def on_run_end(self, result: Any = None) -> None:
        """The run ended: SessionEnded and the final session telemetry, or,
        when it ended by an exception or inside an episode, the telemetry and
        SessionFailed. Returns once the run is durable."""
        if self._run is None or self._run.ended or self._owner != threading.get_ident():
            return  # nothing recording, or another thread's run (refused at its start)
        exc = sys.exc_info()[1]
        failed = None
        if exc is not None:
            failed = f"{type(exc).__name__}: {exc}"
        elif self._ep is not None:
            failed = f"the run ended inside episode {self._ep.episode_record_id}"
        self._end_run(failed)

    # Life cycle.

    def flush(self) -> None:
        """Waits until every event so far is acknowledged (rlrec serve) or
        written to ingest's input (ROOT)."""
        if self._client is not None:
            self._client.flush(self._flush_timeout)
        elif self._proc is not None and self._proc.running:
            self._proc.flush()

    def close(self) -> None:
        """Ends a run still open (as failed) and closes the destination."""
        if self._closed:
            return
        try:
            if self._run is not None and not self._run.ended:
                self._end_run("the capture was closed during the run")
        finally:
            self._closed = True
            if self._client is not None:
                self._client.close(self._flush_timeout)

    def __enter__(self) -> Capture:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Internals.

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("rlrec: the Capture is closed")

    def _active(self) -> RunInfo:
        self._check_open()
        if self._run is None or self._run.ended:
            raise RuntimeError("rlrec: hook called outside a run (no on_run_start)")
        if self._owner != threading.get_ident():
            raise RuntimeError(
                f"rlrec: hook called from another thread than run {self._run.env_id}'s; "
                "one Capture records one Session.run at a time"
            )
        return self._run

    def _observation(self, run: RunInfo, ep: EpisodeInfo, value: Any) -> None:
        """ObservationEmitted of value for ep: its reset observation (step
        0, is_reset) before its first step, else the observation after
        ep.steps steps."""
        ev = self._event()
        o = ev.observation_emitted
        o.episode_id, o.episode_record_id = ep.episode_id, ep.episode_record_id
        o.episode_ids.append(ep.episode_id)
        o.episode_record_ids.append(ep.episode_record_id)
        o.step, o.env_index, o.is_reset, o.num_envs = ep.steps, 0, ep.steps == 0, 1
        o.observation_space.CopyFrom(run.observation_space)
        slabs = self._encode(run.observation_space, self._obs_leaves, value, "observation")
        if slabs is not None:
            o.observation.leaves.extend(slabs)
        self._send(ev)

    def _watch_resets(self, session: Any) -> None:
        """Wraps session.reset (rlmesh's Session.reset, which Session.run
        calls before each on_episode_start) for the run, so that the reset
        observation is recorded even for an episode that takes no step.
        A session whose reset cannot be wrapped is left alone: the reset
        observation then comes with the first step."""
        self._unwatch_resets()
        reset = getattr(session, "reset", None)
        if session is None or not callable(reset):
            return

        def watched(*args: Any, **kwargs: Any) -> Any:
            out = reset(*args, **kwargs)
            if isinstance(out, tuple) and len(out) == 2:
                self._reset_obs = out[0]
            return out

        own = getattr(session, "__dict__", {}).get("reset", _NONE)  # an instance attribute, not the method
        try:
            session.reset = watched
        except (AttributeError, TypeError):
            return
        self._session, self._own_reset = session, own

    def _unwatch_resets(self) -> None:
        session, self._session = self._session, None
        self._reset_obs = _NONE
        if session is not None:
            try:
                if self._own_reset is not _NONE:
                    session.reset = self._own_reset
                else:
                    del session.reset  # the method shows again
            except (AttributeError, TypeError):
                pass

    def _event(self) -> events_pb2.Event:
        ev = events_pb2.Event(session_id=self.session_id, time_unix_nano=time.time_ns())
        ev.route.CopyFrom(self._route)
        return ev

    def _send(self, ev: events_pb2.Event) -> None:
        if self._client is not None:
            self._client.record(ev)
        else:
            self._proc.send(ev)

    def _log(self, level: int, message: str) -> None:
        ev = self._event()
        ev.log.level, ev.log.message, ev.log.source = level, message, LOG_SOURCE
        self._send(ev)

    def _encode(self, spec, leaves, value, what: str) -> list[bytes] | None:
        try:
            return encode_batch(spec, [value], leaves)
        except LeafError as exc:
            if self._strict:
                raise LeafError(f"rlrec: {what} does not fit its space: {exc}") from exc
            if what not in self._warned:
                self._warned.add(what)
                self._log(events_pb2.LOG_LEVEL_WARN, f"{what} left out: it does not fit its space: {exc}")
            return None

    def _end_run(self, failed: str | None) -> None:
        run = self._run
        run.ended = True
        self._unwatch_resets()
        try:
            if failed is None:
                ev = self._event()
                e = ev.session_ended
                e.reason, e.total_steps, e.total_episodes = END_REASON, run.total_steps, run.completed
                self._send(ev)
                self._telemetry()
            else:
                run.failed_reason = failed
                self._telemetry()
                ev = self._event()
                ev.session_failed.reason = failed
                self._send(ev)
        finally:
            self._ep = None
            if self._proc is not None:
                proc, self._proc = self._proc, None
                proc.finish()
        if self._client is not None:
            self._client.flush(self._flush_timeout)

    def _telemetry(self) -> None:
        ev = self._event()
        ev.telemetry_snapshot.CopyFrom(self._meter.snapshot(events_pb2.TELEMETRY_HORIZON_SESSION))
        self._send(ev)


# No reset observation seen (None may be an observation).
_NONE = object()


def _contract_space(session: Any, name: str) -> Any:
    """An env contract space of an rlmesh Session, where it keeps it."""
    if session is None:
        return None
    for holder in (session, getattr(session, "_contract", None), getattr(session, "_client", None)):
        if holder is None:
            continue
        try:
            space = getattr(holder, name, None)
        except Exception:
            space = None
        if space is not None:
            return space
    return None


def meta_map(info: Mapping[str, Any]) -> spaces_pb2.MetaMap:
    """info as a MetaMap: bool, int, float, str, bytes, lists, tuples,
    mappings and numpy values; None is left out (of lists too), anything
    else is its str()."""
    out = spaces_pb2.MetaMap()
    for k, v in info.items():
        mv = _meta_value(v, 0)
        if mv is not None:
            out.entries[str(k)].CopyFrom(mv)
    return out


def _meta_value(v: Any, depth: int) -> spaces_pb2.MetaValue | None:
    if v is None:
        return None
    mv = spaces_pb2.MetaValue()
    if depth > 32:
        mv.text = str(v)
        return mv
    if isinstance(v, np.ndarray):
        v = v.tolist()
    elif isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bool):
        mv.bool = v
    elif isinstance(v, int):
        if -(1 << 63) <= v < 1 << 63:
            mv.integer = v
        else:
            mv.number = float(v)
    elif isinstance(v, float):
        mv.number = v
    elif isinstance(v, str):
        mv.text = v
    elif isinstance(v, (bytes, bytearray, memoryview)):
        mv.bytes = bytes(v)
    elif isinstance(v, Mapping):
        mv.map.SetInParent()
        for k, x in v.items():
            child = _meta_value(x, depth + 1)
            if child is not None:
                mv.map.entries[str(k)].CopyFrom(child)
    elif isinstance(v, (list, tuple)):
        mv.list.SetInParent()
        for x in v:
            child = _meta_value(x, depth + 1)
            if child is not None:
                mv.list.items.append(child)
    else:
        mv.text = str(v)
    return mv
