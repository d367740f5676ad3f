package main

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/s3server"
	"github.com/rlrec/rlrec/schema"
)

// TestReadCommandsS3 runs the read commands on the golden ROOT uploaded
// to a bucket: each prints what it prints for the ROOT on disk, with the
// URL where the path was.
func TestReadCommandsS3(t *testing.T) {
	srv := s3server.Start(t)
	srv.Bucket(t, "rec")
	srv.SetEnv(t)
	srv.PutTree(t, goldenRoot, "rec", "golden", s3server.SkipState)
	const url = "s3://rec/golden"
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"inspect", []string{"inspect", "ROOT"}},
		{"inspect json", []string{"inspect", "--json", "ROOT"}},
		{"inspect episode", []string{"inspect", "--session", "golden-cartpole", "--episode", "ep-000002", "ROOT"}},
		{"verify", []string{"verify", "ROOT"}},
		{"stats", []string{"stats", "ROOT"}},
		{"replay", []string{"replay", "--session", "golden-all-leaves", "--episode", "ep-000001", "ROOT"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			with := func(root string) []string {
				out := append([]string(nil), tc.args...)
				for i, a := range out {
					if a == "ROOT" {
						out[i] = root
					}
				}
				return out
			}
			lcode, lout, lerr := runReadCmd(t, with(goldenRoot)...)
			code, out, errOut := runReadCmd(t, with(url)...)
			if code != lcode || lcode != 0 {
				t.Fatalf("exit %d (stderr %q), on disk %d (%q)", code, errOut, lcode, lerr)
			}
			norm := func(s, root string) string {
				// The bucket's inspect names the log directory on this
				// machine (TestRecordCommandsS3 checks it).
				s = logDirLine.ReplaceAllString(s, "")
				s = logDirJSON.ReplaceAllString(s, "")
				return strings.ReplaceAll(s, root, "ROOT")
			}
			if g, w := norm(out, url), norm(lout, goldenRoot); g != w {
				t.Errorf("output differs from the ROOT on disk:\n got %s\nwant %s", g, w)
			}
		})
	}
}

// The log directory in inspect's text and JSON.
var (
	logDirLine = regexp.MustCompile(`(?m)^log and lock on this machine: .*\n`)
	logDirJSON = regexp.MustCompile(`(?m)^  "log_dir": .*\n`)
)

