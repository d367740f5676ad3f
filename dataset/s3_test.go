package dataset_test

import (
	"reflect"
	"testing"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/s3server"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
)

// TestOpenS3 reads a ROOT from a bucket (its files uploaded as they are
// on disk, under a prefix) and from disk: the same recordings, rows and
// steps, for both layouts.
func TestOpenS3(t *testing.T) {
	srv := s3server.Start(t)
	srv.Bucket(t, "rec")
	srv.SetEnv(t)
	for _, layout := range []hive.Layout{hive.LayoutEpisode, hive.LayoutSession} {
		t.Run(string(layout), func(t *testing.T) {
			root, _ := recordWith(t, []recorder.Option{recorder.WithLayout(layout)},
				sim.Config{Env: "cartpole", NumEnvs: 3, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 5, TimeLimit: 30, Seed: 7},
				sim.Config{Env: "all-leaves", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 3, MaxEpisodeSteps: 9, Seed: 8},
			)
			prefix := "datasets/" + string(layout)
			srv.PutTree(t, root, "rec", prefix, s3server.SkipState)
			local, err := dataset.Open(root)
			if err != nil {
				t.Fatal(err)
			}
			defer local.Close()
			url := "s3://rec/" + prefix
			remote, err := dataset.Open(url)
			if err != nil {
				t.Fatal(err)
			}
			defer remote.Close()
			if !reflect.DeepEqual(remote.Recordings(), local.Recordings()) || len(local.Recordings()) != 2 {
				t.Fatalf("recordings %v, want %v", remote.Recordings(), local.Recordings())
			}
			for _, table := range dataset.Tables {
				rf, lf := remote.Files(table), local.Files(table)
				if len(rf) != len(lf) || len(lf) == 0 {
					t.Fatalf("%s: %d files, want %d", table, len(rf), len(lf))
				}
				for i := range rf {
					if want := url + "/" + lf[i].Rel; rf[i].Path != want || rf[i].Size != lf[i].Size {
						t.Errorf("%s: file %s (%d bytes), want %s (%d)", table, rf[i].Path, rf[i].Size, want, lf[i].Size)
					}
				}
			}
			steps := 0
			for _, rec := range local.Recordings() {
				rs, err := remote.Session(rec)
				if err != nil {
					t.Fatal(err)
				}
				ls, _ := local.Session(rec)
				if !reflect.DeepEqual(rs.Rows, ls.Rows) {
					t.Errorf("%v: session rows differ", rec)
				}
				reps, err := remote.Episodes(rec)
				if err != nil {
					t.Fatal(err)
				}
				leps, _ := local.Episodes(rec)
				if len(reps) != len(leps) {
					t.Fatalf("%v: %d episodes, want %d", rec, len(reps), len(leps))
				}
				for i := range reps {
					if !reflect.DeepEqual(reps[i].Row, leps[i].Row) {
						t.Errorf("%v: episode %s differs", rec, leps[i].EpisodeRecordID)
					}
					rst, err := remote.Steps(rec, leps[i].EpisodeRecordID)
					if err != nil {
						t.Fatal(err)
					}
					lst, err := local.Steps(rec, leps[i].EpisodeRecordID)
					if err != nil {
						t.Fatal(err)
					}
					for lst.Next() {
						if !rst.Next() {
							t.Fatalf("%v %s: the bucket's steps end early: %v", rec, leps[i].EpisodeRecordID, rst.Err())
						}
						if !reflect.DeepEqual(rst.Step(), lst.Step()) {
							t.Fatalf("%v %s: step %d differs", rec, leps[i].EpisodeRecordID, lst.Step().Step)
						}
						steps++
					}
					if rst.Next() || rst.Err() != nil || lst.Err() != nil {
						t.Fatalf("%v %s: %v, %v", rec, leps[i].EpisodeRecordID, rst.Err(), lst.Err())
					}
					rst.Close()
					lst.Close()
				}
			}
			if steps == 0 {
				t.Fatal("no steps compared")
			}
		})
	}
}
