package postgres_test

import (
	"encoding/json"
	"math/rand/v2"
	"time"

	"github.com/updown/updown/store"
)

// marketSim produces the snapshots of one up/down market as the collector
// records them: every 300 ms (give or take a few milliseconds), a coin
// price in cents that wanders, Up/Down prices on a 0.01 tick, and two
// books of ten levels a side on that tick with sizes like 1234.56. Between
// snapshots the mid moves a tick now and then and a few levels change size
// or come and go, as on Polymarket.
type marketSim struct {
	rng   *rand.Rand
	t     time.Time
	cents int64 // coin price
	mid   int   // PriceUp in ticks, 15..85
	// sizes[token][tick] is the resting size at that price in cents (0:
	// no level); token 0 is Up, 1 is Down.
	sizes [2][100]int64
}

func newMarketSim(seed uint64, start time.Time) *marketSim {
	m := &marketSim{
		rng:   rand.New(rand.NewPCG(seed, 0x5eed)),
		t:     start,
		cents: 97_000_00 + int64(seed%1000)*100,
	}
	m.mid = 30 + m.rng.IntN(40)
	for tok := range m.sizes {
		for tick := 1; tick < 100; tick++ {
			m.sizes[tok][tick] = m.size()
		}
	}
	return m
}

// size is a random resting size in cents ($10 to $20,000), or 0 one time in eight.
func (m *marketSim) size() int64 {
	if m.rng.IntN(8) == 0 {
		return 0
	}
	return 1000 + m.rng.Int64N(2_000_000)
}

// next returns the next snapshot.
func (m *marketSim) next() store.Snapshot {
	m.t = m.t.Add(300*time.Millisecond + time.Duration(m.rng.IntN(21)-10)*time.Millisecond)
	m.cents += m.rng.Int64N(1001) - 500
	if m.rng.IntN(20) == 0 {
		m.mid = min(85, max(15, m.mid+m.rng.IntN(3)-1))
	}
	for tok := range m.sizes {
		for range 2 {
			m.sizes[tok][1+m.rng.IntN(99)] = m.size()
		}
	}
	return store.Snapshot{
		Time:      m.t,
		CoinPrice: float64(m.cents) / 100,
		PriceUp:   float64(m.mid) / 100,
		PriceDown: float64(100-m.mid) / 100,
		BookUp:    m.book(0, m.mid),
		BookDown:  m.book(1, 100-m.mid),
	}
}

// book is a token's book around mid: bids below it, asks above, ten levels a side at most.
func (m *marketSim) book(tok, mid int) *store.Book {
	var b store.Book
	for tick := mid - 1; tick >= 1 && len(b.Bids) < 10; tick-- {
		if s := m.sizes[tok][tick]; s > 0 {
			b.Bids = append(b.Bids, store.Level{Price: float64(tick) / 100, Size: float64(s) / 100})
		}
	}
	for tick := mid + 1; tick <= 99 && len(b.Asks) < 10; tick++ {
		if s := m.sizes[tok][tick]; s > 0 {
			b.Asks = append(b.Asks, store.Level{Price: float64(tick) / 100, Size: float64(s) / 100})
		}
	}
	return &b
}

// series returns n consecutive snapshots.
func (m *marketSim) series(n int) []store.Snapshot {
	out := make([]store.Snapshot, n)
	for i := range out {
		out[i] = m.next()
	}
	return out
}

// noisySeries returns n snapshots whose books are drawn afresh each time:
// nothing carries over from one snapshot to the next but the tick grid,
// the worst case for the codec.
func noisySeries(seed uint64, start time.Time, n int) []store.Snapshot {
	m := newMarketSim(seed, start)
	out := make([]store.Snapshot, n)
	for i := range out {
		m.mid = 15 + m.rng.IntN(71)
		for tok := range m.sizes {
			for tick := 1; tick < 100; tick++ {
				m.sizes[tok][tick] = m.size()
			}
		}
		out[i] = m.next()
	}
	return out
}

// The SPEC 2.2 snapshot object, with both order books.
type (
	jsonLevel struct {
		Size  float64 `json:"size"`
		Price float64 `json:"price"`
	}
	jsonBook struct {
		Asks []jsonLevel `json:"asks"`
		Bids []jsonLevel `json:"bids"`
	}
	jsonSnapshot struct {
		Time          string    `json:"time"`
		CoinPrice     float64   `json:"coin_price"`
		PriceUp       float64   `json:"price_up"`
		PriceDown     float64   `json:"price_down"`
		OrderbookUp   *jsonBook `json:"orderbook_up,omitempty"`
		OrderbookDown *jsonBook `json:"orderbook_down,omitempty"`
	}
)

// jsonSize returns the length of the snapshots' SPEC 2.2 JSON text, with
// order books, each snapshot encoded on its own.
func jsonSize(snaps []store.Snapshot) int {
	levels := func(ls []store.Level) []jsonLevel {
		out := make([]jsonLevel, 0, len(ls))
		for _, l := range ls {
			out = append(out, jsonLevel{Size: l.Size, Price: l.Price})
		}
		return out
	}
	book := func(b *store.Book) *jsonBook {
		if b == nil {
			return nil
		}
		return &jsonBook{Asks: levels(b.Asks), Bids: levels(b.Bids)}
	}
	total := 0
	for _, s := range snaps {
		b, err := json.Marshal(jsonSnapshot{
			Time:          s.Time.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
			CoinPrice:     s.CoinPrice,
			PriceUp:       s.PriceUp,
			PriceDown:     s.PriceDown,
			OrderbookUp:   book(s.BookUp),
			OrderbookDown: book(s.BookDown),
		})
		if err != nil {
			panic(err)
		}
		total += len(b)
	}
	return total
}
