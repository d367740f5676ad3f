// Package schema describes the shapes of recorded data: the leaf walk of an
// rlmesh SpaceSpec (its fundamental leaves in canonical pre-order, with
// paths, kinds, dtypes and per-lane byte strides), spec validation and
// protojson parsing, and the Parquet schemas of rlrec's tables.
//
// # Leaves
//
// A space is a tree of Dict and Tuple nodes over fundamental spaces (Box,
// Discrete, MultiBinary, MultiDiscrete, Text). Its values travel as one
// byte string per fundamental leaf, in pre-order: Dict children in their
// declared key order (DictSpec.keys, never sorted), Tuple children by
// index. A leaf's Path joins the dict keys and tuple indices on the way to
// it with "." ("obs.0.image"); a space that is itself fundamental has the
// single leaf "". Dict keys must be non-empty and unique but may hold any
// character: in a path, a key's own "%" is written "%25" and its own "."
// "%2E", and nothing else changes (EscapeKey). So the key "pos.x" under
// "obs" gives the path "obs.pos%2Ex", a path always names exactly one leaf,
// and SplitPath returns the real keys. Only those two escapes exist:
// SplitPath rejects any other "%" (ErrBadPath), so each key has exactly one
// spelling.
//
// The typed steps columns are named by ColumnName: "observation" /
// "action" for the leaf of a single-leaf space, "observation.<path>" /
// "action.<path>" for every other leaf; SplitColumnName reverses it.
//
// Per lane a leaf holds Numel elements of ElemSize bytes, little-endian,
// Stride = Numel*ElemSize bytes in all:
//
//	Box            numel(shape) elements of dtype
//	Discrete       1 element of dtype (an integer type)
//	MultiDiscrete  len(nvec) elements of dtype (an integer type)
//	MultiBinary    numel(shape) bytes, 0 or 1, whatever the dtype
//	Text           UTF-8 of any length (Stride -1)
//
// Compile validates a spec once and returns a Layout to use on hot paths;
// Validate lists the rules where the runtime's contract leaves room.
// Errors are *SpecError values naming the failing place and wrapping a
// sentinel from errors.go.
//
// # JSON
//
// ParseSpecJSON and SpecJSON read and write the protojson form of a
// SpaceSpec, the form stored in file metadata (rlrec.observation_space,
// rlrec.action_space): lowerCamelCase field names, DATA_TYPE_* enum names,
// int64 values as strings, no insignificant whitespace.
package schema
