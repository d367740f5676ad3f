// Package parquetout encodes rlrec's table files: the steps, episodes,
// sessions, logs and telemetry files of docs/format/ (layout.md), with
// the schemas of package schema.
//
// # Encoders over io.Writer
//
// An encoder writes one whole Parquet file, footer included, to the
// io.Writer it is given (StepsFormat.NewEncoder, NewTableEncoder,
// EncodeTable) and knows nothing of files, directories, part numbers or
// temp names: where the bytes go, and how a file becomes durable and
// visible, is internal/store's (a part file of a partition, under a temp
// name until its group is published). The name an encoder is given is
// only what its errors call the file.
//
// # Valid by the specification
//
// Every file is valid Parquet as strict readers (Spark, Athena,
// parquet-java, hyparquet) check it, not only as DuckDB and arrow read
// it: CheckFooter checks a file's footer that way (every column chunk's
// path_in_schema names its column, types, value and row counts agree,
// pages and indexes lie inside the file); the tests of this package check
// every file they write with it, and rlrec verify checks every file of a
// ROOT.
//
// Page checksums: parquet-go v0.32.0 writes a CRC-32 of the page's bytes
// into the header of every data and dictionary page it writes
// (PageHeader.crc; no writer option turns it on or off), and
// checks it when it reads a page whose crc is not 0. CheckPages checks
// every page against its checksum and its column chunk without decoding
// values (rlrec verify runs it on every file). Page headers, statistics,
// index bounds and the footer are covered by no checksum in Parquet.
//
// # Usage
//
//	f, err := parquetout.NewStepsFormat(obsLayout, actLayout, parquetout.Config{})
//	part, err := st.Create(hive.EpisodePartition(schema.TableSteps, rec, erid), n)  // a store.Part
//	w := f.NewEncoder(part, part.Name(), meta)
//	for ... { err = w.Write(&row) }   // row buffers may be reused after Write
//	err = w.Close()                   // the footer; or w.Abort()
//	err = part.Finish()               // then st.Sync(parts), st.Publish(parts)
//
//	err = parquetout.EncodeTable(part2, part2.Name(), meta, cfg, []schema.EpisodeRow{row})
//
// StepsFormat is immutable and shared; encoders are not safe for
// concurrent use.
//
// # Memory
//
// A StepsWriter buffers at most one row group, bounded by Config.RowGroupRows
// and Config.RowGroupBytes (or its own SetRowGroupBytes, for callers that
// share one budget among many open files: FileShare divides it, choosing
// each new file's page size and each open one's row group bound, share.go),
// so an episode of any length
// streams through bounded memory. Besides its row group, an open writer
// holds about one Config.PageBufferSize per non-nullable column
// (parquet-go preallocates each column's buffer from it) and a
// Config.WriteBufferSize. Rows are handed to parquet-go in batches of 256
// rows or 1 MiB, which also bounds page overshoot, and a row of 16 KiB or
// more (images) is handed over on its own, straight from the caller's
// buffers.
//
// Every file gets a parquet-go writer of its own. Recycling writers with
// parquet-go's Reset leaves path_in_schema empty in every column chunk of
// every file after the first (parquet-go v0.32.0, issue #602), and strict
// readers refuse such files, so nothing relies on Reset. What is recycled
// is rlrec's own: a StepsFormat's batch buffers, and every file's write
// buffer (parquet-go's own buffering is turned off). A new writer per file
// costs about twice the time of a reset one, mostly parquet-go
// preallocating each new writer's column buffers from PageBufferSize
// (BENCHMARKS.md, "Figures behind design choices":
// BenchmarkStepsEpisodeFile, BenchmarkEpisodesFile).
//
// # Settings, and why
//
// The figures behind these choices are in BENCHMARKS.md ("Figures behind
// design choices"; BenchmarkSteps, BenchmarkStepsVsBare, Benchmark*File):
//
//   - Compression: zstd at SpeedFastest by default. On cartpole rows it
//     makes files about ten times smaller than snappy for about the same
//     CPU; on image frames about three times smaller than snappy at about
//     2.5 times the CPU: choose "snappy" for image-heavy runs where CPU is
//     short. Snappy uses s2's fast snappy-compatible encoder: parquet-go's
//     own is s2's slower "better" mode. zstd's default level gains almost
//     nothing on float data and costs more. zstd has a fixed cost per
//     page, which shows on short episodes.
//   - Page statistics: on (parquet-go's default) for every column but the
//     blobs, binary typed columns and the logs' message, whose min/max
//     copies would add a full value per page and mean nothing. (A page
//     header holds min and max twice, in the old and new fields: a logs
//     file of one 8 MiB message was 32 MiB with them, and writing it
//     allocated 19 times the message; TestLargeLogMessage.)
//   - Compression of a large page (1 MiB or more, such as one large log
//     message or image): its output buffer is sized for the worst case
//     up front, since zstd grows it block by block otherwise
//     (TestZstdLargePage).
//   - Encodings: episode_id and other repeated strings are
//     dictionary-encoded; blobs and binary columns are PLAIN (no
//     dictionary, no delta-length split of a few large values).
//   - Row groups: at most 128 Ki rows or 32 MiB of row payload, so memory
//     stays bounded; parquet-go's default is unbounded.
//   - Pages: 256 KiB target (parquet-go's default); checked per batch.
//
// # Speed against bare parquet-go
//
// parquet-go's fast path (GenericWriter of a Go struct) needs the row type
// at compile time; the steps schema depends on the spaces, so the steps
// writer builds parquet.Values and writes them column by column. Against a
// bare GenericWriter of the same columns (fixed plus typed) it runs at
// 0.58-0.63x on cartpole rows and 0.75-0.93x on 84x84x3 image rows,
// depending on the codec; against a bare writer of the fixed columns only
// it runs at 0.32-0.34x (cartpole) and 0.38-0.49x (images), the typed
// columns being extra work: a 4-element list column costs about as much
// as all fixed columns together, and the image payload is written twice
// by design (blob and binary typed column).
package parquetout
