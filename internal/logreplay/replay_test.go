package logreplay

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/logrec"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/internal/wal"
)

// TestEvents checks the replay stages end to end on a log of more
// records than a batch holds, with markers, an undecodable event record
// and large records between them: every decodable event is applied once,
// in log order, with its position; the count includes the undecodable one.
func TestEvents(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n       int // event records
		bigEach int // every bigEach-th event carries a 300 KiB message (0: none)
		bad     int // index of the undecodable event record (-1: none)
	}{
		{"one batch", 10, 0, -1},
		{"many batches", 3*replayBatchRecords + 7, 0, 100},
		{"batches cut by bytes", 40, 3, 5},
		{"empty log", 0, 0, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := vfs.NewMem()
			dir := "root/_rlrec/log"
			l, err := wal.Open(fsys, dir, wal.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t0 := time.Unix(1700000000, 0)
			var wantPos []wal.Pos
			var wantMsg []string
			var wantAt []time.Time
			for i := range tc.n {
				if i%10 == 3 {
					if _, err := l.Append(logrec.AppendEpisodeDone(nil, logrec.Marker{Recording: hive.Recording{SessionID: "s"}, Record: fmt.Sprint(i)})); err != nil {
						t.Fatal(err)
					}
				}
				var rec []byte
				msg := fmt.Sprintf("line %d", i)
				if tc.bigEach > 0 && i%tc.bigEach == 0 {
					msg += strings.Repeat("x", 300<<10)
				}
				if i == tc.bad {
					rec = []byte{byte(logrec.TypeEvent), 0xFF, 0xFF, 0xFF}
				} else {
					rec, err = events.AppendMarshal([]byte{byte(logrec.TypeEvent)}, &events.Log{SessionID: "s", Level: events.LogInfo, Message: msg}, t0.Add(time.Duration(i)))
					if err != nil {
						t.Fatal(err)
					}
				}
				pos, err := l.Append(rec)
				if err != nil {
					t.Fatal(err)
				}
				if i != tc.bad {
					wantPos = append(wantPos, pos)
					wantMsg = append(wantMsg, msg)
					wantAt = append(wantAt, t0.Add(time.Duration(i)))
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			var got []Event
			var logged strings.Builder
			n, err := Events(fsys, dir, 0, slog.New(slog.NewTextHandler(&logged, nil)), func(d Event) { got = append(got, d) })
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(tc.n) {
				t.Errorf("counted %d event records, want %d", n, tc.n)
			}
			if len(got) != len(wantPos) {
				t.Fatalf("applied %d events, want %d", len(got), len(wantPos))
			}
			for i, d := range got {
				lg, ok := d.Ev.(*events.Log)
				if !ok || d.Pos != wantPos[i] || lg.Message != wantMsg[i] || !d.At.Equal(wantAt[i]) {
					t.Fatalf("event %d: pos %d (want %d), %T", i, d.Pos, wantPos[i], d.Ev)
				}
			}
			if tc.bad >= 0 && !strings.Contains(logged.String(), "undecodable") {
				t.Errorf("the undecodable record was not reported: %q", logged.String())
			}
		})
	}
}
