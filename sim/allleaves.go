package sim

import (
	"encoding/binary"
	"math"
	"math/rand/v2"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

const (
	alTimeLimit = 12    // env-side truncation
	alEndChance = 0.125 // chance per step that an episode terminates
)

// Which leaves (in pre-order) are Text, in the observation and action.
var (
	alObsText = leafSet(20, 16)
	alActText = leafSet(5, 2)
)

var (
	alLabels  = []string{"héllo", "日本語のテキスト", "ß→∑ ≠ ∞", "🤖 robot", "naïve café", "x"}
	alReplies = []string{"", "ok", "λ", "→ ←", "stop", "çà"}
)

// allLeaves covers every leaf kind and every dtype, for coverage rather
// than realism. Observation: a Dict (declared, unsorted key order) holding a
// scalar bool Box, Tuples of every signed and unsigned integer width, a
// nested Dict of float32/float16/float64 Boxes, Discrete with non-zero
// starts (signed and unsigned), MultiBinary, MultiDiscrete, multi-byte
// UTF-8 Text, a zero-numel Box and a Tuple holding a Dict. Action: a Tuple
// of Discrete, MultiBinary, Text, a float16 Box and MultiDiscrete. Values
// include the integer extremes. Reward depends on the action; episodes end
// at random (terminated) or after 12 steps (truncated by the env).
// final_info holds every MetaValue kind, with success as an integer.
type allLeaves struct {
	n         int
	t         []int
	lastAct   []int64
	obsLanes  [][][]byte
	actLanes  [][][]byte
	obsSlabs  [][]byte
	actSlabs  [][]byte
	envRNG    *rand.Rand
	policyRNG *rand.Rand
	obsSpec   *spacesv1.SpaceSpec
	actSpec   *spacesv1.SpaceSpec
	scores    []float64
}

func newAllLeaves(n int, envRNG, policyRNG *rand.Rand) env {
	const (
		b   = spacesv1.DataType_DATA_TYPE_BOOL
		u8  = spacesv1.DataType_DATA_TYPE_UINT8
		u16 = spacesv1.DataType_DATA_TYPE_UINT16
		u32 = spacesv1.DataType_DATA_TYPE_UINT32
		u64 = spacesv1.DataType_DATA_TYPE_UINT64
		i8  = spacesv1.DataType_DATA_TYPE_INT8
		i16 = spacesv1.DataType_DATA_TYPE_INT16
		i32 = spacesv1.DataType_DATA_TYPE_INT32
		i64 = spacesv1.DataType_DATA_TYPE_INT64
		f16 = spacesv1.DataType_DATA_TYPE_FLOAT16
		f32 = spacesv1.DataType_DATA_TYPE_FLOAT32
		f64 = spacesv1.DataType_DATA_TYPE_FLOAT64
	)
	a := &allLeaves{
		n: n, t: make([]int, n), lastAct: make([]int64, n), scores: make([]float64, n),
		obsLanes: make([][][]byte, n), actLanes: make([][][]byte, n),
		envRNG: envRNG, policyRNG: policyRNG,
		obsSpec: dictSpec(
			[]string{"flag", "ints", "uints", "floats", "choice", "level", "mask", "dice", "label", "empty", "nested"},
			boxSpec(b),
			tupleSpec(boxSpec(i8, 2), boxSpec(i16, 2), boxSpec(i32, 2), boxSpec(i64, 2)),
			tupleSpec(boxSpec(u8, 3), boxSpec(u16, 2), boxSpec(u32, 2), boxSpec(u64, 2)),
			dictSpec([]string{"single", "half", "double"},
				boxUniform(f32, f32s(-1), f32s(1), 3),
				boxSpec(f16, 2, 2),
				boxSpec(f64)),
			discreteSpec(i64, 5, -2),
			discreteSpec(u8, 4, 1),
			multiBinarySpec(i8, 2, 3),
			multiDiscreteSpec(u16, 2, 3, 6),
			textSpec(1, 16),
			boxSpec(f32, 0),
			tupleSpec(dictSpec([]string{"z", "a"}, discreteSpec(i32, 3, 0), boxSpec(f64, 2))),
		),
		actSpec: tupleSpec(
			discreteSpec(i32, 3, 1),
			multiBinarySpec(b, 4),
			textSpec(0, 8),
			boxUniform(f16, []byte{0x00, 0xbc}, []byte{0x00, 0x3c}, 2), // [-1, 1]
			multiDiscreteSpec(i64, 3, 3),
		),
	}
	for i := range n {
		a.reset(i)
	}
	return a
}

func (a *allLeaves) spaces() (obs, act *spacesv1.SpaceSpec) { return a.obsSpec, a.actSpec }

func (a *allLeaves) reset(lane int) {
	a.t[lane], a.lastAct[lane], a.scores[lane] = 0, 0, 0
	a.gen(lane)
}

// gen draws lane's next observation, one leaf at a time in pre-order.
func (a *allLeaves) gen(lane int) {
	r, t := a.envRNG, a.t[lane]
	le := binary.LittleEndian
	var ls [][]byte
	ls = append(ls, []byte{byte(t & 1)})
	ls = append(ls, []byte{byte(int8(math.MinInt8 + t)), byte(int8(r.IntN(256) - 128))})
	ls = append(ls, le.AppendUint16(le.AppendUint16(nil, uint16(int16(-t))), uint16(r.Uint32())))
	ls = append(ls, le.AppendUint32(le.AppendUint32(nil, uint32(int32(math.MaxInt32-t))), r.Uint32()))
	ls = append(ls, le.AppendUint64(le.AppendUint64(nil, uint64(math.MinInt64+int64(t))), r.Uint64()))
	ls = append(ls, []byte{byte(t), 255, byte(r.Uint32())})
	ls = append(ls, le.AppendUint16(le.AppendUint16(nil, math.MaxUint16), uint16(r.Uint32())))
	ls = append(ls, le.AppendUint32(le.AppendUint32(nil, uint32(t)), r.Uint32()))
	ls = append(ls, le.AppendUint64(le.AppendUint64(nil, math.MaxUint64), r.Uint64()))
	ls = append(ls, f32s(float32(r.Float64()*2-1), float32(math.Sin(float64(t))), float32(a.lastAct[lane]-2)))
	var half []byte
	for k := range 4 {
		half = le.AppendUint16(half, float16(float32(k)-1.5+float32(t)*0.25))
	}
	ls = append(ls, half)
	ls = append(ls, le.AppendUint64(nil, math.Float64bits(r.NormFloat64()*1e6)))
	ls = append(ls, le.AppendUint64(nil, uint64(r.Int64N(5)-2)))
	ls = append(ls, []byte{byte(1 + r.IntN(4))})
	mask := make([]byte, 6)
	for k := range mask {
		mask[k] = byte(r.IntN(2))
	}
	ls = append(ls, mask)
	var dice []byte
	for _, nv := range []int{2, 3, 6} {
		dice = le.AppendUint16(dice, uint16(r.IntN(nv)))
	}
	ls = append(ls, dice)
	ls = append(ls, []byte(alLabels[r.IntN(len(alLabels))]))
	ls = append(ls, []byte{})
	ls = append(ls, le.AppendUint32(nil, uint32(t%3)))
	ls = append(ls, le.AppendUint64(le.AppendUint64(nil, math.Float64bits(float64(t)/3)), math.Float64bits(math.Copysign(0, -1))))
	a.obsLanes[lane] = ls
}

func (a *allLeaves) step(lane int, action [][]byte) (float64, bool, bool) {
	d := int64(int32(binary.LittleEndian.Uint32(action[0][lane*4:])))
	a.lastAct[lane] = d
	a.t[lane]++
	reward := float64(d)*0.25 - 0.3
	a.scores[lane] += reward
	a.gen(lane)
	if a.envRNG.Float64() < alEndChance {
		return reward, true, false
	}
	return reward, false, a.t[lane] >= alTimeLimit
}

// observe joins the lanes' leaves into batch slabs.
func (a *allLeaves) observe() [][]byte {
	a.obsSlabs = joinLanes(a.obsSlabs, a.obsLanes, alObsText)
	return a.obsSlabs
}

func (a *allLeaves) act() [][]byte {
	r := a.policyRNG
	le := binary.LittleEndian
	for i := range a.n {
		bits := make([]byte, 4)
		for k := range bits {
			bits[k] = byte(r.IntN(2))
		}
		f := le.AppendUint16(le.AppendUint16(nil, float16(float32(r.Float64()*2-1))), float16(-1))
		md := le.AppendUint64(le.AppendUint64(nil, uint64(r.IntN(3))), uint64(r.IntN(3)))
		a.actLanes[i] = [][]byte{
			le.AppendUint32(nil, uint32(1+r.IntN(3))),
			bits,
			[]byte(alReplies[r.IntN(len(alReplies))]),
			f,
			md,
		}
	}
	a.actSlabs = joinLanes(a.actSlabs, a.actLanes, alActText)
	return a.actSlabs
}

func (a *allLeaves) finalInfo(lane int) *spacesv1.MetaMap {
	success := int64(0)
	if a.scores[lane] > 0 {
		success = 1
	}
	mv := func(v *spacesv1.MetaValue) *spacesv1.MetaValue { return v }
	return &spacesv1.MetaMap{Entries: map[string]*spacesv1.MetaValue{
		"success": mv(&spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Integer{Integer: success}}),
		"score":   mv(&spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Number{Number: a.scores[lane]}}),
		"note":    mv(&spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Text{Text: "fin ✓"}}),
		"raw":     mv(&spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Bytes{Bytes: []byte{0, 1, 0xff}}}),
		"steps": mv(&spacesv1.MetaValue{Kind: &spacesv1.MetaValue_List{List: &spacesv1.MetaList{Items: []*spacesv1.MetaValue{
			{Kind: &spacesv1.MetaValue_Integer{Integer: int64(a.t[lane])}},
			{Kind: &spacesv1.MetaValue_Bool{Bool: a.t[lane] >= alTimeLimit}},
		}}}}),
		"lane": mv(&spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Map{Map: &spacesv1.MetaMap{Entries: map[string]*spacesv1.MetaValue{
			"index": {Kind: &spacesv1.MetaValue_Integer{Integer: int64(lane)}},
		}}}}),
	}}
}

// leafSet returns n flags with the given leaf indices set.
func leafSet(n int, set ...int) []bool {
	f := make([]bool, n)
	for _, i := range set {
		f[i] = true
	}
	return f
}

// joinLanes builds batch slabs from per-lane leaves ([lane][leaf]), reusing
// dst's buffers: fixed-size leaves concatenate the lanes' bytes, Text
// leaves (isText) get the [u64 count][u64 len x count][bodies] slab.
func joinLanes(dst [][]byte, lanes [][][]byte, isText []bool) [][]byte {
	if len(dst) != len(isText) {
		dst = make([][]byte, len(isText))
	}
	for li, text := range isText {
		slab := dst[li][:0]
		if text {
			slab = binary.LittleEndian.AppendUint64(slab, uint64(len(lanes)))
			for _, lane := range lanes {
				slab = binary.LittleEndian.AppendUint64(slab, uint64(len(lane[li])))
			}
		}
		for _, lane := range lanes {
			slab = append(slab, lane[li]...)
		}
		if slab == nil {
			slab = []byte{}
		}
		dst[li] = slab
	}
	return dst
}
