package parquetout

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/schema"
)

// FuzzStepsWrite feeds leaves of arbitrary sizes and contents to the steps
// writer: every row is either rejected with an error or written, never a
// panic, and the file holds exactly the accepted rows with their bytes.
func FuzzStepsWrite(f *testing.F) {
	leaves, _ := allKindsLeaves(1)
	var seed []byte
	for _, l := range leaves {
		seed = binary.AppendUvarint(seed, uint64(len(l)))
		seed = append(seed, l...)
	}
	f.Add(seed)
	f.Add([]byte{})
	f.Add([]byte{3, 1, 2, 3, 0xff})
	obs := mustCompile(f, allKindsSpec())
	format, err := NewStepsFormat(obs, nil, Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var ls [][]byte
		for len(data) > 0 && len(ls) < 20 {
			n, k := binary.Uvarint(data)
			if k <= 0 {
				break
			}
			data = data[k:]
			n = min(n, uint64(len(data)))
			ls = append(ls, data[:n])
			data = data[n:]
		}
		mem := vfs.NewMem()
		w, err := createSteps(format, mem, "/d", Metadata{SessionID: "s", EpisodeRecordID: "e"})
		if err != nil {
			t.Fatal(err)
		}
		good, _ := allKindsLeaves(0)
		var want [][]byte
		for _, row := range [][][]byte{ls, good} {
			r := StepRow{EpisodeID: "e", ObservationBlob: bytes.Join(row, []byte{0}), ObservationLeaves: row}
			if err := w.Write(&r); err == nil {
				want = append(want, r.ObservationBlob)
			}
		}
		if len(want) == 0 {
			t.Fatal("the valid row was rejected")
		}
		path, err := w.Commit()
		if err != nil {
			t.Fatal(err)
		}
		rows := readRows(t, openMem(t, mem, path))
		if len(rows) != len(want) {
			t.Fatalf("%d rows, want %d", len(rows), len(want))
		}
		for i, row := range rows {
			if !bytes.Equal(row[schema.StepsColObservationBlob][0].ByteArray(), want[i]) {
				t.Fatalf("row %d blob differs", i)
			}
			if got := len(row); got != schema.NumFixedStepsColumns+len(obs.Leaves)+schema.NumV3StepsColumns {
				t.Fatalf("row %d has %d columns", i, got)
			}
		}
	})
}

func TestStepsNilLayoutIgnoresLeaves(t *testing.T) {
	mem := vfs.NewMem()
	f, err := NewStepsFormat(nil, mustCompile(t, sDiscrete(dtI64, 2)), Config{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := createSteps(f, mem, "/d", Metadata{SessionID: "s", EpisodeRecordID: "e"})
	if err != nil {
		t.Fatal(err)
	}
	r := StepRow{EpisodeID: "e", ObservationLeaves: [][]byte{{1, 2, 3}}, ActionLeaves: [][]byte{i64le(1)}}
	if err := w.Write(&r); err != nil {
		t.Fatalf("leaves of a side without a layout were not ignored: %v", err)
	}
	path, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	pf := openMem(t, mem, path)
	if _, ok := pf.Lookup(schema.MetaObservationSpace); ok {
		t.Error("observation space metadata without a layout")
	}
	rows := readRows(t, pf)
	if len(rows) != 1 || len(rows[0]) != schema.NumFixedStepsColumns+1+schema.NumV3StepsColumns || rows[0][schema.NumFixedStepsColumns][0].Int64() != 1 {
		t.Fatalf("rows %v", rows)
	}
}
