"""rlrec.open on the golden ROOT (layout episode, schema version 2), on a
packed ROOT (layout session), and on a bucket of a real S3 server: tables
as pandas, pyarrow and polars, filters applied before reading, leaves
decoded by the stored spaces."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from conftest import REPO, S3_ACCESS, S3_SECRET

import rlrec

GOLDEN = REPO / "testdata" / "golden-root"


class CountingHandler(pafs.FileSystemHandler):
    """A local filesystem that counts the Parquet files opened for reading."""

    def __init__(self) -> None:
        self.fs = pafs.LocalFileSystem()
        self.opened: list[str] = []

    def get_type_name(self):
        return "counting"

    def normalize_path(self, path):
        return path

    def get_file_info(self, paths):
        return self.fs.get_file_info(paths)

    def get_file_info_selector(self, selector):
        return self.fs.get_file_info(selector)

    def open_input_file(self, path):
        self.opened.append(path)
        return self.fs.open_input_file(path)

    def open_input_stream(self, path):
        self.opened.append(path)
        return self.fs.open_input_stream(path)

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other

    create_dir = delete_dir = delete_dir_contents = delete_root_dir_contents = delete_file = move = copy_file = None
    open_output_stream = open_append_stream = None


@pytest.mark.parametrize(
    "name, kwargs, files, rows",
    [
        ("everything", {}, 6, 38),
        ("one session", {"session": "golden-cartpole"}, 4, 32),
        ("one episode", {"session": "golden-cartpole", "episode": "ep-000003"}, 1, 8),
        ("two episodes", {"session": "golden-cartpole", "episode": ["ep-000001", "ep-000004"]}, 2, 16),
        ("an env id", {"env": "019b7711-9680-7b1d-b0e6-63b15d43bde6"}, 2, 6),
        ("no such session", {"session": "nobody"}, 0, 0),
    ],
)
def test_filters_open_only_the_files_they_select(name, kwargs, files, rows):
    h = CountingHandler()
    r = rlrec.open(str(GOLDEN), filesystem=pafs.PyFileSystem(h))
    t = r.steps(columns=["reward", "step"], **kwargs)
    assert t.num_rows == rows, name
    assert r.last_scan.files == files, name
    assert len({p for p in h.opened if p.endswith(".parquet")}) == files, name
    # The same rows as reading everything and filtering after.
    allrows = pq.read_table(GOLDEN / "steps", partitioning=ds.partitioning(
        pa.schema([("session_id", pa.string()), ("env_id", pa.string()), ("episode_record_id", pa.string())]),
        flavor="hive"), columns=["reward", "step", "session_id", "env_id", "episode_record_id"]).to_pandas()  # fmt: skip
    want = allrows
    for col, key in (("session_id", "session"), ("env_id", "env"), ("episode_record_id", "episode")):
        if key in kwargs:
            sel = kwargs[key] if isinstance(kwargs[key], list) else [kwargs[key]]
            want = want[want[col].isin(sel)]
    if not rows:
        assert len(want) == 0
        return
    assert sorted(zip(t["step"].to_pylist(), t["reward"].to_pylist(), strict=True)) == sorted(
        zip(want["step"], want["reward"], strict=True)
    )


def test_decoded_leaves_follow_the_stored_spaces():
    r = rlrec.open(GOLDEN)
    df = r.steps_pandas(session="golden-all-leaves")
    assert len(df) == 6
    spec = r.observation_space("golden-all-leaves", "019b7711-9680-7b1d-b0e6-63b15d43bde6")
    obs = df.sort_values(["episode_record_id", "step"]).iloc[0]["observation"]
    assert list(obs) == list(spec.dict.keys)  # Dict: declared key order
    assert obs["floats"]["half"].dtype == np.float16 and obs["floats"]["half"].shape == (2, 2)
    assert obs["uints"][0].dtype == np.uint8
    assert isinstance(obs["label"], str)
    assert isinstance(obs["ints"], tuple) and isinstance(obs["nested"], tuple)
    act = df.iloc[0]["action"]
    assert isinstance(act, tuple) and isinstance(act[2], str)
    # Every decoded value re-encodes to the stored blob.
    for blob, value in zip(df["observation_blob"], df["observation"], strict=True):
        assert rlrec.encode_blob(rlrec.encode_value(spec, value)) == blob


def test_tables_as_pandas_and_polars():
    r = rlrec.open(GOLDEN)
    sessions = r.sessions()
    assert sorted(sessions["session_id"]) == ["golden-all-leaves", "golden-cartpole"]
    eps = r.episodes(session="golden-cartpole", episode="ep-000002")
    assert eps["episode_record_id"].tolist() == ["ep-000002"]
    assert len(r.logs()) == 2 and len(r.telemetry()) == 28
    pl_df = r.steps_polars(session="golden-cartpole")
    assert pl_df.height == 32 and str(pl_df.schema["session_id"]) == "String"


def test_packed_layout_reads_only_the_row_groups_of_an_episode(packed_root):
    r = rlrec.open(packed_root)
    paths = list(Path(packed_root, "steps").rglob("*.parquet"))
    groups = sum(pq.ParquetFile(p).metadata.num_row_groups for p in paths)
    assert groups >= 3
    whole = r.steps(columns=["episode_record_id", "step"])
    assert r.last_scan.row_groups == groups
    one = r.steps(episode="ep-000005", columns=["episode_record_id", "step"])
    assert r.last_scan.row_groups == 1 < groups
    want = whole.filter(pa.compute.equal(whole["episode_record_id"], "ep-000005"))
    assert one.num_rows == want.num_rows > 0
    assert one["step"].to_pylist() == want["step"].to_pylist()


def test_iter_steps_is_lazy_by_record_batches(packed_root):
    r = rlrec.open(packed_root)
    n = 0
    for i, batch in enumerate(r.iter_steps(columns=["reward"], batch_size=10_000)):
        assert isinstance(batch, pa.RecordBatch) and batch.num_rows <= 10_000
        n += batch.num_rows
        if i == 0:
            first_rows = r.last_scan.rows
    assert first_rows <= 10_000  # nothing read ahead of the first batch but its own
    assert n == sum(pq.ParquetFile(p).metadata.num_rows for p in Path(packed_root, "steps").rglob("*.parquet"))


def test_a_newer_schema_version_is_refused(tmp_path):
    src = next((GOLDEN / "sessions").rglob("*.parquet"))
    t = pq.read_table(src)
    dst = tmp_path / "root" / "sessions" / "session_id=s" / "env_id=e" / "part-00000.parquet"
    dst.parent.mkdir(parents=True)
    meta = dict(t.schema.metadata)
    meta[b"rlrec.schema_version"] = b"9"
    pq.write_table(t.replace_schema_metadata(meta).drop_columns(["session_id", "env_id"]) if "session_id" in t.column_names else t.replace_schema_metadata(meta), dst)  # fmt: skip
    with pytest.raises(rlrec.SchemaVersionError, match="schema version 9"):
        rlrec.open(tmp_path / "root").sessions()


def test_a_bucket_reads_as_the_directory(s3, tmp_path):
    s3.bucket("golden")
    s3.put_tree(GOLDEN, "golden", "root")
    r = rlrec.open("s3://golden/root", endpoint_url=s3.endpoint, access_key=S3_ACCESS, secret_key=S3_SECRET)
    local = rlrec.open(GOLDEN)
    for f in ("sessions", "episodes"):
        a = getattr(r, f)().sort_values(["session_id", "env_id"]).reset_index(drop=True)
        b = getattr(local, f)().sort_values(["session_id", "env_id"]).reset_index(drop=True)
        assert a.drop(columns=[c for c in a.columns if c.endswith("_blob")]).equals(
            b.drop(columns=[c for c in b.columns if c.endswith("_blob")])
        )
    s = r.steps_pandas(session="golden-cartpole", episode="ep-000001")
    assert r.last_scan.files == 1 and len(s) == 8
    np.testing.assert_array_equal(
        np.stack(s["observation"]),
        np.stack(local.steps_pandas(session="golden-cartpole", episode="ep-000001")["observation"]),
    )


def test_reader_speed_against_read_table(packed_root, capsys):
    """The figure for BENCHMARKS.md: rows/s of rlrec's steps() and of
    pyarrow.parquet.read_table on the same file, in one run (medians of 5)."""
    r = rlrec.open(packed_root)
    paths = [str(p) for p in Path(packed_root, "steps").rglob("*.parquet")]

    def median(fn):
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            n = fn()
            times.append(time.perf_counter() - t0)
        return n, sorted(times)[2]

    n1, t1 = median(lambda: r.steps().num_rows)
    n2, t2 = median(lambda: sum(pq.read_table(p).num_rows for p in paths))
    assert n1 == n2
    with capsys.disabled():
        print(
            f"\nreader: rlrec steps() {n1 / t1:,.0f} rows/s, pq.read_table {n2 / t2:,.0f} rows/s, ratio {t1 / t2:.2f}"
        )
