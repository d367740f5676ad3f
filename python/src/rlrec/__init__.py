"""Record rlmesh ``Session.run`` calls with rlrec.

    from rlrec import Capture

    with Capture("127.0.0.1:7465") as cap:          # an rlrec serve
        session.run(max_episodes=10, hooks=cap)

    session.run(max_episodes=10, hooks=Capture(root="data"))   # rlrec ingest into data/

``Capture`` has rlmesh's ``RunHooks`` methods and turns each run into
rlrec.events.v1 events (see docs/rlmesh.md in the rlrec repository).
``leaves`` encodes values as the runtime's per-leaf bytes and blobs,
``decode`` turns a recorded blob back into numpy arrays (numpy and
protobuf only), and ``spaces`` maps gymnasium-like spaces to
rlmesh.spaces.v1 specs.

Needs numpy and protobuf, and grpcio for rlrec serve.
"""

from ._command import CommandNotFoundError, find_rlrec
from ._ids import record_id, uuid7
from ._ingest import IngestError, IngestProcess, write_delimited
from .capture import END_REASON, Capture, EpisodeInfo, RunInfo, meta_map
from .decode import decode_leaves, decode_value, spec_from_json
from .leaves import (
    BlobError,
    LeafError,
    SlabError,
    compile_spec,
    decode_blob,
    encode_batch,
    encode_blob,
    encode_value,
    split_lanes,
)
from .reader import Root, ScanStats, SchemaVersionError, open
from .spaces import space_spec

__all__ = [
    "CommandNotFoundError",
    "Root",
    "ScanStats",
    "SchemaVersionError",
    "find_rlrec",
    "open",
    "END_REASON",
    "decode_leaves",
    "decode_value",
    "spec_from_json",
    "BlobError",
    "Capture",
    "EpisodeInfo",
    "IngestError",
    "IngestProcess",
    "LeafError",
    "RunInfo",
    "SlabError",
    "compile_spec",
    "decode_blob",
    "encode_batch",
    "encode_blob",
    "encode_value",
    "meta_map",
    "record_id",
    "space_spec",
    "split_lanes",
    "uuid7",
    "write_delimited",
]
