package store

import (
	"context"
	"encoding/json"
	"path"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/s3server"
)

// TestRequestAttribution counts one request of each kind of key and
// checks whose it is: the recording the key lies under, or the store's
// own.
func TestRequestAttribution(t *testing.T) {
	other := hive.Recording{SessionID: "s", EnvID: "r 2"}
	long := hive.Recording{SessionID: strings.Repeat("x", 300), EnvID: "r"}
	for _, prefix := range []string{"", "data/run1"} {
		loc := Location{Bucket: testBucket, Prefix: prefix}
		for _, tc := range []struct {
			name string
			op   Op
			key  string
			rec  *hive.Recording // nil: the store's own
		}{
			{"put of a part", OpPut, loc.Key(hive.RecordingPartition("sessions", rec).File(0)), &rec},
			{"piece of an episode part", OpUploadPiece, loc.Key(hive.EpisodePartition("steps", rec, "ep-000007").File(2)), &rec},
			{"listing of a partition", OpList, loc.Key(hive.RecordingPartition("logs", rec).Rel()) + "/", &rec},
			{"listing of an episode partition", OpList, loc.Key(hive.EpisodePartition("steps", other, "e").Rel()) + "/", &other},
			{"uploads of a part", OpListUploads, loc.Key(hive.RecordingPartition("steps", other).File(1)), &other},
			{"claim", OpPut, loc.Key(path.Join(hive.StateDir, hive.ClaimName(rec))), &rec},
			{"claim looked up", OpHead, loc.Key(path.Join(hive.StateDir, hive.ClaimName(other))), &other},
			{"cut id", OpGet, loc.Key(hive.RecordingPartition("episodes", long).File(0)), &long},
			{"layout file", OpPut, loc.Key(path.Join(hive.StateDir, hive.LayoutName)), nil},
			{"layout read", OpGet, loc.Key(path.Join(hive.StateDir, hive.LayoutName)), nil},
			{"listing of ROOT", OpList, strings.TrimPrefix(prefix+"/", "/"), nil},
			{"listing of a table", OpList, loc.Key("steps") + "/", nil},
			{"a key outside the prefix", OpHead, "elsewhere/sessions/session_id=s/env_id=r/part-00000.parquet", nil},
		} {
			t.Run(tc.name+"/prefix="+prefix, func(t *testing.T) {
				if prefix == "" && tc.name == "a key outside the prefix" {
					return // every key is under the empty prefix
				}
				s, err := NewS3(context.Background(), aws.Config{}, loc, S3Options{})
				if err != nil {
					t.Fatal(err)
				}
				s.count(tc.op, tc.key)
				var want Requests
				want.Ops[tc.op] = 1
				if got := s.Requests(); got != want {
					t.Errorf("Requests = %+v, want %+v", got, want)
				}
				for _, r := range []hive.Recording{rec, other, long} {
					w := Requests{}
					if tc.rec != nil && *tc.rec == r {
						w = want
					}
					if got := s.RequestsOf(r); got != w {
						t.Errorf("RequestsOf(%s) = %+v, want %+v", r, got, w)
					}
				}
				w := want
				if tc.rec != nil {
					w = Requests{}
				}
				if got := s.OwnRequests(); got != w {
					t.Errorf("OwnRequests = %+v, want %+v", got, w)
				}
			})
		}
	}
}

func TestRequestsJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Requests
		json string
	}{
		{"none", Requests{}, `{"total":0,"attempts":0}`},
		{"recording", Requests{Ops: [numOps]int64{OpPut: 5, OpList: 3, OpHead: 1}, Attempts: 11}, `{"put":5,"list":3,"head":1,"total":9,"attempts":11}`},
		{"every op", Requests{Ops: [numOps]int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, Attempts: 55},
			`{"put":1,"create_upload":2,"upload_part":3,"complete_upload":4,"abort_upload":5,"list":6,"list_uploads":7,"head":8,"get":9,"delete":10,"total":55,"attempts":55}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.r)
			if err != nil || string(b) != tc.json {
				t.Fatalf("Marshal = %s, %v; want %s", b, err, tc.json)
			}
			var back Requests
			if err := json.Unmarshal(b, &back); err != nil || back != tc.r {
				t.Errorf("Unmarshal(%s) = %+v, %v; want %+v", b, back, err, tc.r)
			}
		})
	}
	var r Requests
	if err := json.Unmarshal([]byte(`{"put":2,"rename":4,"total":6,"attempts":6}`), &r); err != nil || r.Ops[OpPut] != 2 || r.Total() != 2 || r.Attempts != 6 {
		t.Errorf("an op this version does not know: %+v, %v; want it skipped", r, err)
	}
	for _, bad := range []string{`{"put":-1}`, `{"put":1.5}`, `["put"]`, `{"put":"1"}`, `{`} {
		if err := json.Unmarshal([]byte(bad), &r); err == nil {
			t.Errorf("Unmarshal(%s) = %+v, want an error", bad, r)
		}
	}
}

// TestS3RequestsAdd sends requests of every kind for two recordings and
// the store itself to a real server, concurrently: for every op and for
// the HTTP attempts, the recordings' counts and the store's own add up to
// Requests, and a recording's are its requests alone.
func TestS3RequestsAdd(t *testing.T) {
	srv := s3server.Start(t)
	srv.Bucket(t, testBucket)
	s := newS3(t, srv, "requests")
	other := hive.Recording{SessionID: "s", EnvID: "r2"}
	if err := s.CreateState(hive.LayoutName, hive.LayoutFile(hive.LayoutEpisode)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i, r := range []hive.Recording{rec, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := Claim(s.opts.FS, t.TempDir(), s, r, false); err != nil {
				t.Error(err)
			}
			small := writePart(t, s, hive.EpisodePartition("steps", r, "ep-1"), -1, payload(1000, uint64(i)))
			big := writePart(t, s, hive.RecordingPartition("episodes", r), -1, payload(MinPartSize+10, uint64(i)))
			if err := commit(s, []Part{small, big}); err != nil {
				t.Error(err)
			}
			if _, err := s.Parts(hive.RecordingPartition("episodes", r).Rel()); err != nil {
				t.Error(err)
			}
			if _, err := s.Uploads(big.Rel()); err != nil {
				t.Error(err)
			}
			o, err := s.Open(small.Rel(), -1)
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := o.ReadAt(make([]byte, 10), 0); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if _, err := s.List(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadState(hive.LayoutName); err != nil {
		t.Fatal(err)
	}
	a, b, own := s.RequestsOf(rec), s.RequestsOf(other), s.OwnRequests()
	if sum := a.Add(b).Add(own); sum != s.Requests() {
		t.Errorf("the recordings' requests %+v and %+v and the store's own %+v add up to %+v, not Requests %+v", a, b, own, sum, s.Requests())
	}
	// Each recording: a claim, a listing for its steps part (Next), one
	// put, a listing for its episodes part, a multipart upload of 3
	// requests, a listing (Parts), a listing of uploads, a head and a get.
	want := Requests{Ops: [numOps]int64{OpPut: 2, OpList: 3, OpCreateUpload: 1, OpUploadPiece: 2, OpComplete: 1, OpListUploads: 1, OpHead: 1, OpGet: 1}, Attempts: 12}
	for _, r := range []hive.Recording{rec, other} {
		if got := s.RequestsOf(r); got != want {
			t.Errorf("RequestsOf(%s) = %+v, want %+v", r, got, want)
		}
	}
	// The store's own: the layout file's put, a listing of ROOT, a read.
	if want := (Requests{Ops: [numOps]int64{OpPut: 1, OpList: 1, OpGet: 1}, Attempts: 3}); own != want {
		t.Errorf("OwnRequests = %+v, want %+v", own, want)
	}
}

func BenchmarkCount(b *testing.B) {
	s, err := NewS3(context.Background(), aws.Config{}, Location{Bucket: testBucket, Prefix: "data"}, S3Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, key string }{
		{"recording", s.loc.Key(hive.EpisodePartition("steps", rec, "ep-000123").File(0))},
		{"own", s.loc.Key(path.Join(hive.StateDir, hive.LayoutName))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.count(OpPut, bc.key)
			}
		})
	}
}

func TestRequestsByOp(t *testing.T) {
	r := Requests{Ops: [numOps]int64{OpPut: 4, OpGet: 2}, Attempts: 9}
	m := r.ByOp()
	if len(m) != int(numOps) || m["put"] != 4 || m["get"] != 2 || m["upload_part"] != 0 {
		t.Errorf("ByOp = %v, want every op by name, put 4 and get 2", m)
	}
	if _, ok := m["upload_part"]; !ok {
		t.Error("ByOp leaves out an op not sent; metrics want every label value")
	}
}
