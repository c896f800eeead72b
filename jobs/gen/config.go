package gen

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/updown/updown/store"
)

// Config says what to generate. Start from DefaultConfig and change what a
// test or benchmark needs: New rejects a config that could only generate
// nonsense (no coins, a zero Interval or BatchSize, markets before 2000),
// reporting every problem at once.
type Config struct {
	// Seed selects one synthetic history among many: the same Seed and Now
	// give the same data, byte for byte.
	Seed int64
	// Now is where generated data ends: no snapshot, depth or trade is later
	// than Now, and the market whose window contains Now is live
	// (unresolved, with snapshots up to Now). It is truncated to the
	// millisecond.
	Now time.Time
	// Coins models each coin's price. Only coins listed get markets and
	// exchange data; their order is the order of Markets.
	Coins []CoinModel
	// Markets is how many markets each series (coin × market type) has,
	// counting back from the one live at Now, which is included. A type that
	// is absent or zero gets none; 4hr and 24hr apply to BTC only, as SPEC
	// allows.
	Markets map[store.MarketType]int
	// Interval is the recording cadence: 300 ms in the reference service.
	Interval time.Duration
	// MaxSnapshotsPerMarket, when positive, coarsens the cadence of long
	// markets so that none has more snapshots than this (dev mode: 1,000 keeps a
	// 5m market at 300 ms and puts a 24hr market at 86.4 s). Zero keeps
	// Interval for every market (a 24hr market then has 288,000).
	MaxSnapshotsPerMarket int
	// BookLevels is the number of levels on each side of each outcome book;
	// zero records snapshots without books.
	BookLevels int
	// BookChurn, when positive, makes books move as Polymarket's do: each
	// outcome keeps a resting size (or none) at every price, and each
	// snapshot redraws BookChurn of those, across both outcomes, so that
	// most sides are what they were 300 ms before. Zero draws every book
	// afresh at every snapshot (dev data), the storage codec's worst case.
	BookChurn int
	// Outage is the length of a collector outage: snapshots that fall into
	// it are not recorded, so the markets wholly inside it are resolved
	// markets with no snapshots (replay answers NO_DATA) and longer markets
	// around it have a hole. The outage is aligned to its own length and
	// starts OutageAgo before Now (rounded down), moved by one length off
	// an hour's start or end when it is at most a third of an hour long,
	// so that an hourly market holds it with snapshots on both sides. Zero
	// means no outage.
	Outage    time.Duration
	OutageAgo time.Duration
	// DepthHistory is how far back BTCUSDT spot and futures depth
	// snapshots go, one every DepthInterval. SPEC keeps depth history for
	// BTC only. Zero means none.
	DepthHistory  time.Duration
	DepthInterval time.Duration
	// DepthLevels is the number of levels on each side of an exchange book
	// (history and latest).
	DepthLevels int
	// BatchSize is the most snapshots (or depth snapshots) Seed hands to
	// the store in one call: large enough to amortise a round trip, small
	// enough to bound the memory one COPY holds.
	BatchSize int
}

// CoinModel is the price process of one coin.
type CoinModel struct {
	Coin store.Coin
	// Price is the level the price wanders around (in USD). The path starts
	// there in 2000 and reverts towards it with a half-life of a month, so
	// that prices stay realistic in any year without a visible pull over the
	// days a dev history spans.
	Price float64
	// Vol is the annualised volatility of log returns (0.55 is 55%).
	Vol float64
}

// DefaultCoins returns realistic models of BTC, ETH and SOL.
func DefaultCoins() []CoinModel {
	return []CoinModel{
		{Coin: store.BTC, Price: 95_000, Vol: 0.55},
		{Coin: store.ETH, Price: 3_400, Vol: 0.70},
		{Coin: store.SOL, Price: 180, Vol: 0.90},
	}
}

// DefaultConfig is the data of dev mode (DESIGN 3) ending at now: every
// coin and market type SPEC allows, a few more markets per series than the
// Starter window shows (60/60/30/30/7 against 50/50/24/24/5) so that the
// window visibly cuts; at most 1,000 snapshots per market with 10-level
// books; a 15-minute collector outage two hours ago; a day of BTCUSDT depth
// every 10 s. That is 487 markets and about 470,000 snapshots: a few hundred
// milliseconds of CPU to generate, and about 130 MiB in the memory store,
// which packs them.
func DefaultConfig(now time.Time) Config {
	return Config{
		Seed:  1,
		Now:   now,
		Coins: DefaultCoins(),
		Markets: map[store.MarketType]int{
			store.M5:  60,
			store.M15: 60,
			store.H1:  30,
			store.H4:  30,
			store.H24: 7,
		},
		Interval:              store.SnapshotCadence,
		MaxSnapshotsPerMarket: 1000,
		BookLevels:            10,
		Outage:                15 * time.Minute,
		OutageAgo:             2 * time.Hour,
		DepthHistory:          24 * time.Hour,
		DepthInterval:         10 * time.Second,
		DepthLevels:           20,
		BatchSize:             5000,
	}
}

