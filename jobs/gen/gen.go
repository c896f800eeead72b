// Package gen generates deterministic synthetic data: up/down markets with
// their snapshots and order books, and exchange depth and trades, for dev
// mode, `updown seed`, tests and benchmarks.
//
// Everything is a pure function of the Config's Seed and of time. Each coin
// has one continuous price path (a geometric Brownian motion at a realistic
// volatility, see pricePath) that every market, depth snapshot and trade of
// the coin reads, so a 5m and a 24hr market see the same price at the same
// instant and exchange books sit around the same price the markets record.
// Each market, each depth snapshot and each second of trades draws from a
// random stream of its own (see newRand), so output does not depend on how
// many goroutines generate it, in what order. Output is identical byte for
// byte on one platform; another architecture's math library (or its fused
// multiply-adds) may round a last bit differently, which prices rounded to
// the cent almost always absorb. Config.Now only decides where
// the data ends: a generator with a later Now continues the same history
// (resolved markets and their snapshots unchanged, the live market's
// snapshots extended), which lets a dev collector keep producing data that
// agrees with what was seeded.
//
// Conventions (where the reference service does not say):
//   - price_up and price_down are the best asks of the Up and Down books, on
//     a 0.01 tick within [0.01, 0.99]: what buying the outcome costs now.
//     The Down book mirrors the Up book at the top (Down's best bid is
//     1 − Up's best ask and Down's best ask is 1 − Up's best bid, as
//     Polymarket's complementary matching makes them), so price_up +
//     price_down is 1 plus the spread, 1.01 to 1.03. Deeper levels and all
//     sizes are drawn independently.
//   - The fair probability of Up is Φ(ln(S_t/S_0)/(σ√(T−t))) with S_0 the
//     recorded start price, perturbed by an autocorrelated noise on the
//     log-odds scale (as market makers' quotes wander around fair value).
//   - A market resolves a few seconds to a minute after it ends; until then
//     (and so for the market live at Now) it is unresolved. Up wins when the
//     end price, rounded to the cent as recorded, is at or above the start
//     price.
//   - Identities (slug, market id, event id, condition id, token ids) are
//     functions of coin, type and start alone, so re-seeding with another
//     Seed updates the same markets rather than adding new ones.
//   - Every number a store keeps has at most six decimals (prices and sizes
//     two, volumes six), so stores that pack millionths keep them exactly.
//   - Times are UTC; market and snapshot times have microsecond precision
//     (what stores keep), exchange times millisecond precision (Binance's).
package gen

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/updown/updown/jobs/series"
	"github.com/updown/updown/store"
)

// Generator produces the data of one Config. It is safe for concurrent use.
type Generator struct {
	cfg   Config
	paths map[store.Coin]*pricePath
	// outageFrom and outageTo bound the collector outage, [from, to); both
	// are zero when there is none.
	outageFrom, outageTo time.Time
}

// New validates cfg and returns its generator. Nothing is generated until
// asked for.
func New(cfg Config) (*Generator, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.clone()
	cfg.Now = cfg.Now.UTC().Truncate(time.Millisecond)
	g := &Generator{cfg: cfg, paths: make(map[store.Coin]*pricePath, len(cfg.Coins))}
	for _, m := range cfg.Coins {
		g.paths[m.Coin] = newPricePath(cfg.Seed, m)
	}
	if cfg.Outage > 0 {
		g.outageFrom = cfg.Now.Add(-cfg.OutageAgo).Truncate(cfg.Outage)
		g.outageTo = g.outageFrom.Add(cfg.Outage)
		// An outage of at most a third of an hour is kept off the hour's
		// ends, one length later where it would begin on the hour and one
		// earlier where it would end on it: there it began or ended the
		// hourly market holding it (and, at some hours, the 4hr and daily
		// ones), and, made in half of each hour, no resolved market had
		// snapshots on both sides of it, a recording gap within a market.
		if 3*cfg.Outage <= time.Hour {
			switch {
			case g.outageFrom.Truncate(time.Hour).Equal(g.outageFrom):
				g.outageFrom = g.outageFrom.Add(cfg.Outage)
			case g.outageTo.Truncate(time.Hour).Equal(g.outageTo):
				g.outageFrom = g.outageFrom.Add(-cfg.Outage)
			}
			g.outageTo = g.outageFrom.Add(cfg.Outage)
		}
	}
	return g, nil
}

// Config returns the generator's config, with Now as truncated by New.
func (g *Generator) Config() Config { return g.cfg.clone() }

