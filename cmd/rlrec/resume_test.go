package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/events/eventsv1"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/published"
	"github.com/rlrec/rlrec/internal/recswap"
	"github.com/rlrec/rlrec/internal/roottest"
	"github.com/rlrec/rlrec/internal/runid"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/sim"
)

// childEnv makes the test binary run as rlrec (TestMain): the kill
// tests run 'rlrec ingest' in a child process they can SIGKILL.
const childEnv = "RLREC_TEST_RUN_AS_RLREC"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// resumeStream is an event stream of the resume tests: its file and its
// frames (length prefix and message).
type resumeStream struct {
	file   string
	frames [][]byte
	// recs is the recording of each frame.
	recs []hive.Recording
}

// simStream simulates cfgs (with fixed clocks) into a stream file whose
// events carry nonce (none when nil).
func simStream(t *testing.T, cfgs []sim.Config, nonce []byte) resumeStream {
	t.Helper()
	roottest.SetClocks(cfgs)
	var sb bytes.Buffer
	w := events.NewStreamWriter(&sb)
	w.SetRunNonce(nonce)
	if _, err := sim.RunSessions(context.Background(), sim.NewStreamHooks(w), cfgs); err != nil {
		t.Fatal(err)
	}
	return streamOf(t, splitFrames(sb.Bytes()))
}

func splitFrames(b []byte) [][]byte {
	var frames [][]byte
	for len(b) > 0 {
		size, n := protowire.ConsumeVarint(b)
		frames = append(frames, b[:n+int(size)])
		b = b[n+int(size):]
	}
	return frames
}

