"""The README's training loop runs, over a bucket ROOT on versitygw."""

from __future__ import annotations

import json
import os
import re

from .loader_helpers import REPO, ingest, simulate


def readme_loop() -> str:
    text = (REPO / "README.md").read_text()
    section = text.split("## Training from a ROOT: `rlrec.loader`", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_training_loop_over_a_bucket(rlrec_bin, tmp_path, s3_env, monkeypatch):
    code = readme_loop()
    assert len([ln for ln in code.splitlines() if ln.strip()]) <= 12, "the README promises a ten-line loop"
    stream = simulate(
        rlrec_bin, tmp_path / "pp.events", "--env", "pick-place", "--envs", "2", "--episodes", "6", "--seed", "3"
    )
    ingest(rlrec_bin, stream, "s3://loader/pick-place", "episode", env=dict(os.environ) | {"HOME": str(tmp_path)})
    code = code.replace("s3://datasets/pick-place", "s3://loader/pick-place").replace("range(10)", "range(2)")
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    state = json.loads((tmp_path / "loader-state.json").read_text())
    assert state["epoch"] == 2 and state["position"] == 0
    assert scope["loader"].index.root.url == "s3://loader/pick-place"
