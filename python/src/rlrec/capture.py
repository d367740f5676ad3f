"""Capture: rlmesh ``RunHooks`` that record ``rlmesh.run``, ``Model.run`` and
``Session.run`` with rlrec."""

from __future__ import annotations

import atexit
import logging
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
from ._queue import EventQueue
from ._spool import Spool, recover, varint
from ._telemetry import DURATION_MS, Meter
from .leaves import LeafError, compile_spec, encode_batch
from .spaces import space_spec

__all__ = ["END_REASON", "Capture", "EpisodeInfo", "RunInfo", "meta_map"]

_log = logging.getLogger("rlrec")

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
    env_index: int = 0
    run_episode: int = 0
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
    observation_space: spaces_pb2.SpaceSpec | None
    action_space: spaces_pb2.SpaceSpec | None
    run_nonce: bytes = b""
    num_envs: int = 1
    episodes: list[EpisodeInfo] = field(default_factory=list)
    total_steps: int = 0
    completed: int = 0
    ended: bool = False
    failed_reason: str | None = None
    # Step groups (one on_step's events) dropped because the destination
    # fell behind (see max_queue_bytes), and their events and bytes.
    dropped_steps: int = 0
    dropped_events: int = 0
    dropped_bytes: int = 0
    # A spool write failed in this run (its first drop is logged).
    spool_failed: bool = False


