package dataset_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go/format"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/roottest"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/sim"
)

// TestSessionStoreRequests reads a sessions file's rlrec.store_requests:
// none in a directory ROOT, the counts when the footer has them, and an
// error naming the file and the key when they do not parse.
func TestSessionStoreRequests(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value string // "": no key
		want  *store.Requests
		err   string
	}{
		{name: "directory ROOT"},
		{name: "counted", value: `{"put":3,"list":9,"total":12,"attempts":13}`,
			want: putsLists(3, 9, 13)},
		{name: "malformed", value: `{"put":"three"}`, err: schema.MetaStoreRequests},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, sums := record(t, sim.Config{Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 2, TimeLimit: 10, Seed: 3})
			rec := recOf(sums[0])
			file := filepath.Join(root, filepath.FromSlash(hive.RecordingPartition(schema.TableSessions, hive.Recording(rec)).File(0)))
			if tc.value != "" {
				roottest.EditFooterFile(t, file, func(md *format.FileMetaData) {
					md.KeyValueMetadata = append(md.KeyValueMetadata, format.KeyValue{Key: schema.MetaStoreRequests, Value: tc.value})
				})
			}
			d, err := dataset.Open(root)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			s, err := d.Session(rec)
			if tc.err != "" {
				var fe *dataset.FileError
				if !errors.As(err, &fe) || fe.Path != file || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Session: %v, want a *FileError of %s naming %s", err, file, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == nil && s.StoreRequests != nil:
				t.Errorf("StoreRequests = %+v, want none", *s.StoreRequests)
			case tc.want != nil && (s.StoreRequests == nil || *s.StoreRequests != *tc.want):
				t.Errorf("StoreRequests = %v, want %+v", s.StoreRequests, *tc.want)
			}
			if len(s.Rows) != 1 {
				t.Errorf("%d rows, want 1", len(s.Rows))
			}
		})
	}
}

// putsLists returns counts of puts and lists, and attempts.
func putsLists(puts, lists, attempts int64) *store.Requests {
	r := &store.Requests{Attempts: attempts}
	r.Ops[store.OpPut], r.Ops[store.OpList] = puts, lists
	return r
}
