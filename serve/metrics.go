package serve

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/rlrec/rlrec/ingest/ingestv1"
)

// metrics are the server's counters, exposed by Metrics in the
// Prometheus text format. Metric names are part of the interface
// dashboards use: do not change them.
type metrics struct {
	streams     atomic.Int64
	batches     atomic.Int64
	events      atomic.Int64
	bytes       atomic.Int64
	unacked     atomic.Int64
	duplicates  atomic.Int64
	gaps        atomic.Int64
	refusedRuns atomic.Int64
	// contentMismatch counts events refused for content that differs
	// from the event their number was given to; unverified the resends
	// dropped whose content could not be checked (runid.Window).
	contentMismatch atomic.Int64
	unverified      atomic.Int64
	unauthenticated atomic.Int64
	// failedRecordings counts the recordings whose files failed.
	failedRecordings atomic.Int64
	refused          [5]atomic.Int64 // by ingestv1.RefusalReason
	flush            histogram
}

func (m *metrics) init() {
	m.flush.bounds = []float64{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5}
	m.flush.counts = make([]uint64, len(m.flush.bounds)+1)
}

// histogram is a Prometheus histogram of seconds.
type histogram struct {
	mu     sync.Mutex
	bounds []float64
	counts []uint64 // per bucket, the last one +Inf; not cumulative
	sum    float64
	n      uint64
}

func (h *histogram) observe(v float64) {
	h.mu.Lock()
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.counts[i]++
	h.sum += v
	h.n++
	h.mu.Unlock()
}

func (h *histogram) write(w io.Writer, name, help string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	var cum uint64
	for i, b := range h.bounds {
		cum += h.counts[i]
		fmt.Fprintf(w, "%s_bucket{le=\"%s\"} %d\n", name, strconv.FormatFloat(b, 'g', -1, 64), cum)
	}
	cum += h.counts[len(h.bounds)]
	fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n%s_sum %s\n%s_count %d\n", name, cum, name, formatFloat(h.sum), name, h.n)
}

func formatFloat(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Metrics returns an http.Handler serving the server's and its recorder's
// metrics in the Prometheus text exposition format (version 0.0.4).
func (s *Server) Metrics() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		s.WriteMetrics(w)
	})
}

// WriteMetrics writes the metrics in the Prometheus text format to w.
func (s *Server) WriteMetrics(w io.Writer) {
	m := &s.m
	st := s.rec.Stats()
	one := func(name, typ, help string, v int64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %d\n", name, help, name, typ, name, v)
	}
	one("rlrec_serve_streams", "gauge", "Record streams open.", m.streams.Load())
	one("rlrec_serve_batches_total", "counter", "Batches received and handed to the recorder.", m.batches.Load())
	one("rlrec_serve_events_total", "counter", "Events handed to the recorder.", m.events.Load())
	one("rlrec_serve_received_bytes_total", "counter", "Bytes of event messages received.", m.bytes.Load())
	one("rlrec_serve_queue_bytes", "gauge", "Bytes of event messages received and not yet acknowledged durable.", m.unacked.Load())
	one("rlrec_serve_duplicate_events_total", "counter", "Resent events dropped because the server had them.", m.duplicates.Load())
	one("rlrec_serve_sequence_gaps_total", "counter", "Streams refused for an event whose sequence skipped numbers of its recording.", m.gaps.Load())
	one("rlrec_serve_refused_runs_total", "counter", "Runs refused on a stream because another run (another run nonce, or other content under its sequence numbers) is recording the same ids.", m.refusedRuns.Load())
	one("rlrec_serve_content_mismatches_total", "counter", "Events refused because their content differs from the event their sequence number was given to.", m.contentMismatch.Load())
	one("rlrec_serve_unverified_resends_total", "counter", "Resent events dropped whose content could not be checked (older than the kept hashes).", m.unverified.Load())
	one("rlrec_serve_failed_recordings", "gauge", "Recordings whose files could not be written: their events are in the log, for the next recovery.", m.failedRecordings.Load())
	one("rlrec_serve_unauthenticated_total", "counter", "Calls refused for a missing or wrong token.", m.unauthenticated.Load())
	fmt.Fprintf(w, "# HELP rlrec_serve_refused_events_total Events not recorded, by reason.\n# TYPE rlrec_serve_refused_events_total counter\n")
	for r := ingestv1.RefusalReason_REFUSAL_REASON_MALFORMED; int(r) < len(m.refused); r++ {
		fmt.Fprintf(w, "rlrec_serve_refused_events_total{reason=%q} %d\n", refusalLabel(r), m.refused[r].Load())
	}
	m.flush.write(w, "rlrec_serve_flush_seconds", "Time for the recorder to make handed-over events durable (its queue, then the log fsync), per flush.")
	one("rlrec_recorder_episodes_written_total", "counter", "Episodes whose files are durable.", st.EpisodesWritten)
	one("rlrec_recorder_problems_total", "counter", "Input problems counted in recordings.", st.Problems)
	failed := int64(0)
	if st.Failed || s.Err() != nil {
		failed = 1
	}
	one("rlrec_recorder_failed", "gauge", "1 once a write or sync error stopped the recorder.", failed)
	if st.StoreRequests != nil {
		// A ROOT in object storage.
		ops := make([]string, 0, len(st.StoreRequests))
		var total int64
		for op, n := range st.StoreRequests {
			ops = append(ops, op)
			total += n
		}
		slices.Sort(ops)
		fmt.Fprintf(w, "# HELP rlrec_store_requests_total Requests sent to the object store, by kind, each once however often it was retried.\n# TYPE rlrec_store_requests_total counter\n")
		for _, op := range ops {
			fmt.Fprintf(w, "rlrec_store_requests_total{op=%q} %d\n", op, st.StoreRequests[op])
		}
		one("rlrec_store_http_attempts_total", "counter", "HTTP requests sent to the object store, retries included.", st.StoreAttempts)
		perEpisode := 0.0
		if st.EpisodesWritten > 0 {
			perEpisode = float64(total) / float64(st.EpisodesWritten)
		}
		fmt.Fprintf(w, "# HELP rlrec_store_requests_per_episode Requests sent to the object store per episode written, since the server started.\n# TYPE rlrec_store_requests_per_episode gauge\nrlrec_store_requests_per_episode %g\n", perEpisode)
		perRecording := 0.0
		if st.Recordings > 0 {
			perRecording = float64(total) / float64(st.Recordings)
		}
		fmt.Fprintf(w, "# HELP rlrec_store_requests_per_recording Requests sent to the object store per recording started, since the server started.\n# TYPE rlrec_store_requests_per_recording gauge\nrlrec_store_requests_per_recording %g\n", perRecording)
	}
}

func refusalLabel(r ingestv1.RefusalReason) string {
	switch r {
	case ingestv1.RefusalReason_REFUSAL_REASON_MALFORMED:
		return "malformed"
	case ingestv1.RefusalReason_REFUSAL_REASON_INVALID_EVENT:
		return "invalid_event"
	case ingestv1.RefusalReason_REFUSAL_REASON_NO_SEQUENCE:
		return "no_sequence"
	case ingestv1.RefusalReason_REFUSAL_REASON_RECORDER:
		return "recorder"
	}
	return "unspecified"
}
