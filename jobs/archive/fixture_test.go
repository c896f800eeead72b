package archive_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/updown/updown/store"
)

// fxEvent is one market-channel event of a generated stream, from which
// both a ws-jsonl frame and a pmxt-v2 row are written.
type fxEvent struct {
	ts, received int64 // ms
	market       string
	kind         string
	asset        string
	bids, asks   []level
	price, size  string
	side         string
	bestBid      string
	bestAsk      string
	fee, tx      string
	oldTick      string
	newTick      string
}

type level struct{ Price, Size string }

func (e fxEvent) frame() []byte {
	m := map[string]any{"event_type": e.kind, "market": e.market, "timestamp": strconv.FormatInt(e.ts, 10)}
	switch e.kind {
	case "book":
		m["asset_id"] = e.asset
		m["bids"], m["asks"] = levelsJSON(e.bids), levelsJSON(e.asks)
	case "price_change":
		m["price_changes"] = []map[string]string{{"asset_id": e.asset, "price": e.price, "size": e.size, "side": e.side, "best_bid": e.bestBid, "best_ask": e.bestAsk}}
	case "last_trade_price":
		m["asset_id"], m["price"], m["size"], m["side"], m["fee_rate_bps"], m["transaction_hash"] = e.asset, e.price, e.size, e.side, e.fee, e.tx
	case "tick_size_change":
		m["asset_id"], m["old_tick_size"], m["new_tick_size"] = e.asset, e.oldTick, e.newTick
	}
	b, _ := json.Marshal(m)
	return b
}

func levelsJSON(ls []level) []map[string]string {
	out := make([]map[string]string, len(ls))
	for i, l := range ls {
		out[i] = map[string]string{"price": l.Price, "size": l.Size}
	}
	return out
}

// pmxtRow is a row of the PMXT archive v2: REFERENCE.md's 16 columns,
// timestamps in ms, books as JSON text, numbers as the channel's text.
type pmxtRow struct {
	TimestampReceived int64   `parquet:"timestamp_received"`
	Timestamp         int64   `parquet:"timestamp"`
	Market            string  `parquet:"market,dict"`
	EventType         string  `parquet:"event_type,dict"`
	AssetID           string  `parquet:"asset_id,dict"`
	Bids              *string `parquet:"bids,optional"`
	Asks              *string `parquet:"asks,optional"`
	Price             *string `parquet:"price,optional"`
	Size              *string `parquet:"size,optional"`
	Side              *string `parquet:"side,optional,dict"`
	BestBid           *string `parquet:"best_bid,optional"`
	BestAsk           *string `parquet:"best_ask,optional"`
	FeeRateBps        *string `parquet:"fee_rate_bps,optional"`
	TransactionHash   *string `parquet:"transaction_hash,optional"`
	OldTickSize       *string `parquet:"old_tick_size,optional"`
	NewTickSize       *string `parquet:"new_tick_size,optional"`
}

func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (e fxEvent) row() pmxtRow {
	r := pmxtRow{TimestampReceived: e.received, Timestamp: e.ts, Market: e.market, EventType: e.kind, AssetID: e.asset,
		Price: opt(e.price), Size: opt(e.size), Side: opt(e.side), BestBid: opt(e.bestBid), BestAsk: opt(e.bestAsk),
		FeeRateBps: opt(e.fee), TransactionHash: opt(e.tx), OldTickSize: opt(e.oldTick), NewTickSize: opt(e.newTick)}
	if e.kind == "book" {
		b, _ := json.Marshal(levelsJSON(e.bids))
		a, _ := json.Marshal(levelsJSON(e.asks))
		r.Bids, r.Asks = opt(string(b)), opt(string(a))
	}
	return r
}

