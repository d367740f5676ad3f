"""Where every selected step is: the loader's index of a ROOT.

Built from the episodes table and the steps files' Parquet footers, never
from the steps' data:

1. Every ``episodes/**/part-*.parquet`` (paths with a component starting
   with ``_`` or ``.`` skipped, as every rlrec reader does) is read whole
   but for ``final_observation_blob``; the real ``session_id`` and
   ``env_id`` come from each file's metadata (``rlrec.session_id``,
   ``rlrec.env_id``), not from the possibly cut partition names.
2. The filter (``where``) and the split select episodes; episodes that
   recorded no step (``steps_file`` null) have no samples.
3. Each steps file named by a selected episode has its footer read (row
   groups and their row counts, the column chunks' offsets and sizes),
   concurrently. In layout ``episode`` the file is the episode's, rows
   0..steps_recorded-1. In layout ``session`` the file packs whole
   episodes, each contiguous; the index reads that file's
   ``episode_record_id`` column alone (dictionary-encoded: a few bytes per
   row group) to find where each episode starts. A file whose rows do not
   agree with the episodes table (an episode missing, apart, or of another
   length) is an ``IndexError_`` naming the file and episode.

Episodes are kept in a fixed order, (session_id, env_id, episode_index,
episode_record_id), so an index of the same selection is the same on any
machine. ``Index.episodes`` is a pyarrow Table of the selected episodes'
rows in that order, with ``session_id`` and ``env_id``; episode numbers in
batches index it.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .split import Splits, split_point
from .where import COLUMNS, Filter

__all__ = ["Index", "IndexError_", "Root", "build_index", "open_root"]

# File metadata keys the recorder writes; part of the format.
META_SESSION = b"rlrec.session_id"
META_ENV = b"rlrec.env_id"
META_LAYOUT = b"rlrec.layout"
META_OBS = b"rlrec.observation_space"
META_ACT = b"rlrec.action_space"


class IndexError_(RuntimeError):
    """A ROOT whose episodes and steps files do not agree, or cannot be read."""


@dataclass(frozen=True)
class Root:
    """A ROOT: a pyarrow file system and the ROOT's path in it."""

    fs: pafs.FileSystem
    path: str  # no trailing slash
    url: str

    def join(self, rel: str) -> str:
        return f"{self.path}/{rel}" if self.path else rel


def open_root(root: str | os.PathLike, filesystem: pafs.FileSystem | None = None) -> Root:
    """A directory, or ``s3://bucket/prefix``, opened as ``rlrec.open`` opens
    it (S3 settings from the AWS environment: ``AWS_ENDPOINT_URL``,
    path-style, ``AWS_REGION``, default us-east-1, and the credentials
    chain), or a path in ``filesystem``."""
    from ..reader import open as open_reader

    r = open_reader(root, filesystem=filesystem)
    return Root(r.filesystem, r.base.rstrip("/"), os.fspath(root))


def _skipped(rel: str) -> bool:
    return any(part.startswith(("_", ".")) for part in rel.split("/"))


def _list_parquet(root: Root, table: str) -> list[str]:
    base = root.join(table)
    infos = root.fs.get_file_info(pafs.FileSelector(base, recursive=True, allow_not_found=True))
    out = []
    for fi in infos:
        if fi.type != pafs.FileType.File or not fi.path.endswith(".parquet"):
            continue
        rel = fi.path[len(base) :].lstrip("/")
        if _skipped(rel):
            continue
        out.append(fi.path)
    return sorted(out)


@dataclass
class StepsFile:
    """One steps file: its path, footer and the row groups' first rows."""

    path: str  # in the file system
    metadata: pq.FileMetaData
    rg_starts: np.ndarray  # first row of each row group, and the total last
    layout: str
    observation_space: bytes
    action_space: bytes
    schema: pa.Schema = field(repr=False, default=None)


@dataclass
class Index:
    """The selected episodes, their steps' places, and the steps files."""

    root: Root
    episodes: pa.Table  # selected episodes rows, in index order
    files: list[StepsFile]
    file_of: np.ndarray  # per episode: index into files
    start: np.ndarray  # per episode: first row in its file
    count: np.ndarray  # per episode: steps

    def __post_init__(self) -> None:
        # Sample numbers: episode e holds samples cum[e] .. cum[e+1]-1.
        self.cum = np.zeros(len(self.count) + 1, dtype=np.int64)
        np.cumsum(self.count, out=self.cum[1:])
        # Each file's row group first rows as ints, for scalar lookups.
        self.rg_bounds: list[list[int]] = [f.rg_starts.tolist() for f in self.files]

    @property
    def total(self) -> int:
        return int(self.cum[-1])

    def __len__(self) -> int:
        return len(self.count)


def _read_episodes(root: Root) -> pa.Table:
    tables = []
    for path in _list_parquet(root, "episodes"):
        try:
            pf = pq.ParquetFile(path, filesystem=root.fs)
            names = [n for n in pf.schema_arrow.names if n != "final_observation_blob"]
            t = pf.read(columns=names)
        except (OSError, pa.ArrowException) as exc:
            raise IndexError_(f"loader: episodes file {path}: {exc}; is it a ROOT rlrec wrote?") from exc
        md = pf.metadata.metadata or {}
        sid = md.get(META_SESSION)
        eid = md.get(META_ENV)
        if sid is None or eid is None:
            raise IndexError_(f"loader: episodes file {path} has no rlrec.session_id/rlrec.env_id metadata")
        n = t.num_rows
        t = t.append_column("session_id", pa.array([sid.decode()] * n, pa.string()))
        t = t.append_column("env_id", pa.array([eid.decode()] * n, pa.string()))
        tables.append(t.replace_schema_metadata(None))
    if not tables:
        raise IndexError_(f"loader: {root.url} has no episodes table (episodes/**/*.parquet): is it a ROOT?")
    return pa.concat_tables(tables, promote_options="permissive")


