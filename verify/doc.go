// Package verify checks an rlrec ROOT end to end and reports every problem
// it finds with the file, the row and what to do about it. It reads the
// Parquet files directly (not through a dataset reader) so that it can
// check files a reader would refuse, and it never writes to the ROOT.
//
// A fix that asks for an operation on ROOT (recover it, recover it with
// salvage) carries it typed in Problem.Remedy and words it with
// WithWords: the Go functions by default (findings.APIWords), the
// command to run in the CLI. No text of this package names a command.
//
// # What is checked
//
// The ROOT, a directory or an s3://bucket/prefix URL, is listed and read
// through internal/store's Reader (hive.List on disk, hive.ListObjects
// of a bucket's keys, the one classification readers share; part files
// of a bucket read with ranged GETs). A bucket's log and lock live on the
// recorder's disk, so the log and lock checks apply to a directory only.
// The listing holds every
// part file of every table (steps, episodes, sessions, logs, telemetry)
// in its partition, session_id=S/env_id=R for a recording and, for steps
// in layout "episode", episode_record_id=E below it. A recording is the
// pair (session_id, env_id): several recordings may share a session id.
// Partition values longer than hive.MaxValueLen are cut and hashed in
// the path, so a file's ids are taken from its metadata, never from the
// path text.
//
// # Checks
//
// Every problem carries the name of the check that found it (Check; the
// names are stable and appear in the output):
//
//	file            every .parquet file opens (its footer is whole),
//	                every page matches its CRC-32 checksum and its column
//	                chunk, the offset and column indexes locate and count
//	                the pages (parquetout.CheckPages), and every row group
//	                reads back; a panic of parquet-go while reading it is
//	                reported here, as damage to the file. Page statistics,
//	                index bounds and metadata text are covered by no
//	                checksum: damage there is found only where it breaks
//	                another check. Pages compressed with a codec rlrec does
//	                not write (ZSTD, SNAPPY, UNCOMPRESSED) are not read
//	footer          the footer is valid by the Parquet specification as
//	                strict readers (Spark, Athena, parquet-java) check it
//	                (parquetout.CheckFooter): every column chunk's
//	                path_in_schema names its column, types and value counts
//	                agree with the schema and the row groups, pages and
//	                indexes lie inside the file; every directory of the
//	                listing can be read
//	schema-version  rlrec.schema_version is schema.SchemaVersion
//	metadata        the key-value metadata is present: schema version,
//	                layout ("episode" or "session"), session id, env id,
//	                episode record id (steps files of an episode
//	                partition), parseable space specs; every file of ROOT
//	                names the same layout
//	partition       the file's metadata ids, encoded with hive.Segment, are
//	                exactly the names of the directories it is in
//	                (rlrec.session_id -> session_id=S, rlrec.env_id ->
//	                env_id=R, rlrec.episode_record_id ->
//	                episode_record_id=E): this checks exact names and
//	                resolves cut ones; a steps file of layout "episode" is
//	                in an episode partition and one of layout "session" in
//	                its recording partition; a directory name decodes;
//	                an episodes row and its episode's steps carry the same
//	                spaces
//	schema          the file's columns are the table's (schema.EpisodesSchema
//	                ...; for steps, schema.StepsSchema of the stored spaces,
//	                with the binary threshold the file was written with, and
//	                in layout "session" the string column episode_record_id)
//	blob            observation, action and final-observation blobs decode
//	                (blob.Decode) and split against the stored spec: leaf
//	                count, per-leaf size (schema.Compile), text leaves valid
//	                UTF-8; every step has an action blob
//	typed           every typed column equals the leaf decoded from its
//	                blob (blob.DecodeLeaf; float16 widened, unsigned
//	                integers, bool lists, text, binary), and is null
//	                exactly when its blob is
//	steps           an episode's steps are consecutive from 0 (across the
//	                part files of its partition in layout "episode"; its
//	                rows are contiguous in a file in layout "session"),
//	                exactly one is_first (step 0), at most one is_last (the
//	                episode's last row), episode_id, episode_index and
//	                env_index the same on every row of the episode
//	episode         per recording: each episodes row's episode_record_id
//	                is unique; the row agrees with its episode's steps:
//	                steps_recorded = rows, reward_sum = sum of rewards
//	                (relative tolerance 1e-9), the ids, and for a completed
//	                episode terminated/truncated equal the last row's flags
//	                and the last row is is_last; status is a known value;
//	                steps_file, when not null, is a steps file of the
//	                listing, of the episode's recording (layout "episode":
//	                in the episode's partition), holding steps_recorded
//	                rows of the episode, and it is null only for an episode
//	                without steps; steps with no episodes row (the
//	                episode's commit point)
//	session         per recording: the sessions row agrees with the
//	                recording's files: episodes_recorded = episodes rows,
//	                steps_recorded = steps rows; status is known; clock is
//	                "event", "recorder" or "mixed"; episodes with no
//	                sessions row
//	event-log       a logs row of source rlrec/event holds an event
//	                (EnvConnected, ModelConnected, a repeated
//	                EpisodeCompleted) that replay can re-emit
//	stray           no temp file (.part-N.parquet.tmp, left by a writer
//	                that stopped) and no unknown file or directory under the
//	                table directories
//	log             the recorder's log under _rlrec/log is empty: records
//	                there mean a recorder did not close and the ROOT needs
//	                recovery; damage in it is reported with the
//	                segment and offset. The log is read only, never
//	                repaired. The log also has nothing missing of what it
//	                expects (its manifest, and _rlrec/log-expect outside
//	                it): a deleted log directory, manifest with its oldest
//	                or newest segment, or pending file is named.
//	lock            no recorder holds ROOT's lock (_rlrec/LOCK, tried and
//	                released at once): while one writes, files are missing
//	                or in progress, so temp files and the log's records are
//	                not reported and the ROOT should be verified again later.
//	                A ROOT this user may only read (a read-only mount, chmod
//	                a-w) verifies like any other: its lock is tried through
//	                a read-only open, and a lock that cannot be tried at all
//	                for want of access is not a problem
//	claim           (a bucket's ROOT) no recording is claimed
//	                (_rlrec/claims/...) with nothing published: a writer
//	                recording it holds such a claim until its first publish,
//	                and so does one that stopped before it, whose lost log
//	                directory would block the recording for good; the
//	                release-claim command releases one, never anything
//	                automatic
//
// Directories and files whose names start with "_" or "." are skipped, as
// dataset readers skip them (temp files excepted); entries at the top of
// ROOT that are not table directories are not rlrec's and are ignored.
//
// # Decisions
//
// The cross-file checks group files by the recording their metadata
// names, so a file moved into another recording's partition is reported
// once (partition) and still counted with its own recording. A file
// without those ids takes them from the files beside it whose metadata
// names their directories, and else from its path. A file that fails to
// open or read is reported once and its rows are left out of the
// cross-file checks it would take part in: its episode's (layout
// "episode"), or every episode of its recording (an episodes file, or a
// steps file of layout "session"), and its recording's totals. A file's
// problems beyond WithMaxProblemsPerFile are counted in one closing
// line rather than listed. More part files of a partition may appear later
// (readers union them); an episode's steps in several part files of its
// partition are checked as one sequence. Memory is a summary per episode
// and per file, not their rows. Files are checked in parallel
// (WithWorkers).
//
// # Usage
//
//	rep, err := verify.Root(ctx, root)
//	if err != nil { ... }           // ROOT could not be listed at all
//	rep.Write(os.Stdout)            // problems, then the summary line
//	if len(rep.Problems) > 0 { ... }
package verify
