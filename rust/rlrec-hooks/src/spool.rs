//! The local spool: what makes a hook that returned survive `kill -9`.
//!
//! # Format
//!
//! A spool directory holds, per forwarder run, one or more segments, each
//! two files named `RUN-NNNNNN` (RUN the run's nonce as 32 lowercase hex
//! digits, NNNNNN the segment's number from 000001; a run's events are its
//! segments in name order):
//!
//! - `RUN-NNNNNN.events`: the segment's events, each an `rlrec.events.v1.Event`
//!   preceded by its length as a base-128 varint (the stream `rlrec
//!   ingest` reads: `cat RUN-*.events | rlrec ingest --out ROOT -` records
//!   the run, and a run of one segment is `rlrec ingest --out ROOT
//!   RUN-000001.events`). Each
//!   event is written whole, with one `write(2)` call, before its hook
//!   returns: it is then in the kernel's page cache and outlives the
//!   process (not a power cut: the spool is never fsynced, which would
//!   cost a disk flush per event). Events carry their sequence numbers
//!   and the run's nonce, so a resend is recognised by `rlrec serve`.
//! - `RUN-NNNNNN.acked`: 8 bytes, little-endian: the length of the prefix
//!   of `RUN-NNNNNN.events` that `rlrec serve` has acknowledged. It may lag (it is
//!   written after each acknowledgement, not atomically with it): what
//!   lies between the true and the written acknowledgement is resent and
//!   dropped by the server as already recorded.
//!
//! A live forwarder holds an exclusive `flock` on each of its segments; the
//! kernel releases it when the process dies. A starting forwarder takes
//! over every spool file of the directory it can lock (a dead run), cuts a
//! torn last event (the one whose hook never returned), and resends what
//! lies past its acknowledgement, segment after segment. A segment whose
//! events are all acknowledged is removed (a running forwarder starts a
//! new segment past `Config::segment_bytes` and removes full ones as they
//! are acknowledged). The values here are on-disk format: do not change them.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use prost::bytes::Bytes;

/// The events file's suffix. On-disk name: do not change.
pub const EVENTS_SUFFIX: &str = ".events";
/// The acknowledgement file's suffix. On-disk name: do not change.
pub const ACKED_SUFFIX: &str = ".acked";
/// The acknowledgement file's size: one u64, little-endian. Do not change.
const ACKED_LEN: usize = 8;

/// The name of a run's segment `n` (without suffix). On-disk name: do not
/// change.
pub fn segment_name(run: &str, n: u32) -> String {
    format!("{run}-{n:06}")
}

/// The open spool of the running forwarder, or of a dead run taken over.
pub struct SpoolFile {
    pub events_path: PathBuf,
    events: File,
    acked: File,
    end: u64,
}

fn io_err(what: &str, path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("spool: {what} {}: {e}", path.display()))
}

/// Syncs a directory so that new names in it are durable.
fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_err("sync directory", dir, e))
}

impl SpoolFile {
    /// Creates the spool files of a new run in `dir` (created if missing),
    /// locked for this process.
    pub fn create(dir: &Path, run: &str) -> io::Result<SpoolFile> {
        std::fs::create_dir_all(dir).map_err(|e| io_err("create directory", dir, e))?;
        let events_path = dir.join(format!("{run}{EVENTS_SUFFIX}"));
        let acked_path = dir.join(format!("{run}{ACKED_SUFFIX}"));
        let events = OpenOptions::new()
            .read(true)
            .append(true)
            .create_new(true)
            .open(&events_path)
            .map_err(|e| io_err("create", &events_path, e))?;
        events
            .try_lock()
            .map_err(|e| io_err("lock", &events_path, io::Error::other(e.to_string())))?;
        let acked = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&acked_path)
            .map_err(|e| io_err("create", &acked_path, e))?;
        acked
            .write_all_at(&[0u8; ACKED_LEN], 0)
            .map_err(|e| io_err("write", &acked_path, e))?;
        // The names must survive a crash of the machine too, or a restarted
        // forwarder would not find them; this is once per run, not per event.
        sync_dir(dir)?;
        Ok(SpoolFile {
            events_path,
            events,
            acked,
            end: 0,
        })
    }

    /// Appends one framed event (length prefix and message) with one
    /// write(2) and returns the file's new length.
    pub fn append(&mut self, framed: &[u8]) -> io::Result<u64> {
        (&self.events)
            .write_all(framed)
            .map_err(|e| io_err("append to", &self.events_path, e))?;
        self.end += framed.len() as u64;
        Ok(self.end)
    }

    /// Records that the first `offset` bytes are acknowledged.
    pub fn set_acked(&self, offset: u64) -> io::Result<()> {
        self.acked
            .write_all_at(&offset.to_le_bytes(), 0)
            .map_err(|e| io_err("write acknowledgement of", &self.events_path, e))
    }

    /// The file's size in bytes.
    pub fn size(&self) -> u64 {
        self.end
    }

    /// Removes both files (all events acknowledged).
    pub fn remove(self) -> io::Result<()> {
        let acked = acked_path(&self.events_path);
        std::fs::remove_file(&acked).map_err(|e| io_err("remove", &acked, e))?;
        std::fs::remove_file(&self.events_path).map_err(|e| io_err("remove", &self.events_path, e))
    }
}

fn acked_path(events_path: &Path) -> PathBuf {
    events_path.with_extension(&ACKED_SUFFIX[1..])
}

/// A dead run's spool taken over: its events past the acknowledgement.
pub struct Recovered {
    pub file: SpoolFile,
    /// Each event's bytes (no length prefix) and the file offset just after it.
    pub events: Vec<(Bytes, u64)>,
    /// Bytes cut from the end: a torn last event.
    pub torn: u64,
}

