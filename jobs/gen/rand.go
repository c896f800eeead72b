package gen

import (
	"math"
	"math/rand/v2"
	"time"
)

// newRand returns the random stream of one piece of generated data, named by
// a label and a number (a day, a millisecond, a second). Every piece draws
// from a stream of its own, seeded from (Seed, label, n) and nothing else,
// so that what one market draws can never shift what another sees: output
// does not depend on the order, or the goroutine, in which pieces are
// generated, nor on how much else is generated around them.
func newRand(seed int64, label string, n int64) *rand.Rand {
	return newStreams(seed, label).at(n)
}

// streams is a family of streams sharing a label, numbered by n, served
// from one source reseeded in place: for the many small pieces (a side of
// a book, a depth snapshot) whose own allocations would cost more than
// drawing them. streams.at(n) gives exactly newRand(seed, label, n).
type streams struct {
	src         *rand.PCG
	r           *rand.Rand
	seed, label uint64
}

func newStreams(seed int64, label string) *streams {
	src := rand.NewPCG(0, 0)
	return &streams{src: src, r: rand.New(src), seed: mix64(uint64(seed)), label: fnv1a(label)}
}

// at returns stream n, restarted. It is valid until the next call.
func (s *streams) at(n int64) *rand.Rand {
	s.src.Seed(s.seed, mix64(s.label^mix64(uint64(n)+0x9e3779b97f4a7c15)))
	return s.r
}

// fnv1a hashes a label (64-bit FNV-1a).
func fnv1a(label string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(label); i++ {
		h ^= uint64(label[i])
		h *= 1099511628211
	}
	return h
}

// mix64 is the SplitMix64 finaliser: it spreads every input bit over the
// output, so that nearby seeds (1, 2, 3) give unrelated streams.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// logNormal draws exp(N(ln median, sigma²)).
func logNormal(r *rand.Rand, median, sigma float64) float64 {
	return median * math.Exp(sigma*r.NormFloat64())
}

// uniformDuration draws from [lo, hi) at microsecond precision, the
// precision every store keeps.
func uniformDuration(r *rand.Rand, lo, hi time.Duration) time.Duration {
	us := int64((hi - lo) / time.Microsecond)
	if us <= 0 {
		return lo
	}
	return lo + time.Duration(r.Int64N(us))*time.Microsecond
}

// roundTo rounds x to d decimals (0 ≤ d ≤ 15). Dividing the rounded
// integer by an exact power of ten gives the float64 nearest the decimal, so
// 0.57 prints as 0.57 and not 0.5700000000000001.
func roundTo(x float64, d int) float64 {
	p := math.Pow10(d)
	return math.Round(x*p) / p
}
