"""Test ROOTs for the loader, written by the real rlrec CLI.

The CLI (``rlrec_bin``) and versitygw (``s3``) are the fixtures of
python/tests/conftest.py; one reproducible cartpole stream is ingested
into a directory ROOT of each layout, and the bucket tests ingest it into
a bucket of that versitygw. A missing tool fails the tests: it never
skips them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .loader_helpers import ingest, simulate

ACCESS, SECRET, REGION = "loader", "loader-secret", "us-east-1"


@pytest.fixture(scope="session")
def cartpole_stream(rlrec_bin, tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("streams")
    return simulate(
        rlrec_bin,
        d / "cartpole.events",
        "--env",
        "cartpole",
        "--envs",
        "4",
        "--episodes",
        "24",
        "--sessions",
        "2",
        "--seed",
        "5",
    )


@pytest.fixture(scope="session", params=["episode", "session"])
def cartpole_root(request, rlrec_bin, cartpole_stream, tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("roots") / f"cartpole-{request.param}"
    return ingest(rlrec_bin, cartpole_stream, str(root), request.param)


@pytest.fixture(scope="session")
def episode_root(rlrec_bin, cartpole_stream, tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("roots") / "cartpole-episode"
    return ingest(rlrec_bin, cartpole_stream, str(root), "episode")


@pytest.fixture(scope="session")
def s3_env(s3):
    """The parent conftest's versitygw, with a bucket "loader"; its AWS
    settings in the environment while the tests run."""
    s3.bucket("loader")
    env = s3.env()
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    yield env
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