class Capture:
    """Records rlmesh runs into rlrec: a ``RunHooks`` for ``hooks=``.

    Pass it as ``hooks=`` to ``rlmesh.run``, ``Model.run`` (the native
    runtime loop) or ``Session.run`` (the Python session loop): it has the
    ``RunHooks`` methods ``on_run_start(context)``, ``on_episode_start``,
    ``on_step``, ``on_episode_end`` and ``on_run_end``, and turns each run
    into the rlrec.events.v1 events of one recording, each stamped with the
    time of its hook call and with the run's ``run_nonce`` (16 random bytes
    minted at ``on_run_start``).

    Exactly one destination:

    - ``addr``: an ``rlrec serve`` ("127.0.0.1:7465"); events stream over
      gRPC, numbered per recording, and are resent after a reconnect until
      acknowledged durable. ``token``/``token_file`` and ``tls_ca`` (a PEM
      file) as the server asks. Connecting happens here: no server, no
      Capture.
    - ``root``: a ROOT directory; each run starts ``rlrec ingest --out
      ROOT -`` and writes the events to its standard input. The ``rlrec``
      command is ``rlrec=``, else ``$RLREC_BIN``, else ``rlrec`` on PATH
      (``layout`` is its ``--layout``).

    Ids: one ``session_id`` for the Capture (a UUIDv7 unless given), a new
    UUIDv7 ``env_id`` per run (``env_id=`` names the first run's instead),
    a UUIDv7 ``episode_id`` and an ``ep-NNNNNN`` record id per episode,
    numbered from 1 in each run in the order episodes start.

    Spaces come from ``observation_space``/``action_space`` when given, else
    from the run context's env contract, read when the first episode
    starts (the native loop fills it at connect, after ``on_run_start``).
    Values are encoded against them; a value that does not fit raises
    LeafError (``strict``), or with ``strict=False`` is left out of its
    event and logged.

    **A hook that returned survives kill -9** (with ``addr``): before it
    returns, its events (numbered, serialized, with the run's nonce) are
    written with one ``os.writev`` to a spool file in the spool directory
    ``spool`` (default ``BASE/HOST_PORT`` for the server's address, BASE
    ``$RLREC_SPOOL_DIR``, else ``$XDG_CACHE_HOME/rlrec/spool``, else
    ``~/.cache/rlrec/spool``): in the page cache, it outlives
    the process (not a power cut; never fsynced). The sender thread writes
    the server's acknowledgements beside each file and removes segments
    (``spool_segment_bytes``, 64 MiB) once acknowledged, so the spool
    holds about what the server has not acknowledged. A Capture started on
    the same spool directory resends what a dead process left, or a
    closed one could not deliver (a refused token, a server gone past
    ``flush_timeout``); the server drops sequence numbers it has: exactly
    once; ``rlrec ingest`` reads a
    spool file as an event stream. The format is rlrec-hooks' (the Rust
    forwarder's), so either takes over the other's spool. ``spool=False``
    keeps events in memory only. With ``root``, events are not spooled:
    ``rlrec ingest`` records what reached its input when the process
    dies, and a second ingest of the same recording into that ROOT is
    refused, so only ``on_run_end`` (or ``flush``) makes a run durable.

    **Never blocks the run past a bound.** Hooks hand their events to a
    sender thread through a queue of at most ``max_queue_bytes``; when it is
    full, a hook waits at most ``max_wait`` seconds for room, then drops the
    step's events (observation, action, step) and counts them. Starts and
    ends of runs and episodes and log lines are never dropped. The first
    drop of a run and the run's total are recorded as WARN rows of the logs
    table ("rlrec capture dropped ..."), and ``RunInfo.dropped_steps`` has
    the count. ``max_wait=None`` trades the bound for completeness: hooks
    wait for room however long it takes and nothing is dropped. A
    destination's error is raised from the next hook.

    Vectorized envs (``num_envs > 1`` on the native loop): episodes
    interleave and the hooks do not name a lane, so each open episode gets
    the lowest free ``env_index`` (a slot, not necessarily the runtime's
    lane).

    One Capture records one run at a time: a run started from another
    thread while one is recording raises ``RuntimeError`` from
    ``on_run_start`` (the recording run goes on untouched); give each
    concurrent run its own Capture (they may share ``session_id=``). The
    episode and step hooks may come from another thread than
    ``on_run_start`` (the native loop calls them from its worker).

    The reset observation of each episode is recorded right after its
    EpisodeStarted when the context's ``reset`` can be watched (the
    session loop's ``Session``: the capture wraps its ``reset`` for the
    run), so an episode that takes no step still has it; otherwise (the
    native loop) it comes with the episode's first step.

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
        env_id: str | None = None,
        env_component_id: str = "",
        model_component_id: str = "",
        observation_space: Any = None,
        action_space: Any = None,
        rlrec: str | None = None,
        layout: str | None = None,
        strict: bool = True,
        flush_timeout: float | None = 120.0,
        max_unacked_bytes: int = 64 << 20,
        max_queue_bytes: int = 64 << 20,
        max_wait: float | None = 0.1,
        spool: str | os.PathLike[str] | bool | None = None,
        spool_segment_bytes: int = 64 << 20,
    ) -> None:
        if (addr is None) == (root is None):
            raise ValueError("give exactly one of addr (an rlrec serve) and root (a ROOT for rlrec ingest)")
        if token is not None and token_file is not None:
            raise ValueError("give token or token_file, not both")
        if token_file is not None:
            with open(token_file, encoding="utf-8") as f:
                token = f.read().strip()
        self.session_id = session_id if session_id is not None else uuid7()
        self._next_env_id = env_id
        self.env_component_id = env_component_id
        self.model_component_id = model_component_id
        self._obs_arg, self._act_arg = observation_space, action_space
        self._root = None if root is None else os.fspath(root)
        self._rlrec = rlrec
        self._layout = layout
        self._strict = strict
        self._flush_timeout = flush_timeout
        self._client = None
        self._spool: Spool | None = None
        self.recovered = Recovery()
        if addr is not None and spool is not False:
            directory = default_spool_dir(addr) if spool is None or spool is True else os.fspath(spool)
            self._spool = Spool(directory, segment_bytes=spool_segment_bytes)
        if addr is not None:
            from ._serve import IngestClient  # grpc only when it is used

            ca = None
            if tls_ca is not None:
                with open(tls_ca, "rb") as f:
                    ca = f.read()
            self._client = IngestClient(
                addr,
                token=token,
                root_certificates=ca,
                max_unacked_bytes=max_unacked_bytes,
                on_acked=None if self._spool is None else self._spool.ack,
            )
        self._seq = 0  # the last sequence number of the run's recording
        writer = None if self._spool is None else _SpoolWriter(self)
        self._queue = EventQueue(self._deliver, max_bytes=max_queue_bytes, max_wait=max_wait, spool=writer)
        if self._spool is not None:
            self._resend_dead_runs()
        self.runs: list[RunInfo] = []
        self._run: RunInfo | None = None
        self._proc: IngestProcess | None = None
        self._eps: dict[int, EpisodeInfo] = {}  # open episodes by the run's episode index
        self._context: Any = None
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

    def on_run_start(self, context: Any = None) -> None:
        """A run begins: a new recording (env id), SessionStarted.

        context is rlmesh's RunContext: the Session on the session loop, the
        native loop's own context on Model.run."""
        self._check_open()
        with self._lock:
            me = threading.get_ident()
            if self._run is not None and not self._run.ended and self._owner != me:
                raise RuntimeError(
                    f"rlrec: this Capture is recording run {self._run.env_id} in another thread; "
                    "one Capture records one run at a time: give each concurrent run its own "
                    f"Capture (they may share session_id={self.session_id!r})"
                )
            self._owner = me
        if self._run is not None and not self._run.ended:
            self._end_run(failed=f"a new run started before run {self._run.env_id} ended")
        self._context = context
        self._watch_resets(context)
        env_id, self._next_env_id = self._next_env_id or uuid7(), None
        run = RunInfo(self.session_id, env_id, None, None, run_nonce=os.urandom(16))
        self._route = events_pb2.RuntimeEnvContext(
            env_id=run.env_id,
            env_component_id=self.env_component_id,
            model_component_id=self.model_component_id,
        )
        if self._root is not None:
            self._proc = IngestProcess(self._root, rlrec=self._rlrec, layout=self._layout)
        self._run, self._eps, self._meter = run, {}, Meter()
        self._seq = 0
        if self._spool is not None:
            self._spool.start_run(run.run_nonce.hex())
        self._queue.take_drops()
        self._queue.spool_error = None
        self.runs.append(run)
        try:
            # The spaces now when given or already known (session loop);
            # the native loop's contract comes at connect.
            self._spaces(required=False)
        except BaseException:
            self._end_run("the run's spaces could not be read")
            raise
        ev = self._event()
        ev.session_started.env_id = run.env_id
        self._send([ev])
        self._mark = time.perf_counter()

    def on_episode_start(self, *, episode: int, seed: int | None = None) -> None:
        """An episode's reset returned: EpisodeStarted (and, before the
        first, the runtime's reset log line)."""
        run = self._active()
        self._spaces(required=True)
        reset_ms = (time.perf_counter() - self._mark) * 1000.0
        self._meter.add("env.reset", "env", "rpc.total", DURATION_MS, reset_ms)
        if episode in self._eps or len(self._eps) >= run.num_envs:
            stale = self._eps.pop(episode, None) or self._eps.pop(min(self._eps))
            self._log(
                events_pb2.LOG_LEVEL_WARN,
                f"episode {stale.episode_record_id} had no on_episode_end "
                f"before run episode {episode} started; it is recorded incomplete",
            )
        if not run.episodes:
            self._log(
                events_pb2.LOG_LEVEL_INFO,
                f"env reset complete in {round(reset_ms)}ms ({run.num_envs} episode(s) ready)",
            )
        index = len(run.episodes) + 1
        now = time.time_ns()
        used = {e.env_index for e in self._eps.values()}
        slot = next(i for i in range(len(used) + 1) if i not in used)
        ep = EpisodeInfo(record_id(index), uuid7(now), index, seed, env_index=slot, run_episode=episode, started_ns=now)
        run.episodes.append(ep)
        self._eps[episode] = ep
        group = []
        if seed is not None:
            group.append(
                self._log_event(
                    events_pb2.LOG_LEVEL_DEBUG,
                    f"episode {ep.episode_record_id} (run episode {episode}) reset with seed {seed}",
                )
            )
        ev = self._event()
        s = ev.episode_started
        s.episode_id, s.episode_record_id, s.episode_index = ep.episode_id, ep.episode_record_id, index
        s.env_index = slot
        s.started_from_auto_reset = index > run.num_envs
        if seed is not None:
            s.seed = int(seed)
        trial = _trial(self._context)
        if trial is not None:
            s.trial_index = trial
        group.append(ev)
        self._send(group)
        # The runtime emits the reset observation right after
        # EpisodeStarted, whether or not the episode takes a step.
        obs, self._reset_obs = self._reset_obs, _NONE
        if obs is not _NONE:
            sent = self._send([self._observation(run, ep, obs)], droppable=True)
            ep.reset_sent = True
            if not sent:
                self._dropped(run, 1)

    def on_step(self, event: Any) -> None:
        """One env step: the observation the action came from (the reset
        observation on an episode's first step), ActionReceived,
        StepCompleted."""
        run = self._active()
        ep = self._eps.get(getattr(event, "episode", None))
        if ep is None and len(self._eps) == 1 and not hasattr(event, "episode"):
            ep = next(iter(self._eps.values()))
        if ep is None:
            raise RuntimeError(
                f"rlrec: on_step for run episode {getattr(event, 'episode', None)!r}, which is not open "
                "(no on_episode_start)"
            )
        group = []
        if not (ep.steps == 0 and ep.reset_sent):
            group.append(self._observation(run, ep, event.observation))

        step = ep.steps + 1
        ev = self._event()
        a = ev.action_received
        a.episode_id, a.episode_record_id = ep.episode_id, ep.episode_record_id
        a.episode_ids.append(ep.episode_id)
        a.episode_record_ids.append(ep.episode_record_id)
        a.step, a.env_index = step, ep.env_index
        a.action_space.CopyFrom(run.action_space)
        slabs = self._encode(run.action_space, self._act_leaves, event.action, "action")
        if slabs is not None:
            a.action.leaves.extend(slabs)
        group.append(ev)

        reward = float(event.reward)
        info = getattr(event, "info", None)
        predict_ms, step_ms = getattr(event, "predict_ms", None), getattr(event, "step_ms", None)
        ev = self._event()
        c = ev.step_completed
        c.episode_id, c.episode_record_id = ep.episode_id, ep.episode_record_id
        c.step, c.env_index = step, ep.env_index
        c.rewards.append(reward)
        c.terminated.append(bool(getattr(event, "terminated", False)))
        c.truncated.append(bool(getattr(event, "truncated", False)))
        c.autoreset_roll.append(False)
        if isinstance(info, Mapping) and info:
            c.infos.CopyFrom(meta_map(info))
        if predict_ms is not None:
            c.predict_ms = float(predict_ms)
        if step_ms is not None:
            c.step_ms = float(step_ms)
        group.append(ev)
        if not self._send(group, droppable=True):
            self._dropped(run, len(group))

        ep.steps = step
        ep.reward += reward
        ep.last_info = info
        run.total_steps += 1
        if predict_ms is not None:
            self._meter.add("model.predict", "model", "rpc.total", DURATION_MS, predict_ms)
        if step_ms is not None:
            self._meter.add("env.step", "env", "rpc.total", DURATION_MS, step_ms)

    def on_episode_end(self, result: Any) -> None:
        """An episode ended: EpisodeCompleted with the run's own totals and
        the last step's info as final_info."""
        run = self._active()
        index = getattr(result, "index", None)
        ep = self._eps.pop(index, None)
        if ep is None and index is None and len(self._eps) == 1:
            ep = self._eps.pop(next(iter(self._eps)))
        if ep is None:
            raise RuntimeError(f"rlrec: on_episode_end for run episode {index!r}, which is not open")
        ev = self._event()
        c = ev.episode_completed
        c.episode_id, c.episode_record_id = ep.episode_id, ep.episode_record_id
        c.episode_index, c.env_index = ep.episode_index, ep.env_index
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
        for name in ("success", "predict_ms", "step_ms"):
            v = getattr(result, name, None)
            if v is not None:
                setattr(c, name, v)
        seed = getattr(result, "seed", ep.seed)
        if seed is not None:
            c.seed = int(seed)
        trial = getattr(result, "trial", None)
        if trial is not None:
            c.trial_index = int(trial)
        self._send([ev])
        ep.completed = True
        run.completed += 1
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
        elif self._eps:
            failed = f"the run ended inside episode {min(self._eps.values(), key=lambda e: e.episode_index).episode_record_id}"
        self._end_run(failed, result)

    # Life cycle.

    def flush(self) -> None:
        """Waits until every event so far is acknowledged (rlrec serve) or
        written to ingest's input (ROOT)."""
        self._queue.drain(self._flush_timeout)
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
            self._queue.close()
            try:
                if self._client is not None:
                    self._client.close(self._flush_timeout)
            finally:
                if self._spool is not None:
                    self._spool.close()

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
        return self._run

    def _spaces(self, *, required: bool) -> None:
        """Compiles the run's spaces once they are known."""
        run = self._run
        if run.observation_space is not None:
            return
        contract = _contract(self._context)
        obs_space = self._obs_arg if self._obs_arg is not None else _space_of(contract, "observation_space")
        act_space = self._act_arg if self._act_arg is not None else _space_of(contract, "action_space")
        if obs_space is None or act_space is None:
            if required:
                raise LeafError(
                    "rlrec: the run context shows no env contract spaces; "
                    "pass observation_space= and action_space= to Capture"
                )
            return
        run.observation_space, run.action_space = space_spec(obs_space), space_spec(act_space)
        self._obs_leaves, self._act_leaves = compile_spec(run.observation_space), compile_spec(run.action_space)
        n = getattr(self._context, "num_envs", None)
        if n is None:
            n = getattr(contract, "num_envs", None)
        try:
            run.num_envs = max(1, int(n or 1))
        except (TypeError, ValueError):
            run.num_envs = 1

    def _observation(self, run: RunInfo, ep: EpisodeInfo, value: Any) -> events_pb2.Event:
        """ObservationEmitted of value for ep: its reset observation (step
        0, is_reset) before its first step, else the observation after
        ep.steps steps."""
        ev = self._event()
        o = ev.observation_emitted
        o.episode_id, o.episode_record_id = ep.episode_id, ep.episode_record_id
        o.episode_ids.append(ep.episode_id)
        o.episode_record_ids.append(ep.episode_record_id)
        o.step, o.env_index, o.is_reset, o.num_envs = ep.steps, ep.env_index, ep.steps == 0, 1
        o.observation_space.CopyFrom(run.observation_space)
        slabs = self._encode(run.observation_space, self._obs_leaves, value, "observation")
        if slabs is not None:
            o.observation.leaves.extend(slabs)
        return ev

    def _watch_resets(self, session: Any) -> None:
        """Wraps session.reset (rlmesh's Session.reset, which Session.run
        calls before each on_episode_start) for the run, so that the reset
        observation is recorded even for an episode that takes no step.
        A context whose reset cannot be wrapped (the native loop's) is left
        alone: the reset observation then comes with the first step."""
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
        ev = events_pb2.Event(session_id=self.session_id, time_unix_nano=time.time_ns(), run_nonce=self._run.run_nonce)
        ev.route.CopyFrom(self._route)
        return ev

    def _send(self, events: list[events_pb2.Event], *, droppable: bool = False) -> bool:
        return self._queue.put(events, droppable=droppable)

    def _deliver(self, ev: Any) -> None:
        """Runs on the queue's thread."""
        if isinstance(ev, tuple):  # numbered and serialized for the spool
            key, seq, data, tail = ev
            self._client.record_encoded(key, seq, data + tail)
        elif self._client is not None:
            self._client.record(ev)
        else:
            self._proc.send(ev)

    def _resend_dead_runs(self) -> None:
        """Hands what dead processes left in the spool directory to the
        server, before this Capture's own events."""
        for rec in recover(self._spool.directory):
            self.recovered.segments += 1
            self.recovered.torn_bytes += rec.torn
            self._spool.adopt(rec)
            for data, _ in rec.events:
                ev = events_pb2.Event.FromString(data)
                key = (ev.session_id, ev.route.env_id)
                if ev.sequence:
                    self._client.record_encoded(key, ev.sequence, data)
                else:
                    self._client.record(ev)
                self.recovered.events += 1
        if self.recovered.segments:
            _log.info(
                "rlrec capture: resending %d events of %d spool segment(s) left in %s",
                self.recovered.events,
                self.recovered.segments,
                self._spool.directory,
            )

    def _dropped(self, run: RunInfo, events: int) -> None:
        run.dropped_steps += 1
        err = self._queue.spool_error
        if err is not None and not run.spool_failed:
            run.spool_failed = True
            self._log(
                events_pb2.LOG_LEVEL_WARN,
                f"rlrec capture dropped a step's {events} events: the spool could not be written ({err}); "
                "steps are dropped while it fails (free space in the spool directory); the run's total comes "
                "at its end",
            )
        elif run.dropped_steps == 1:
            self._log(
                events_pb2.LOG_LEVEL_WARN,
                f"rlrec capture dropped a step's {events} events: the destination takes events slower than "
                f"the run makes them (more than max_queue_bytes={self._queue.max_bytes} waiting after "
                f"max_wait={self._queue.max_wait} s); the run's total comes at its end",
            )

    def _log_event(self, level: int, message: str) -> events_pb2.Event:
        ev = self._event()
        ev.log.level, ev.log.message, ev.log.source = level, message, LOG_SOURCE
        return ev

    def _log(self, level: int, message: str) -> None:
        self._send([self._log_event(level, message)])

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

    def _end_run(self, failed: str | None, result: Any = None) -> None:
        run = self._run
        try:
            drops = self._queue.take_drops()
            run.dropped_events, run.dropped_bytes = drops.events, drops.bytes
            if drops.groups:
                self._log(
                    events_pb2.LOG_LEVEL_WARN,
                    f"rlrec capture dropped {drops.groups} step(s) of this run ({drops.events} events, "
                    f"{drops.bytes} bytes): the destination took events slower than the run made them"
                    + (
                        f", or the spool could not be written ({self._queue.spool_error})"
                        if self._queue.spool_error is not None
                        else ""
                    ),
                )
            if failed is None:
                ev = self._event()
                e = ev.session_ended
                e.reason, e.total_steps, e.total_episodes = END_REASON, run.total_steps, run.completed
                self._send([ev])
                self._telemetry(result)
            else:
                run.failed_reason = failed
                self._telemetry(result)
                ev = self._event()
                ev.session_failed.reason = failed
                self._send([ev])
            self._queue.drain(self._flush_timeout)
        finally:
            run.ended = True
            if self._spool is not None:
                self._spool.end_run()
            self._unwatch_resets()
            self._eps = {}
            self._context = None
            if self._proc is not None:
                proc, self._proc = self._proc, None
                proc.finish()
        if self._client is not None:
            self._client.flush(self._flush_timeout)

    def _telemetry(self, result: Any) -> None:
        """The run's TelemetrySnapshot: the runtime's own rows when the
        RunResult has them (Model.run's native loop), else the capture's
        (reset, predict and step times from the hooks)."""
        ev = self._event()
        rows = tuple(getattr(result, "telemetry", None) or ())
        if rows:
            snap = ev.telemetry_snapshot
            snap.horizon = events_pb2.TELEMETRY_HORIZON_SESSION
            for r in rows:
                snap.rows.add(
                    op=r.op,
                    component=r.component,
                    metric=r.metric,
                    kind=_UNIT_KINDS.get(r.unit, events_pb2.METRIC_KIND_UNSPECIFIED),
                    count=int(r.count),
                    avg=float(r.avg),
                    p50=float(r.p50),
                    p95=float(r.p95),
                    p99=float(r.p99),
                )
        else:
            ev.telemetry_snapshot.CopyFrom(self._meter.snapshot(events_pb2.TELEMETRY_HORIZON_SESSION))
        self._send([ev])


