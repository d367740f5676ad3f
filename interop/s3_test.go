package interop

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/s3server"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/sim"
)

// fixtureStream is the fixture's sessions as one event stream, each event
// with the time of its simulated clock, as rlrec ingest reads it.
func fixtureStream(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	h := sim.NewStreamHooks(events.NewStreamWriter(&b))
	for _, cfg := range fixtureConfigs() {
		if _, err := sim.Run(context.Background(), h, cfg); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// ingest records stream into root, as rlrec ingest does, and returns the
// recordings it holds.
func ingest(t *testing.T, root string, stream []byte, opts ...recorder.Option) map[hive.Recording]bool {
	t.Helper()
	r, err := recorder.Open(root, opts...)
	if err != nil {
		t.Fatal(err)
	}
	recs := map[hive.Recording]bool{}
	sr := events.NewStreamReader(bytes.NewReader(stream), events.DefaultMaxMessageBytes)
	for sr.Next() {
		sid, route := sr.Event().Header()
		recs[hive.Recording{SessionID: sid, EnvID: route.EnvID}] = true
		if err := r.RecordAt(context.Background(), sr.Event(), sr.Time()); err != nil {
			t.Fatal(err)
		}
	}
	if err := sr.Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestS3RoundTripDuckDB ingests one stream (the fixture's sessions) into
// a directory and into a versitygw bucket prefix, in both layouts, and
// checks with DuckDB over versitygw's own directory (it keeps each object
// as a plain file under its key) that every table equals the
// directory's, EXCEPT ALL both ways: episodes, sessions, logs and
// telemetry whole, and the steps of each recording. Both ROOTs verify
// clean.
func TestS3RoundTripDuckDB(t *testing.T) {
	srv := s3server.Start(t)
	bucketDir := srv.Bucket(t, "rec")
	stream := fixtureStream(t)
	cfg := aws.Config{
		Region:       s3server.Region,
		Credentials:  credentials.NewStaticCredentialsProvider(s3server.AccessKey, s3server.SecretKey, ""),
		BaseEndpoint: aws.String(srv.Endpoint()),
	}
	db := openDuck(t)
	forEachLayout(t, func(t *testing.T, l hive.Layout) {
		local := filepath.Join(t.TempDir(), "root")
		recs := ingest(t, local, stream, recorder.WithLayout(l))
		prefix := "roundtrip-" + string(l)
		st, err := store.NewS3(context.Background(), cfg, store.Location{Bucket: "rec", Prefix: prefix},
			store.S3Options{SpoolDir: t.TempDir(), MaxBackoff: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ingest(t, "s3://rec/"+prefix, stream, recorder.WithLayout(l), recorder.WithStore(st, filepath.Join(t.TempDir(), "log")))
		inBucket := filepath.Join(bucketDir, prefix)
		mustVerify(t, local)
		mustVerify(t, inBucket)
		rows := map[string]int64{}
		for _, table := range []string{schema.TableEpisodes, schema.TableSessions, schema.TableLogs, schema.TableTelemetry} {
			rows[table] = exceptBoth(t, db, "bucket "+table,
				scan(tableGlob(local, table), "union_by_name=true"), scan(tableGlob(inBucket, table), "union_by_name=true"))
		}
		for _, rec := range sortedRecordings(recs) {
			rows[schema.TableSteps] += exceptBoth(t, db, fmt.Sprintf("bucket steps of %s", rec),
				scan(recordingGlob(local, schema.TableSteps, rec)), scan(recordingGlob(inBucket, schema.TableSteps, rec)))
		}
		for table, n := range rows {
			if n == 0 {
				t.Errorf("no %s rows compared", table)
			}
		}
		req := st.Requests()
		t.Logf("rows compared %v; %d requests to the bucket", rows, req.Total())
	})
}

// TestArrowOverS3 reads part files of a ROOT in a versitygw bucket with
// arrow-go's Parquet reader over the store's Object (an io.ReaderAt of
// ranged GETs): the rows equal those arrow-go reads from the same file
// on disk, and the reads were ranged GETs, not one download per read.
func TestArrowOverS3(t *testing.T) {
	srv := s3server.Start(t)
	srv.Bucket(t, "rec")
	fx := getFixture(t, hive.LayoutSession)
	srv.PutTree(t, fx.root, "rec", "arrow", s3server.SkipState)
	cfg := aws.Config{
		Region:       s3server.Region,
		Credentials:  credentials.NewStaticCredentialsProvider(s3server.AccessKey, s3server.SecretKey, ""),
		BaseEndpoint: aws.String(srv.Endpoint()),
	}
	st, err := store.NewS3(context.Background(), cfg, store.Location{Bucket: "rec", Prefix: "arrow"}, store.S3Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := st.List()
	if err != nil {
		t.Fatal(err)
	}
	read := 0
	var largest hive.File
	var largestGets int64
	for _, f := range l.Files {
		if f.Table != schema.TableSteps && f.Table != schema.TableEpisodes {
			continue
		}
		before := st.Requests().Ops[store.OpGet]
		obj, err := st.Open(f.Rel, f.Size)
		if err != nil {
			t.Fatal(err)
		}
		schemaS3, rows, kv := readArrowFrom(t, st.Path(f.Rel), io.NewSectionReader(obj, 0, obj.Size()))
		obj.Close()
		gets := st.Requests().Ops[store.OpGet] - before
		schemaDisk, want, wantKV := readArrow(t, filepath.Join(fx.root, filepath.FromSlash(f.Rel)))
		if !schemaS3.Equal(schemaDisk) || !reflect.DeepEqual(rows, want) || !reflect.DeepEqual(kv, wantKV) {
			t.Errorf("%s: arrow-go reads otherwise over S3 than from disk", f.Rel)
		}
		if gets == 0 || gets > f.Size/(1<<20)+4 {
			t.Errorf("%s: %d GETs for %d bytes, want ranged reads of about 1 MiB blocks", f.Rel, gets, f.Size)
		}
		read++
		if f.Size > largest.Size {
			largest, largestGets = f, gets
		}
	}
	t.Logf("%d files read; the largest, %s: %d bytes in %d ranged GETs", read, largest.Rel, largest.Size, largestGets)
	if read == 0 {
		t.Fatal("no steps or episodes file read")
	}
}
