"""Episode selection: the filter language of `rlrec copy --where` and its
splits, checked against what the Go CLI copies."""

from __future__ import annotations

import subprocess

import pyarrow.dataset as ds
import pytest

from rlrec.loader import FilterError, StepLoader, parse

from .loader_helpers import run_cli


def copied_episodes(rlrec_bin, src, dst, *args):
    run_cli([rlrec_bin, "copy", src, str(dst), *args])
    return dst


def ids(root) -> set[tuple[int, str]]:
    t = ds.dataset(str(root) + "/episodes", format="parquet").to_table(columns=["episode_id"])
    return set(t.column("episode_id").to_pylist())


@pytest.mark.parametrize(
    "where",
    [
        "status = 'completed' AND step_count > 10",
        "(env_index IN (0, 1) OR NOT truncated) AND cumulative_reward >= 12.5",
        "success IS NULL AND episode_index <> 3",
        "started_at >= '2026-01-01T00:00:00.5Z' OR terminated",
        "env_index NOT IN (2) AND reward_sum < 1e2",
    ],
)
def test_where_selects_what_copy_selects(rlrec_bin, episode_root, tmp_path, where):
    ld = StepLoader(episode_root, ["reward"], where=where)
    got = set(ld.episodes.column("episode_id").to_pylist())
    try:
        want = ids(copied_episodes(rlrec_bin, episode_root, tmp_path / "dst", "--where", where))
    except RuntimeError as exc:
        assert "nothing to copy" in str(exc)
        want = set()
    assert got == want
    assert 0 < len(got) < len(StepLoader(episode_root, ["reward"]).episodes) or where.startswith("started_at")


def test_split_matches_copy_and_never_leaks(rlrec_bin, episode_root, tmp_path):
    copied_episodes(rlrec_bin, episode_root, tmp_path / "splits", "--split", "train=0.7,val=0.3", "--seed", "7")
    parts = {}
    for name in ("train", "val"):
        ld = StepLoader(episode_root, ["reward"], split="train=0.7,val=0.3", split_name=name, split_seed=7)
        parts[name] = set(ld.episodes.column("episode_id").to_pylist())
        assert parts[name] == ids(tmp_path / "splits" / name)
    assert not parts["train"] & parts["val"]
    assert len(parts["train"] | parts["val"]) == len(StepLoader(episode_root, ["reward"]).episodes)


@pytest.mark.parametrize(
    "src,pos,msg",
    [
        ("", 0, "empty filter"),
        ("status = 1", 9, "compare it with a 'string'"),
        ("nope = 1", 0, "unknown column"),
        ("success < true", 8, "= or != only"),
        ("step_count = NULL", 13, "IS NULL"),
        ("status = 'a", 9, "unterminated string"),
        ("started_at > 'yesterday'", 13, "is no time"),
        ("(terminated", 11, "want )"),
        ("terminated truncated", 11, "after a complete filter"),
        ("1 = step_count", 0, "stands on the left"),
        ("a ! b", 2, "'!' must be followed"),
    ],
)
def test_filter_errors(src, pos, msg):
    with pytest.raises(FilterError) as e:
        parse(src)
    assert e.value.pos == pos and msg in str(e.value)


def test_go_refuses_what_python_refuses(rlrec_bin, episode_root, tmp_path):
    r = subprocess.run(
        [rlrec_bin, "copy", episode_root, str(tmp_path / "x"), "--where", "success < true"],
        capture_output=True,
        check=False,
    )
    assert r.returncode != 0 and b"at byte 8" in r.stderr


@pytest.mark.parametrize(
    "where",
    [
        "seed IS NOT NULL AND trial_index >= 1",
        "success_source = 'runtime' OR predict_ms > 0",
        "lane IS NULL AND step_ms IS NOT NULL",
    ],
)
def test_version3_columns_select_what_copy_selects(rlrec_bin, episode_root, tmp_path, where):
    got = set(StepLoader(episode_root, ["reward"], where=where).episodes.column("episode_id").to_pylist())
    try:
        want = ids(copied_episodes(rlrec_bin, episode_root, tmp_path / "dst", "--where", where))
    except RuntimeError as exc:
        assert "nothing to copy" in str(exc)
        want = set()
    assert got == want


def test_version3_columns_are_null_in_a_version2_root():
    from conftest import REPO

    root = str(REPO / "testdata" / "golden-root-v2")
    every = StepLoader(root, ["reward"]).episodes
    assert len(every) > 0
    assert len(StepLoader(root, ["reward"], where="seed IS NULL AND lane IS NULL").episodes) == len(every)
    assert len(StepLoader(root, ["reward"], where="predict_ms > 0").episodes) == 0
