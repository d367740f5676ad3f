// Package parquetout writes rlrec's table files: the steps, episodes,
// sessions, logs and telemetry part files of DESIGN.md "Output layout",
// with the schemas of package schema.
//
// # Atomic part files
//
// A file is written as .part-NNNNN.parquet.tmp in its partition directory
// and only Commit gives it its final name part-NNNNN.parquet: it syncs the
// file, renames it and syncs the directory. NNNNN is one more than the
// highest part or temp number already in the directory (5 digits, zero
// padded; more digits past 99999), so a later file never replaces an
// earlier one, nor a temp file a crashed process left behind (RemoveTemps
// clears those). Missing partition directories are created by CreatePart,
// which syncs the parent of each one it created before returning, so the
// directory entries above a committed file are durable too. A crash at any
// point leaves either no file or a temp file, never a partial file under a
// final name.
//
// # Usage
//
//	f, err := parquetout.NewStepsFormat(obsLayout, actLayout, parquetout.Config{})
//	w, err := f.Create(fsys, hive.Dir(root, schema.TableSteps, sid, erid), sid, erid)
//	for ... { err = w.Write(&row) }   // row buffers may be reused after Write
//	path, err := w.Commit()           // or w.Abort()
//
//	path, err := parquetout.WriteTable(fsys, dir, meta, cfg, []schema.EpisodeRow{row})
//
// StepsFormat is immutable and shared; writers are not safe for concurrent
// use.
//
// # Memory
//
// A StepsWriter buffers at most one row group, bounded by Config.RowGroupRows
// and Config.RowGroupBytes, so an episode of any length streams through
// bounded memory; rows are handed to parquet-go in batches of 256 rows or
// 1 MiB, which also bounds page overshoot.
package parquetout
