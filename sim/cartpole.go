package sim

import (
	"encoding/binary"
	"math"
	"math/rand/v2"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

// CartPole-v1 constants (gymnasium classic_control/cartpole.py).
const (
	cpGravity       = 9.8
	cpMassCart      = 1.0
	cpMassPole      = 0.1
	cpTotalMass     = cpMassCart + cpMassPole
	cpLength        = 0.5 // half the pole length
	cpPoleMassLen   = cpMassPole * cpLength
	cpForceMag      = 10.0
	cpTau           = 0.02
	cpThetaLimit    = 12 * 2 * math.Pi / 360
	cpXLimit        = 2.4
	cpObsBytes      = 4 * 4
	cpActionBytes   = 8
	cpResetSpread   = 0.05
	cpPolicyEpsilon = 0.75
)

// cartPole is the classic cart-pole: observation Box(4) float32 with
// elementwise bounds [x, x_dot, theta, theta_dot], action Discrete(2) int64
// (0 pushes left, 1 right), reward 1 per step, terminated when the pole
// leans past 12 degrees or the cart leaves ±2.4. The policy pushes against
// the pole's lean, but acts at random half of the time, so episode lengths
// vary.
type cartPole struct {
	n         int
	state     [][4]float64
	obs       []byte
	action    []byte
	obsSlabs  [][]byte
	actSlabs  [][]byte
	envRNG    *rand.Rand
	policyRNG *rand.Rand
	obsSpec   *spacesv1.SpaceSpec
	actSpec   *spacesv1.SpaceSpec
}

func newCartPole(n int, envRNG, policyRNG *rand.Rand) env {
	inf := float32(math.MaxFloat32)
	hi := []float32{cpXLimit * 2, inf, cpThetaLimit * 2, inf}
	lo := []float32{-hi[0], -inf, -hi[2], -inf}
	c := &cartPole{
		n:         n,
		state:     make([][4]float64, n),
		obs:       make([]byte, n*cpObsBytes),
		action:    make([]byte, n*cpActionBytes),
		envRNG:    envRNG,
		policyRNG: policyRNG,
		obsSpec:   boxElementwise(spacesv1.DataType_DATA_TYPE_FLOAT32, f32s(lo...), f32s(hi...), 4),
		actSpec:   discreteSpec(spacesv1.DataType_DATA_TYPE_INT64, 2, 0),
	}
	c.obsSlabs = [][]byte{c.obs}
	c.actSlabs = [][]byte{c.action}
	for i := range n {
		c.reset(i)
	}
	return c
}

func (c *cartPole) spaces() (obs, act *spacesv1.SpaceSpec) { return c.obsSpec, c.actSpec }

func (c *cartPole) reset(lane int) {
	for k := range 4 {
		c.state[lane][k] = (c.envRNG.Float64()*2 - 1) * cpResetSpread
	}
}

func (c *cartPole) step(lane int, action [][]byte) (float64, bool, bool) {
	a := int64(binary.LittleEndian.Uint64(action[0][lane*cpActionBytes:]))
	force := -cpForceMag
	if a == 1 {
		force = cpForceMag
	}
	s := &c.state[lane]
	x, xDot, theta, thetaDot := s[0], s[1], s[2], s[3]
	cos, sin := math.Cos(theta), math.Sin(theta)
	temp := (force + cpPoleMassLen*thetaDot*thetaDot*sin) / cpTotalMass
	thetaAcc := (cpGravity*sin - cos*temp) / (cpLength * (4.0/3.0 - cpMassPole*cos*cos/cpTotalMass))
	xAcc := temp - cpPoleMassLen*thetaAcc*cos/cpTotalMass
	x += cpTau * xDot
	xDot += cpTau * xAcc
	theta += cpTau * thetaDot
	thetaDot += cpTau * thetaAcc
	*s = [4]float64{x, xDot, theta, thetaDot}
	terminated := x < -cpXLimit || x > cpXLimit || theta < -cpThetaLimit || theta > cpThetaLimit
	return 1, terminated, false
}

func (c *cartPole) observe() [][]byte {
	for i := range c.n {
		for k := range 4 {
			putF32(c.obs, i*cpObsBytes+4*k, float32(c.state[i][k]))
		}
	}
	return c.obsSlabs
}

func (c *cartPole) act() [][]byte {
	for i := range c.n {
		var a uint64
		if c.policyRNG.Float64() < cpPolicyEpsilon {
			a = c.policyRNG.Uint64N(2)
		} else if c.state[i][2]+0.5*c.state[i][3] > 0 {
			a = 1
		}
		binary.LittleEndian.PutUint64(c.action[i*cpActionBytes:], a)
	}
	return c.actSlabs
}

func (c *cartPole) finalInfo(int) *spacesv1.MetaMap { return nil }
