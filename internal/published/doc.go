// Package published reads back, from the part files a ROOT has published,
// what a recorder needs to know of one recording it no longer holds in
// its log: the highest event sequence number its sessions, logs and
// telemetry files carry (LastSequence, for a server that drops resent
// events), and the episode record ids its episodes files hold
// (EpisodeIDs, for a recovery whose damaged log lost the markers of
// published episodes).
//
// It reads a ROOT through its store (store.Root: a directory, or an s3://
// bucket prefix), published part files only
// (hive.ParsePartName, no temp files), each file's footer or one column
// (internal/parquetout's readers); it writes nothing.
package published