// Outage returns the collector outage, [from, to): snapshots whose time falls
// in it were not recorded. ok is false when the config has no outage.
func (g *Generator) Outage() (from, to time.Time, ok bool) {
	return g.outageFrom, g.outageTo, !g.outageFrom.IsZero()
}

// Slug is the market's identifier as SPEC shapes it:
// <coin lowercase>-updown-<market_type>-<epoch seconds of start>.
func Slug(c store.Coin, mt store.MarketType, start time.Time) string {
	return strings.ToLower(string(c)) + "-updown-" + string(mt) + "-" + strconv.FormatInt(start.Unix(), 10)
}

// Markets returns every market of the config: for each coin in Config.Coins
// order and each market type shortest first, the series' markets newest
// first, the first of them live at Now.
func (g *Generator) Markets() []store.Market {
	var out []store.Market
	for _, cm := range g.cfg.Coins {
		for _, mt := range store.MarketTypes {
			n := g.cfg.Markets[mt]
			if n == 0 || !mt.AvailableFor(cm.Coin) {
				continue
			}
			start := series.Start(mt, g.cfg.Now)
			for range n {
				out = append(out, g.market(cm.Coin, mt, start))
				start = series.Previous(mt, start)
			}
		}
	}
	return out
}

// Market returns the market of coin c and type mt whose window contains
// start (windows fall as Polymarket's do, see package series: 5m markets
// start on 5-minute boundaries, 4hr markets at 00/04/…/20 US Eastern, 24hr
// markets at 12:00 Eastern), as it stands at Config.Now. It
// need not be one of Markets: benchmarks use it for one long market, e.g. a
// 24hr market at the 300 ms cadence (MaxSnapshotsPerMarket 0).
func (g *Generator) Market(c store.Coin, mt store.MarketType, start time.Time) (store.Market, error) {
	if !mt.Valid() {
		return store.Market{}, fmt.Errorf("gen: unknown market type %q", mt)
	}
	start = series.Start(mt, start)
	if err := g.check(c, mt, start); err != nil {
		return store.Market{}, err
	}
	return g.market(c, mt, start), nil
}

// Snapshots returns the recorded snapshots of market m, oldest first: one
// every cadence (Config.Interval, coarsened by MaxSnapshotsPerMarket) from
// start until the end or Config.Now, whichever is first, less those in the
// collector outage. Only m's Coin, MarketType and StartTime are read: m may
// come from Markets, Market or a store.
//
// The snapshots of one market share three allocations (books and levels
// point into common arrays, each slice clipped to its own part), which
// spares the garbage collector millions of small objects when a store keeps
// them.
func (g *Generator) Snapshots(m store.Market) ([]store.Snapshot, error) {
	start := m.StartTime.UTC()
	if err := g.check(m.Coin, m.MarketType, start); err != nil {
		return nil, err
	}
	if !series.Start(m.MarketType, start).Equal(start) {
		return nil, fmt.Errorf("gen: %s market start %v is not aligned to its window", m.MarketType, start)
	}
	return g.snapshots(m.Coin, m.MarketType, start), nil
}

// check reports whether the generator can produce a market of coin c and
// type mt starting at start.
func (g *Generator) check(c store.Coin, mt store.MarketType, start time.Time) error {
	switch {
	case !mt.AvailableFor(c):
		return fmt.Errorf("gen: no %s markets for coin %q", mt, c)
	case g.paths[c] == nil:
		return fmt.Errorf("gen: coin %s is not in the config", c)
	case start.Before(pathEpoch()):
		return fmt.Errorf("gen: market start %v is before %v", start, pathEpoch())
	case start.After(g.cfg.Now):
		return fmt.Errorf("gen: market start %v is after Now (%v)", start, g.cfg.Now)
	}
	return nil
}

// Resolution takes this long after a market's end (Chainlink's report, then
// the collector noticing).
const (
	minResolutionDelay = 5 * time.Second
	maxResolutionDelay = 90 * time.Second
)