@dataclass
class Recovery:
    """What a Capture took over from dead runs in its spool directory."""

    segments: int = 0
    events: int = 0
    torn_bytes: int = 0  # a torn last event cut (a hook that never returned)


def default_spool_dir(addr: str) -> str:
    """The spool directory of the server at addr: BASE/HOST_PORT, BASE
    $RLREC_SPOOL_DIR, else $XDG_CACHE_HOME/rlrec/spool, else
    ~/.cache/rlrec/spool. One per address, so that a dead run is resent to
    the server it was recording into."""
    base = os.environ.get("RLREC_SPOOL_DIR")
    if not base:
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(cache, "rlrec", "spool")
    safe = "".join(c if c.isalnum() or c in "-." else "_" for c in addr)
    return os.path.join(base, safe)


class _SpoolWriter:
    """Numbers a hook's events in their recording and writes them to the
    spool (EventQueue calls it with room ensured). The events come
    serialized without their sequence number, which is appended as field
    4 (a protobuf message may carry its fields in any order; the
    run_nonce and everything else stay as serialized), so each event is
    serialized once."""

    def __init__(self, cap: Capture) -> None:
        self._cap = cap

    def _number(self, events: list[events_pb2.Event], encoded: list[bytes]):
        cap = self._cap
        out = []
        for ev, data in zip(events, encoded, strict=True):
            cap._seq += 1
            ev.sequence = cap._seq
            out.append(((ev.session_id, ev.route.env_id), cap._seq, data, _SEQUENCE_TAG + varint(cap._seq)))
        return out

    def write(self, events: list[events_pb2.Event], encoded: list[bytes]):
        cap = self._cap
        first = cap._seq
        items = self._number(events, encoded)
        try:
            cap._spool.append([(data, tail) for _, _, data, tail in items])
        except OSError:
            cap._seq = first  # the numbers go to the next group
            raise
        return items

    def memory(self, events: list[events_pb2.Event], encoded: list[bytes]):
        items = self._number(events, encoded)
        self._cap._spool.unspooled(len(items))
        return items


