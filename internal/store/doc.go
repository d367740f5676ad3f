// Package store owns the part files of a ROOT: it creates part N of a
// partition (hive.Partition) under its temp name, counts the next part
// number, makes groups of finished parts durable and publishes them under
// their final names, never replacing one, and settles the temp files a
// crashed writer left. It knows nothing of Parquet: an encoder
// (internal/parquetout) writes a whole file to a Part's io.Writer.
//
// # Why a package of its own
//
// internal/hive names things (tables, partitions, part and temp names,
// the _rlrec paths) and lists a ROOT for readers; it writes nothing.
// Writing is where a backend differs: a file system renames a temp file
// and syncs, an object store would upload to a temporary key and publish
// with a conditional copy or put. Store is that seam, with one
// implementation (FS, over vfs.FS) and the shape another needs: create,
// write, finish or abort, make durable, publish without replacing, next
// number, settle what a crash left. The callers (the recorder) speak in
// partitions and part numbers only.
//
// # Contract (FS)
//
// A part is written as .part-NNNNN.parquet.tmp in its partition directory
// and published as part-NNNNN.parquet. NNNNN is one more than the highest
// part or temp number already in the directory (5 digits, zero padded;
// more past 99999), so a later file never takes an earlier one's number,
// nor a temp file's a crashed process left. Create makes missing
// partition directories without syncing their parents. CreateNew is the
// path for a partition per episode: one mkdir(2) of the partition (its
// parents only when missing) and one file creation, part 0 with no
// listing, since a directory this call made is empty under the ROOT lock;
// a partition that exists is ErrPartitionExists. Publishing renames with
// renameat2(RENAME_NOREPLACE) on Linux, one call (a stat and a rename
// elsewhere, and under an error-injecting wrapper). Finish closes the
// temp file without syncing it. Sync then makes every part of a group
// durable under its temp name with one file-system sync (vfs.FS.SyncFS,
// syncfs(2)), which also makes the new directory entries durable; Publish
// renames each, refusing to replace an existing file (ErrExists), and
// syncs the file system again. A crash at any point leaves each part
// under its temp name or complete under its final name, never a partial
// file under a final name. A caller that must record a group before it
// becomes visible (the recorder logs its markers) calls Sync, records,
// then Publish; Commit does both.
//
// Failure of one part. A failed file-system sync says nothing of which
// file failed, so Sync then syncs each part on its own (its file, then
// each directory from its own up to the ROOT) and charges the failure to
// the parts that still fail: it returns a *GroupError naming them (aborted)
// when the others went through, and nil when every part did (the error
// was not theirs). Publish renames the rest of a group past a failed
// rename, and retries a failed sync directory by directory, in the same
// way. A failure no one part owns (the ROOT or a table directory, shared
// by every recording) is returned as a plain error.
package store