// pathEpoch is the origin of every price path (see path.go): the first
// instant the generator models.
func pathEpoch() time.Time { return time.Unix(pathEpochDay*secondsPerDay, 0).UTC() }

// maxBookLevels bounds BookLevels: a book on a 0.01 tick inside (0, 1)
// cannot hold more than 99 levels a side.
const maxBookLevels = 99

// validate reports every problem with c at once, so that a caller fixing a
// hand-made config does not have to iterate.
func (c Config) validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	// A week after the epoch leaves room for a week of 24hr markets.
	if first := pathEpoch().AddDate(0, 0, 7); c.Now.Before(first) {
		bad("Now %v is before %v (zero?)", c.Now, first)
	}
	if len(c.Coins) == 0 {
		bad("no Coins")
	}
	seen := map[store.Coin]bool{}
	for _, m := range c.Coins {
		switch {
		case !m.Coin.Valid():
			bad("coin %q is not one of BTC, ETH, SOL", m.Coin)
		case seen[m.Coin]:
			bad("coin %s listed twice", m.Coin)
		}
		seen[m.Coin] = true
		if !(m.Price > 0) || math.IsInf(m.Price, 0) {
			bad("%s price %v is not positive", m.Coin, m.Price)
		}
		if !(m.Vol > 0 && m.Vol <= 5) {
			bad("%s volatility %v is outside (0, 5]", m.Coin, m.Vol)
		}
	}
	for mt, n := range c.Markets {
		if !mt.Valid() {
			bad("unknown market type %q", mt)
		}
		if n < 0 {
			bad("%s market count %d is negative", mt, n)
		}
		if mt.Valid() && n > 0 && c.Now.Sub(pathEpoch())/mt.Duration() < time.Duration(n-1) {
			bad("%d %s markets before %v would start before %v", n, mt, c.Now, pathEpoch())
		}
	}
	if c.Interval < time.Millisecond {
		bad("Interval %v is under 1ms", c.Interval)
	}
	if c.MaxSnapshotsPerMarket < 0 {
		bad("MaxSnapshotsPerMarket %d is negative", c.MaxSnapshotsPerMarket)
	}
	if c.BookLevels < 0 || c.BookLevels > maxBookLevels {
		bad("BookLevels %d is outside [0, %d]", c.BookLevels, maxBookLevels)
	}
	if c.BookChurn < 0 || c.BookChurn > 2*maxBookLevels {
		bad("BookChurn %d is outside [0, %d]", c.BookChurn, 2*maxBookLevels)
	}
	if c.Outage < 0 {
		bad("Outage %v is negative", c.Outage)
	}
	// The markets inside the outage must have ended and resolved by Now
	// (resolution takes at most maxResolutionDelay).
	if c.Outage > 0 && c.OutageAgo < c.Outage+maxResolutionDelay {
		bad("OutageAgo %v leaves no time for the markets of a %v outage to resolve (want ≥ %v)",
			c.OutageAgo, c.Outage, c.Outage+maxResolutionDelay)
	}
	if c.DepthHistory < 0 {
		bad("DepthHistory %v is negative", c.DepthHistory)
	}
	if c.DepthHistory > 0 && c.DepthInterval < time.Millisecond {
		bad("DepthInterval %v is under 1ms", c.DepthInterval)
	}
	if c.DepthLevels < 1 || c.DepthLevels > 1000 {
		bad("DepthLevels %d is outside [1, 1000]", c.DepthLevels)
	}
	if c.BatchSize < 1 {
		bad("BatchSize %d is not positive", c.BatchSize)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("gen: invalid config: %w", err)
	}
	return nil
}

// clone returns c with its slices and map copied, so that a Generator is
// unaffected by later changes to the caller's Config.
func (c Config) clone() Config {
	c.Coins = append([]CoinModel(nil), c.Coins...)
	m := make(map[store.MarketType]int, len(c.Markets))
	for k, v := range c.Markets {
		m[k] = v
	}
	c.Markets = m
	return c
}
