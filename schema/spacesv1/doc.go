// Package spacesv1 holds the Go types generated from spaces.proto, the
// rlmesh.spaces.v1 protobuf package: space specifications (SpaceSpec), values
// (SpaceValue, whose encoding is the leaves-to-blob format) and metadata
// (MetaMap). Field numbers are the runtime's and must not change.
//
// Regenerate with `go generate ./schema/spacesv1` (needs protoc from Debian's
// protobuf-compiler and protoc-gen-go from google.golang.org/protobuf).
package spacesv1

//go:generate protoc --proto_path=../.. --go_out=../.. --go_opt=module=github.com/rlrec/rlrec schema/spacesv1/spaces.proto
