package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/store"
)

// releaseOptions are the release-claim command's flags.
type releaseOptions struct {
	session, env string
}

var releaseFlags releaseOptions

var cmdReleaseClaim = &Command{
	Name:      "release-claim",
	UsageLine: "release-claim --session ID [--env ENV] ROOT",
	Short:     "release a bucket recording's claim that nothing will ever publish",
	Long: `Release-claim deletes the claim of one recording in an s3:// ROOT: the
state file _rlrec/claims/session_id=ID/env_id=ENV by which a writer (a
recorder with its own log directory) claimed the recording before it
logged any of its events, so that no second writer records it at once.
A claim is never removed otherwise: a writer that crashed before it
published anything, and whose log directory was then lost, leaves a
claim that blocks the recording for good (every later writer of it is
refused as "another writer is recording"). 'rlrec verify' and
'rlrec inspect' name such claims: a recording claimed with nothing
published.

Release a claim only when no writer is recording the recording and the
claimant's log directory is lost (if it is not, 'rlrec recover --log-dir
DIR ROOT' on its machine writes the recording instead). Release-claim
refuses when the ROOT holds any published file of the recording (the claim
then guards it) or has no claim of it. It prints the writer id the claim
held. A directory ROOT has no claims (its lock admits one writer).

Example:

  rlrec verify s3://datasets/run1
  rlrec release-claim --session 7f3a --env 0 s3://datasets/run1`,
	SetFlags: func(fs *flag.FlagSet) {
		releaseFlags = releaseOptions{}
		fs.StringVar(&releaseFlags.session, "session", "", "the recording's session `ID`")
		fs.StringVar(&releaseFlags.env, "env", "", "the recording's env `ENV` id (route.env_id)")
	},
	Run: runReleaseClaim,
}

func runReleaseClaim(ctx context.Context, env *Env, args []string) error {
	if len(args) != 1 {
		return usagef("want one s3:// ROOT, got %s", count(len(args), "argument"))
	}
	if releaseFlags.session == "" {
		return usagef("--session is required: the session id of the recording whose claim to release")
	}
	root := args[0]
	if !store.IsURL(root) {
		return fmt.Errorf("%s is no s3:// ROOT: a directory ROOT has no claims (its lock admits one writer)", root)
	}
	if err := checkRoot(root); err != nil {
		return err
	}
	rd, err := store.OpenReader(ctx, root)
	if err != nil {
		return err
	}
	s3, ok := rd.(*store.S3)
	if !ok {
		return fmt.Errorf("%s: not a bucket's ROOT", root)
	}
	rec := hive.Recording{SessionID: releaseFlags.session, EnvID: releaseFlags.env}
	c, err := s3.ReleaseClaim(hive.RecordingDir(rec))
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(env.Stdout, "%s: released the claim of session %q env %q (writer %s, %s); a writer may record it now\n",
		root, c.SessionID, c.EnvID, c.Writer, rd.Path(c.Rel))
	return err
}