// streamOf writes frames to a new stream file.
func streamOf(t *testing.T, frames [][]byte) resumeStream {
	t.Helper()
	s := resumeStream{file: filepath.Join(t.TempDir(), "in.events"), frames: frames}
	var all []byte
	for _, f := range frames {
		_, n := protowire.ConsumeVarint(f)
		ev, _, err := events.Unmarshal(f[n:])
		if err != nil {
			t.Fatal(err)
		}
		sid, route := ev.Header()
		s.recs = append(s.recs, hive.Recording{SessionID: sid, EnvID: route.EnvID})
		all = append(all, f...)
	}
	if err := os.WriteFile(s.file, all, 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

// prefix is the stream of the first n frames.
func (s resumeStream) prefix(t *testing.T, n int) resumeStream {
	return streamOf(t, s.frames[:n])
}

// nth returns the index of the frame of rec's k-th event (from 1).
func (s resumeStream) nth(rec hive.Recording, k uint64) int {
	var seen uint64
	for i, r := range s.recs {
		if r == rec {
			if seen++; seen == k {
				return i
			}
		}
	}
	return -1
}

// changed returns the stream with frame i's time moved by 1 µs.
func (s resumeStream) changed(t *testing.T, i int) resumeStream {
	t.Helper()
	size, n := protowire.ConsumeVarint(s.frames[i])
	var m eventsv1.Event
	if err := proto.Unmarshal(s.frames[i][n:n+int(size)], &m); err != nil {
		t.Fatal(err)
	}
	m.TimeUnixNano += 1000
	body, err := proto.Marshal(&m)
	if err != nil {
		t.Fatal(err)
	}
	frames := append([][]byte(nil), s.frames...)
	frames[i] = protowire.AppendVarint(nil, uint64(len(body)))
	frames[i] = append(frames[i], body...)
	return streamOf(t, frames)
}

// heldOf returns what ROOT holds of each recording it has files of.
func heldOf(t *testing.T, root string, recs []hive.Recording) map[hive.Recording]published.Held {
	t.Helper()
	st, err := store.OpenRoot(context.Background(), vfs.OS(), root, store.S3Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[hive.Recording]published.Held{}
	for _, rec := range recs {
		h, err := published.HeldOf(st, rec)
		if err != nil {
			t.Fatal(err)
		}
		if h.Files > 0 {
			out[rec] = h
		}
	}
	return out
}

func (s resumeStream) recordings() []hive.Recording {
	var out []hive.Recording
	seen := map[hive.Recording]bool{}
	for _, r := range s.recs {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// ingestUninterrupted ingests s into a new ROOT of layout.
func ingestUninterrupted(t *testing.T, s resumeStream, layout string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "uninterrupted")
	if code, _, errOut := runCmd(t, "ingest", "--layout", layout, "-o", root, s.file); code != 0 {
		t.Fatalf("uninterrupted ingest: exit %d: %s", code, errOut)
	}
	return root
}

// sameTables fails unless ROOT got holds, in every table, the rows of
// want, partition by partition, every value byte for byte, and returns
// the rows compared. Files whose bytes differ, and rows cut into other
// part files, are logged, not failed: a steps file's page and row-group
// sizes depend on how many steps files were open at once
// (parquetout.FileShare), which the resume's staging recorder does not
// share with an uninterrupted ingest, and the other tables' files are
// flushed on a timer as well as by size.
func sameTables(t *testing.T, got, want string) int {
	t.Helper()
	return sameTablesBut(t, got, want, "")
}

// sameTablesBut is sameTables of every table but skip.
func sameTablesBut(t *testing.T, got, want, skip string) int {
	t.Helper()
	g, w := rowsByPartition(t, got), rowsByPartition(t, want)
	if skip != "" {
		for _, m := range []map[string][]string{g, w} {
			for p := range m {
				if strings.HasPrefix(p, skip+"/") {
					delete(m, p)
				}
			}
		}
	}
	rows := 0
	for p, wr := range w {
		rows += len(wr)
		if gr := g[p]; !reflect.DeepEqual(gr, wr) {
			t.Errorf("%s: %d rows, want %d (or other rows)", p, len(gr), len(wr))
		}
	}
	for p := range g {
		if _, ok := w[p]; !ok {
			t.Errorf("%s: a partition the uninterrupted ingest has not", p)
		}
	}
	gb, wb := treeBytes(t, got, hive.StateDir), treeBytes(t, want, hive.StateDir)
	if skip != "" {
		for _, m := range []map[string]string{gb, wb} {
			for rel := range m {
				if strings.HasPrefix(rel, skip+"/") {
					delete(m, rel)
				}
			}
		}
	}
	// The rows above are the contract. How a partition's rows are cut
	// into part files is not: a recording's episodes, sessions, logs and
	// telemetry files are flushed on a timer as well as by size, so two
	// ingests of one stream (the race detector's slower one above all)
	// may cut them differently. Both are logged, not failed.
	var differ, missing, extra []string
	for rel, b := range wb {
		if g, ok := gb[rel]; ok && g != b {
			differ = append(differ, rel)
		}
		if _, ok := gb[rel]; !ok {
			missing = append(missing, rel)
		}
	}
	for rel := range gb {
		if _, ok := wb[rel]; !ok {
			extra = append(extra, rel)
		}
	}
	if len(differ) > 0 {
		t.Logf("%d of %d files hold the same rows in other bytes (page sizes): %v", len(differ), len(wb), differ)
	}
	if len(missing)+len(extra) > 0 {
		t.Logf("the same rows cut into other part files: %v only in the uninterrupted ingest, %v only here", missing, extra)
	}
	return rows
}

// killState is the state of a ROOT an ingest writes at which a kill
// test kills it.
type killState struct {
	name string
	// reached reports whether root is in the state.
	reached func(root string) bool
}

// countFiles counts the files under dir whose name ends in suffix.
func countFiles(dir, suffix string) int {
	n := 0
	_ = filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasSuffix(p, suffix) {
			n++
		}
		return nil
	})
	return n
}

// logBytes is the size of the log's segments under ROOT.
func logBytes(root string) int64 {
	var n int64
	_ = filepath.WalkDir(filepath.Join(root, hive.StateDir, "log"), func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasSuffix(e.Name(), ".wal") {
			if info, err := e.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// ingestKilled runs 'rlrec ingest' of s into root in a child process
// (more args before "-o"), feeding it s's frames through a pipe, and
// kills it with SIGKILL once state holds, checked after every frame
// written (and, once all are written, until it holds). The pipe stays
// open: the child never sees the stream end. It reports the frames
// written when it was killed.
func ingestKilled(t *testing.T, s resumeStream, root string, state killState, args ...string) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], append(append([]string{"ingest"}, args...), "-o", root, "-")...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	written := 0
	for _, f := range s.frames {
		if state.reached(root) {
			break
		}
		if _, err := in.Write(f); err != nil {
			t.Fatalf("feed the ingest: %v (stderr: %s)", err, stderr.String())
		}
		written++
	}
	// A deadline only as the bound of a failure.
	for deadline := time.Now().Add(3 * time.Minute); !state.reached(root); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("state %q never reached (stderr: %s)", state.name, stderr.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	err = cmd.Wait()
	in.Close()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the ingest was not killed: %v (stderr: %s)", err, stderr.String())
	}
	return written
}

// TestIngestResumeKill: 'rlrec ingest' SIGKILLed at states of the ROOT
// from "events logged, nothing published" to "recordings ended", in both
// layouts, then 'rlrec recover', then 'rlrec ingest' of the same stream
// again: every table equals an uninterrupted ingest's, row for row and
// every value byte for byte.
// The last cases kill the resume too (while it derives the recordings
// into its staging ROOT) and recover and ingest once more.
func TestIngestResumeKill(t *testing.T) {
	cartpole := []sim.Config{
		{Env: "cartpole", NumEnvs: 4, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 40, TimeLimit: 60, Seed: 11},
		{Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 30, TimeLimit: 60, Seed: 12},
		{Env: "cartpole", NumEnvs: 3, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 20, TimeLimit: 80, Seed: 13},
	}
	images := []sim.Config{
		{Env: "pick-place", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 10, TimeLimit: 40, Seed: 21},
		{Env: "all-leaves", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 24, TimeLimit: 20, Seed: 22},
	}
	steps := func(root string) int { return countFiles(filepath.Join(root, "steps"), ".parquet") }
	sessions := func(root string) int { return countFiles(filepath.Join(root, "sessions"), ".parquet") }
	logged := func(n int64) killState {
		return killState{fmt.Sprintf("%d KiB of events logged", n>>10), func(root string) bool { return logBytes(root) >= n }}
	}
	firstFile := killState{"the first steps file published", func(root string) bool { return steps(root) >= 1 }}
	someFiles := func(n int) killState {
		return killState{fmt.Sprintf("%d steps files published", n), func(root string) bool { return steps(root) >= n }}
	}
	allEnded := func(n int) killState {
		return killState{"every recording ended", func(root string) bool { return sessions(root) >= n }}
	}
	staging := killState{"the resume's staging ROOT has a steps file", func(root string) bool {
		return countFiles(filepath.Join(recswap.StageDir(root), "steps"), ".parquet") >= 1
	}}
	cases := []struct {
		name   string
		cfgs   []sim.Config
		layout string
		state  killState
		// again kills the resume too, at this state.
		again *killState
	}{
		{name: "episode/128 KiB logged", cfgs: cartpole, layout: "episode", state: logged(128 << 10)},
		{name: "episode/first file", cfgs: cartpole, layout: "episode", state: firstFile},
		{name: "episode/20 files", cfgs: cartpole, layout: "episode", state: someFiles(20)},
		{name: "episode/40 files", cfgs: cartpole, layout: "episode", state: someFiles(40)},
		{name: "episode/every recording ended", cfgs: cartpole, layout: "episode", state: allEnded(len(cartpole))},
		{name: "session/128 KiB logged", cfgs: cartpole, layout: "session", state: logged(128 << 10)},
		{name: "session/512 KiB logged", cfgs: cartpole, layout: "session", state: logged(512 << 10)},
		{name: "session/1 MiB logged", cfgs: cartpole, layout: "session", state: logged(1 << 20)},
		{name: "images episode/128 KiB logged", cfgs: images, layout: "episode", state: logged(128 << 10)},
		{name: "images episode/first file", cfgs: images, layout: "episode", state: firstFile},
		{name: "images session/256 KiB logged", cfgs: images, layout: "session", state: logged(256 << 10)},
		{name: "episode/resume killed", cfgs: cartpole, layout: "episode", state: someFiles(20), again: &staging},
		{name: "images session/resume killed", cfgs: images, layout: "session", state: logged(128 << 10), again: &staging},
	}
	// The streams and their uninterrupted ingests, made once.
	streams := map[string]resumeStream{}
	refs := map[string]string{}
	for _, c := range cases {
		key := c.cfgs[0].Env
		s, ok := streams[key]
		if !ok {
			s = simStream(t, c.cfgs, nil)
			streams[key] = s
		}
		if _, ok := refs[key+"/"+c.layout]; !ok {
			refs[key+"/"+c.layout] = ingestUninterrupted(t, s, c.layout)
		}
	}
	var kills, rows, resumedRecs int
	var heldEvents uint64
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, ref := streams[c.cfgs[0].Env], refs[c.cfgs[0].Env+"/"+c.layout]
			root := filepath.Join(t.TempDir(), "root")
			written := ingestKilled(t, s, root, c.state, "--layout", c.layout)
			kills++
			if code, out, errOut := runCmd(t, "recover", root); code != 0 {
				t.Fatalf("recover: exit %d: %s%s", code, out, errOut)
			}
			held := heldOf(t, root, s.recordings())
			partial := 0
			for _, h := range held {
				heldEvents += h.Chain.Events
				if h.Chain.Events == 0 {
					t.Errorf("a recording ROOT holds has no content chain: %+v", h)
				}
				partial++
			}
			if c.again != nil {
				ingestKilled(t, s, root, *c.again)
				kills++
				if code, out, errOut := runCmd(t, "recover", root); code != 0 {
					t.Fatalf("recover after the resume's kill: exit %d: %s%s", code, out, errOut)
				}
				if _, err := os.Stat(filepath.Join(root, hive.StateDir, recswap.Dir)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("recover left the resume's directory: %v", err)
				}
				// The recordings held in part are as they were (the
				// resume had swapped nothing); those the first kill
				// left out were recorded by the killed ingest and are
				// now held in part too.
				after := heldOf(t, root, s.recordings())
				for r, h := range held {
					if !reflect.DeepEqual(after[r], h) {
						t.Errorf("the killed resume changed what ROOT holds of %s: %+v, was %+v", r, after[r], h)
					}
				}
				held = after
			}
			code, out, errOut := runCmd(t, "ingest", "-o", root, s.file)
			if strings.Contains(errOut, "differs") || strings.Contains(errOut, "another run") || (code != 0 && code != 1) {
				t.Fatalf("ingest again: exit %d: %s%s", code, out, errOut)
			}
			n := strings.Count(out, "Resumed ")
			resumedRecs += n
			if n == 0 && len(held) > 0 {
				t.Logf("ingest again resumed nothing: exit %d: %s%s", code, out, errOut)
			}
			t.Logf("killed after %d of %d frames; ROOT held %d recordings; resumed %d", written, len(s.frames), partial, n)
			rows += sameTables(t, root, ref)
			if code, vout, verr := runCmd(t, "verify", root); code != 0 {
				t.Errorf("verify: exit %d: %s%s", code, vout, verr)
			}
		})
	}
	if resumedRecs < len(cases)/2 {
		t.Errorf("%d recordings resumed in %d cases: the kills came too late to test a resume", resumedRecs, len(cases))
	}
	t.Logf("%d cases, %d SIGKILLs, %d recordings resumed (%d events held before), %d rows compared", len(cases), kills, resumedRecs, heldEvents, rows)
}

