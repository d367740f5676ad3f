package events

import "testing"

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
			for b.Loop() {
				m, err := ToProto(bc.ev, benchTime)
				if err != nil {
					b.Fatal(err)
				}
				if buf, err = marshalOpts.MarshalAppend(buf[:0], m); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/encode", func(b *testing.B) {
			buf := make([]byte, 0, len(wire))
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			for b.Loop() {
				if buf, err = AppendMarshal(buf[:0], bc.ev, benchTime); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/decode-proto", func(b *testing.B) {
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := protoUnmarshal(wire); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/decode", func(b *testing.B) {
			var d Decoder
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := d.Decode(wire); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/unmarshal", func(b *testing.B) {
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := Unmarshal(wire); err != nil {
					b.Fatal(err)
				}
			}
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
		for b.Loop() {
			for _, ev := range steps {
				var err error
				if buf, err = AppendMarshal(buf[:0], ev, benchTime); err != nil {
					b.Fatal(err)
				}
			}
		}
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
		for b.Loop() {
			for _, w := range wires {
				if _, _, err := d.Decode(w); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
