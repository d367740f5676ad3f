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
// and syncs, an object store uploads and publishes with a conditional
// put. Store is that seam, with two implementations (FS, over vfs.FS, and
// S3, over an S3-compatible service) and the shape both need: create,
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
// then Publish. When only some parts of a group fail, both steps go on
// with the others and a *GroupError names the failed ones.
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
//
// # Contract (S3)
//
// A ROOT s3://bucket/prefix (ParseURL, LoadS3) keeps the same keys as a
// ROOT on disk keeps paths: part N of a partition is the object
// prefix/TABLE/.../part-NNNNN.parquet, so DuckDB, Spark, Trino, polars and
// pyarrow read the prefix in place with hive partitioning. The service
// has no rename and no temp names; what a crashed writer left is a
// multipart upload in flight, invisible to readers.
//
// A part's bytes are held in memory, in reused 1 MiB blocks, while the
// store's memory budget (MemoryBytes, default 64 MiB over all its
// unpublished parts) has room; past it they spill to a spool file in a
// local directory (SpoolDir, not synced: a buffer, not a copy), so memory
// does not grow with the parts. Sync uploads the pieces of a part larger
// than PartSize (default 64 MiB) as a multipart upload, Concurrency at a
// time (a part a caller let stream, Stream, began its upload once it
// held two StreamPieceSize pieces, uploaded them while it was written,
// and Sync uploads the rest: s3stream.go); the upload is durable on the
// service and invisible, and
// PendingUpload returns its path, upload id and piece ETags for the caller
// to record (a logrec.Upload: the log's record of an upload is the one
// type of it, which CompleteUpload and AbortUpload take back). A part of PartSize or less needs no request at Sync: it is
// durable only once published, and a caller that must survive a crash
// before then keeps its source (the recorder's log holds every event a
// part is built from until the part is published).
//
// Publish makes each part visible whole, by PutObject or
// CompleteMultipartUpload with If-None-Match: *, never by copy (MinIO and
// versitygw let a conditional copy overwrite). HTTP 412 means the name is
// taken: the part fails with a *NameTakenError (ErrExists), the object
// is not replaced, and the part's upload is aborted. A 412 (or, on
// completing, a 404 for the upload) that answers a retry of this very
// request, whose first reply was lost, is told apart by the object's
// ETag: the MD5 of the bytes, or of the MD5s of the pieces. Parts of a
// group are published concurrently; the failed ones are named in a
// *GroupError. So one part costs one request up to PartSize (a small
// episode: one PutObject), and 2 + pieces above it.
//
// Next lists the partition (one ListObjectsV2 per 1,000 keys). Create and
// CreateNew send nothing: a name another writer took is found at
// publishing (412), not before, where a check would cost a request per
// part and still race. CreateNew refuses a partition this store already
// started a part in (ErrPartitionExists); one another process wrote is a
// collision found at publishing, an error of that recording and never an
// overwrite. PublishTemp and RemoveTemp have no temp files to act on
// (ErrNoTempNames); a crashed writer's uploads are found by exact key
// (Uploads: MinIO lists in-flight uploads only so) and completed
// (CompleteUpload) or aborted (AbortUpload).
//
// Every request is retried, with exponential backoff and jitter up to
// MaxBackoff (5 s) and MaxAttempts (10) attempts, on 5xx but 501, 429,
// 409 (a conditional write racing another) and connection errors, with
// no client-side retry quota, so an outage of about half a minute is
// waited out. Any other error fails the part it belongs to, as a local
// I/O error does. Requests counts the operations by kind and the HTTP
// attempts, retries included; RequestsOf counts those of one recording
// (the requests whose key or listing prefix lies under its partitions or
// names its claim), OwnRequests the rest (the layout file, listings of
// ROOT), so that the two add up to Requests (requests.go). Over TLS and
// to a loopback endpoint the bytes of a part go as UNSIGNED-PAYLOAD
// (payloadOptions); to another plain-HTTP endpoint they are signed.
//
// # Recording (Root)
//
// A recorder writes a ROOT through a Root: the Store, the Reader, and
// what a writer asks of the ROOT besides: the published parts of a
// partition (Parts), whether a table or recording holds any (HasPart, one
// listing that stops at the first part in a bucket) and the ROOT's state
// files under _rlrec (CreateState: the layout file, never replacing one;
// in a bucket a PutObject with If-None-Match: *, where the same bytes
// again are not an error, so two recorders starting one prefix agree).
// OpenRoot picks FS or S3 from the ROOT. The recorder's own state (log,
// lock, recovery journal, open marker) stays in a local state directory:
// ROOT/_rlrec on disk, the --log-dir of a bucket (DefaultStateDir); the
// journal and marker functions (journal.go) take that directory. An S3
// store also tells the recorder which parts go up in pieces (Multipart),
// the upload to record (PendingUpload), and lets recovery complete or
// abort an upload by exact key, look an object up (Exists) and take back
// the objects of a write a crash left half published (Delete, recovery's
// only delete).
//
// What the recorder's log says of its uploads, and what recovery does
// with it, is settle.go's (Uploader): BegunMarker names the parts about to
// go up in pieces, MarkUploads adds each upload's id and pieces to the
// markers, and SettleUploads, given the markers a crashed writer's log
// holds (logrec.Published), completes the recorded uploads of missing
// objects, takes back the writes the bucket does not hold whole and
// forgets them (so that they are done again from the log), and aborts
// every upload still in flight of a file the log names, by exact key.
//
// # Reading
//
// Readers go through a Reader (OpenReader picks the backend from the
// ROOT: a directory or an s3:// URL): List (hive.List on disk,
// hive.ListObjects of a bucket's keys, one request per 1,000 keys), Open
// of a part as an Object (io.ReaderAt with its size; in a bucket ranged
// GETs, small reads served from the 1 MiB blocks around them, the last 8
// kept, so a Parquet footer or column chunk costs about one request),
// ReadState of a file under _rlrec, and ReadLayout, the one reader of the
// layout file (hive.ParseLayoutFile). OpenPath opens one part by the path
// or URL a Reader names it with.
//
// # A recorder's state files
//
// A recorder on a file system keeps small files under ROOT/_rlrec beside
// its log, each written whole (WriteState: temp file, fsync, rename,
// directory fsync): the layout file (OpenLayout reads it through
// ReadLayout, or writes it with a new ROOT's first file), the recovery
// journal (WriteJournal, ReadJournal, RemoveJournal; its bytes are
// internal/logrec's) and the open marker (MarkOpen, MarkClosed). Their
// names are part of the on-disk format.
package store