def build_index(
    root: Root,
    where: Filter | None = None,
    split: tuple[Splits, str, int] | None = None,
    threads: int = 16,
) -> Index:
    """The index of the episodes of root that ``where`` and ``split``
    select; split is (splits, name, seed), as ``rlrec copy --split``."""
    eps = _read_episodes(root)
    keep = pc.and_(pc.is_valid(eps.column("steps_file")), pc.greater(eps.column("steps_recorded"), 0)).to_numpy(
        zero_copy_only=False
    )
    if where is not None:
        names = [n for n in COLUMNS if n in eps.column_names]
        rows = eps.select(names).to_pylist()
        keep &= np.fromiter((where.match(r) for r in rows), dtype=bool, count=len(rows))
    if split is not None:
        splits, name, seed = split
        ids = zip(*(eps.column(c).to_pylist() for c in ("session_id", "env_id", "episode_record_id")))
        keep &= np.fromiter((splits.assign(split_point(seed, *t)) == name for t in ids), dtype=bool, count=len(eps))
    episodes = eps.filter(pa.array(keep)).sort_by(
        [(c, "ascending") for c in ("session_id", "env_id", "episode_index", "episode_record_id")]
    )
    paths_of = episodes.column("steps_file").to_pylist()
    rids = episodes.column("episode_record_id").to_pylist()
    count = episodes.column("steps_recorded").to_numpy().astype(np.int64)
    by_file: dict[str, list[tuple[str, int]]] = {}
    for p, r, c in zip(paths_of, rids, count.tolist()):
        by_file.setdefault(p, []).append((r, c))
    paths = sorted(by_file)
    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(paths) or 1))) as ex:
        files = list(ex.map(lambda p: _open_steps(root, p, by_file[p]), paths))
    fidx = {p: i for i, p in enumerate(paths)}
    file_of = np.fromiter((fidx[p] for p in paths_of), dtype=np.int64, count=len(paths_of))
    start = np.fromiter((files[f][1][r] for f, r in zip(file_of.tolist(), rids)), dtype=np.int64, count=len(rids))
    return Index(root, episodes, [f for f, _ in files], file_of, start, count)


def _open_steps(root: Root, rel: str, eps: list[tuple[str, int]]) -> tuple[StepsFile, dict[str, int]]:
    path = root.join(rel)
    try:
        pf = pq.ParquetFile(path, filesystem=root.fs)
        md = pf.metadata
    except (OSError, pa.ArrowException) as exc:
        raise IndexError_(f"loader: steps file {rel} (named by the episodes table): {exc}") from exc
    kv = md.metadata or {}
    layout = (kv.get(META_LAYOUT) or b"episode").decode()
    rg_starts = np.zeros(md.num_row_groups + 1, dtype=np.int64)
    np.cumsum([md.row_group(i).num_rows for i in range(md.num_row_groups)], out=rg_starts[1:])
    sf = StepsFile(path, md, rg_starts, layout, kv.get(META_OBS, b""), kv.get(META_ACT, b""), pf.schema_arrow)
    starts: dict[str, int] = {}
    lengths: dict[str, int] = {}
    if "episode_record_id" not in pf.schema_arrow.names:
        if len(eps) != 1 or md.num_rows != eps[0][1]:
            names = ", ".join(r for r, _ in eps)
            raise IndexError_(
                f"loader: steps file {rel} holds {md.num_rows} rows of one episode; the episodes table puts "
                f"{sum(c for _, c in eps)} steps of {names} there"
            )
        starts[eps[0][0]] = 0
        return sf, starts
    try:
        col = pq.ParquetFile(path, filesystem=root.fs, read_dictionary=["episode_record_id"]).read(
            columns=["episode_record_id"]
        )
        col = col.column(0).unify_dictionaries().combine_chunks()
        if not pa.types.is_dictionary(col.type):
            col = col.dictionary_encode()
        codes = col.indices.to_numpy(zero_copy_only=False)
        dictionary = col.dictionary.to_pylist()
    except (OSError, pa.ArrowException) as exc:
        raise IndexError_(f"loader: steps file {rel}: column episode_record_id: {exc}") from exc
    if len(codes):
        change = np.flatnonzero(codes[1:] != codes[:-1]) + 1
        firsts = np.concatenate([[0], change])
        ends = np.concatenate([change, [len(codes)]])
        for f, e in zip(firsts.tolist(), ends.tolist()):
            name = dictionary[codes[f]]
            if name in starts:
                raise IndexError_(
                    f"loader: steps file {rel}: episode {name} has rows apart (rows {starts[name]} and {f})"
                )
            starts[name] = int(f)
            lengths[name] = int(e - f)
    for name, steps in eps:
        if name not in starts:
            raise IndexError_(
                f"loader: steps file {rel} holds no row of episode {name}, which the episodes table puts there"
            )
        if lengths[name] != steps:
            raise IndexError_(
                f"loader: steps file {rel} holds {lengths[name]} rows of episode {name}, "
                f"the episodes table says {steps}"
            )
    return sf, starts
