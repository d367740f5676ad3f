// Package runid tells the runs that feed one recording apart, and a
// resent event from new content under a used sequence number.
//
// # Run identity
//
// A run (one Go client, one Python capture, one Rust forwarder) draws a
// run nonce when it starts, 16 random bytes, and sends it on every event
// (eventsv1.Event.run_nonce). The recorder keeps the nonce of each
// recording in its log (the field stays in each event's log record), in
// its snapshots and in the recording's published sessions, logs and
// telemetry files (rlrec.run_nonce), so that a server knows, after any
// restart, which run a recording belongs to: an event of another nonce
// under the recording's ids is another run, and is refused with a
// message naming both (Describe).
//
// A stream without a nonce (an older producer) gets one derived from its
// content and position (Derive): the hash of the recording's first event,
// the one numbered 1, usually its SessionStarted with its time. Two such
// runs are told apart when their first events differ (a time, an id, a
// space); two runs whose first events are byte for byte the same (no
// times, the same ids and spaces) share a derived nonce and are not. For
// those, content binding below still refuses every event of the second
// run whose number the first one used and whose content differs, and the
// rest of that stream's events of the recording with it. What a stream
// without a nonce cannot be protected from: a second run that sends, under
// every number the first one used, exactly the first run's events (it is
// then taken for a resend: nothing of it changes the recording), and one
// whose stream reaches the server only after the first run's events have
// left the window below and a restart (its events under used numbers are
// then dropped as resends unverified, counted, and the rest refused only
// if its first event differs).
//
// # Content binding
//
// Each event's hash (ContentHash: 64-bit XXH3 of its message as the
// producer sent it; a producer encodes an event once, so a resend is the
// same bytes) is kept per recording, for the last WindowEvents numbers, in
// memory by the server and in the event's log record (content_hash), from
// which recovery rebuilds the window after a restart. A resent event whose
// hash differs from the one kept for its number is not the event the
// number was given to: it is refused and counted. A resend of a number
// older than the window (more than WindowEvents events before the
// recording's last, or before the last snapshot when the server restarted)
// cannot be checked: it is dropped as a resend, as before, and counted as
// unverified. A client resends only what was not acknowledged, at most
// its unacknowledged bytes (64 MiB by default), so a legitimate resend
// lies in the window unless its events average under 1 KiB.
package runid
