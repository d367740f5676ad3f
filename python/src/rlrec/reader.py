"""Reading a ROOT into the frames people use: ``rlrec.open(root)``.

A ROOT (a directory, or ``s3://BUCKET/PREFIX``) holds the tables steps,
episodes, sessions, logs and telemetry as hive-partitioned Parquet
(``TABLE/session_id=S/env_id=E/...``; steps of layout ``episode`` one
level deeper, ``episode_record_id=R``). ``open`` returns a ``Root``:

- ``sessions()``, ``episodes()``, ``logs()``, ``telemetry()``: pandas
  DataFrames;
- ``steps()``: a pyarrow Table; ``steps_pandas()`` a pandas DataFrame with
  the observation and action leaves decoded; ``steps_polars()`` a polars
  DataFrame; ``iter_steps()`` record batches, lazily, for a steps table
  larger than memory.

Every method takes ``session=``, ``env=`` and (steps, episodes)
``episode=`` (an episode record id such as ``ep-000001``), each a string
or a list of strings, and applies them **before reading**: session and env
select partition directories by name (the names are computed from the ids
as the recorder writes them, so nothing else is listed), an episode of
layout ``episode`` selects its directory, and in layout ``session`` the
row groups whose ``episode_record_id`` statistics cannot hold it are
skipped. ``Root.last_scan`` says how many files and row groups the last
read opened.

Ids are kept as written: every partition column is a string (a session
id ``007`` stays ``007``, an env id ``2026-01-02`` is no date). A partition
value longer than the directory name allows is cut by the recorder (see
``_hive``); the partition column then shows the cut name.

Decoding: ``observation_blob``, ``action_blob`` and
``final_observation_blob`` hold the exact recorded values; with
``decode=True`` they become the columns ``observation``, ``action`` and
``final_observation`` holding numpy values shaped by the file's stored
spaces (``rlrec.observation_space``/``rlrec.action_space``): a Box an
array of its dtype and shape (images uint8 H x W x C), Discrete a numpy
scalar, Text a str, Dict a dict in declared key order, Tuple a tuple.

Schema versions 2 and 3 are read; columns a version adds (3: seed,
trial_index, success, lane, predict_ms, step_ms, infos, raw payloads) come
through as they are stored. Recordings whose steps have different spaces
have different typed columns: reading several at once unifies their
schemas where the types agree and otherwise raises, naming the columns to
pass (``columns=``) or the recording to read alone.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from . import _hive
from .decode import decode_value, spec_from_json

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

__all__ = ["Root", "ScanStats", "SchemaVersionError", "open"]

TABLES = ("steps", "episodes", "sessions", "logs", "telemetry")
# Schema versions this reader knows (rlrec.schema_version).
KNOWN_SCHEMA_VERSIONS = ("2", "3")
META_SCHEMA_VERSION = b"rlrec.schema_version"
META_OBSERVATION_SPACE = b"rlrec.observation_space"
META_ACTION_SPACE = b"rlrec.action_space"
# Blob column -> the decoded column it becomes, and the space it is of.
BLOBS = {
    "observation_blob": ("observation", META_OBSERVATION_SPACE),
    "action_blob": ("action", META_ACTION_SPACE),
    "final_observation_blob": ("final_observation", META_OBSERVATION_SPACE),
}


class SchemaVersionError(ValueError):
    """A file's schema version is one this package cannot read."""


@dataclass
class ScanStats:
    """What one read opened: Parquet files and row groups, and the rows read."""

    files: int = 0
    row_groups: int = 0
    rows: int = 0


@dataclass(frozen=True)
class _Recording:
    session_id: str
    env_id: str
    dir: str  # TABLE/session_id=S/env_id=E, in the filesystem


