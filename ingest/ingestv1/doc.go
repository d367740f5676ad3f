// Package ingestv1 holds the Go types and gRPC stubs generated from
// ingest.proto, the protocol between `rlrec serve` and its clients
// (package rlrec.ingest.v1). Field numbers are part of the protocol and
// must not change.
//
// Regenerate with `go generate ./ingest/ingestv1` (needs protoc from
// Debian's protobuf-compiler, protoc-gen-go from google.golang.org/protobuf
// and protoc-gen-go-grpc from google.golang.org/grpc/cmd/protoc-gen-go-grpc;
// see docs/development.md for the versions).
package ingestv1

//go:generate protoc --proto_path=../.. --go_out=../.. --go_opt=module=github.com/rlrec/rlrec --go-grpc_out=../.. --go-grpc_opt=module=github.com/rlrec/rlrec ingest/ingestv1/ingest.proto