// TestCopyExportFromS3: copy and export read a bucket's ROOT as they read
// the same ROOT on disk: the copies inspect alike, the exports hold the
// same files. Copy writes into a bucket too, splits and all, as it writes
// a directory.
func TestCopyExportFromS3(t *testing.T) {
	srv := s3server.Start(t)
	srv.Bucket(t, "rec")
	srv.SetEnv(t)
	srv.PutTree(t, goldenRoot, "rec", "golden", s3server.SkipState)
	dir := t.TempDir()
	for i, src := range []string{goldenRoot, "s3://rec/golden"} {
		dst := filepath.Join(dir, fmt.Sprint("copy", i))
		if code, _, errOut := runReadCmd(t, "copy", src, dst, "--layout", "session"); code != 0 {
			t.Fatalf("copy %s: exit %d: %s", src, code, errOut)
		}
		out := filepath.Join(dir, fmt.Sprint("export", i))
		if code, _, errOut := runReadCmd(t, "export", src, "--format", "lerobot", "-o", out, "--session", "golden-cartpole"); code != 0 {
			t.Fatalf("export %s: exit %d: %s", src, code, errOut)
		}
	}
	// And into a bucket, with splits: each split a ROOT of its own.
	logDir := filepath.Join(dir, "copy-log")
	if code, _, errOut := runReadCmd(t, "copy", goldenRoot, "s3://rec/copied", "--split", "train=0.5,val=0.5", "--log-dir", logDir); code != 0 {
		t.Fatalf("copy into the bucket: exit %d: %s", code, errOut)
	}
	if code, _, errOut := runReadCmd(t, "copy", goldenRoot, filepath.Join(dir, "copy-local"), "--split", "train=0.5,val=0.5"); code != 0 {
		t.Fatalf("copy: exit %d: %s", code, errOut)
	}
	for _, split := range []string{"train", "val"} {
		local := filepath.Join(dir, "copy-local", split)
		url := "s3://rec/copied/" + split
		_, lout, _ := runReadCmd(t, "inspect", local)
		code, bout, errOut := runReadCmd(t, "inspect", "--log-dir", filepath.Join(logDir, split), url)
		// (How episodes rows were batched into files depends on timing.)
		norm := func(s string) string {
			return requestsTable.ReplaceAllString(tableSizes.ReplaceAllString(logDirLine.ReplaceAllString(s, ""), ""), "")
		}
		if code != 0 || norm(bout) != norm(strings.ReplaceAll(lout, local, url)) {
			t.Errorf("the split %s copied into the bucket inspects otherwise (exit %d, %s):\n%s\nwant\n%s", split, code, errOut, bout, lout)
		}
		if code, vout, errOut := runReadCmd(t, "verify", url); code != 0 {
			t.Errorf("verify %s: exit %d: %s%s", url, code, vout, errOut)
		}
	}
	if code, _, errOut := runReadCmd(t, "copy", goldenRoot, "s3://rec/copied/train"); code != 1 || !strings.Contains(errOut, "not empty") {
		t.Errorf("copy into a prefix that holds tables: exit %d: %s", code, errOut)
	}
	_, a, _ := runReadCmd(t, "inspect", filepath.Join(dir, "copy0"))
	_, b, _ := runReadCmd(t, "inspect", filepath.Join(dir, "copy1"))
	if strings.ReplaceAll(a, "copy0", "copyN") != strings.ReplaceAll(b, "copy1", "copyN") || a == "" {
		t.Errorf("the copy from the bucket inspects otherwise:\n%s\nwant\n%s", b, a)
	}
	tree := func(root string) map[string]int64 {
		out := map[string]int64{}
		filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				info, _ := e.Info()
				rel, _ := filepath.Rel(root, p)
				out[rel] = info.Size()
			}
			return nil
		})
		return out
	}
	if a, b := tree(filepath.Join(dir, "export0")), tree(filepath.Join(dir, "export1")); !reflect.DeepEqual(a, b) || len(a) == 0 {
		t.Errorf("the export from the bucket differs:\n%v\nwant\n%v", b, a)
	}
}