def open(  # noqa: A001 - rlrec.open is the name users expect
    root: str | os.PathLike[str],
    *,
    filesystem: pafs.FileSystem | None = None,
    endpoint_url: str | None = None,
    region: str | None = None,
    access_key: str | None = None,
    secret_key: str | None = None,
) -> Root:
    """Opens a ROOT: a directory, or ``s3://BUCKET/PREFIX``.

    For ``s3://`` the endpoint is ``endpoint_url`` or ``$AWS_ENDPOINT_URL``
    (an S3-compatible server such as MinIO or versitygw, path-style; leave
    both unset for AWS), the region ``region`` or ``$AWS_REGION`` (default
    us-east-1), and the credentials ``access_key``/``secret_key`` or AWS's
    usual chain (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, shared
    files). ``filesystem`` (a pyarrow FileSystem) replaces all of that; the
    ROOT is then a path within it.
    """
    text = os.fspath(root)
    if filesystem is not None:
        return Root(filesystem, text.rstrip("/"))
    if text.startswith("s3://"):
        endpoint = endpoint_url or os.environ.get("AWS_ENDPOINT_URL") or None
        kwargs: dict[str, Any] = {
            "region": region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
        }
        if endpoint:
            scheme, sep, rest = endpoint.partition("://")
            if not sep:
                scheme, rest = "https", endpoint
            kwargs.update(endpoint_override=rest.rstrip("/"), scheme=scheme, force_virtual_addressing=False)
        if access_key is not None or secret_key is not None:
            kwargs.update(access_key=access_key, secret_key=secret_key)
        fs = pafs.S3FileSystem(**kwargs)
        return Root(fs, text[len("s3://") :].strip("/"))
    if "://" in text:
        fs, path = pafs.FileSystem.from_uri(text)
        return Root(fs, path.rstrip("/"))
    path = os.path.abspath(text)
    if not os.path.isdir(path):
        raise FileNotFoundError(f"rlrec.open: {path} is not a directory (a ROOT written by rlrec)")
    return Root(pafs.LocalFileSystem(), path)


