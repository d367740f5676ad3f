// Package findings says what the state of a ROOT and the rows of its
// recordings mean for the person reading them, in two lists:
//
//   - problems: what went wrong or needs doing, each with what to do (input
//     problems the recorder counted, failed, crashed or open sessions, a
//     recording without a sessions row, stray files, a ROOT whose log
//     still holds records after a crash, a recorder still writing);
//   - notes: what is as expected but easy to misread, such as the
//     incomplete episodes of a session that ended by reaching its episode
//     count (episodes still running on other lanes then).
//
// 'rlrec inspect' prints both lists and 'rlrec report' shows them with
// each recording, so the two always say the same. List works on what the
// caller already read through package dataset (a Root); ReadState reads
// the recorder's lock and log under ROOT/_rlrec without changing them.
//
// Every finding is one sentence that names its recording by session id
// and env id (a session id alone may name several recordings) and, for a
// problem, what to do. An operation to run on ROOT (a Remedy: recover it,
// verify it) is worded by the caller's Words: the CLI names its commands,
// APIWords (the default) the Go functions. No text of this package names
// a CLI command.
package findings
