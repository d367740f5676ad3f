"""Session telemetry rows in the runtime's form (docs/rlmesh-wire.md §4a): per
(op, component, metric) the count of samples seen, and avg, p50, p95 and
p99 (nearest rank) over a reservoir of at most 8,192 of them."""

from __future__ import annotations

import math
import random

from ._pb import events_pb2

RESERVOIR = 8192

DURATION_MS = events_pb2.METRIC_KIND_DURATION_MS


class _Series:
    __slots__ = ("samples", "seen", "rng")

    def __init__(self) -> None:
        self.samples: list[float] = []
        self.seen = 0
        self.rng = random.Random(0x9E3779B9)

    def add(self, v: float) -> None:
        self.seen += 1
        if len(self.samples) < RESERVOIR:
            self.samples.append(v)
            return
        slot = self.rng.randrange(self.seen)  # keep each sample with probability RESERVOIR/seen
        if slot < RESERVOIR:
            self.samples[slot] = v


def _rank(sorted_samples: list[float], q: float) -> float:
    return sorted_samples[math.ceil((len(sorted_samples) - 1) * q)]


class Meter:
    """Samples of one run, by (op, component, metric, kind)."""

    def __init__(self) -> None:
        self._series: dict[tuple[str, str, str, int], _Series] = {}

    def add(self, op: str, component: str, metric: str, kind: int, value: float) -> None:
        key = (op, component, metric, kind)
        s = self._series.get(key)
        if s is None:
            s = self._series[key] = _Series()
        s.add(float(value))

    def snapshot(self, horizon: int) -> events_pb2.TelemetrySnapshot:
        snap = events_pb2.TelemetrySnapshot(horizon=horizon)
        for op, component, metric, kind in sorted(self._series):
            s = self._series[(op, component, metric, kind)]
            if not s.samples:
                continue
            ordered = sorted(s.samples)
            snap.rows.add(
                op=op,
                component=component,
                metric=metric,
                kind=kind,
                count=s.seen,
                avg=sum(s.samples) / len(s.samples),
                p50=_rank(ordered, 0.50),
                p95=_rank(ordered, 0.95),
                p99=_rank(ordered, 0.99),
            )
        return snap
