// Package eventsv1 holds the Go types generated from events.proto, the wire
// form of hook events (package rlrec.events.v1). Field numbers are part of
// the recorded-stream format and must not change.
//
// Regenerate with `go generate ./events/eventsv1` (needs protoc from Debian's
// protobuf-compiler and protoc-gen-go from google.golang.org/protobuf).
package eventsv1

//go:generate protoc --proto_path=../.. --go_out=../.. --go_opt=module=github.com/rlrec/rlrec events/eventsv1/events.proto
