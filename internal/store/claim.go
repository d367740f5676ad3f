package store

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
)

// Claims. A directory ROOT has one writer at a time (its lock), but a
// bucket prefix is shared by writers on many machines, each with its own
// log directory and lock. Two of them given the same recording at once
// would each find it absent and publish their files beside the other's:
// a recording spliced from two runs. So a writer of a bucket claims a
// recording before it logs any of its events: it creates the state file
// _rlrec/claims/session_id=S/env_id=E (hive.ClaimName, escaped as hive
// escapes partitions) holding its writer id, never replacing one. The
// writer id is the file WriterIDName in the writer's local state
// directory, made once: recovery and every later recorder of that log
// directory write the same bytes, which CreateState accepts, so a resumed
// recording keeps its claim. A claim is never removed; a recording
// claimed by another log directory is refused.

// WriterIDName is the writer id's file in a recorder's local state
// directory. Do not change: existing log directories hold it.
const WriterIDName = "writer-id"

// WriterID returns the writer id of the local state directory state,
// making it (16 random bytes, hex) the first time.
func WriterID(fsys vfs.FS, state string) (string, error) {
	name := filepath.Join(state, WriterIDName)
	b, err := readFile(fsys, name)
	if err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			return id, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("store: read writer id %s: %w", name, err)
	}
	var r [16]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", fmt.Errorf("store: make writer id: %w", err)
	}
	id := hex.EncodeToString(r[:])
	if err := vfs.WriteFile(fsys, name+".tmp", name, []byte(id+"\n")); err != nil {
		return "", fmt.Errorf("store: write writer id %s: %w", name, err)
	}
	return id, nil
}

// Claim claims rec on a shared ROOT (S3) for the writer whose local
// state directory is state (WriterID), unless done (the recorder already
// admitted it). A ROOT on disk needs no claim (its lock admits one
// writer) and is not written. An error wrapping ErrExists means another
// writer claimed rec.
func Claim(fsys vfs.FS, state string, st Root, rec hive.Recording, done bool) error {
	if _, ok := st.(*S3); !ok || done {
		return nil
	}
	id, err := WriterID(fsys, state)
	if err != nil {
		return err
	}
	name := hive.ClaimName(rec)
	if err := st.CreateState(name, []byte(id+"\n")); err != nil {
		if errors.Is(err, ErrExists) {
			return fmt.Errorf("store: another writer, with another log directory, is recording %s (its claim is %s): %w", rec, path.Join(hive.StateDir, name), err)
		}
		return fmt.Errorf("store: claim %s: %w", rec, err)
	}
	return nil
}

func readFile(fsys vfs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
