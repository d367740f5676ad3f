// Package blob implements the leaves-to-blob codec of the rlmesh runtime,
// the splitting of N-lane batch slabs into per-lane values and back, and the
// typed decoding of single-lane leaves (Go values and JSON), and the JSON
// rendering of the runtime's metadata maps such as an episode's final_info
// (MetaJSON, Success).
//
// # The blob
//
// A value is one byte string per fundamental leaf of its space (see package
// schema for the leaf walk). A blob is the protobuf encoding of
// rlmesh.spaces.v1.SpaceValue{repeated bytes leaves = 1}: for every leaf,
//
//	+------+-----------------------+--------------+
//	| 0x0a | length (varint, 1-10) | leaf bytes   |
//	+------+-----------------------+--------------+
//
// 0x0a is field 1 with wire type 2; the length is base-128, least
// significant group first. Zero leaves encode to zero bytes; an empty leaf
// is 0a 00, so it stays distinct from a missing one. Encode and Append
// write minimal varints; the output decodes with the runtime's
// leaves_from_blob and any protobuf SpaceValue decoder.
//
// Decode accepts exactly the inputs a protobuf decoder of SpaceValue
// accepts without unknown fields: any number of field-1 length-delimited
// records, tags and lengths in any varint encoding a protobuf decoder
// takes (non-minimal ones included, at most 10 bytes, no more than 64
// bits). Unlike a protobuf decoder it does not skip other fields or field 1
// with another wire type: the runtime writes neither, so they are reported
// as corruption (ErrUnknownField, ErrWireType). Errors are *DecodeError
// with the offset of the failing record.
//
// # Batch slabs
//
// Hooks receive batches of N lanes. Each leaf then holds a slab: the N
// lanes' bytes concatenated for fixed-stride leaves (N*Stride bytes), and
// for Text
//
//	+-----------+-------------------+-----+-------------------+--------+-----+--------+
//	| count=N   | len(lane 0)       | ... | len(lane N-1)     | body 0 | ... | body   |
//	| u64 LE    | u64 LE            |     | u64 LE            | UTF-8  |     | N-1    |
//	+-----------+-------------------+-----+-------------------+--------+-----+--------+
//
// N always comes from the carrying event, never from slab lengths; a slab
// that does not fit N is a *SlabError. N must be 1 to MaxLanes (the runtime
// never sends an empty batch). Every lane leaf SplitLanes returns is non-nil,
// empty ones included. A single-lane value, the form recorded per
// step, uses the same per-leaf bytes without any header (Text is the bare
// UTF-8).
//
// # Ownership and zero copy
//
// Decode, DecodeInto, SplitLanes and SplitLanesInto return sub-slices of
// their input: no leaf byte is copied, so the input must stay unmodified
// while the leaves are in use, and a caller that keeps leaves past the
// lifetime of the input buffer must copy them. Returned leaves have their
// capacity limited to their length, so appending to one never overwrites
// the bytes after it. Encode, Append, JoinLanes and the typed decoders copy
// and never retain their input. Nothing in this package keeps state; all
// functions are safe for concurrent use on distinct outputs.
//
// # Typed decoding
//
// DecodeLeaf turns one single-lane leaf into a Go value, AppendElems and
// AppendBools append a leaf's elements to typed slices without allocating,
// and AppendJSON renders a whole value as JSON. Float16 is widened to
// float32 exactly (Float16ToFloat32).
package blob
