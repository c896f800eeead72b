package archive_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math/big"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestPMXTBookLevelsAsPairs imports a pmxt-v2 hour whose book rows spell
// their sides as the PMXT archive v2 documents them, [["price","size"],...]
// (archive.pmxt.dev, v2 data overview, columns bids and asks): the same
// market as from the market channel's [{"price","size"},...], where each
// such row failed the import.
func TestPMXTBookLevelsAsPairs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	evs := fx.eventsOf(fx.known)
	dir := t.TempDir()
	objects, pairs := filepath.Join(dir, "objects.parquet"), filepath.Join(dir, "pairs.parquet")
	writePMXT(t, objects, pmxtRows(evs))
	rows := pmxtRows(evs)
	books := 0
	for i, e := range rows {
		if e.EventType != "book" {
			continue
		}
		books++
		for _, side := range []**string{&rows[i].Bids, &rows[i].Asks} {
			var levels []map[string]string
			if err := json.Unmarshal([]byte(**side), &levels); err != nil {
				t.Fatal(err)
			}
			out := make([][2]string, len(levels))
			for j, l := range levels {
				out[j] = [2]string{l["price"], l["size"]}
			}
			b, _ := json.Marshal(out)
			*side = opt(string(b))
		}
	}
	if books == 0 {
		t.Fatal("the stream has no book")
	}
	writePMXT(t, pairs, rows)
	imp := func(name string) []store.Snapshot {
		t.Helper()
		st := memory.New()
		if _, err := archive.Import(ctx, st, archive.Options{Format: archive.PMXTv2, Files: []string{name}, Markets: []store.Market{fx.known}, Prices: fx.klines(t)}); err != nil {
			t.Fatalf("%s: %v", filepath.Base(name), err)
		}
		return snapshotsOf(t, st, fx.known.Slug)
	}
	want, got := imp(objects), imp(pairs)
	if len(want) < 100 || !reflect.DeepEqual(got, want) {
		t.Errorf("levels as pairs: %d snapshots, as objects %d (or they differ)", len(got), len(want))
	}
}

// pmxtTypedRow is a row of the PMXT archive v2 as its schema types it
// (archive.pmxt.dev, v2 data overview): timestamps in ms, prices and
// tick sizes decimal(9,4) and sizes decimal(18,6) (pyarrow writes
// decimals as fixed-length big-endian integers), fee_rate_bps an integer.
type pmxtTypedRow struct {
	TimestampReceived int64    `parquet:"timestamp_received,timestamp(millisecond)"`
	Timestamp         int64    `parquet:"timestamp,timestamp(millisecond)"`
	Market            string   `parquet:"market,dict"`
	EventType         string   `parquet:"event_type,dict"`
	AssetID           string   `parquet:"asset_id,dict"`
	Bids              *string  `parquet:"bids,optional"`
	Asks              *string  `parquet:"asks,optional"`
	Price             *[4]byte `parquet:"price,optional,decimal(4:9)"`
	Size              *[8]byte `parquet:"size,optional,decimal(6:18)"`
	Side              *string  `parquet:"side,optional,dict"`
	BestBid           *[4]byte `parquet:"best_bid,optional,decimal(4:9)"`
	BestAsk           *[4]byte `parquet:"best_ask,optional,decimal(4:9)"`
	FeeRateBps        *int32   `parquet:"fee_rate_bps,optional"`
	TransactionHash   *string  `parquet:"transaction_hash,optional"`
	OldTickSize       *[4]byte `parquet:"old_tick_size,optional,decimal(4:9)"`
	NewTickSize       *[4]byte `parquet:"new_tick_size,optional,decimal(4:9)"`
}

// unscaled is the decimal text s times 10^scale, as an integer.
func unscaled(t *testing.T, s string, scale int) int64 {
	t.Helper()
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		t.Fatalf("decimal %q", s)
	}
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
	if !r.IsInt() {
		t.Fatalf("%q has more than %d decimals", s, scale)
	}
	return r.Num().Int64()
}

func dec4(t *testing.T, s *string) *[4]byte {
	if s == nil {
		return nil
	}
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(int32(unscaled(t, *s, 4))))
	return &b
}

func dec6(t *testing.T, s *string) *[8]byte {
	if s == nil {
		return nil
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(unscaled(t, *s, 6)))
	return &b
}

// TestPMXTTypedColumns imports a pmxt-v2 hour whose columns carry the
// archive's own types (decimals, an integer fee): the same market as from
// the same events written as text, where the decimals were refused.
func TestPMXTTypedColumns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	evs := fx.eventsOf(fx.known)
	dir := t.TempDir()
	text, typed := filepath.Join(dir, "text.parquet"), filepath.Join(dir, "typed.parquet")
	rows := pmxtRows(evs)
	writePMXT(t, text, rows)
	out := make([]pmxtTypedRow, len(rows))
	for i, r := range rows {
		out[i] = pmxtTypedRow{TimestampReceived: r.TimestampReceived, Timestamp: r.Timestamp, Market: r.Market, EventType: r.EventType,
			AssetID: r.AssetID, Bids: r.Bids, Asks: r.Asks, Price: dec4(t, r.Price), Size: dec6(t, r.Size), Side: r.Side,
			BestBid: dec4(t, r.BestBid), BestAsk: dec4(t, r.BestAsk), TransactionHash: r.TransactionHash,
			OldTickSize: dec4(t, r.OldTickSize), NewTickSize: dec4(t, r.NewTickSize)}
		if r.FeeRateBps != nil {
			f := int32(unscaled(t, *r.FeeRateBps, 0))
			out[i].FeeRateBps = &f
		}
	}
	writePMXT(t, typed, out)
	imp := func(name string) ([]store.Snapshot, []store.MarketTrade, store.Market) {
		t.Helper()
		st := memory.New()
		if _, err := archive.Import(ctx, st, archive.Options{Format: archive.PMXTv2, Files: []string{name}, Markets: []store.Market{fx.known}, Prices: fx.klines(t)}); err != nil {
			t.Fatalf("%s: %v", filepath.Base(name), err)
		}
		ts, _, err := st.ListMarketTrades(ctx, fx.known.Slug, store.MarketTradeQuery{Ascending: true})
		if err != nil {
			t.Fatal(err)
		}
		m, err := st.GetMarket(ctx, fx.known.Slug)
		if err != nil {
			t.Fatal(err)
		}
		return snapshotsOf(t, st, fx.known.Slug), ts, m
	}
	wantSnaps, wantTrades, wantMarket := imp(text)
	gotSnaps, gotTrades, gotMarket := imp(typed)
	if len(wantSnaps) < 100 || len(wantTrades) == 0 || !reflect.DeepEqual(gotSnaps, wantSnaps) || !reflect.DeepEqual(gotTrades, wantTrades) ||
		!reflect.DeepEqual(gotMarket.TickSizeChanges, wantMarket.TickSizeChanges) {
		t.Errorf("typed columns: %d snapshots, %d trades, ticks %v; as text %d, %d, %v (or they differ)",
			len(gotSnaps), len(gotTrades), gotMarket.TickSizeChanges, len(wantSnaps), len(wantTrades), wantMarket.TickSizeChanges)
	}
}