// TestRecordCommandsS3: ingest, demo, recover and inspect with an s3://
// ROOT and --log-dir. The same stream ingested into a directory and into
// the bucket gives tables of the same rows, partition by partition
// (versitygw keeps objects as files), in both layouts, and removes the spool files a
// killed recorder left in the log directory; inspect prints what it prints for
// the directory plus the log directory; verify is clean; ingesting it
// again is refused; recover of a closed ROOT has nothing to do, and of a
// missing log directory says where the log is.
func TestRecordCommandsS3(t *testing.T) {
	srv := s3server.Start(t)
	bucketDir := srv.Bucket(t, "rec")
	srv.SetEnv(t)
	dir := t.TempDir()
	stream := filepath.Join(dir, "cartpole.events")
	if code, _, errOut := runReadCmd(t, "simulate", "--env", "cartpole", "--envs", "4", "--episodes", "40", "--reproducible", "-o", stream); code != 0 {
		t.Fatalf("simulate: exit %d: %s", code, errOut)
	}
	for _, layout := range []string{"episode", "session"} {
		t.Run(layout, func(t *testing.T) {
			local := filepath.Join(dir, "local-"+layout)
			url := "s3://rec/ingest-" + layout
			logDir := filepath.Join(dir, "log-"+layout)
			if code, _, errOut := runReadCmd(t, "ingest", "--layout", layout, "-o", local, stream); code != 0 {
				t.Fatalf("ingest into %s: exit %d: %s", local, code, errOut)
			}
			// What a recorder killed while it held parts leaves: removed
			// under the lock.
			stale := filepath.Join(logDir, "spool", ".rlrec-0123456789ab-1.spool")
			if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(stale, []byte("left by a killed recorder"), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := runReadCmd(t, "ingest", "--layout", layout, "-o", url, "--log-dir", logDir, stream)
			if code != 0 {
				t.Fatalf("ingest into %s: exit %d: %s", url, code, errOut)
			}
			if _, err := os.Stat(stale); err == nil {
				t.Errorf("the stale spool file %s is still there", stale)
			}
			if !strings.Contains(out, url) {
				t.Errorf("ingest output does not name %s:\n%s", url, out)
			}
			// The rows, partition by partition: how a recording's episodes
			// rows are batched into files depends on timing (the batch
			// delay), not on where they go.
			want := rowsByPartition(t, local)
			if len(want) == 0 || !reflect.DeepEqual(rowsByPartition(t, filepath.Join(bucketDir, "ingest-"+layout)), want) {
				t.Errorf("the bucket's tables hold other rows than the directory's")
			}
			got := treeBytes(t, filepath.Join(bucketDir, "ingest-"+layout), hive.StateDir)

			_, lout, _ := runReadCmd(t, "inspect", local)
			code, bout, errOut := runReadCmd(t, "inspect", "--log-dir", logDir, url)
			if code != 0 {
				t.Fatalf("inspect: exit %d: %s", code, errOut)
			}
			// The same, and the recording's requests.
			wantOut := strings.Replace(strings.ReplaceAll(lout, local, url), "\n\n", "\nlog and lock on this machine: "+logDir+"\n\n", 1)
			if norm := tableSizes.ReplaceAllString(requestsTable.ReplaceAllString(bout, ""), ""); norm != tableSizes.ReplaceAllString(wantOut, "") {
				t.Errorf("inspect of the bucket:\n%s\nwant\n%s", bout, wantOut)
			}
			if requestsTable.MatchString(lout) {
				t.Errorf("inspect of a directory ROOT shows object store requests:\n%s", lout)
			}
			_, jout, _ := runReadCmd(t, "inspect", "--json", "--log-dir", logDir, url)
			if !strings.Contains(jout, `"log_dir": "`+logDir+`"`) {
				t.Errorf("inspect --json lacks the log directory:\n%.400s", jout)
			}
			checkInspectRequests(t, filepath.Join(bucketDir, "ingest-"+layout), bout, jout)
			if _, ljout, _ := runReadCmd(t, "inspect", "--json", local); strings.Contains(ljout, "store_requests") {
				t.Errorf("inspect --json of a directory ROOT has store_requests:\n%.600s", ljout)
			}
			if code, vout, errOut := runReadCmd(t, "verify", url); code != 0 {
				t.Errorf("verify: exit %d: %s%s", code, vout, errOut)
			}
			code, _, errOut = runReadCmd(t, "ingest", "-o", url, "--log-dir", logDir, stream)
			if code != 1 || !strings.Contains(errOut, "already holds") {
				t.Errorf("ingest again: exit %d, want 1 naming the recordings already held: %s", code, errOut)
			}
			if !reflect.DeepEqual(treeBytes(t, filepath.Join(bucketDir, "ingest-"+layout), hive.StateDir), got) {
				t.Errorf("ingesting again changed the bucket")
			}
			code, out, errOut = runReadCmd(t, "recover", "--log-dir", logDir, url)
			if code != 0 || !strings.Contains(out, "nothing to recover") {
				t.Errorf("recover: exit %d: %s%s", code, out, errOut)
			}
		})
	}
	// Nothing logged there: nothing to recover, exit 0, said so.
	code, out, errOut := runReadCmd(t, "recover", "--log-dir", filepath.Join(dir, "nowhere"), "s3://rec/ingest-episode")
	if code != 0 || !strings.Contains(out, "s3://rec/ingest-episode: no log in "+filepath.Join(dir, "nowhere")+", so nothing to recover here") {
		t.Errorf("recover with a missing log directory: exit %d: %s%s", code, out, errOut)
	}
	if code, _, errOut := runReadCmd(t, "ingest", "-o", filepath.Join(dir, "x"), "--log-dir", dir, stream); code != 2 || !strings.Contains(errOut, "--log-dir is for an s3:// ROOT") {
		t.Errorf("--log-dir with a directory ROOT: exit %d: %s", code, errOut)
	}
	code, out, errOut = runReadCmd(t, "demo", "-o", "s3://rec/demo", "--log-dir", filepath.Join(dir, "demo-log"))
	if code != 0 || !strings.Contains(out, "s3://rec/demo") {
		t.Fatalf("demo: exit %d: %s%s", code, out, errOut)
	}
	if code, vout, errOut := runReadCmd(t, "verify", "s3://rec/demo"); code != 0 {
		t.Errorf("verify the demo: exit %d: %s%s", code, vout, errOut)
	}
}

// tableSizes is the table of files and bytes in inspect's output, which
// depends on how episodes rows were batched into files.
var tableSizes = regexp.MustCompile(`(?s)TABLE +FILES +BYTES\n.*?\n\n`)

// requestsTable is the table of object store requests in inspect's
// output, there for a bucket's recordings only.
var requestsTable = regexp.MustCompile(`\nobject store requests \(.*\n(?:.+\n)*`)

// checkInspectRequests checks inspect's text (out) and JSON (jout) of
// the ROOT that the bucket's directory root holds: each recording's
// store_requests are its sessions file's rlrec.store_requests, per
// episode over its episodes recorded, summed at the top, and printed.
func checkInspectRequests(t *testing.T, root, out, jout string) {
	t.Helper()
	var rep struct {
		StoreRequests           map[string]int64 `json:"store_requests"`
		StoreRequestsPerEpisode float64          `json:"store_requests_per_episode"`
		StoreRequestsRecordings int              `json:"store_requests_recordings"`
		Sessions                []struct {
			SessionID               string           `json:"session_id"`
			EnvID                   string           `json:"env_id"`
			EpisodesRecorded        int64            `json:"episodes_recorded"`
			StoreRequests           map[string]int64 `json:"store_requests"`
			StoreRequestsPerEpisode float64          `json:"store_requests_per_episode"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(jout), &rep); err != nil {
		t.Fatalf("inspect --json: %v", err)
	}
	if len(rep.Sessions) == 0 || rep.StoreRequestsRecordings != len(rep.Sessions) {
		t.Fatalf("inspect --json: %d recordings with requests of %d", rep.StoreRequestsRecordings, len(rep.Sessions))
	}
	sum := map[string]int64{}
	var episodes int64
	for _, s := range rep.Sessions {
		rec := hive.Recording{SessionID: s.SessionID, EnvID: s.EnvID}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(hive.RecordingPartition(schema.TableSessions, rec).File(0))))
		if err != nil {
			t.Fatal(err)
		}
		pf, err := parquet.OpenFile(strings.NewReader(string(b)), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		v, _ := pf.Lookup(schema.MetaStoreRequests)
		var want map[string]int64
		if err := json.Unmarshal([]byte(v), &want); err != nil {
			t.Fatalf("%s: %s %q: %v", rec, schema.MetaStoreRequests, v, err)
		}
		if !reflect.DeepEqual(s.StoreRequests, want) || want["total"] == 0 {
			t.Errorf("%s: inspect --json store_requests %v, its sessions file %v", rec, s.StoreRequests, want)
		}
		if per := float64(want["total"]) / float64(s.EpisodesRecorded); s.StoreRequestsPerEpisode != per {
			t.Errorf("%s: store_requests_per_episode %v, want %v (%d over %d episodes)", rec, s.StoreRequestsPerEpisode, per, want["total"], s.EpisodesRecorded)
		}
		line := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(s.SessionID) + ` +` + regexp.QuoteMeta(s.EnvID) +
			fmt.Sprintf(` +%d +%.2f +%d +put %d, `, want["total"], float64(want["total"])/float64(s.EpisodesRecorded), want["attempts"], want["put"]))
		if !line.MatchString(requestsTable.FindString(out)) {
			t.Errorf("%s: inspect prints no line %s in\n%s", rec, line, out)
		}
		for k, n := range want {
			sum[k] += n
		}
		episodes += s.EpisodesRecorded
	}
	if !reflect.DeepEqual(rep.StoreRequests, sum) {
		t.Errorf("inspect --json store_requests %v, the recordings' sum %v", rep.StoreRequests, sum)
	}
	if per := float64(sum["total"]) / float64(episodes); rep.StoreRequestsPerEpisode != per {
		t.Errorf("store_requests_per_episode %v, want %v", rep.StoreRequestsPerEpisode, per)
	}
	if !regexp.MustCompile(fmt.Sprintf(`(?m)^all +\(\d+ recordings?\) +%d +%.2f `, sum["total"], float64(sum["total"])/float64(episodes))).MatchString(out) {
		t.Errorf("inspect prints no line of all the recordings' %d requests:\n%s", sum["total"], out)
	}
}

// rowsByPartition returns the rows of every part file under root (its
// _rlrec state left out), printed, sorted, by partition directory.
func rowsByPartition(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for rel, b := range treeBytes(t, root, hive.StateDir) {
		pf, err := parquet.OpenFile(strings.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		r := parquet.NewReader(pf)
		rows := make([]parquet.Row, 64)
		for {
			n, err := r.ReadRows(rows)
			for _, row := range rows[:n] {
				out[path.Dir(rel)] = append(out[path.Dir(rel)], fmt.Sprint(row))
			}
			if err != nil {
				break
			}
		}
		r.Close()
	}
	for _, v := range out {
		sort.Strings(v)
	}
	return out
}

// treeBytes returns the files under root by relative path, but those
// under the top directory skip.
func treeBytes(t *testing.T, root, skip string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if strings.HasPrefix(rel, skip+string(filepath.Separator)) {
			return nil
		}
		b, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestServeS3: rlrec serve records what clients send into an s3:// ROOT
// with --log-dir, and its metrics count the object store's requests:
// layout episode, at most 2 per episode; per recording (one here), the
// 100-odd of its episodes and files.
func TestServeS3(t *testing.T) {
	srv := s3server.Start(t)
	bucketDir := srv.Bucket(t, "rec")
	srv.SetEnv(t)
	logDir := filepath.Join(t.TempDir(), "log")
	addr, metricsURL, stop := startServeMetrics(t, "--out", "s3://rec/served", "--log-dir", logDir)
	if code, _, errOut := runCmd(t, "simulate", "--env", "cartpole", "--envs", "4", "--episodes", "100", "--to", addr); code != 0 {
		t.Fatalf("simulate --to: exit %d: %s", code, errOut)
	}
	// The batch delay publishes the episodes file after the recording
	// ended: wait for the state, the recording's sessions file published
	// (its last write, after every episode's) and the metrics showing at
	// least the 100 episodes simulated, bounded by a deadline only as a
	// failure bound.
	metrics := waitMetrics(t, metricsURL, 2*time.Minute, func(m string) bool {
		n, err := strconv.Atoi(metricValue(m, "rlrec_recorder_episodes_written_total"))
		if err != nil || n < 100 {
			return false
		}
		sessions, _ := filepath.Glob(filepath.Join(bucketDir, "served", "sessions", "*", "*", "part-*.parquet"))
		return len(sessions) > 0
	})
	code, errOut := stop()
	if code != 0 {
		t.Fatalf("serve: exit %d: %s", code, errOut)
	}
	for _, want := range []string{`rlrec_store_requests_total{op="put"} `, "rlrec_store_http_attempts_total ", "rlrec_recorder_episodes_written_total 1",
		"rlrec_store_requests_per_recording 1"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q:\n%s", want, metrics)
		}
	}
	m := regexp.MustCompile(`(?m)^rlrec_store_requests_per_episode (\S+)$`).FindStringSubmatch(metrics)
	if m == nil {
		t.Fatalf("no rlrec_store_requests_per_episode:\n%s", metrics)
	}
	per, err := strconv.ParseFloat(m[1], 64)
	if err != nil || per <= 0 || per > 2 {
		t.Errorf("%s requests per episode, want at most 2 (layout episode)", m[1])
	}
	t.Logf("%s requests per episode", m[1])
	if code, out, errOut := runReadCmd(t, "verify", "s3://rec/served"); code != 0 {
		t.Errorf("verify: exit %d: %s%s", code, out, errOut)
	}
}

// metricValue returns the value of the unlabelled metric name in the
// Prometheus text m, "" when m has none.
func metricValue(m, name string) string {
	v := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(m)
	if v == nil {
		return ""
	}
	return v[1]
}

// waitMetrics reads url's metrics until ready accepts them, and fails
// the test with the last ones read when bound passes first.
func waitMetrics(t *testing.T, url string, bound time.Duration, ready func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if ready(string(body)) {
			return string(body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics not in the awaited state after %v:\n%s", bound, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
