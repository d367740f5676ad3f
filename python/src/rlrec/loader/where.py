"""The episode filter of ``rlrec copy --where``, in Python.

The same language as the Go package ``curate/where`` (whose doc is the
reference): ``column op literal`` with ``= == != <> < <= > >=``,
``column IS [NOT] NULL``, ``column [NOT] IN (literal, ...)``, a bool column
alone, joined by ``AND``, ``OR``, ``NOT`` (NOT binds tightest, then AND,
then OR) and parentheses; literals ``'strings'`` (``''`` for a quote),
numbers, ``TRUE``/``FALSE``, and times as strings
(``'2026-03-01T12:00:00Z'``, ``'2026-03-01 12:00:00'``, ``'2026-03-01'``,
UTC unless an offset is given), compared to the microsecond.

Columns are those of the episodes table that are not binary, and the
recording's ``session_id`` and ``env_id``. Types are checked when the
filter is parsed (``FilterError`` names the byte offset). NULL follows
SQL: a comparison with null is unknown, and only TRUE selects, so a filter
selects what the Go filter, and DuckDB's ``WHERE``, select.

    f = parse("status = 'completed' AND success = true AND step_count > 10")
    f.match({"status": "completed", "success": True, "step_count": 12, ...})
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["COLUMNS", "MAX_DEPTH", "Filter", "FilterError", "parse"]

MAX_DEPTH = 64

# Filterable columns and their types, as curate/where/columns.go lists them.
COLUMNS: dict[str, str] = {
    "session_id": "string",
    "env_id": "string",
    "episode_record_id": "string",
    "episode_id": "string",
    "episode_index": "integer",
    "env_index": "integer",
    "env_component_id": "string",
    "model_component_id": "string",
    "started_from_auto_reset": "bool",
    "status": "string",
    "step_count": "integer",
    "cumulative_reward": "float",
    "steps_recorded": "integer",
    "reward_sum": "float",
    "terminated": "bool",
    "truncated": "bool",
    "success": "bool",
    "duration_ms": "integer",
    "started_at": "timestamp",
    "ended_at": "timestamp",
    "final_info": "string",
    "steps_file": "string",
    # Schema version 3 (rlmesh 0.1); null in version 2 rows.
    "seed": "integer",
    "trial_index": "integer",
    "success_source": "string",
    "lane": "integer",
    "predict_ms": "float",
    "step_ms": "float",
}

# The episodes columns schema version 3 added: null in version 2 rows.
_VERSION3 = frozenset({"seed", "trial_index", "success_source", "lane", "predict_ms", "step_ms"})

_KEYWORDS = {"AND", "OR", "NOT", "IS", "NULL", "IN", "TRUE", "FALSE"}

# three-valued truth
_F, _T, _U = 0, 1, 2


class FilterError(ValueError):
    """A filter that does not parse or type-check; pos is the byte offset."""

    def __init__(self, pos: int, msg: str):
        super().__init__(f"filter: at byte {pos}: {msg}")
        self.pos = pos
        self.msg = msg


@dataclass
class _Tok:
    kind: str  # eof ident string number op lparen rparen comma keyword
    pos: int
    text: str = ""
    raw: str = ""


def _is_digit(c: str) -> bool:
    return "0" <= c <= "9"


def _is_ident_start(c: str) -> bool:
    return ("a" <= c <= "z") or ("A" <= c <= "Z") or c == "_"


def _is_ident_byte(c: str) -> bool:
    return _is_ident_start(c) or _is_digit(c)


def _number_len(s: str) -> int:
    i = 0
    if i < len(s) and s[i] in "+-":
        i += 1
    digits = 0
    while i < len(s) and _is_digit(s[i]):
        i += 1
        digits += 1
    if i < len(s) and s[i] == ".":
        i += 1
        while i < len(s) and _is_digit(s[i]):
            i += 1
            digits += 1
    if digits == 0:
        return 0
    if i < len(s) and s[i] in "eE":
        j = i + 1
        if j < len(s) and s[j] in "+-":
            j += 1
        k = j
        while k < len(s) and _is_digit(s[k]):
            k += 1
        if k == j:
            return 0
        i = k
    return i


def _quoted(s: str, q: str) -> tuple[str, int] | None:
    out = []
    i = 1
    while i < len(s):
        if s[i] != q:
            out.append(s[i])
            i += 1
            continue
        if i + 1 < len(s) and s[i + 1] == q:
            out.append(q)
            i += 2
            continue
        return "".join(out), i + 1
    return None


def _lex(src: str) -> list[_Tok]:
    # Byte offsets as the Go lexer reports them: work on the UTF-8 bytes
    # decoded as latin-1, so one character is one byte.
    b = src.encode("utf-8").decode("latin-1")
    toks: list[_Tok] = []
    i = 0
    while i < len(b):
        c = b[i]
        if c in " \t\n\r":
            i += 1
        elif c == "(":
            toks.append(_Tok("lparen", i, raw="("))
            i += 1
        elif c == ")":
            toks.append(_Tok("rparen", i, raw=")"))
            i += 1
        elif c == ",":
            toks.append(_Tok("comma", i, raw=","))
            i += 1
        elif c in "=<>!":
            op = c
            two = b[i : i + 2]
            if two in ("==", "!=", "<>", "<=", ">="):
                op = two
            if op == "!":
                raise FilterError(i, "'!' must be followed by '=' (write != or NOT)")
            text = {"==": "=", "<>": "!="}.get(op, op)
            toks.append(_Tok("op", i, text, op))
            i += len(op)
        elif c in "'\"":
            got = _quoted(b[i:], c)
            if got is None:
                what = "string" if c == "'" else "quoted column name"
                raise FilterError(i, f"unterminated {what} (a {c} inside one is written {c}{c})")
            s, n = got
            try:
                s = s.encode("latin-1").decode("utf-8")
            except UnicodeDecodeError:
                raise FilterError(i, "invalid UTF-8") from None
            kind = "string"
            if c == '"':
                kind = "ident"
                if s == "":
                    raise FilterError(i, "empty quoted column name")
                s = s.lower()
            toks.append(_Tok(kind, i, s, b[i : i + n]))
            i += n
        elif _is_digit(c) or c == "." or (c in "+-" and i + 1 < len(b) and (_is_digit(b[i + 1]) or b[i + 1] == ".")):
            n = _number_len(b[i:])
            if n == 0:
                raise FilterError(i, f"bad number {b[i : i + 12]!r}")
            j = i + n
            if j < len(b) and _is_ident_byte(b[j]):
                raise FilterError(i, f"bad number {b[i : j + 1]!r}")
            toks.append(_Tok("number", i, b[i:j], b[i:j]))
            i = j
        elif _is_ident_start(c):
            j = i + 1
            while j < len(b) and _is_ident_byte(b[j]):
                j += 1
            word = b[i:j]
            if word.upper() in _KEYWORDS:
                toks.append(_Tok("keyword", i, word.upper(), word))
            else:
                toks.append(_Tok("ident", i, word.lower(), word))
            i = j
        else:
            ch = b[i:].encode("latin-1").decode("utf-8", errors="replace")[:1]
            raise FilterError(i, f"unexpected character {ch!r}")
    toks.append(_Tok("eof", len(b)))
    return toks


def _describe(t: _Tok) -> str:
    return {
        "eof": "end of filter",
        "string": f"string {t.raw}",
        "ident": f"column {t.raw}",
        "number": f"number {t.raw}",
    }.get(t.kind, repr(t.raw))


# A literal: (value, is_float) where value is str, int, float or bool; a
# timestamp is an int of unix microseconds.
_Lit = tuple[Any, bool]

_TIME_FORMATS = ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d")


def _micros(t: _dt.datetime) -> int:
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.UTC)
    delta = t - _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def _parse_time(s: str) -> int | None:
    offset = len(s) >= 6 and s[-6] in "+-" and s[-3] == ":"
    if "T" in s and (s.endswith("Z") or offset):
        # RFC 3339; Python takes at most 6 fraction digits, Go 9: cut to 6
        body = s[:-1] + "+00:00" if s.endswith("Z") else s
        head, sep, rest = body.partition(".")
        if sep:
            k = 0
            while k < len(rest) and _is_digit(rest[k]):
                k += 1
            body = head + "." + rest[: min(k, 6)].ljust(1, "0") + rest[k:]
        try:
            return _micros(_dt.datetime.fromisoformat(body))
        except ValueError:
            return None
    for fmt in _TIME_FORMATS:
        try:
            return _micros(_dt.datetime.strptime(s, fmt))
        except ValueError:
            continue
    return None


def _literal(col: str, t: _Tok, op: str) -> _Lit:
    typ = COLUMNS[col]

    def bad(want: str) -> FilterError:
        return FilterError(t.pos, f"column {col} is {typ}: compare it with {want}, got {_describe(t)}")

    if t.kind == "keyword" and t.text == "NULL":
        if op == "IN":
            return _raise(FilterError(t.pos, "NULL in an IN list never matches; use IS NULL"))
        return _raise(
            FilterError(t.pos, f"a comparison with NULL is never true; write {col} IS NULL or {col} IS NOT NULL")
        )
    if typ == "string":
        if t.kind != "string":
            raise bad("a 'string'")
        return t.text, False
    if typ in ("integer", "float"):
        if t.kind != "number":
            raise bad("a number")
        try:
            f = float(t.text)
        except ValueError:
            raise FilterError(t.pos, f"bad number {t.raw!r}") from None
        if typ == "float":
            return f, False
        if not any(ch in t.text for ch in ".eE"):
            i = int(t.text)
            if -(1 << 63) <= i < (1 << 63):
                return i, False
        if math.isfinite(f) and f == math.trunc(f) and -(2.0**63) <= f < 2.0**63:
            return int(f), False
        return f, True
    if typ == "bool":
        if t.kind != "keyword" or t.text not in ("TRUE", "FALSE"):
            raise bad("TRUE or FALSE")
        return t.text == "TRUE", False
    # timestamp
    if t.kind != "string":
        raise bad("a time in a 'string' ('2026-03-01T12:00:00Z')")
    us = _parse_time(t.text)
    if us is None:
        raise FilterError(
            t.pos,
            f"column {col} is a timestamp: {t.raw} is no time (want RFC 3339, "
            "'2026-03-01 12:00:00' or '2026-03-01', UTC unless an offset is given)",
        )
    return us, False


def _raise(e: Exception) -> Any:
    raise e


def _cmp_float(a: float, b: float) -> int:
    an, bn = math.isnan(a), math.isnan(b)
    if an and bn:
        return 0
    if an:
        return 1
    if bn:
        return -1
    return (a > b) - (a < b)


def _compare(typ: str, v: Any, lit: _Lit) -> int:
    lv, is_float = lit
    if typ in ("integer", "timestamp"):
        if is_float:
            return _cmp_float(float(v), lv)
        return (v > lv) - (v < lv)
    if typ == "float":
        return _cmp_float(float(v), lv)
    if typ == "string":
        a, b = v.encode("utf-8"), lv.encode("utf-8")  # byte order, as Go and DuckDB
        return (a > b) - (a < b)
    return (bool(v) > lv) - (bool(v) < lv)  # bool: false < true


def _get(col: str, episode: dict[str, Any]) -> Any:
    if col not in episode:
        if col in _VERSION3:
            return None  # a version 2 ROOT has no version 3 columns: null
        raise KeyError(f"filter: the episode has no column {col!r}")
    v = episode[col]
    if v is None:
        return None
    if COLUMNS[col] == "timestamp" and isinstance(v, _dt.datetime):
        return _micros(v)
    return v


_OPS: dict[str, Callable[[int], bool]] = {
    "=": lambda c: c == 0,
    "!=": lambda c: c != 0,
    "<": lambda c: c < 0,
    "<=": lambda c: c <= 0,
    ">": lambda c: c > 0,
    ">=": lambda c: c >= 0,
}


class _Parser:
    def __init__(self, toks: list[_Tok]):
        self.toks = toks
        self.i = 0

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def next(self) -> _Tok:
        t = self.toks[self.i]
        if t.kind != "eof":
            self.i += 1
        return t

    def keyword(self, k: str) -> bool:
        t = self.peek()
        if t.kind == "keyword" and t.text == k:
            self.i += 1
            return True
        return False

    def or_(self, depth: int) -> tuple:
        left = self.and_(depth)
        while self.keyword("OR"):
            left = ("or", left, self.and_(depth))
        return left

    def and_(self, depth: int) -> tuple:
        left = self.not_(depth)
        while self.keyword("AND"):
            left = ("and", left, self.not_(depth))
        return left

    def not_(self, depth: int) -> tuple:
        t = self.peek()
        if depth >= MAX_DEPTH:
            raise FilterError(t.pos, f"nested more than {MAX_DEPTH} levels deep")
        if self.keyword("NOT"):
            return ("not", self.not_(depth + 1))
        if t.kind == "lparen":
            self.next()
            x = self.or_(depth + 1)
            c = self.next()
            if c.kind != "rparen":
                raise FilterError(c.pos, f"want ) to close the ( at byte {t.pos}, got {_describe(c)}")
            return x
        return self.predicate()

    def predicate(self) -> tuple:
        t = self.next()
        if t.kind != "ident":
            if t.kind in ("string", "number") or (t.kind == "keyword" and t.text in ("TRUE", "FALSE", "NULL")):
                raise FilterError(
                    t.pos, f"want a column, got {_describe(t)}: a column stands on the left of its comparison"
                )
            raise FilterError(t.pos, f"want a column, NOT or (, got {_describe(t)}")
        col = t.text
        if col not in COLUMNS:
            names = ", ".join(sorted(COLUMNS))
            raise FilterError(t.pos, f"unknown column {t.raw!r}; the episodes columns a filter may name: {names}")
        typ = COLUMNS[col]
        op = self.peek()
        if op.kind == "op":
            self.next()
            lit = _literal(col, self.next(), op.text)
            if typ == "bool" and op.text not in ("=", "!="):
                raise FilterError(op.pos, f"column {col} is bool: compare it with = or != only")
            return ("cmp", col, op.text, lit)
        if op.kind == "keyword" and op.text == "IS":
            self.next()
            neg = self.keyword("NOT")
            n = self.next()
            if n.kind != "keyword" or n.text != "NULL":
                raise FilterError(n.pos, f"want NULL after IS, got {_describe(n)}")
            return ("null", col, neg)
        if op.kind == "keyword" and op.text in ("IN", "NOT"):
            self.next()
            neg = False
            if op.text == "NOT":
                neg = True
                nxt = self.next()
                if nxt.kind != "keyword" or nxt.text != "IN":
                    raise FilterError(nxt.pos, f"want IN after {col} NOT, got {_describe(nxt)}")
            lp = self.next()
            if lp.kind != "lparen":
                raise FilterError(lp.pos, f"want ( after IN, got {_describe(lp)}")
            lits = []
            while True:
                lits.append(_literal(col, self.next(), "IN"))
                sep = self.next()
                if sep.kind == "rparen":
                    break
                if sep.kind != "comma":
                    raise FilterError(sep.pos, f"want , or ) in the IN list, got {_describe(sep)}")
            return ("in", col, neg, lits)
        if typ == "bool":
            return ("cmp", col, "=", (True, False))
        raise FilterError(
            op.pos,
            f"want a comparison (= != < <= > >=), IS [NOT] NULL or IN after column {col}, got {_describe(op)}",
        )


def _eval(n: tuple, e: dict[str, Any]) -> int:
    kind = n[0]
    if kind in ("and", "or"):
        a = _eval(n[1], e)
        if kind == "or":
            if a == _T:
                return _T
            b = _eval(n[2], e)
            if b == _T:
                return _T
            return _F if (a == _F and b == _F) else _U
        if a == _F:
            return _F
        b = _eval(n[2], e)
        if b == _F:
            return _F
        return _T if (a == _T and b == _T) else _U
    if kind == "not":
        x = _eval(n[1], e)
        return _U if x == _U else (_F if x == _T else _T)
    col = n[1]
    v = _get(col, e)
    if kind == "null":
        return _T if ((v is None) != n[2]) else _F
    if v is None:
        return _U
    typ = COLUMNS[col]
    if kind == "cmp":
        return _T if _OPS[n[2]](_compare(typ, v, n[3])) else _F
    found = any(_compare(typ, v, lit) == 0 for lit in n[3])
    return _T if found != n[2] else _F


class Filter:
    """A parsed, type-checked filter; immutable."""

    def __init__(self, source: str, root: tuple):
        self.source = source
        self._root = root

    def match(self, episode: dict[str, Any]) -> bool:
        """Whether the filter is TRUE for an episode (its episodes columns,
        session_id and env_id, by name); FALSE and unknown both leave it out."""
        return _eval(self._root, episode) == _T

    def __repr__(self) -> str:
        return f"Filter({self.source!r})"


def parse(source: str) -> Filter:
    """Parses and type-checks a filter; FilterError when it is not one."""
    toks = _lex(source)
    p = _Parser(toks)
    if p.peek().kind == "eof":
        raise FilterError(0, "empty filter")
    root = p.or_(0)
    t = p.peek()
    if t.kind != "eof":
        raise FilterError(t.pos, f"unexpected {_describe(t)} after a complete filter (join conditions with AND or OR)")
    return Filter(source, root)