class Root:
    """A ROOT's tables (see the module doc). Made by ``rlrec.open``."""

    def __init__(self, filesystem: pafs.FileSystem, base: str) -> None:
        self.filesystem = filesystem
        self.base = base
        self.last_scan = ScanStats()

    def __repr__(self) -> str:
        return f"rlrec.Root({self.base!r}, {type(self.filesystem).__name__})"

    # Tables as pandas.

    def sessions(self, session: _Sel = None, env: _Sel = None) -> pd.DataFrame:
        """The sessions table (one row per recording) as a pandas DataFrame."""
        return self._small("sessions", session, env, None, decode=False)

    def episodes(self, session: _Sel = None, env: _Sel = None, episode: _Sel = None, *, decode: bool = False):
        """The episodes table as a pandas DataFrame; decode=True adds
        ``final_observation`` decoded from ``final_observation_blob``."""
        return self._small("episodes", session, env, episode, decode=decode)

    def logs(self, session: _Sel = None, env: _Sel = None) -> pd.DataFrame:
        """The logs table as a pandas DataFrame."""
        return self._small("logs", session, env, None, decode=False)

    def telemetry(self, session: _Sel = None, env: _Sel = None) -> pd.DataFrame:
        """The telemetry table as a pandas DataFrame."""
        return self._small("telemetry", session, env, None, decode=False)

    # Steps.

    def steps(
        self, session: _Sel = None, env: _Sel = None, episode: _Sel = None, *, columns: Sequence[str] | None = None
    ) -> pa.Table:
        """The steps as one pyarrow Table (see the module doc)."""
        tables = [scan.to_table(columns=_cols(scan, columns)) for scan in self._scans("steps", session, env, episode)]
        self.last_scan.rows = sum(t.num_rows for t in tables)
        return _concat(tables, "steps")

    def steps_pandas(
        self,
        session: _Sel = None,
        env: _Sel = None,
        episode: _Sel = None,
        *,
        columns: Sequence[str] | None = None,
        decode: bool = True,
    ) -> pd.DataFrame:
        """The steps as a pandas DataFrame; with decode (the default) the
        columns ``observation`` and ``action`` hold the decoded values."""
        import pandas as pd

        frames = []
        rows = 0
        for scan in self._scans("steps", session, env, episode):
            t = scan.to_table(columns=_cols(scan, columns))
            rows += t.num_rows
            frames.append(_to_pandas(t, scan.specs if decode else None))
        self.last_scan.rows = rows
        if not frames:
            return self._empty_pandas("steps")
        return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)

    def steps_polars(
        self, session: _Sel = None, env: _Sel = None, episode: _Sel = None, *, columns: Sequence[str] | None = None
    ) -> pl.DataFrame:
        """The steps as a polars DataFrame (the blobs as Binary; decode them
        with ``rlrec.decode_value`` and ``observation_space()``)."""
        import polars as pl

        return pl.from_arrow(self.steps(session, env, episode, columns=columns))

    def iter_steps(
        self,
        session: _Sel = None,
        env: _Sel = None,
        episode: _Sel = None,
        *,
        columns: Sequence[str] | None = None,
        batch_size: int = 65_536,
        decode: bool = False,
    ) -> Iterator[Any]:
        """The steps as pyarrow RecordBatches of at most batch_size rows,
        read lazily (one row group at a time): for a steps table larger
        than memory. decode=True yields pandas DataFrames with decoded
        ``observation`` and ``action`` instead."""
        for scan in self._scans("steps", session, env, episode):
            for batch in scan.dataset.to_batches(
                columns=_cols(scan, columns), filter=scan.filter, batch_size=batch_size
            ):
                self.last_scan.rows += batch.num_rows
                if decode:
                    yield _to_pandas(pa.Table.from_batches([batch]), scan.specs)
                else:
                    yield batch

    def observation_space(self, session: str, env: str) -> Any:
        """The recording's observation SpaceSpec (from its steps files)."""
        return self._spec(session, env, META_OBSERVATION_SPACE)

    def action_space(self, session: str, env: str) -> Any:
        """The recording's action SpaceSpec (from its steps files)."""
        return self._spec(session, env, META_ACTION_SPACE)

    def recordings(self, session: _Sel = None, env: _Sel = None) -> list[tuple[str, str]]:
        """(session_id, env_id) of each recording with a sessions row."""
        return [(r.session_id, r.env_id) for r in self._recordings("sessions", session, env)]

    # Internals.

    def _spec(self, session: str, env: str, key: bytes) -> Any:
        for scan in self._scans("steps", session, env, None):
            if key in scan.specs:
                return scan.specs[key]
        raise LookupError(f"rlrec: no steps with {key.decode()} for session {session!r} env {env!r} in {self.base}")

    def _small(self, table: str, session: _Sel, env: _Sel, episode: _Sel, *, decode: bool) -> pd.DataFrame:
        import pandas as pd

        frames = []
        rows = 0
        for scan in self._scans(table, session, env, episode):
            t = scan.to_table(columns=None)
            rows += t.num_rows
            frames.append(t)
        self.last_scan.rows = rows
        if not frames:
            return self._empty_pandas(table)
        if not decode:
            return _to_pandas(_concat(frames, table), None)
        # Each recording's blobs with its own spaces.
        scans = self._scans(table, session, env, episode)
        dfs = [_to_pandas(t, scan.specs) for t, scan in zip(frames, scans, strict=True)]
        self.last_scan.rows = rows
        return dfs[0] if len(dfs) == 1 else pd.concat(dfs, ignore_index=True)

    def _empty_pandas(self, table: str) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame({c: pd.Series(dtype="string") for c in ("session_id", "env_id")})

    def _listdir(self, path: str) -> list[pafs.FileInfo]:
        try:
            return self.filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True))
        except FileNotFoundError:
            return []

    def _children(self, path: str, key: str, values: _Sel) -> list[tuple[str, str]]:
        """(value, dir) of path's key=value directories: named from values
        when given (checked to exist, nothing listed), else listed."""
        if values is not None:
            wanted = [values] if isinstance(values, str) else list(values)
            paths = [f"{path}/{key}={_hive.encode_value(v)}" for v in wanted]
            infos = self.filesystem.get_file_info(paths) if paths else []
            return [(v, i.path) for v, i in zip(wanted, infos, strict=True) if i.type == pafs.FileType.Directory]
        out = []
        for info in self._listdir(path):
            name = info.base_name
            if info.type != pafs.FileType.Directory or not name.startswith(key + "="):
                continue
            out.append((_hive.decode_value(name[len(key) + 1 :]), info.path))
        return sorted(out)

    def _recordings(self, table: str, session: _Sel, env: _Sel) -> list[_Recording]:
        top = f"{self.base}/{table}"
        recs = []
        for sid, sdir in self._children(top, "session_id", session):
            for eid, edir in self._children(sdir, "env_id", env):
                recs.append(_Recording(sid, eid, edir))
        return recs

    def _parts(self, path: str) -> list[str]:
        return sorted(
            i.path
            for i in self._listdir(path)
            if i.type == pafs.FileType.File
            and i.base_name.endswith(".parquet")
            and not i.base_name.startswith(("_", "."))
        )

    def _scans(self, table: str, session: _Sel, env: _Sel, episode: _Sel) -> list[_Scan]:
        self.last_scan = ScanStats()
        scans = []
        epsel = None if episode is None else ([episode] if isinstance(episode, str) else list(episode))
        for rec in self._recordings(table, session, env):
            files = self._parts(rec.dir)
            keys = ["session_id", "env_id"]
            if table == "steps" and not files:  # layout "episode": a directory per episode
                keys.append("episode_record_id")
                for _, rdir in self._children(rec.dir, "episode_record_id", epsel):
                    files.extend(self._parts(rdir))
                row_filter = None
            else:
                row_filter = None if epsel is None else ds.field("episode_record_id").isin(epsel)
            if not files:
                continue
            scans.append(self._scan(table, files, keys, row_filter))
        return scans

    def _scan(self, table: str, files: list[str], keys: list[str], row_filter: Any) -> _Scan:
        part = ds.partitioning(pa.schema([(k, pa.string()) for k in keys]), flavor="hive")
        dataset = ds.dataset(
            files,
            filesystem=self.filesystem,
            format="parquet",
            partitioning=part,
            partition_base_dir=f"{self.base}/{table}",
        )
        frags = list(dataset.get_fragments())
        meta = frags[0].physical_schema.metadata or {}
        version = meta.get(META_SCHEMA_VERSION, b"").decode()
        if version not in KNOWN_SCHEMA_VERSIONS:
            raise SchemaVersionError(
                f"rlrec: {frags[0].path} has schema version {version or '(none)'}; this rlrec package reads "
                f"versions {', '.join(KNOWN_SCHEMA_VERSIONS)}: upgrade it (pip install -U rlrec)"
            )
        specs = {}
        for key in (META_OBSERVATION_SPACE, META_ACTION_SPACE):
            if key in meta:
                specs[key] = spec_from_json(meta[key])
        self.last_scan.files += len(frags)
        if row_filter is not None:
            # Only the row groups whose statistics may hold the episodes.
            pieces = [rg for f in frags for rg in f.split_by_row_group(filter=row_filter, schema=dataset.schema)]
            self.last_scan.files -= sum(1 for f in frags if not any(p.path == f.path for p in pieces))
            self.last_scan.row_groups += len(pieces)
            dataset = ds.FileSystemDataset(pieces, dataset.schema, dataset.format, self.filesystem)
        else:
            self.last_scan.row_groups += sum(f.metadata.num_row_groups for f in frags)
        return _Scan(dataset, row_filter, specs)


