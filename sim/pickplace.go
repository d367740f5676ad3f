package sim

import (
	"math"
	"math/rand/v2"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

// Pick-place scene constants.
const (
	ppSize        = 84 // image side, pixels
	ppImageBytes  = ppSize * ppSize * 3
	ppStateDim    = 7
	ppActionDim   = 7
	ppMove        = 0.05 // metres per unit action per step
	ppGraspXY     = 0.05
	ppGraspZ      = 0.05
	ppLiftZ       = 0.15
	ppMaxZ        = 0.3
	ppTimeLimit   = 60
	ppSlip        = 0.03 // chance per step that a held block slips
	ppSlippery    = 0.3  // share of episodes whose block is slippery
	ppSlipHard    = 0.45 // slip chance of a slippery block
	ppBlockPx     = 10
	ppPolicyNoise = 0.35
)

var ppColors = []struct {
	name    string
	r, g, b byte
}{
	{"red", 200, 30, 30}, {"green", 30, 170, 60}, {"blue", 40, 70, 210}, {"yellow", 220, 200, 40},
}

// pickPlace is a tabletop pick task seen by a top-down camera: observation
// Dict{image: Box(84,84,3) uint8, state: Box(7) float32 [gripper xyz, block
// xyz, gripper closed], instruction: Text}, action Box(7) float32 in [-1, 1]
// [dx, dy, dz, three unused rotations, grip (> 0 closes)]. Reward 1 on the
// step the block is lifted above 15 cm (terminated); the env truncates
// after 60 steps. final_info carries is_success. The image is a smooth
// scene (tinted gradient, block, gripper and its shadow), so it compresses
// like a camera frame. The scripted policy reaches, grasps and lifts with
// noise; a held block sometimes slips (often, in a share of episodes), so
// some episodes fail.
type pickPlace struct {
	n         int
	gripper   [][3]float64
	block     [][3]float64
	closed    []bool
	holding   []bool
	success   []bool
	slip      []float64
	t         []int
	color     []int
	instr     []string
	bg        []byte // per-lane background, n × ppImageBytes
	image     []byte
	state     []byte
	text      []byte
	action    []byte
	obsSlabs  [][]byte
	actSlabs  [][]byte
	envRNG    *rand.Rand
	policyRNG *rand.Rand
	obsSpec   *spacesv1.SpaceSpec
	actSpec   *spacesv1.SpaceSpec
}

func newPickPlace(n int, envRNG, policyRNG *rand.Rand) env {
	p := &pickPlace{
		n:         n,
		gripper:   make([][3]float64, n),
		block:     make([][3]float64, n),
		closed:    make([]bool, n),
		holding:   make([]bool, n),
		success:   make([]bool, n),
		slip:      make([]float64, n),
		t:         make([]int, n),
		color:     make([]int, n),
		instr:     make([]string, n),
		bg:        make([]byte, n*ppImageBytes),
		image:     make([]byte, n*ppImageBytes),
		state:     make([]byte, n*ppStateDim*4),
		action:    make([]byte, n*ppActionDim*4),
		envRNG:    envRNG,
		policyRNG: policyRNG,
		obsSpec: dictSpec([]string{"image", "state", "instruction"},
			boxUniform(spacesv1.DataType_DATA_TYPE_UINT8, []byte{0}, []byte{255}, ppSize, ppSize, 3),
			boxSpec(spacesv1.DataType_DATA_TYPE_FLOAT32, ppStateDim),
			textSpec(1, 64)),
		actSpec: boxUniform(spacesv1.DataType_DATA_TYPE_FLOAT32, f32s(-1), f32s(1), ppActionDim),
	}
	p.obsSlabs = [][]byte{p.image, p.state, nil}
	p.actSlabs = [][]byte{p.action}
	for i := range n {
		p.reset(i)
	}
	return p
}

func (p *pickPlace) spaces() (obs, act *spacesv1.SpaceSpec) { return p.obsSpec, p.actSpec }

func (p *pickPlace) reset(lane int) {
	r := p.envRNG
	p.gripper[lane] = [3]float64{0.2 + 0.6*r.Float64(), 0.2 + 0.6*r.Float64(), 0.2 + 0.1*r.Float64()}
	p.block[lane] = [3]float64{0.15 + 0.7*r.Float64(), 0.15 + 0.7*r.Float64(), 0}
	p.closed[lane], p.holding[lane], p.success[lane], p.t[lane] = false, false, false, 0
	p.color[lane] = r.IntN(len(ppColors))
	p.slip[lane] = ppSlip
	if r.Float64() < ppSlippery {
		p.slip[lane] = ppSlipHard
	}
	p.instr[lane] = "pick up the " + ppColors[p.color[lane]].name + " block"
	// Background: a tinted diagonal gradient with soft vignetting.
	tint := [3]float64{0.8 + 0.4*r.Float64(), 0.8 + 0.4*r.Float64(), 0.8 + 0.4*r.Float64()}
	bg := p.bg[lane*ppImageBytes : (lane+1)*ppImageBytes]
	for y := range ppSize {
		for x := range ppSize {
			g := 90 + 60*float64(x+y)/float64(2*ppSize)
			dx, dy := float64(x)-ppSize/2, float64(y)-ppSize/2
			g -= 0.01 * (dx*dx + dy*dy) / 4
			o := (y*ppSize + x) * 3
			for c := range 3 {
				bg[o+c] = clampByte(g * tint[c])
			}
		}
	}
}

func clampByte(v float64) byte {
	if v <= 0 {
		return 0
	}
	if v >= 255 {
		return 255
	}
	return byte(v)
}

func (p *pickPlace) step(lane int, action [][]byte) (float64, bool, bool) {
	a := action[0][lane*ppActionDim*4:]
	g := &p.gripper[lane]
	for k := range 3 {
		d := float64(max(-1, min(1, getF32(a, 4*k))))
		g[k] = max(0, min(1, g[k]+d*ppMove))
	}
	g[2] = min(g[2], ppMaxZ)
	close := getF32(a, 24) > 0
	b := &p.block[lane]
	switch {
	case close && !p.closed[lane]:
		dx, dy := g[0]-b[0], g[1]-b[1]
		p.holding[lane] = math.Hypot(dx, dy) < ppGraspXY && g[2]-b[2] < ppGraspZ
	case !close:
		p.holding[lane] = false
	}
	p.closed[lane] = close
	if p.holding[lane] && p.envRNG.Float64() < p.slip[lane] {
		p.holding[lane] = false
	}
	if p.holding[lane] {
		*b = *g
	} else {
		b[2] = 0
	}
	p.t[lane]++
	if p.holding[lane] && b[2] > ppLiftZ {
		p.success[lane] = true
		return 1, true, false
	}
	return 0, false, p.t[lane] >= ppTimeLimit
}

func (p *pickPlace) observe() [][]byte {
	for i := range p.n {
		p.observeOne(i)
	}
	p.text = appendTextSlab(p.text[:0], p.instr)
	p.obsSlabs[2] = p.text
	return p.obsSlabs
}

// observeLane is observe for lane alone (a lane-served env's group): the
// other lanes' parts of the slabs are left as they were.
func (p *pickPlace) observeLane(lane int) [][]byte {
	p.observeOne(lane)
	p.text = appendTextSlab(p.text[:0], p.instr)
	p.obsSlabs[2] = p.text
	return p.obsSlabs
}

// observeOne renders lane's frame and writes its state.
func (p *pickPlace) observeOne(i int) {
	p.render(i)
	st := p.state[i*ppStateDim*4:]
	for k := range 3 {
		putF32(st, 4*k, float32(p.gripper[i][k]))
		putF32(st, 12+4*k, float32(p.block[i][k]))
	}
	c := float32(0)
	if p.closed[i] {
		c = 1
	}
	putF32(st, 24, c)
}

// render draws lane's frame: the background, the block's shadow and the
// block (larger when lifted), and the gripper as a square outline whose
// size follows its height.
func (p *pickPlace) render(lane int) {
	img := p.image[lane*ppImageBytes : (lane+1)*ppImageBytes]
	copy(img, p.bg[lane*ppImageBytes:(lane+1)*ppImageBytes])
	b, g := p.block[lane], p.gripper[lane]
	bx, by := int(b[0]*(ppSize-1)), int(b[1]*(ppSize-1))
	half := ppBlockPx/2 + int(b[2]*10)
	fillRect(img, bx-half+2, by-half+2, bx+half+2, by+half+2, 40, 40, 40) // shadow
	col := ppColors[p.color[lane]]
	fillRect(img, bx-half, by-half, bx+half, by+half, col.r, col.g, col.b)
	gx, gy := int(g[0]*(ppSize-1)), int(g[1]*(ppSize-1))
	gh := 4 + int(g[2]*20)
	shade := byte(230)
	if p.closed[lane] {
		shade = 120
	}
	fillRect(img, gx-gh, gy-gh, gx+gh, gy-gh+2, shade, shade, shade)
	fillRect(img, gx-gh, gy+gh-2, gx+gh, gy+gh, shade, shade, shade)
	fillRect(img, gx-gh, gy-gh, gx-gh+2, gy+gh, shade, shade, shade)
	fillRect(img, gx+gh-2, gy-gh, gx+gh, gy+gh, shade, shade, shade)
}

// fillRect fills [x0, x1) × [y0, y1), clipped to the frame.
func fillRect(img []byte, x0, y0, x1, y1 int, r, g, b byte) {
	x0, y0 = max(x0, 0), max(y0, 0)
	x1, y1 = min(x1, ppSize), min(y1, ppSize)
	for y := y0; y < y1; y++ {
		for x := x0; x < x1; x++ {
			o := (y*ppSize + x) * 3
			img[o], img[o+1], img[o+2] = r, g, b
		}
	}
}

func (p *pickPlace) act() [][]byte {
	r := p.policyRNG
	for i := range p.n {
		g, b := p.gripper[i], p.block[i]
		var v [ppActionDim]float64
		dx, dy := b[0]-g[0], b[1]-g[1]
		switch {
		case p.holding[i]:
			v[2], v[6] = 1, 1 // lift
		case math.Hypot(dx, dy) > ppGraspXY/2:
			v[0], v[1], v[6] = dx*20, dy*20, -1 // reach, open
		case g[2]-b[2] > ppGraspZ/2:
			v[2], v[6] = -1, -1 // descend
		default:
			v[6] = 1 // grasp
		}
		a := p.action[i*ppActionDim*4:]
		for k := range ppActionDim {
			x := v[k] + r.NormFloat64()*ppPolicyNoise
			if k == 6 {
				x = v[k] // keep the grip command clean
			}
			putF32(a, 4*k, float32(max(-1, min(1, x))))
		}
	}
	return p.actSlabs
}

func (p *pickPlace) finalInfo(lane int) *spacesv1.MetaMap {
	return &spacesv1.MetaMap{Entries: map[string]*spacesv1.MetaValue{
		"is_success": {Kind: &spacesv1.MetaValue_Bool{Bool: p.success[lane]}},
	}}
}
