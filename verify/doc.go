// Package verify checks an rlrec ROOT end to end and reports every problem
// it finds with the file, the row and what to do about it. It reads the
// Parquet files directly (not through a dataset reader) so that it can
// check files a reader would refuse, and it never writes to the ROOT.
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
//	                indexes lie inside the file
//	schema-version  rlrec.schema_version is schema.SchemaVersion
//	metadata        the key-value metadata is present: schema version,
//	                session id, episode record id (steps, episodes), the
//	                action space (steps) and parseable space specs
//	partition       the partition path (hive.Unescape of session_id=S,
//	                episode_record_id=E) names the rlrec.session_id /
//	                rlrec.episode_record_id of the file's metadata, and the
//	                steps and episodes files of a partition carry the same
//	                spaces
//	schema          the file's columns are the table's (schema.EpisodesSchema
//	                ...; for steps, schema.StepsSchema of the stored spaces,
//	                with the binary threshold the file was written with)
//	blob            observation, action and final-observation blobs decode
//	                (blob.Decode) and split against the stored spec: leaf
//	                count, per-leaf size (schema.Compile), text leaves valid
//	                UTF-8; every step has an action blob
//	typed           every typed column equals the leaf decoded from its
//	                blob (blob.DecodeLeaf; float16 widened, unsigned
//	                integers, bool lists, text, binary), and is null
//	                exactly when its blob is
//	steps           steps are consecutive from 0 across a partition's part
//	                files, exactly one is_first (step 0), at most one
//	                is_last (the last row), episode_id, episode_index and
//	                env_index the same on every row
//	episode         one episodes row per partition; it agrees with its
//	                steps: steps_recorded = rows, reward_sum = sum of rewards
//	                (relative tolerance 1e-9), and for a completed episode
//	                terminated/truncated equal the last row's flags and the
//	                last row is is_last; status is a known value; steps
//	                with no episode row (the episode's commit point)
//	session         the sessions rows of a session agree with its episodes:
//	                episodes_recorded = episode rows, steps_recorded = steps
//	                rows; status is known; episodes with no session row
//	stray           no temp file (.part-N.parquet.tmp, left by a writer
//	                that stopped) and no unknown file or directory under the
//	                table directories
//	log             the recorder's log under _rlrec/log is empty: records
//	                there mean a recorder did not close and the ROOT needs
//	                `rlrec recover ROOT`; damage in it is reported with the
//	                segment and offset. The log is read only, never
//	                repaired.
//	lock            no recorder holds ROOT's lock (_rlrec/LOCK, tried and
//	                released at once): while one writes, files are missing
//	                or in progress, so temp files and the log's records are
//	                not reported and the ROOT should be verified again later
//
// Directories and files whose names start with "_" or "." at the top of
// ROOT are skipped, as dataset readers skip them; files at the top level
// that are not table directories are not rlrec's and are ignored.
//
// # Decisions
//
// A file that fails to open or read is reported once and its rows are left
// out of the cross-file checks of its partition. A file's problems beyond
// Options.MaxProblemsPerFile are counted in one closing line rather than
// listed. Steps files of one partition are checked as one sequence (more
// part files may appear later; readers union them); memory per partition is
// a summary, not its rows, so ROOTs of any size are checked in bounded
// memory. Files are checked in parallel (Options.Workers).
//
// # Usage
//
//	rep, err := verify.Root(ctx, root, verify.Options{})
//	if err != nil { ... }           // ROOT could not be listed at all
//	rep.Write(os.Stdout)            // problems, then the summary line
//	if len(rep.Problems) > 0 { ... }
package verify
