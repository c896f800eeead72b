package gen

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/updown/updown/store"
)

const (
	secondsPerDay  = 86_400
	secondsPerYear = 365 * secondsPerDay // crypto trades every day

	// pathEpochDay is 2000-01-01 in days since the Unix epoch: every path
	// starts there, at its model's Price.
	pathEpochDay = 10_957

	// reversionHalfLifeDays is how fast a path's level drifts back towards
	// its model's Price. A month is slow enough to be invisible over the week
	// that dev data spans (the pull over a week is a fraction of a percent of
	// price, against several percent of noise) and fast enough to keep
	// prices near their model in any year.
	reversionHalfLifeDays = 30
)

// pricePath is one coin's price at every instant: a pure function of (Seed,
// coin, time), independent of Config.Now, so that markets of different types
// see the same price at the same instant and a generator with a later Now
// continues the same history instead of inventing a new one.
//
// It is built in two layers. Daily anchors (the log price at each midnight
// UTC) follow an Ornstein-Uhlenbeck chain from pathEpochDay: locally a
// Brownian motion of the model's volatility, globally pinned to its Price.
// Within a day, the log price on a 1-second grid is a Brownian bridge of the
// same volatility between the day's two anchors, drawn from a stream of
// that day alone; prices between grid points are interpolated in log space.
// Locally the whole is a driftless geometric Brownian motion, which is what
// makes price_up = Φ(ln(S_t/S_0)/(σ√(T−t))) the fair probability of Up.
//
// Days are computed on first use and kept; a pricePath is safe for
// concurrent use.
type pricePath struct {
	model CoinModel
	seed  int64

	mu         sync.Mutex
	anchorRand *rand.Rand          // the anchors' stream, where the chain stopped
	anchors    []float64           // anchors[i]: log price at midnight of day pathEpochDay+i
	days       map[int64][]float64 // by Unix day: secondsPerDay+1 log prices, both anchors included
}

func newPricePath(seed int64, model CoinModel) *pricePath {
	return &pricePath{model: model, seed: seed, days: make(map[int64][]float64)}
}

// segment returns the part of the path from from to to (both included),
// computing days as needed. Reading a segment takes no lock, so a market
// fetches its segment once and then prices thousands of snapshots freely.
func (p *pricePath) segment(from, to time.Time) segment {
	first, last := unixDay(from), unixDay(to)
	s := segment{first: first, days: make([][]float64, 0, last-first+1)}
	p.mu.Lock()
	defer p.mu.Unlock()
	for d := first; d <= last; d++ {
		s.days = append(s.days, p.dayLocked(d))
	}
	return s
}

// dayLocked returns the 1-second grid of Unix day d.
func (p *pricePath) dayLocked(d int64) []float64 {
	if g, ok := p.days[d]; ok {
		return g
	}
	x0, x1 := p.anchorLocked(d), p.anchorLocked(d+1)
	r := newRand(p.seed, "path/"+string(p.model.Coin), d)
	step := p.model.Vol / math.Sqrt(secondsPerYear)
	g := make([]float64, secondsPerDay+1)
	for i := 1; i <= secondsPerDay; i++ {
		g[i] = g[i-1] + step*r.NormFloat64()
	}
	// Brownian bridge: remove the free walk's own end point and put the
	// anchors' line in its place.
	end := g[secondsPerDay]
	for i := range g {
		f := float64(i) / secondsPerDay
		g[i] = x0 + f*(x1-x0) + g[i] - f*end
	}
	g[0], g[secondsPerDay] = x0, x1 // exactly, so adjacent days join without a seam
	p.days[d] = g
	return g
}

// anchorLocked returns the log price at midnight UTC starting Unix day d,
// extending the chain as needed. Before the epoch the path sits at its
// model's level.
func (p *pricePath) anchorLocked(d int64) float64 {
	level := math.Log(p.model.Price)
	i := d - pathEpochDay
	if i < 0 {
		return level
	}
	if p.anchorRand == nil {
		// The chain draws from one stream, in order, whatever order days
		// are asked for in.
		p.anchorRand = newRand(p.seed, "path/"+string(p.model.Coin)+"/anchors", 0)
		p.anchors = append(p.anchors, level)
	}
	// Exact discretisation of dX = −κ(X − level)dt + σ dW over one day: the
	// chain's steps have nearly the daily variance of a Brownian motion of
	// volatility σ (damped by a fraction of a percent).
	kappa := math.Ln2 * 365 / reversionHalfLifeDays // per year
	a := math.Exp(-kappa / 365)
	sd := p.model.Vol * math.Sqrt((1-a*a)/(2*kappa))
	for int64(len(p.anchors)) <= i {
		x := p.anchors[len(p.anchors)-1]
		p.anchors = append(p.anchors, level+(x-level)*a+sd*p.anchorRand.NormFloat64())
	}
	return p.anchors[i]
}

// segment is a read-only run of whole days of a pricePath.
type segment struct {
	first int64       // Unix day of days[0]
	days  [][]float64 // consecutive days
}

// at returns the price at t, which must lie within the segment's days.
func (s segment) at(t time.Time) float64 {
	sec := t.Unix()
	d := unixDay(t)
	g := s.days[d-s.first]
	i := sec - d*secondsPerDay
	x := g[i]
	if ns := t.Nanosecond(); ns != 0 {
		x += float64(ns) / 1e9 * (g[i+1] - x)
	}
	return math.Exp(x)
}

// unixDay is the day since the Unix epoch containing t (floor division, so
// that times before 1970 fall on the right day too).
func unixDay(t time.Time) int64 {
	sec := t.Unix()
	d := sec / secondsPerDay
	if sec%secondsPerDay < 0 {
		d--
	}
	return d
}

// CoinPrice returns the coin's price at t (before rounding), or false when
// the config does not model the coin. Markets' coin prices are this, rounded
// to the cent.
func (g *Generator) CoinPrice(c store.Coin, t time.Time) (float64, bool) {
	p, ok := g.paths[c]
	if !ok {
		return 0, false
	}
	return p.segment(t, t).at(t), true
}