// market builds the record of the market of coin c and type mt starting at
// the aligned instant start.
func (g *Generator) market(c store.Coin, mt store.MarketType, start time.Time) store.Market {
	now := g.cfg.Now
	end := series.End(mt, start)
	slug := Slug(c, mt, start)
	marketID, eventID := marketIDs(c, mt, start)
	m := store.Market{
		Slug:          slug,
		MarketID:      marketID,
		EventID:       eventID,
		Coin:          c,
		MarketType:    mt,
		StartTime:     start,
		EndTime:       end,
		ConditionID:   "0x" + hex.EncodeToString(digest("condition", slug)),
		ClobTokenUp:   tokenID("up", slug),
		ClobTokenDown: tokenID("down", slug),
	}

	// Draw every value, in a fixed order, whether or not the market has
	// resolved by Now, so that its values do not depend on Now.
	r := newRand(g.cfg.Seed, "market/"+slug, 0)
	lead := uniformDuration(r, 2*time.Minute, 20*time.Minute)           // listed upstream ahead of its start
	delay := uniformDuration(r, minResolutionDelay, maxResolutionDelay) // resolution after its end
	touch := uniformDuration(r, 50*time.Millisecond, 2*time.Second)     // the collector's write after an event
	volume := roundTo(logNormal(r, medianVolume(c, mt), 0.5), 6)
	liquidity := roundTo(logNormal(r, medianVolume(c, mt)/4, 0.4), 6)

	// Drawn after the values above, so that adding them changed none.
	tickChange := r.IntN(tickChangeOneIn) == 0
	tickChangeAt := start.Add(uniformDuration(r, 0, end.Sub(start))).Truncate(time.Millisecond)

	path := g.paths[c]
	startPrice := roundTo(path.segment(start, start).at(start), 2)
	m.CoinPriceStart = &startPrice
	m.CreatedAt = start.Add(-lead)
	m.UpdatedAt = minTime(start.Add(touch), now)

	// What Polymarket's crypto up/down markets carry (DESIGN 9).
	rate, exponent, rebate, tick, minSize := takerFeeRate, feeExponent, makerRebateRate, tickSize, minOrderSize
	m.UpstreamSlug = series.UpstreamSlug(c, mt, start)
	m.TakerFeeRate, m.FeeExponent, m.TickSize, m.MinOrderSize = &rate, &exponent, &tick, &minSize
	m.MakerRebateRate, m.FeeType = &rebate, store.FeeTypeCryptoV2
	if tickChange && !tickChangeAt.After(now) {
		fine := fineTickSize
		m.TickSize = &fine
		m.TickSizeChanges = []store.TickSizeChange{{Time: tickChangeAt, TickSize: fine}}
	}

	if resolvedAt := end.Add(delay); !resolvedAt.After(now) {
		endPrice := roundTo(path.segment(end, end).at(end), 2)
		winner := store.OutcomeDown
		if endPrice >= startPrice {
			winner = store.OutcomeUp
		}
		if tie(mt, end) {
			endPrice = startPrice // the noon closes were equal
		}
		if mt == store.H24 && endPrice == startPrice {
			winner = store.OutcomeFiftyFifty // the daily rule: equal is 50-50
		}
		m.CoinPriceEnd = &endPrice
		m.Winner = &winner
		m.FinalVolume = &volume
		m.FinalLiquidity = &liquidity
		m.ResolvedAt = &resolvedAt
		m.UpdatedAt = minTime(resolvedAt.Add(touch), now)
		// Polymarket's reference prices are the ones the market settled on.
		m.PriceToBeat, m.FinalPrice = &startPrice, &endPrice
		m.ResolutionSource = series.SettlementSource(mt)
	}
	return m
}

// The fee schedule, tick and minimum order of Polymarket's crypto up/down
// markets in 2026 (REFERENCE); one market in tickChangeOneIn switches to
// the fine tick at some point of its window. The maker rebate is Gamma's
// feeSchedule.rebateRate on those markets ({"exponent":1,"rate":0.07,
// "takerOnly":true,"rebateRate":0.2}, REFERENCE "Trading mechanics" and
// realdata/gamma): makers get 20% of the fee their volume would have paid.
const (
	takerFeeRate    = 0.07
	feeExponent     = 1
	makerRebateRate = 0.2
	tickSize        = 0.01
	fineTickSize    = 0.001
	minOrderSize    = 5.0
	tickChangeOneIn = 8
)

// tie reports whether the market of type mt ending at end resolved 50-50:
// a daily market every fourth day (by its end's day number), so that dev
// data has a few, whatever the seed.
func tie(mt store.MarketType, end time.Time) bool {
	return mt == store.H24 && end.Unix()/secondsPerDay%4 == 1
}

// medianVolume is a market's typical final volume in USD: longer markets
// trade more, and BTC most.
func medianVolume(c store.Coin, mt store.MarketType) float64 {
	v := 25_000.0 // 5m
	switch mt {
	case store.M15:
		v = 60_000
	case store.H1:
		v = 150_000
	case store.H4:
		v = 250_000
	case store.H24:
		v = 600_000
	}
	switch c {
	case store.ETH:
		v *= 0.4
	case store.SOL:
		v *= 0.25
	}
	return v
}