/// Decodes a base-128 varint at the start of `b`: (value, its length).
fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut v: u64 = 0;
    for (i, &byte) in b.iter().enumerate().take(10) {
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// Splits a spool's bytes from `start` into events; returns them and the
/// offset where the complete events end.
pub fn split(data: &[u8], start: u64) -> (Vec<(Bytes, u64)>, u64) {
    let mut out = Vec::new();
    let mut pos = start as usize;
    while pos < data.len() {
        let Some((len, n)) = varint(&data[pos..]) else {
            break;
        };
        let Some(end) = (pos + n).checked_add(len as usize) else {
            break;
        };
        if end > data.len() {
            break;
        }
        out.push((Bytes::copy_from_slice(&data[pos + n..end]), end as u64));
        pos = end;
    }
    (out, pos as u64)
}

/// Takes over every spool of a dead run in `dir` (a missing `dir` has
/// none). Spools locked by a live process are left alone.
pub fn recover(dir: &Path) -> io::Result<Vec<Recovered>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_err("read directory", dir, e)),
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(EVENTS_SUFFIX))
        .collect();
    paths.sort();
    let mut out = Vec::new();
    for events_path in paths {
        let events = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&events_path)
            .map_err(|e| io_err("open", &events_path, e))?;
        if events.try_lock().is_err() {
            continue; // a live forwarder's
        }
        let ap = acked_path(&events_path);
        let acked = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&ap)
            .map_err(|e| io_err("open", &ap, e))?;
        let mut buf = [0u8; ACKED_LEN];
        let acked_at = match acked.read_exact_at(&mut buf, 0) {
            Ok(()) => u64::from_le_bytes(buf),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => 0,
            Err(e) => return Err(io_err("read", &ap, e)),
        };
        let mut data = Vec::new();
        (&events)
            .read_to_end(&mut data)
            .map_err(|e| io_err("read", &events_path, e))?;
        // An acknowledgement that is no event boundary cannot be trusted:
        // resend everything (the server drops what it already has).
        let (all, whole) = split(&data, 0);
        let evs: Vec<(Bytes, u64)> = if acked_at == 0 || all.iter().any(|(_, end)| *end == acked_at)
        {
            all.into_iter().filter(|(_, end)| *end > acked_at).collect()
        } else {
            all
        };
        let torn = data.len() as u64 - whole;
        if torn > 0 {
            events
                .set_len(whole)
                .map_err(|e| io_err("cut torn tail of", &events_path, e))?;
        }
        out.push(Recovered {
            file: SpoolFile {
                events_path,
                events,
                acked,
                end: whole,
            },
            events: evs,
            torn,
        });
    }
    Ok(out)
}

impl SpoolFile {
    /// A second handle on the acknowledgement file, for the sending task.
    pub fn ack_handle(&self) -> io::Result<File> {
        self.acked
            .try_clone()
            .map_err(|e| io_err("open acknowledgement of", &self.events_path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(payload: &[u8]) -> Vec<u8> {
        let mut b = vec![payload.len() as u8];
        b.extend_from_slice(payload);
        b
    }

    /// A dead run's spool: three events, then `tail` bytes of a fourth.
    fn dead_run(dir: &Path, acked: u64, tail: &[u8]) -> PathBuf {
        let path = dir.join(format!("{}{EVENTS_SUFFIX}", "0".repeat(32)));
        let mut data = Vec::new();
        for p in [&b"one"[..], b"two", b"three"] {
            data.extend(frame(p));
        }
        data.extend_from_slice(tail);
        std::fs::write(&path, &data).expect("write spool");
        std::fs::write(path.with_extension("acked"), acked.to_le_bytes()).expect("write acked");
        path
    }

    #[test]
    fn recover_table() {
        // (name, acked, torn tail, events resent, bytes cut)
        type Case<'a> = (&'a str, u64, &'a [u8], &'a [&'a [u8]], u64);
        let cases: [Case; 5] = [
            (
                "nothing acknowledged",
                0,
                b"",
                &[b"one", b"two", b"three"],
                0,
            ),
            ("first acknowledged", 4, b"", &[b"two", b"three"], 0),
            ("all acknowledged", 14, b"", &[], 0),
            ("torn last event cut", 4, b"\x05fo", &[b"two", b"three"], 3),
            (
                "acknowledgement inside an event: resend all",
                6,
                b"",
                &[b"one", b"two", b"three"],
                0,
            ),
        ];
        for (name, acked, tail, want, cut) in cases {
            let dir = tempfile::tempdir().expect("temp dir");
            let path = dead_run(dir.path(), acked, tail);
            let got = recover(dir.path()).expect("recover");
            assert_eq!(got.len(), 1, "{name}");
            let r = &got[0];
            let events: Vec<&[u8]> = r.events.iter().map(|(b, _)| &b[..]).collect();
            assert_eq!(events, want, "{name}");
            assert_eq!(r.torn, cut, "{name}");
            assert_eq!(std::fs::metadata(&path).expect("stat").len(), 14, "{name}");
            assert_eq!(r.file.size(), 14, "{name}");
        }
    }

    #[test]
    fn a_live_spool_is_left_alone() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut live = SpoolFile::create(dir.path(), "ab").expect("create");
        live.append(&frame(b"x")).expect("append");
        assert!(recover(dir.path()).expect("recover").is_empty());
        drop(live);
        let got = recover(dir.path()).expect("recover after the owner is gone");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].events.len(), 1);
    }

    #[test]
    fn acknowledged_spool_is_removed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut s = SpoolFile::create(dir.path(), "cd").expect("create");
        let end = s.append(&frame(b"x")).expect("append");
        s.set_acked(end).expect("ack");
        s.remove().expect("remove");
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 0);
    }
}
