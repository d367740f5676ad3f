"""Shared fixtures: the rlrec command, a real S3 server (versitygw) and
ROOTs recorded from real rlmesh runs.

Nothing here skips: a missing dependency fails the test that needs it,
naming the install (.ci/run provides all of them).
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

REPO = Path(__file__).resolve().parents[2]
S3_ACCESS, S3_SECRET, S3_REGION = "rlrec-test", "rlrec-test-secret", "us-east-1"


@pytest.fixture(scope="session", autouse=True)
def spool_dir(tmp_path_factory) -> Path:
    """The captures' default spool base for the tests (RLREC_SPOOL_DIR), so
    that no test reads or leaves spools in the user's cache."""
    d = tmp_path_factory.mktemp("spool")
    os.environ["RLREC_SPOOL_DIR"] = str(d)
    return d


@pytest.fixture(scope="session")
def rlrec_bin(tmp_path_factory) -> str:
    """$RLREC_BIN, else rlrec built from this checkout."""
    path = os.environ.get("RLREC_BIN")
    if path:
        assert os.access(path, os.X_OK), f"RLREC_BIN={path} is not an executable"
        return path
    go = shutil.which("go")
    assert go, "no go on PATH to build rlrec: install Go 1.26 or set RLREC_BIN=/path/to/rlrec"
    out = tmp_path_factory.mktemp("bin") / "rlrec"
    subprocess.run([go, "build", "-o", str(out), "./cmd/rlrec"], cwd=REPO, check=True)
    return str(out)


def run_rlrec(bin_: str, *args: str, stdin=None) -> subprocess.CompletedProcess:
    p = subprocess.run([bin_, *args], capture_output=True, stdin=stdin)
    assert p.returncode == 0, f"rlrec {' '.join(args)} exited {p.returncode}: {p.stderr.decode()}"
    return p


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Server:
    """A versitygw on loopback with its posix backend in a temp dir."""

    def __init__(self, binary: str, root: Path) -> None:
        self.dir = root
        root.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.log = open(root.parent / "versitygw.log", "ab")  # noqa: SIM115 - closed in stop
        self.proc = subprocess.Popen(
            [binary, "--port", f"127.0.0.1:{self.port}", "--access", S3_ACCESS, "--secret", S3_SECRET,
             "--region", S3_REGION, "--quiet", "posix", str(root)],
            stdout=self.log, stderr=self.log, env={"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "")},
        )  # fmt: skip
        deadline = time.monotonic() + 60  # a failure bound; the loop waits for the server to answer
        while True:
            assert self.proc.poll() is None, f"versitygw exited {self.proc.returncode}; see {self.log.name}"
            try:
                urllib.request.urlopen(self.endpoint, timeout=5)
                break
            except urllib.error.HTTPError:
                break  # it answers (403 without a signature)
            except OSError:
                assert time.monotonic() < deadline, f"versitygw did not answer on {self.endpoint} within 60 s"
                time.sleep(0.05)

    def env(self) -> dict[str, str]:
        return {"AWS_ACCESS_KEY_ID": S3_ACCESS, "AWS_SECRET_ACCESS_KEY": S3_SECRET, "AWS_REGION": S3_REGION,
                "AWS_ENDPOINT_URL": self.endpoint}  # fmt: skip

    def bucket(self, name: str) -> Path:
        (self.dir / name).mkdir()
        return self.dir / name

    def put_tree(self, src: Path, bucket: str, prefix: str) -> None:
        """Uploads a ROOT directory (without _rlrec/) through the S3 API."""
        import pyarrow.fs as pafs

        fs = pafs.S3FileSystem(access_key=S3_ACCESS, secret_key=S3_SECRET, region=S3_REGION,
                               endpoint_override=f"127.0.0.1:{self.port}", scheme="http")  # fmt: skip
        for path in sorted(src.rglob("*")):
            rel = path.relative_to(src).as_posix()
            if path.is_dir() or rel.startswith("_rlrec/"):
                continue
            with fs.open_output_stream(f"{bucket}/{prefix}/{rel}") as out:
                out.write(path.read_bytes())

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait()
        self.log.close()


@pytest.fixture(scope="session")
def s3(tmp_path_factory):
    binary = os.environ.get("RLREC_VERSITYGW")
    assert binary and os.access(binary, os.X_OK), (
        "RLREC_VERSITYGW must name the versitygw binary (.ci/run builds it into "
        "~/.cache/rlrec-ci/versitygw-v1.8.0/versitygw: GOBIN=DIR go install "
        "github.com/versity/versitygw/cmd/versitygw@v1.8.0)"
    )
    srv = S3Server(binary, tmp_path_factory.mktemp("s3") / "data")
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def packed_root(rlrec_bin, tmp_path_factory) -> Path:
    """A ROOT of layout session with one large recording: 137,102 steps of
    simulated cartpole in two part files of two row groups each."""
    root = tmp_path_factory.mktemp("packed") / "root"
    sim = subprocess.Popen(
        [rlrec_bin, "simulate", "--env", "cartpole", "--envs", "4", "--episodes", "3000", "--reproducible", "-o", "-"],
        stdout=subprocess.PIPE,
    )
    run_rlrec(rlrec_bin, "ingest", "--layout", "session", "--out", str(root), "-", stdin=sim.stdout)
    assert sim.wait() == 0
    return root