// marketIDs returns the market's external market and event ids: decimal
// numbers like Polymarket's, unique by construction (every window starts on
// a 5-minute boundary, and each of the 15 coin-type series has its own
// residue modulo 16).
func marketIDs(c store.Coin, mt store.MarketType, start time.Time) (marketID, eventID string) {
	series := int64(slices.Index(store.Coins, c)*len(store.MarketTypes) + slices.Index(store.MarketTypes, mt))
	n := start.Unix()/300*16 + series
	// Events are numbered in a range of their own, lower, as upstream.
	return strconv.FormatInt(n, 10), strconv.FormatInt(n-40_000_000, 10)
}

// digest is a 32-byte hash naming one identity of one market.
func digest(kind, slug string) []byte {
	h := sha256.Sum256([]byte("updown/gen " + kind + " " + slug))
	return h[:]
}

// tokenID returns a CLOB token id: a 256-bit number in decimal, as
// Polymarket's are.
func tokenID(outcome, slug string) string {
	return new(big.Int).SetBytes(digest("token "+outcome, slug)).String()
}

// Snapshot price noise: an AR(1) process on the log-odds of Up, specified in
// time rather than per snapshot so that it looks the same at any cadence.
const (
	noiseSD  = 0.12             // stationary standard deviation (≈ ±3 cents at even odds)
	noiseTau = 20 * time.Second // correlation time
)

// cadence is the time between snapshots of a market of type mt whose window
// lasts the type's length.
func (g *Generator) cadence(mt store.MarketType) time.Duration { return g.cadenceOf(mt.Duration()) }

// cadenceOf is the time between snapshots of a market whose window lasts
// length (an Eastern window on a daylight-saving day lasts an hour more or
// less than its type's length, and has as many snapshots as any other).
func (g *Generator) cadenceOf(length time.Duration) time.Duration {
	step := g.cfg.Interval
	if n := time.Duration(g.cfg.MaxSnapshotsPerMarket); n > 0 {
		coarse := (length + n - 1) / n
		coarse = (coarse + time.Millisecond - 1).Truncate(time.Millisecond)
		step = max(step, coarse)
	}
	return step
}

// snapshots generates the snapshots of one market (see Snapshots).
func (g *Generator) snapshots(c store.Coin, mt store.MarketType, start time.Time) []store.Snapshot {
	now := g.cfg.Now
	end := series.End(mt, start)
	stop := minTime(end, now)
	w := g.newQuoteWalk(c, mt, start, stop)

	// One allocation each for snapshots, books and levels: a dev store
	// holds half a million snapshots, and twenty small allocations apiece
	// would cost the garbage collector more than generating them.
	room := min(w.n, int(stop.Sub(start)/w.step)+1)
	levels := g.cfg.BookLevels
	snaps := make([]store.Snapshot, 0, room)
	var books []store.Book
	var slab []store.Level
	if levels > 0 {
		books = make([]store.Book, 2*room)
		slab = make([]store.Level, 4*levels*room)
	}

	// Each side of each book draws from a stream of its own: books never
	// shift a market's times or prices, and a book of fewer levels is the
	// top of one of more, so BookLevels changes nothing else.
	var src *bookSource
	if levels > 0 {
		src = g.newBookSource(Slug(c, mt, start), g.cfg.BookChurn)
	}
	for {
		k, t, ok := w.next()
		if !ok || t.After(now) {
			break
		}
		// Draws for a snapshot lost in the outage are made all the same,
		// so that what follows does not depend on where the outage falls.
		price, ask, bid := w.quote(t)
		if src != nil {
			src.churn(k) // redrawn for every snapshot, lost or not (see above)
		}
		if g.inOutage(t) {
			continue
		}
		i := len(snaps)
		var bookUp, bookDown *store.Book
		if src != nil {
			books[2*i], books[2*i+1] = src.books(k, slab[4*levels*i:4*levels*(i+1)], levels, ask, bid)
			bookUp, bookDown = &books[2*i], &books[2*i+1]
		}
		snaps = append(snaps, store.Snapshot{
			Time:      t,
			CoinPrice: price,
			PriceUp:   cents(ask),
			PriceDown: cents(100 - bid),
			BookUp:    bookUp,
			BookDown:  bookDown,
		})
	}
	return snaps
}

// inOutage reports whether the collector was down at t.
func (g *Generator) inOutage(t time.Time) bool {
	return !t.Before(g.outageFrom) && t.Before(g.outageTo)
}

