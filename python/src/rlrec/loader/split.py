"""Train/val splits by episode, the same as ``rlrec copy --split``.

An episode's split is the first whose running total of fractions exceeds
its point u = (first 8 bytes of SHA-256("rlrec.split.v1" || seed as 8
bytes big-endian || for session_id, env_id, episode_record_id: uvarint
length || bytes), big-endian) >> 11 / 2^53. It depends on the seed and the
episode alone, not on the filter or on what else the ROOT holds, so the
splits of one seed never share an episode, and a loader's split holds the
episodes that ``rlrec copy --split ... --seed`` puts in that split's ROOT.
"""

from __future__ import annotations

import hashlib
import math
import re
import struct
from dataclasses import dataclass

__all__ = ["SplitError", "Splits", "parse_splits", "split_point"]

_LABEL = b"rlrec.split.v1"  # part of the split assignment; do not change
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


class SplitError(ValueError):
    """A split specification that is not NAME=FRACTION,... adding up to 1."""


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def split_point(seed: int, session_id: str, env_id: str, episode_record_id: str) -> float:
    """The episode's point u in [0, 1)."""
    h = hashlib.sha256(_LABEL)
    h.update(struct.pack(">Q", seed & (2**64 - 1)))
    for s in (session_id, env_id, episode_record_id):
        b = s.encode("utf-8")
        h.update(_uvarint(len(b)))
        h.update(b)
    return (int.from_bytes(h.digest()[:8], "big") >> 11) / float(1 << 53)


@dataclass(frozen=True)
class Splits:
    names: tuple[str, ...]
    fractions: tuple[float, ...]

    def assign(self, u: float) -> str:
        c = 0.0
        for name, f in zip(self.names, self.fractions):
            c += f
            if u < c:
                return name
        return self.names[-1]


def parse_splits(spec: str | dict[str, float]) -> Splits:
    """``"train=0.9,val=0.1"`` or ``{"train": 0.9, "val": 0.1}``."""
    if isinstance(spec, dict):
        pairs = [(str(k), str(v)) for k, v in spec.items()]
    else:
        pairs = []
        for part in spec.split(","):
            name, sep, frac = part.strip().partition("=")
            if not sep:
                raise SplitError(f"split: {part!r}: want NAME=FRACTION pairs joined by commas (train=0.9,val=0.1)")
            pairs.append((name, frac))
    names, fracs = [], []
    for name, frac in pairs:
        if not _NAME.match(name):
            raise SplitError(
                f"split: name {name!r}: want letters, digits, '_' and '-', starting with a letter or digit"
            )
        if name in names:
            raise SplitError(f"split: {name!r} named twice")
        try:
            f = float(frac)
        except ValueError:
            f = math.nan
        if not (0 < f <= 1):
            raise SplitError(f"split: fraction {frac!r} of {name}: want a number above 0 and at most 1")
        names.append(name)
        fracs.append(f)
    if abs(sum(fracs) - 1) > 1e-9:
        raise SplitError(f"split: the fractions add up to {sum(fracs)!r}; they must add up to 1")
    return Splits(tuple(names), tuple(fracs))
