// Package roottest holds what tests of several packages do to a ROOT:
// record simulated sessions into a new one (Record), copy one (CopyDir),
// read its table files back (TableFiles), damage a Parquet file's footer
// (EditFooter, EditFooterFile), and collect a logger's or command's
// output written from other goroutines (SyncBuffer). Like net/http's
// httptest, it is imported by tests only.
//
// It imports recorder and sim, so the tests inside those packages, and
// inside the packages they import (internal/parquetout among them),
// cannot use it: an import cycle. They use the leaf packages it builds
// on (internal/filetree to read a tree, internal/logcount to count what
// was logged), keep their own few lines (parquetout's footer edit on
// bytes) or use the standard library (os.CopyFS).
package roottest