// writePMXT writes events as a PMXT hour file: sorted as the archive
// sorts, by market, asset and time received, in row groups of 1,000.
func writePMXT[T any](t testing.TB, path string, rows []T) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[T](f, parquet.Compression(&parquet.Zstd))
	for chunk := range slices.Chunk(rows, 1000) {
		if _, err := w.Write(chunk); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func pmxtRows(evs []fxEvent) []pmxtRow {
	sorted := slices.Clone(evs)
	slices.SortStableFunc(sorted, func(a, b fxEvent) int {
		return cmp.Or(cmp.Compare(a.market, b.market), cmp.Compare(a.asset, b.asset), cmp.Compare(a.received, b.received))
	})
	rows := make([]pmxtRow, len(sorted))
	for i, e := range sorted {
		rows[i] = e.row()
	}
	return rows
}

func writeJSONL(t testing.TB, path string, evs []fxEvent) {
	t.Helper()
	sorted := slices.Clone(evs)
	slices.SortStableFunc(sorted, func(a, b fxEvent) int { return cmp.Compare(a.received, b.received) })
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range sorted {
		f.Write(e.frame())
		f.Write([]byte("\n"))
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// fxMarket is a generated 5m market of coin c starting at start.
func fxMarket(c store.Coin, start time.Time, n int) store.Market {
	slug := fmt.Sprintf("%s-updown-5m-%d", map[store.Coin]string{store.BTC: "btc", store.ETH: "eth", store.SOL: "sol"}[c], start.Unix())
	return store.Market{Slug: slug, MarketID: fmt.Sprintf("%d", 900000+n), EventID: fmt.Sprintf("%d", 800000+n), Coin: c, MarketType: store.M5,
		StartTime: start, EndTime: start.Add(5 * time.Minute), ConditionID: fmt.Sprintf("0x%064x", 1000+n),
		ClobTokenUp: fmt.Sprintf("%d", 7100000000+2*n), ClobTokenDown: fmt.Sprintf("%d", 7100000001+2*n), UpstreamSlug: slug}
}

// fxStream generates a market's events over [from, to): a book of each
// token, price changes every ~150 ms keeping the book consistent with the
// best prices they report, trades, a tick change, and, when silence is
// set, a stretch of silence (after which changes arrive before the next
// book, and must be ignored until it).
func fxStream(m store.Market, from, to time.Time, seed uint64, silence time.Duration) []fxEvent {
	rng := rand.New(rand.NewPCG(seed, 7))
	type side map[int]float64 // size by price in ticks (of 0.01)
	books := map[string][2]side{}
	var out []fxEvent
	ms := func(t time.Time) int64 { return t.UnixMilli() }
	p := func(ticks int) string { return strconv.FormatFloat(float64(ticks)/100, 'f', 2, 64) }
	sz := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	bookEvent := func(tok string, at time.Time, mid int) fxEvent {
		b := [2]side{{}, {}}
		var bids, asks []level
		for i := 1; i <= 12; i++ {
			b[0][mid-i] = float64(10 + rng.IntN(500))
			b[1][mid+i] = float64(10 + rng.IntN(500))
			bids = append(bids, level{p(mid - i), sz(b[0][mid-i])})
			asks = append(asks, level{p(mid + i), sz(b[1][mid+i])})
		}
		slices.Reverse(asks) // the CLOB lists asks worst first... and bids too
		books[tok] = b
		return fxEvent{ts: ms(at), received: ms(at) + 3, market: m.ConditionID, kind: "book", asset: tok, bids: bids, asks: asks}
	}
	best := func(s side, bids bool) int {
		out, first := 0, true
		for k := range s {
			if first || (bids && k > out) || (!bids && k < out) {
				out, first = k, false
			}
		}
		if first {
			if bids {
				return 0
			}
			return 100
		}
		return out
	}
	toks := []string{m.ClobTokenUp, m.ClobTokenDown}
	at := from
	out = append(out, bookEvent(toks[0], at, 52), bookEvent(toks[1], at.Add(time.Millisecond), 48))
	silenceAt := from.Add(to.Sub(from) / 2)
	resumed := false
	for at = at.Add(150 * time.Millisecond); at.Before(to); at = at.Add(time.Duration(100+rng.IntN(100)) * time.Millisecond) {
		if silence > 0 && !resumed && !at.Before(silenceAt) {
			at = at.Add(silence)
			resumed = true
			// A change before the books come back: no book, no level.
			out = append(out, fxEvent{ts: ms(at), received: ms(at) + 2, market: m.ConditionID, kind: "price_change", asset: toks[0],
				price: p(50), size: "999", side: "BUY", bestBid: p(50), bestAsk: p(53)})
			at = at.Add(700 * time.Millisecond)
			out = append(out, bookEvent(toks[0], at, 55))
			at = at.Add(400 * time.Millisecond)
			out = append(out, bookEvent(toks[1], at, 45))
			continue
		}
		i := rng.IntN(2)
		tok := toks[i]
		b := books[tok]
		switch r := rng.IntN(10); {
		case r < 7:
			bid := rng.IntN(2) == 0
			s, sideName := b[1], "SELL"
			if bid {
				s, sideName = b[0], "BUY"
			}
			var keys []int
			for k := range s {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			k := keys[rng.IntN(len(keys))]
			size := 0.0
			if rng.IntN(4) > 0 || len(keys) < 4 {
				size = float64(1 + rng.IntN(800))
			}
			if size == 0 {
				delete(s, k)
			} else {
				s[k] = size
			}
			out = append(out, fxEvent{ts: ms(at), received: ms(at) + 2, market: m.ConditionID, kind: "price_change", asset: tok,
				price: p(k), size: sz(size), side: sideName, bestBid: p(best(b[0], true)), bestAsk: p(best(b[1], false))})
		case r < 9:
			out = append(out, fxEvent{ts: ms(at), received: ms(at) + 2, market: m.ConditionID, kind: "last_trade_price", asset: tok,
				price: p(best(b[1], false)), size: sz(float64(5 + rng.IntN(100))), side: []string{"BUY", "SELL"}[rng.IntN(2)], fee: "0",
				tx: fmt.Sprintf("0x%x", rng.Uint64())})
		default:
			out = append(out, fxEvent{ts: ms(at), received: ms(at) + 2, market: m.ConditionID, kind: "tick_size_change", asset: tok, oldTick: "0.01", newTick: []string{"0.001", "0.01"}[rng.IntN(2)]})
		}
	}
	return out
}
