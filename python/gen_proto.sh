#!/usr/bin/env bash
# Regenerates python/src/rlrec/_pb/*_pb2.py from the project's .proto
# files with protoc's own Python generator (Debian: protobuf-compiler; the
# generated code needs a protobuf runtime at least as new as protoc 3.20).
# The gRPC stub is hand-written (rlrec/_serve.py): Debian's
# python3-grpc-tools bundles a protoc too old for proto3 `optional`.
#
#   bash python/gen_proto.sh
set -euo pipefail
cd "$(dirname "$0")/.."

out=python/src/rlrec/_pb
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

protoc --version
protoc -I. --python_out="$tmp" \
	schema/spacesv1/spaces.proto \
	events/eventsv1/events.proto \
	ingest/ingestv1/ingest.proto

# protoc names a module by its .proto path (schema.spacesv1.spaces_pb2);
# the package keeps the three side by side, so the one import between them
# becomes relative.
for f in schema/spacesv1/spaces_pb2.py events/eventsv1/events_pb2.py ingest/ingestv1/ingest_pb2.py; do
	mod=$(basename "$f" .py)
	sed -e 's/^from schema\.spacesv1 import spaces_pb2 as /from . import spaces_pb2 as /' \
		-e "s/'[a-z]*\.[a-z0-9]*\.${mod}'/'rlrec._pb.${mod}'/" \
		"$tmp/$f" >"$out/$mod.py"
done
if grep -n '^from \(schema\|events\|ingest\)\.' "$out"/*_pb2.py; then
	echo "gen_proto.sh: an import was left unrewritten" >&2
	exit 1
fi
echo "wrote $out/spaces_pb2.py events_pb2.py ingest_pb2.py"
