package events

import (
	"testing"
	"time"
)

// cpuMeter reports the process CPU time per op as cpu-ns/op next to the
// wall time: on a shared machine waiting for a core inflates ns/op, not
// cpu-ns/op. Start it right before the loop and stop it right after.
type cpuMeter struct {
	b     *testing.B
	start time.Duration
	ok    bool
}

func startCPU(b *testing.B) cpuMeter {
	c, ok := processCPU()
	return cpuMeter{b, c, ok}
}

func (m cpuMeter) stop(ops int) {
	c, ok := processCPU()
	if m.ok && ok && ops > 0 {
		m.b.ReportMetric(float64(c-m.start)/float64(ops), "cpu-ns/op")
	}
}

// BenchmarkCodec compares, in one run, the protobuf-go path each fast path
// replaced (ToProto + deterministic Marshal; proto.Unmarshal + FromProto)
// with AppendMarshal, a long-lived Decoder and Unmarshal (pooled decoder,
// no spec sharing).
func BenchmarkCodec(b *testing.B) {
	for _, bc := range []struct {
		name string
		ev   Event
	}{
		{"cartpole16", cartpoleAction()},
		{"image8", imageObservation()},
	} {
		wire, err := AppendMarshal(nil, bc.ev, benchTime)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name+"/encode-proto", func(b *testing.B) {
			buf := make([]byte, 0, len(wire))
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			cpu, n := startCPU(b), 0
			for ; b.Loop(); n++ {
				m, err := ToProto(bc.ev, benchTime)
				if err != nil {
					b.Fatal(err)
				}
				if buf, err = marshalOpts.MarshalAppend(buf[:0], m); err != nil {
					b.Fatal(err)
				}
			}
			cpu.stop(n)
		})
		b.Run(bc.name+"/encode", func(b *testing.B) {
			buf := make([]byte, 0, len(wire))
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			cpu, n := startCPU(b), 0
			for ; b.Loop(); n++ {
				if buf, err = AppendMarshal(buf[:0], bc.ev, benchTime); err != nil {
					b.Fatal(err)
				}
			}
			cpu.stop(n)
		})
		b.Run(bc.name+"/decode-proto", func(b *testing.B) {
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			cpu, n := startCPU(b), 0
			for ; b.Loop(); n++ {
				if _, _, err := protoUnmarshal(wire); err != nil {
					b.Fatal(err)
				}
			}
			cpu.stop(n)
		})
		b.Run(bc.name+"/decode", func(b *testing.B) {
			var d Decoder
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			cpu, n := startCPU(b), 0
			for ; b.Loop(); n++ {
				if _, _, err := d.Decode(wire); err != nil {
					b.Fatal(err)
				}
			}
			cpu.stop(n)
		})
		b.Run(bc.name+"/unmarshal", func(b *testing.B) {
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			cpu, n := startCPU(b), 0
			for ; b.Loop(); n++ {
				if _, _, err := Unmarshal(wire); err != nil {
					b.Fatal(err)
				}
			}
			cpu.stop(n)
		})
	}
}

// BenchmarkCodecCartpoleStep encodes and decodes one 16-lane cartpole step
// (action, rewards, observation); one op is the three events.
func BenchmarkCodecCartpoleStep(b *testing.B) {
	steps := cartpoleSteps()
	b.Run("encode", func(b *testing.B) {
		buf := make([]byte, 0, 4<<10)
		b.ReportAllocs()
		cpu, n := startCPU(b), 0
		for ; b.Loop(); n++ {
			for _, ev := range steps {
				var err error
				if buf, err = AppendMarshal(buf[:0], ev, benchTime); err != nil {
					b.Fatal(err)
				}
			}
		}
		cpu.stop(n)
	})
	b.Run("decode", func(b *testing.B) {
		wires := make([][]byte, len(steps))
		for i, ev := range steps {
			var err error
			if wires[i], err = AppendMarshal(nil, ev, benchTime); err != nil {
				b.Fatal(err)
			}
		}
		var d Decoder
		b.ReportAllocs()
		cpu, n := startCPU(b), 0
		for ; b.Loop(); n++ {
			for _, w := range wires {
				if _, _, err := d.Decode(w); err != nil {
					b.Fatal(err)
				}
			}
		}
		cpu.stop(n)
	})
}
