"""The capture's spool (rlrec._spool): its recovery of a dead run's
segment, its segments' removal as they are acknowledged, and the format
shared with rlrec-hooks (the Rust forwarder)."""

from __future__ import annotations

import os

import pytest

from rlrec._spool import Spool, frame, recover, split

# (name, acked offset, torn tail, events resent, bytes cut)
RECOVER_CASES = [
    ("nothing acknowledged", 0, b"", [b"one", b"two", b"three"], 0),
    ("first acknowledged", 4, b"", [b"two", b"three"], 0),
    ("all acknowledged", 14, b"", [], 0),
    ("torn last event cut", 4, b"\x05fo", [b"two", b"three"], 3),
    ("acknowledgement inside an event: resend all", 6, b"", [b"one", b"two", b"three"], 0),
]


@pytest.mark.parametrize(
    ("acked", "tail", "want", "cut"), [c[1:] for c in RECOVER_CASES], ids=[c[0] for c in RECOVER_CASES]
)
def test_recover(tmp_path, acked, tail, want, cut):
    path = tmp_path / ("0" * 32 + "-000001.events")
    path.write_bytes(b"".join(frame(p) for p in (b"one", b"two", b"three")) + tail)
    (tmp_path / ("0" * 32 + "-000001.acked")).write_bytes(acked.to_bytes(8, "little"))
    (got,) = recover(str(tmp_path))
    assert [e for e, _ in got.events] == want
    assert got.torn == cut
    assert path.stat().st_size == 14
    got.segment.close()


def test_a_live_spool_is_left_alone(tmp_path):
    live = Spool(str(tmp_path))
    live.start_run("ab" * 16)
    live.append([b"x"])
    assert recover(str(tmp_path)) == []
    live.close()  # not acknowledged: left for the next capture
    (got,) = recover(str(tmp_path))
    assert [e for e, _ in got.events] == [b"x"]


def test_segments_are_cut_and_removed_once_acknowledged(tmp_path):
    s = Spool(str(tmp_path), segment_bytes=64)
    s.start_run("cd" * 16)
    for i in range(10):
        s.append([bytes([i]) * 20, bytes([i]) * 9])  # 32 bytes with their prefixes
    names = sorted(os.listdir(tmp_path))
    assert len([n for n in names if n.endswith(".events")]) == 5, names
    s.ack(9)  # two segments whole (four events each), and the first event of the third
    names = sorted(n for n in os.listdir(tmp_path) if n.endswith(".events"))
    assert names[0].endswith("-000003.events") and len(names) == 3, names
    assert (tmp_path / names[0].replace(".events", ".acked")).read_bytes() == (21).to_bytes(8, "little")
    s.end_run()
    s.ack(11)
    assert os.listdir(tmp_path) == []


def test_the_events_file_is_a_stream_rlrec_ingest_reads(tmp_path):
    s = Spool(str(tmp_path))
    s.start_run("ef" * 16)
    events = [b"a" * 200, b"", b"b" * 3]
    s.append(events)
    (name,) = [n for n in os.listdir(tmp_path) if n.endswith(".events")]
    assert name == "ef" * 16 + "-000001.events"
    data = (tmp_path / name).read_bytes()
    assert data == b"\xc8\x01" + b"a" * 200 + b"\x00" + b"\x03bbb"
    assert [e for e, _ in split(data)[0]] == events
    s.close()


def test_the_sequence_appended_to_a_serialized_event_reads_back():
    from rlrec._pb import events_pb2
    from rlrec._spool import varint
    from rlrec.capture import _SEQUENCE_TAG

    ev = events_pb2.Event(session_id="s", run_nonce=b"n" * 16)
    ev.route.env_id = "e"
    ev.log.message = "hello"
    for seq in (1, 127, 128, 1 << 40):
        got = events_pb2.Event.FromString(ev.SerializeToString() + _SEQUENCE_TAG + varint(seq))
        want = events_pb2.Event()
        want.CopyFrom(ev)
        want.sequence = seq
        assert got == want, seq