_Sel = str | Iterable[str] | None


@dataclass
class _Scan:
    dataset: ds.Dataset
    filter: Any
    specs: dict[bytes, Any]

    def to_table(self, columns: list[str] | None) -> pa.Table:
        return self.dataset.to_table(columns=columns, filter=self.filter)


def _cols(scan: _Scan, columns: Sequence[str] | None) -> list[str] | None:
    if columns is None:
        return None
    names = set(scan.dataset.schema.names)
    missing = [c for c in columns if c not in names]
    if missing:
        raise KeyError(f"rlrec: no column {', '.join(map(repr, missing))} in the steps; it has {sorted(names)}")
    return list(columns)


def _concat(tables: list[pa.Table], table: str) -> pa.Table:
    if not tables:
        return pa.table({"session_id": pa.array([], pa.string()), "env_id": pa.array([], pa.string())})
    if len(tables) == 1:
        return tables[0]
    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowTypeError, pa.ArrowInvalid) as exc:
        raise ValueError(
            f"rlrec: the {table} of these recordings have different typed columns (their spaces differ): {exc}; "
            "read one recording at a time (session=..., env=...), or only the fixed columns (columns=[...])"
        ) from exc


def _to_pandas(t: pa.Table, specs: dict[bytes, Any] | None) -> pd.DataFrame:
    """t as pandas, partition columns as str, blobs decoded when specs."""
    df = t.to_pandas()
    if not specs:
        return df
    for blob, (name, key) in BLOBS.items():
        if blob not in df.columns or key not in specs:
            continue
        spec = specs[key]
        blobs = t.column(blob).to_pylist()
        values = np.empty(len(blobs), dtype=object)
        for i, b in enumerate(blobs):
            values[i] = None if b is None else decode_value(spec, b)
        df[name] = values
    return df
