// Package filedeps measures how the files of one Go package depend on
// each other, so that a test can hold a package to "within a stage no
// file depends on a file that depends on it".
//
// File A depends on file B when a non-test file A uses, by its
// type-checked identity, a name declared in B: a package-level type,
// func, var or const, a method, or a field (which counts as a use of the
// file declaring its struct). Uses within one file are no dependency.
// Only the non-test files the go command builds count (build tags
// apply); test files may use anything.
//
// A cycle is a strongly connected set of two or more files; a mutual
// pair is two files each using the other. Check reports every cycle
// left once the edges between allowlisted pairs are removed, and every
// allowlisted pair that no longer depends both ways, so an allowlist
// can only shrink. Like roottest, it is imported by tests only.
package filedeps
