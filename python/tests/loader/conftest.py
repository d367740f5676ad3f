"""Test ROOTs for the loader, written by the real rlrec CLI.

The CLI is $RLREC_BIN, or built once per test session (``go build
./cmd/rlrec``); one
reproducible cartpole stream is ingested into a directory ROOT of each
layout and, through a real versitygw on loopback (``RLREC_VERSITYGW``,
which ``.ci/run`` builds), into a bucket ROOT. A missing tool fails the
tests: it never skips them.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from helpers import REPO, ingest, run_cli, simulate

ACCESS, SECRET, REGION = "loader", "loader-secret", "us-east-1"


@pytest.fixture(scope="session")
def rlrec_bin(tmp_path_factory) -> str:
    """$RLREC_BIN (.ci/run builds it once), else rlrec built from this checkout."""
    given = os.environ.get("RLREC_BIN")
    if given:
        assert os.access(given, os.X_OK), f"RLREC_BIN={given} is not an executable"
        return given
    if shutil.which("go") is None:
        pytest.fail("go is not on PATH: the loader tests build the rlrec CLI to write their ROOTs")
    out = tmp_path_factory.mktemp("bin") / "rlrec"
    run_cli(["go", "build", "-o", str(out), "./cmd/rlrec"], cwd=REPO)
    return str(out)


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


def _versitygw() -> str:
    p = os.environ.get("RLREC_VERSITYGW")
    if not p:
        cache = os.environ.get("RLREC_CI_CACHE") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "rlrec-ci"
        )
        p = os.path.join(cache, "versitygw-v1.8.0", "versitygw")
    if not os.access(p, os.X_OK):
        pytest.fail(f"no versitygw at {p}: set RLREC_VERSITYGW, or run bash .ci/run, which builds it")
    return p


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def s3_env(tmp_path_factory):
    """A versitygw on loopback with a bucket "data"; yields the AWS settings."""
    gw = tmp_path_factory.mktemp("gw")
    (gw / "data").mkdir()
    port = _free_port()
    log = open(tmp_path_factory.mktemp("gwlog") / "versitygw.log", "wb")
    proc = subprocess.Popen(
        [
            _versitygw(),
            "--port",
            f"127.0.0.1:{port}",
            "--access",
            ACCESS,
            "--secret",
            SECRET,
            "--region",
            REGION,
            "--quiet",
            "posix",
            str(gw),
        ],
        stdout=log,
        stderr=log,
        env={"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "")},
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60  # a failure bound, not a wait
    while True:
        if proc.poll() is not None:
            pytest.fail(f"versitygw exited {proc.returncode} while starting")
        try:
            urllib.request.urlopen(url + "/", timeout=1)
            break
        except urllib.error.HTTPError:
            break  # it answers
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"versitygw did not answer on {url}")
            time.sleep(0.02)
    env = {"AWS_ENDPOINT_URL": url, "AWS_ACCESS_KEY_ID": ACCESS, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_REGION": REGION}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    yield env
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    log.close()