# Event.sequence (field 4, varint) as a tag byte: (4 << 3) | 0. Wire
# value: do not change.
_SEQUENCE_TAG = bytes([4 << 3])


# rlmesh TelemetryRow.unit to the wire's MetricKind.
_UNIT_KINDS = {
    "ms": events_pb2.METRIC_KIND_DURATION_MS,
    "bytes": events_pb2.METRIC_KIND_BYTES,
    "count": events_pb2.METRIC_KIND_COUNT,
}


def _trial(context: Any) -> int | None:
    """The trial ordinal of the episode the session loop just reset (its
    _trial), when the context shows it."""
    t = getattr(context, "_trial", None)
    return t if isinstance(t, int) and t >= 0 else None


# No reset observation seen (None may be an observation).
_NONE = object()


def _contract(context: Any) -> Any:
    """The env contract of an rlmesh RunContext (its ``contract``), or the
    context itself for one that holds the spaces."""
    if context is None:
        return None
    for holder in (getattr(context, "contract", None), getattr(context, "_contract", None), context):
        if holder is not None and getattr(holder, "observation_space", None) is not None:
            return holder
    return None


def _space_of(contract: Any, name: str) -> Any:
    if contract is None:
        return None
    try:
        return getattr(contract, name, None)
    except Exception:
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
