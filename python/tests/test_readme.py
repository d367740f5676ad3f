"""Every Python one-liner (``python3 -c "..."``) of the README and of
docs/object-storage.md, where the lines over a bucket are, and the
README's DuckDB one-liners over a ROOT directory, run with real pandas, pyarrow,
polars and DuckDB's Python package on a ROOT whose ids a reader would
take for a number and a date (session ids 007 and 042, env ids
2026-01-02 and 2026-01-03), recorded from real rlmesh runs. Each must
keep the ids as written. The lines over a bucket run against a real S3
server (versitygw)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from conftest import REPO, S3_ACCESS, S3_SECRET
from rlmesh_envs import CameraEnv, model

import rlrec

IDS = {"007": "2026-01-02", "042": "2026-01-03"}

# Replaces print: describes the frame the one-liner printed, as JSON.
PRELUDE = r"""
import builtins, json, sys
def _describe(obj, *args, **kwargs):
    if type(obj).__name__ == "DuckDBPyRelation":
        obj = obj.df()                      # a DuckDB relation
    if hasattr(obj, "to_pandas") and type(obj).__module__.startswith("polars"):
        types = {c: str(t) for c, t in obj.schema.items()}
        obj = obj.to_pandas()
    else:
        types = {c: str(t) for c, t in obj.dtypes.items()}
    out = {"rows": len(obj), "types": types, "ids": {}}
    for c in ("session_id", "env_id"):
        if c in obj.columns:
            out["ids"][c] = sorted({repr(v) for v in obj[c]})
    if "observation" in obj.columns:
        v = obj["observation"].iloc[0]
        out["observation"] = {k: [str(x.dtype), list(x.shape)] for k, x in v.items() if hasattr(x, "dtype")}
    sys.stdout.write(json.dumps(out) + "\n")
builtins.print = _describe
"""


# The documents whose one-liners run here: the README (over a ROOT, over
# the demo's ROOT) and the object storage document (over a bucket).
DOCS = ("README.md", "docs/object-storage.md")


def readme_lines(prefix: str) -> list[str]:
    text = "\n".join((REPO / doc).read_text() for doc in DOCS)
    lines = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(prefix) and line.endswith('"'):
            lines.append(line[len(prefix) : -1])
    return lines


@pytest.fixture(scope="session")
def ids_root(rlrec_bin, tmp_path_factory):
    root = tmp_path_factory.mktemp("ids") / "root"
    for sid, env in IDS.items():
        cap = rlrec.Capture(root=root, rlrec=rlrec_bin, session_id=sid, env_id=env)
        model().run(CameraEnv(horizon=4), seeds=[1, 2], hooks=cap)
        cap.close()
    return root


def run_python(code: str, env: dict | None = None) -> dict:
    p = subprocess.run([sys.executable, "-c", PRELUDE + code], capture_output=True, text=True,
                       env={**os.environ, **(env or {})})  # fmt: skip
    assert p.returncode == 0, f"{code}\n{p.stderr}"
    return json.loads(p.stdout.strip().splitlines()[-1])


def check_ids(out: dict, what: str) -> None:
    assert out["rows"] > 0, what
    assert out["ids"]["session_id"] == sorted(repr(s) for s in IDS), what
    if "env_id" in out["ids"]:
        assert out["ids"]["env_id"] == sorted(repr(e) for e in IDS.values()), what


def test_python_one_liners_over_a_root(ids_root):
    lines = [code for code in readme_lines('python3 -c "') if "ROOT" in code]
    assert len(lines) >= 3, "the README's pandas, polars and rlrec one-liners over ROOT"
    for code in lines:
        code = code.replace("'ROOT/", f"'{ids_root}/").replace("'ROOT'", f"'{ids_root}'")
        code = code.replace("session='S'", "session='007'")
        out = run_python(code)
        if "session='007'" in code:  # rlrec.open's steps, decoded
            assert out["observation"]["image"] == ["uint8", [8, 6, 3]], code
            assert out["ids"]["session_id"] == ["'007'"], code
        else:
            check_ids(out, code)


def test_a_plain_hive_scan_loses_the_ids(ids_root):
    """What the README warns of: guessed partition types."""
    import polars as pl

    df = pl.scan_parquet(f"{ids_root}/episodes/**/*.parquet", hive_partitioning=True).collect()
    assert str(df.schema["session_id"]) != "String" or str(df.schema["env_id"]) != "String"


def test_duckdb_one_liners_over_a_root(ids_root):

    lines = [q for q in readme_lines('duckdb -c "') if "'ROOT/" in q]
    assert len(lines) >= 3
    for q in lines:
        q = q.replace("'ROOT/", f"'{ids_root}/").replace("session_id=S/env_id=R/", "session_id=007/env_id=2026-01-02/")
        out = run_python(f"import duckdb; print(duckdb.sql({q!r}))")
        assert out["rows"] > 0, q
        for col, vals in out["ids"].items():
            assert all(re.fullmatch(r"'[0-9-]+'", v) for v in vals), (q, col, vals)
        assert out["ids"]["session_id"][0] in ("'007'", "'042'"), q


def test_python_one_liners_over_a_bucket(ids_root, s3):
    s3.bucket("datasets")
    s3.put_tree(ids_root, "datasets", "ids")
    # The pyspark lines (s3a://) need Spark's connector from the local Maven
    # repository .ci/run fills: tests/test_spark.py runs them as written.
    lines = [code for code in readme_lines('python3 -c "') if "BUCKET/PREFIX" in code and "s3a://" not in code]
    assert len(lines) >= 2, "docs/object-storage.md's polars and pyarrow one-liners over a bucket"
    env = {**s3.env(), "AWS_ACCESS_KEY_ID": S3_ACCESS, "AWS_SECRET_ACCESS_KEY": S3_SECRET}
    for code in lines:
        code = code.replace("BUCKET/PREFIX", "datasets/ids").replace("http://HOST:PORT", s3.endpoint)
        check_ids(run_python(code, env), code)


def test_python_one_liners_over_the_demo(rlrec_bin, tmp_path):
    lines = [code for code in readme_lines('python3 -c "') if "'rlrec-demo'" in code]
    assert lines, "the README's install-and-read lines over rlrec demo's ROOT"
    demo = tmp_path / "rlrec-demo"
    subprocess.run([rlrec_bin, "demo", "-o", str(demo)], check=True, capture_output=True)
    for code in lines:
        out = run_python(code.replace("'rlrec-demo'", f"'{demo}'"))
        assert out["rows"] > 0 and out["types"]["observation"] == "object", code