// TestIngestResumeRefused: a stream that disagrees with what ROOT holds
// of a recording is refused, naming the recording, the stream's messages
// and what differs, and ROOT is left as it was; one that only changes
// what ROOT lacks is resumed and equals an uninterrupted ingest of it; a
// recording held completely is "already held"; one held in part by
// another run is refused naming both runs.
func TestIngestResumeRefused(t *testing.T) {
	cfgs := []sim.Config{
		{Env: "cartpole", NumEnvs: 3, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 10, TimeLimit: 40, Seed: 31, SessionID: "s-resume-a"},
	}
	full := simStream(t, cfgs, nil)
	rec := full.recs[0]
	cut := len(full.frames) / 2
	part := full.prefix(t, cut)
	held := uint64(cut) // one recording: its events are the frames
	nonceA, nonceB := bytes.Repeat([]byte{0xaa}, runid.NonceBytes), bytes.Repeat([]byte{0xbb}, runid.NonceBytes)
	runA, runB := simStream(t, cfgs, nonceA), simStream(t, cfgs, nonceB)
	// The full stream cut inside a message three quarters in: an ingest
	// records what comes before the damage, and a resume does the same.
	damaged := full.prefix(t, len(full.frames))
	{
		var b []byte
		for _, f := range full.frames[:len(full.frames)*3/4] {
			b = append(b, f...)
		}
		b = append(b, full.frames[len(full.frames)*3/4][:5]...)
		if err := os.WriteFile(damaged.file, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	cases := []struct {
		name string
		// first is ingested into ROOT first; then stream.
		first, stream resumeStream
		code          int
		want          []string
		// unchanged: ROOT must stay as first left it; else it must
		// equal an uninterrupted ingest of stream.
		unchanged bool
		// open: the stream does not end the recording, so its sessions
		// row's ended_at is the wall clock of the ingest that closed it
		// (two uninterrupted ingests differ there too): that table is
		// compared by what it proves, its run and content chain.
		open bool
	}{
		{name: "an event inside the held prefix changed", first: part, stream: full.changed(t, full.nth(rec, held/2)), code: 1, unchanged: true,
			want: []string{`refused session "s-resume-a"`, "differs from what was recorded", fmt.Sprintf("the %d events of it", held), fmt.Sprintf("stream messages 0 to %d", held-1), "content chain is"}},
		{name: "the last held event changed", first: part, stream: full.changed(t, full.nth(rec, held)), code: 1, unchanged: true,
			want: []string{"differs from what was recorded", fmt.Sprintf("stream messages 0 to %d", held-1)}},
		{name: "the first event changed", first: part, stream: full.changed(t, 0), code: 1, unchanged: true,
			want: []string{`refused session "s-resume-a"`, "another run", "a run without a nonce (its first event's hash"}},
		{name: "an event after the held prefix changed", first: part, stream: full.changed(t, full.nth(rec, held+3)), code: 0,
			want: []string{"Resumed session \"s-resume-a\"", fmt.Sprintf("held %d events", held)}},
		{name: "the stream unchanged", first: part, stream: full, code: 0,
			want: []string{"Resumed session \"s-resume-a\"", fmt.Sprintf("held %d events of it (an interrupted ingest), the stream added %d events", held, uint64(len(full.frames))-held)}},
		{name: "held completely", first: full, stream: full, code: 1, unchanged: true,
			want: []string{"already holds it", fmt.Sprintf("%d events not recorded again", len(full.frames))}},
		{name: "the stream holds less than ROOT", first: full, stream: part, code: 1, unchanged: true,
			want: []string{`refused session "s-resume-a"`, fmt.Sprintf("holds %d events of it, the stream only %d", len(full.frames), cut)}},
		{name: "another run", first: runA.prefix(t, cut), stream: runB, code: 1, unchanged: true,
			want: []string{"another run", "run " + strings.Repeat("aa", runid.NonceBytes) + " recorded it", "are run " + strings.Repeat("bb", runid.NonceBytes)}},
		{name: "the same run with its nonce", first: runA.prefix(t, cut), stream: runA, code: 0,
			want: []string{"Resumed session \"s-resume-a\""}},
		{name: "a stream damaged after the held part", first: part, stream: damaged, code: 1, open: true,
			want: []string{"Resumed session \"s-resume-a\"", "truncated stream"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			if code, _, errOut := runCmd(t, "ingest", "-o", root, c.first.file); code != 0 {
				t.Fatalf("first ingest: exit %d: %s", code, errOut)
			}
			before := treeBytes(t, root, hive.StateDir)
			code, out, errOut := runCmd(t, "ingest", "-o", root, c.stream.file)
			if code != c.code {
				t.Errorf("exit %d, want %d: %s%s", code, c.code, out, errOut)
			}
			for _, w := range c.want {
				if !strings.Contains(out+errOut, w) {
					t.Errorf("output lacks %q:\n%s%s", w, out, errOut)
				}
			}
			if c.unchanged {
				if !reflect.DeepEqual(treeBytes(t, root, hive.StateDir), before) {
					t.Errorf("ROOT changed")
				}
			} else {
				want := filepath.Join(t.TempDir(), "uninterrupted")
				if code, _, errOut := runCmd(t, "ingest", "-o", want, c.stream.file); code != c.code {
					t.Fatalf("uninterrupted ingest: exit %d: %s", code, errOut)
				}
				if !c.open {
					sameTables(t, root, want)
				} else {
					sameTablesBut(t, root, want, "sessions")
					recs := c.stream.recordings()
					g, w := heldOf(t, root, recs), heldOf(t, want, recs)
					for _, m := range []map[hive.Recording]published.Held{g, w} {
						for r, h := range m {
							h.ChainFile = ""
							m[r] = h
						}
					}
					if !reflect.DeepEqual(g, w) {
						t.Errorf("ROOT holds %+v, an uninterrupted ingest %+v", g, w)
					}
				}
			}
			if _, err := os.Stat(filepath.Join(root, hive.StateDir, recswap.Dir)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the resume's directory is left: %v", err)
			}
		})
	}
}
