// Package s3server runs a real S3-compatible server for tests: versitygw
// (github.com/versity/versitygw, Apache-2.0) with its posix backend, which
// keeps each bucket as a directory and each object as a plain file under
// it, so a test can check what was published with the file system (and
// DuckDB can read the tables in place).
//
// # The binary
//
// The project's test script (.ci/run) installs a pinned versitygw into a
// cache it reuses and passes its path in the environment variable
// RLREC_VERSITYGW (EnvBinary). Without it, Start looks for versitygw in
// that cache and on PATH, and otherwise fails the test with the install
// command (InstallCommand): a missing server is a failing test, never a
// skipped one.
//
// # The server
//
// Start runs one server per call, bound to 127.0.0.1 only (never to every
// interface, versitygw's default ":7070") on a port the kernel picked free,
// with a fresh directory from t.TempDir, its own root credentials, single
// account mode (no IAM service), no web UI and no admin port. It returns
// once the server answers HTTP, and stops it when the test ends. Stop,
// Kill and Restart stop the process and start it again on the same
// directory and port, so a client keeps its endpoint across a restart and
// finds every object and in-flight multipart upload it left.
//
// On Linux the server is killed when the test process dies (the parent
// death signal), so a crashed test leaves no server behind.
package s3server
