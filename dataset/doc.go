// Package dataset reads an rlrec ROOT (schema version 2; the layout is
// described in docs/format/layout.md and in internal/hive): it lists recordings,
// episodes and files, reads the sessions, episodes, logs and telemetry
// rows, and iterates an episode's steps in step order with their
// observations and actions decoded through the space specs stored in the
// files.
//
// A recording is one route run, named by (session_id, env_id): rlmesh's
// session id is a correlation label that several runs may share, so every
// call that reads one recording takes a Recording, and Find lists the
// recordings of a session id.
//
// # Usage
//
//	d, err := dataset.Open(root)               // lists directories only
//	defer d.Close()                            // the packed files it keeps open
//	for _, rec := range d.Recordings() {
//		eps, err := d.Episodes(rec)             // reads the episodes files
//		...
//	}
//	st, err := d.Steps(rec, "ep-000001")        // or dataset.OpenStepsFile(path)
//	defer st.Close()
//	for st.Next() {
//		s := st.Step()                          // valid until the next Next
//		js, err := st.AppendObservationJSON(nil)
//	}
//	err = st.Err()
//
// # Contract
//
//   - A ROOT is a directory or an s3://bucket/prefix URL; every listing and
//     read goes through internal/store's Reader, so the two read alike (a
//     bucket is listed 1,000 keys a request and its files read with
//     ranged GETs; File.Path is then the object's s3:// URL, which
//     OpenStepsFile accepts too). Credentials and endpoint come from the
//     standard AWS chain (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
//     AWS_REGION, AWS_ENDPOINT_URL, profiles).
//   - Open is cheap: it walks the partition directories of the five tables
//     (ROOT/<table>/session_id=S/env_id=R[/episode_record_id=E]/part-N.parquet),
//     decodes the percent-encoded partition values (internal/hive) and stats
//     the part files; it reads no file contents (except one footer per
//     partition whose directory name holds a cut long id, which it resolves
//     from the file's rlrec.session_id and rlrec.env_id), so a ROOT of any
//     size opens in the time a directory listing takes. Names starting with "_" or "."
//     (the recorder's _rlrec state, temp files .part-N.parquet.tmp) and
//     files ending in ".tmp" are skipped; anything else that does not fit
//     the layout is skipped too and listed by Strays, for a checker to
//     report.
//   - A partition may hold several part files (data that arrived after the
//     partition was first written); readers union them in part order.
//   - Steps reads only the 13 fixed columns of a steps file (column
//     projection), one row group at a time, so memory is bounded by the row
//     group, not the episode; typed observation/action columns are never
//     read: values are decoded from the blobs, which are exact. An
//     episode's part files are read in order of their first step (part
//     files of one episode hold disjoint step ranges; a checker verifies
//     that).
//   - An episode of a packed steps file (layout "session") is read from
//     the row groups that hold it, found by the episode_record_id column's
//     statistics. Those groups hold many episodes, and a replay, a copy or
//     an export reads them all, so the Dataset keeps the last 8 row groups
//     it decoded (256 MiB at most) and the last 4 packed files it opened,
//     shared by every iterator, until Close: each row group is decoded
//     about once per pass over the recording rather than once per episode
//     it holds (replaying a 3,000-episode cartpole recording: 83 s before,
//     0.9 s after, against 1.3-2.3 s for the same session in layout
//     "episode").
//   - Space specs come from each file's key-value metadata
//     (rlrec.observation_space, rlrec.action_space), so a single copied
//     steps or episodes file decodes on its own (OpenStepsFile).
//   - Files whose rlrec.schema_version is not SchemaVersion are refused with
//     an error wrapping ErrSchemaVersion. Every error names the file (a
//     *FileError) and says what to do.
//
// A Dataset is a snapshot of the listing at Open; it is safe for concurrent
// use. A Steps iterator is not.
package dataset