// fairUp is the probability that the end price is at or above s0, given the
// price s with left seconds to go under a driftless GBM of volatility sigma
// per √second, shifted by noise on the log-odds scale.
func fairUp(s, s0, sigma, left, noise float64) float64 {
	q := 0.5
	switch {
	case left > 0:
		x := math.Log(s/s0) / (sigma * math.Sqrt(left))
		q = 0.5 * math.Erfc(-x/math.Sqrt2) // Φ(x)
	case s >= s0:
		q = 1
	default:
		q = 0
	}
	// Keep the log-odds finite; a quote never gets closer to certainty than
	// the book's 0.01/0.99 bounds anyway.
	q = min(max(q, 1e-4), 1-1e-4)
	return 1 / (1 + math.Exp(-(math.Log(q/(1-q)) + noise)))
}

// spreadTicks draws the Up book's bid-ask spread in ticks: mostly one tick,
// sometimes two or three.
func spreadTicks(r *rand.Rand) int {
	switch u := r.IntN(100); {
	case u < 70:
		return 1
	case u < 95:
		return 2
	default:
		return 3
	}
}

// quote places the Up book's best ask and bid, in cents, around the
// probability p, spread ticks apart, within [1, 99].
func quote(p float64, spread int) (ask, bid int) {
	ask = int(math.Round(p*100 + float64(spread)/2))
	ask = min(max(ask, 1+spread), 99)
	return ask, ask - spread
}

// Book sizes lie between these, in shares.
const (
	minLevelSize = 50
	maxLevelSize = 5000
)

// bookSide fills dst (empty, with capacity for the side's levels) with levels
// from best (in cents) outwards in direction dir (−1 for bids, +1 for asks),
// skipping a price now and then as real books do, and stopping at the
// bounds of (0, 1).
//
// Sizes are min + (max − min)·u³ for a uniform u, in hundredths of a share:
// small levels most often (median ≈ 670) with a long tail of large ones,
// much like a log-uniform draw but without a math.Exp per level, which
// was half the cost of generating dev data.
func bookSide(r *rand.Rand, dst []store.Level, best, dir int) []store.Level {
	for p := best; len(dst) < cap(dst) && p >= 1 && p <= 99; p += dir {
		size, skip := drawLevel(r)
		dst = append(dst, store.Level{Price: cents(p), Size: cents(size)})
		if skip {
			p += dir
		}
	}
	return dst
}

// drawLevel draws a level's size, in hundredths of a share, and whether a
// price beside it is skipped. One draw gives both: the size from its high
// 53 bits, the skip from its low 10 bits (about 15% of the time).
func drawLevel(r *rand.Rand) (size int, skip bool) {
	x := r.Uint64()
	u := float64(x>>11) / (1 << 53)
	return 100*minLevelSize + int(u*u*u*100*(maxLevelSize-minLevelSize)), x&0x3ff < 154
}

// restingBooks is what rests at every price of both outcomes' books, for
// BookChurn: books that change a few levels at a time, as Polymarket's do
// between two snapshots.
type restingBooks struct {
	size [2][100]int  // [outcome][price in cents], in hundredths of a share
	gap  [2][100]bool // nothing rests there, unless it is the best price
}

func newRestingBooks(r *rand.Rand) *restingBooks {
	var b restingBooks
	for o := range b.size {
		for p := 1; p < 100; p++ {
			b.draw(r, o, p)
		}
	}
	return &b
}

// draw draws the level at price p of outcome o as bookSide draws a level.
func (b *restingBooks) draw(r *rand.Rand, o, p int) {
	b.size[o][p], b.gap[o][p] = drawLevel(r)
}

// churn redraws n levels at prices drawn at random.
func (b *restingBooks) churn(r *rand.Rand, n int) {
	for range n {
		b.draw(r, r.IntN(2), 1+r.IntN(99))
	}
}

// side fills dst (empty, with capacity for the side's levels) with the
// levels resting on outcome o from best (in cents) outwards in direction
// dir, within (0, 1). The best price always has a level: it is the quote.
func (b *restingBooks) side(o int, dst []store.Level, best, dir int) []store.Level {
	for p := best; len(dst) < cap(dst) && p >= 1 && p <= 99; p += dir {
		if p == best || !b.gap[o][p] {
			dst = append(dst, store.Level{Price: cents(p), Size: cents(b.size[o][p])})
		}
	}
	return dst
}

// cents converts hundredths (of a dollar, of a share) to units, exactly as
// the decimal reads.
func cents(c int) float64 { return float64(c) / 100 }

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
