package archive_test

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// fxHour is the hour the generated archives hold.
var fxHour = time.Date(2026, 5, 12, 13, 0, 0, 0, time.UTC)

type fxSet struct {
	known, unknown store.Market
	events         []fxEvent
	silence        time.Duration
}

// eventsOf is the set's events of market m, in the order they were
// received.
func (s fxSet) eventsOf(m store.Market) []fxEvent {
	var evs []fxEvent
	for _, e := range s.events {
		if e.market == m.ConditionID {
			evs = append(evs, e)
		}
	}
	slices.SortStableFunc(evs, func(a, b fxEvent) int { return cmp.Compare(a.received, b.received) })
	return evs
}

// newFxSet generates a known market's stream (with a silence) and an
// unknown market's, inside fxHour.
func newFxSet() fxSet {
	known := fxMarket(store.BTC, fxHour.Add(10*time.Minute), 1)
	unknown := fxMarket(store.ETH, fxHour.Add(10*time.Minute), 2)
	s := fxSet{known: known, unknown: unknown, silence: 5 * time.Second}
	s.events = append(fxStream(known, known.StartTime.Add(-20*time.Second), known.EndTime.Add(10*time.Second), 1, s.silence),
		fxStream(unknown, unknown.StartTime.Add(-20*time.Second), unknown.EndTime, 2, 0)...)
	return s
}

// klines gives BTC 1 s klines from the hour's start to 30 s before the
// known market ends: its last 30 s have no coin price.
func (s fxSet) klines(t *testing.T) *archive.CoinPrices {
	cp := archive.NewCoinPrices()
	writeKlines(t, cp, store.BTC, fxHour, s.known.EndTime.Add(-30*time.Second), func(at time.Time) float64 { return 80000 + float64(at.Unix()%97) })
	return cp
}

func snapshotsOf(t *testing.T, st store.Store, slug string) []store.Snapshot {
	t.Helper()
	out, _, err := st.ListSnapshots(context.Background(), slug, store.SnapshotQuery{Ascending: true, WithBooks: true})
	if err != nil {
		t.Fatalf("snapshots of %s: %v", slug, err)
	}
	return out
}

// TestFormatsAgree imports one generated stream written both ways: the
// two imports must be the same (one importer), and each must follow the
// rules: snapshots on the grid inside the window, none after a silence
// until both books come back, none without a coin price, those stretches
// recorded as gaps, the unknown market skipped and counted, trades and
// tick changes kept, and a re-run changing nothing.
func TestFormatsAgree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	dir := t.TempDir()
	jsonl := filepath.Join(dir, "dump.jsonl")
	writeJSONL(t, jsonl, fx.events)
	pq := filepath.Join(dir, "2026-05-12T13.parquet")
	writePMXT(t, pq, pmxtRows(fx.events))

	stores := map[archive.Format]*memory.Store{}
	for _, c := range []struct {
		f    archive.Format
		file string
	}{{archive.WSJSONL, jsonl}, {archive.PMXTv2, pq}} {
		st := memory.New()
		sum, err := archive.Import(ctx, st, archive.Options{Format: c.f, Files: []string{c.file}, Markets: []store.Market{fx.known}, Prices: fx.klines(t)})
		if err != nil {
			t.Fatalf("%s: %v", c.f, err)
		}
		if !sum.Fresh || sum.Import.Markets != 1 || sum.Import.Snapshots == 0 || sum.Import.Trades == 0 {
			t.Fatalf("%s: summary %+v", c.f, sum)
		}
		if sum.Skipped == 0 || sum.SkippedMarkets != 1 {
			t.Errorf("%s: skipped %d events of %d markets, want the unknown market's", c.f, sum.Skipped, sum.SkippedMarkets)
		}
		if sum.NoPrice == 0 {
			t.Errorf("%s: no instant lacked a coin price, but the klines stop 30 s before the end", c.f)
		}
		if _, err := st.GetMarket(ctx, fx.unknown.Slug); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: the unknown market was stored (%v)", c.f, err)
		}
		m, err := st.GetMarket(ctx, fx.known.Slug)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(m.DataSources, []string{string(c.f)}) || len(m.TickSizeChanges) == 0 {
			t.Errorf("%s: market sources %v, %d tick changes", c.f, m.DataSources, len(m.TickSizeChanges))
		}
		stores[c.f] = st

		// The same inputs again: nothing changes.
		again, err := archive.Import(ctx, st, archive.Options{Format: c.f, Files: []string{c.file}, Markets: []store.Market{fx.known}, Prices: fx.klines(t)})
		if err != nil || again.Fresh || again.Import.ID != sum.Import.ID {
			t.Errorf("%s: re-run %+v %v, want the first import back", c.f, again, err)
		}
		if imps, _ := st.ListImports(ctx); len(imps) != 1 {
			t.Errorf("%s: %d imports after a re-run", c.f, len(imps))
		}
	}

	a, b := snapshotsOf(t, stores[archive.WSJSONL], fx.known.Slug), snapshotsOf(t, stores[archive.PMXTv2], fx.known.Slug)
	if len(a) != len(b) || len(a) < 500 {
		t.Fatalf("ws-jsonl %d snapshots, pmxt-v2 %d", len(a), len(b))
	}
	for i := range a {
		if !a[i].Time.Equal(b[i].Time) || !sameSnapshot(a[i], b[i]) {
			t.Fatalf("snapshot %d: ws-jsonl %s %s, pmxt-v2 %s %s", i, a[i].Time, fmtSnap(a[i]), b[i].Time, fmtSnap(b[i]))
		}
	}
	ta, _, _ := stores[archive.WSJSONL].ListMarketTrades(ctx, fx.known.Slug, store.MarketTradeQuery{Ascending: true})
	tb, _, _ := stores[archive.PMXTv2].ListMarketTrades(ctx, fx.known.Slug, store.MarketTradeQuery{Ascending: true})
	if !slices.Equal(ta, tb) || len(ta) == 0 {
		t.Errorf("trades: ws-jsonl %d, pmxt-v2 %d", len(ta), len(tb))
	}

	// The rules, on one of them.
	st := stores[archive.PMXTv2]
	var silentFrom, back time.Time // the last event before the silence, the second book after it
	var lastEv time.Time
	for _, e := range fx.events {
		if e.market != fx.known.ConditionID {
			continue
		}
		at := time.UnixMilli(e.ts).UTC()
		if silentFrom.IsZero() && !lastEv.IsZero() && at.Sub(lastEv) > 3*time.Second {
			silentFrom = lastEv
		}
		if !silentFrom.IsZero() && back.IsZero() && e.kind == "book" && e.asset == fx.known.ClobTokenDown {
			back = at
		}
		lastEv = at
	}
	if silentFrom.IsZero() || back.IsZero() {
		t.Fatal("the fixture has no silence")
	}
	for _, s := range a {
		if s.Time.Before(fx.known.StartTime) || !s.Time.Before(fx.known.EndTime) || s.Time.UnixMilli()%300 != 0 {
			t.Fatalf("snapshot at %s: off the grid or outside the window", s.Time)
		}
		if s.Time.After(silentFrom.Add(3*time.Second)) && s.Time.Before(back) {
			t.Fatalf("snapshot at %s, inside the silence from %s until both books came back at %s", s.Time, silentFrom, back)
		}
		if !s.Time.Before(fx.known.EndTime.Add(-30 * time.Second)) {
			t.Fatalf("snapshot at %s, where the klines end", s.Time)
		}
	}
	gaps, err := st.ListGaps(ctx, fx.known.Slug)
	if err != nil {
		t.Fatal(err)
	}
	covers := func(from, to time.Time) bool {
		return slices.ContainsFunc(gaps, func(g store.Gap) bool { return !g.From.After(from) && !g.To.Before(to) })
	}
	if !covers(silentFrom.Add(3*time.Second+300*time.Millisecond), back) || !covers(fx.known.EndTime.Add(-29*time.Second), fx.known.EndTime) {
		t.Errorf("gaps %v: want the silence (%s to %s) and the stretch without klines (to %s)", gaps, silentFrom, back, fx.known.EndTime)
	}
}

// TestBadInput checks that bad input names the file, line or row and
// field, and leaves the store as it was.
func TestBadInput(t *testing.T) {
	t.Parallel()
	fx := newFxSet()
	good := fx.events[:200]
	tests := []struct {
		name    string
		format  archive.Format
		write   func(t *testing.T, path string)
		markets []store.Market
		want    []string
	}{
		{"truncated gzip", archive.WSJSONL, func(t *testing.T, path string) {
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			for _, e := range good {
				zw.Write(append(e.frame(), '\n'))
			}
			zw.Close()
			os.WriteFile(path, buf.Bytes()[:buf.Len()*2/3], 0o644)
		}, []store.Market{fx.known}, []string{"dump", "line ", "truncated"}},
		{"frame not JSON", archive.WSJSONL, func(t *testing.T, path string) {
			var buf bytes.Buffer
			for _, e := range good[:50] {
				buf.Write(append(e.frame(), '\n'))
			}
			buf.WriteString("{\"event_type\":\"book\",\"asset_id\":\n")
			os.WriteFile(path, buf.Bytes(), 0o644)
		}, []store.Market{fx.known}, []string{"dump", "line 51", "not JSON"}},
		{"bad field", archive.WSJSONL, func(t *testing.T, path string) {
			var buf bytes.Buffer
			for _, e := range good[:10] {
				buf.Write(append(e.frame(), '\n'))
			}
			buf.WriteString(`{"event_type":"price_change","market":"` + fx.known.ConditionID + `","timestamp":"1","price_changes":[{"asset_id":"` + fx.known.ClobTokenUp + `","price":"1.5","size":"3","side":"BUY"}]}` + "\n")
			os.WriteFile(path, buf.Bytes(), 0o644)
		}, []store.Market{fx.known}, []string{"dump", "line 11", "field price"}},
		{"line too long", archive.WSJSONL, func(t *testing.T, path string) {
			var buf bytes.Buffer
			for _, e := range good[:10] {
				buf.Write(append(e.frame(), '\n'))
			}
			buf.WriteString(`{"event_type":"book","pad":"` + strings.Repeat("a", 65<<20) + `"}` + "\n")
			for _, e := range good[10:20] {
				buf.Write(append(e.frame(), '\n'))
			}
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}, []store.Market{fx.known}, []string{"dump: line 11:", "longer than 64 MiB"}},
		{"negative size", archive.WSJSONL, badChange(fx, good, `"price":"0.5","size":"-5","side":"BUY"`, `"1"`), []store.Market{fx.known}, []string{"line 11", "field size"}},
		{"no side", archive.WSJSONL, badChange(fx, good, `"price":"0.5","size":"5","side":"UP"`, `"1"`), []store.Market{fx.known}, []string{"line 11", "field side"}},
		{"wrong JSON type", archive.WSJSONL, func(t *testing.T, path string) {
			var buf bytes.Buffer
			for _, e := range good[:10] {
				buf.Write(append(e.frame(), '\n'))
			}
			buf.WriteString(`{"event_type":"book","market":"` + fx.known.ConditionID + `","asset_id":"` + fx.known.ClobTokenUp + `","timestamp":"1","bids":5,"asks":[]}` + "\n")
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}, []store.Market{fx.known}, []string{"line 11", "field bids"}},
		{"bad timestamp", archive.WSJSONL, badChange(fx, good, `"price":"0.5","size":"5","side":"BUY"`, `"abc"`), []store.Market{fx.known}, []string{"line 11", "field timestamp"}},
		// A time in µs or in s, not ms: years from now, or in 1970, where
		// the first finished the market (no snapshot after it) and a
		// trade so dated was stored in the year 58331.
		{"timestamp in µs", archive.WSJSONL, badChange(fx, good, `"price":"0.5","size":"5","side":"BUY"`, `"`+strconv.FormatInt(good[10].ts*1000, 10)+`"`), []store.Market{fx.known}, []string{"line 11", "field timestamp"}},
		{"timestamp in s", archive.WSJSONL, badChange(fx, good, `"price":"0.5","size":"5","side":"BUY"`, `"`+strconv.FormatInt(good[10].ts/1000, 10)+`"`), []store.Market{fx.known}, []string{"line 11", "field timestamp"}},
		{"unknown market without --markets", archive.WSJSONL, func(t *testing.T, path string) {
			writeJSONL(t, path, good)
		}, nil, []string{"dump", "line 1", "field market", "--markets"}},
		{"Parquet missing a column", archive.PMXTv2, func(t *testing.T, path string) {
			type partial struct {
				TimestampReceived int64  `parquet:"timestamp_received"`
				Timestamp         int64  `parquet:"timestamp"`
				Market            string `parquet:"market"`
				EventType         string `parquet:"event_type"`
			}
			writePMXT(t, path, []partial{{1, 1, "0x1", "book"}})
		}, []store.Market{fx.known}, []string{"dump", "asset_id", "16 columns"}},
		{"Parquet row without an event type", archive.PMXTv2, func(t *testing.T, path string) {
			rows := pmxtRows(fx.events)
			for i := range rows {
				if rows[i].Market == fx.known.ConditionID {
					rows[i].EventType = ""
					break
				}
			}
			writePMXT(t, path, rows)
		}, []store.Market{fx.known}, []string{"dump", "row ", "field event_type", "missing"}},
		{"Parquet bad number", archive.PMXTv2, func(t *testing.T, path string) {
			rows := pmxtRows(fx.events)
			for i := range rows {
				if rows[i].Market == fx.known.ConditionID && rows[i].EventType == "last_trade_price" {
					bad := "cheap"
					rows[i].Price = &bad
					break
				}
			}
			writePMXT(t, path, rows)
		}, []store.Market{fx.known}, []string{"dump", "row ", "field price"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "dump")
			tc.write(t, path)
			st := memory.New()
			_, err := archive.Import(context.Background(), st, archive.Options{Format: tc.format, Files: []string{path}, Markets: tc.markets, Prices: fx.klines(t)})
			if err == nil {
				t.Fatal("imported bad input")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if ms, n, _ := st.ListMarkets(context.Background(), store.MarketFilter{}); n != 0 {
				t.Errorf("a failed import stored %d markets: %v", n, ms)
			}
			if imps, _ := st.ListImports(context.Background()); len(imps) != 0 {
				t.Errorf("a failed import was listed: %+v", imps)
			}
		})
	}
}

// badChange writes ten good frames, then a price_change of the known
// market's Up token with the change's fields and the frame's timestamp.
func badChange(fx fxSet, good []fxEvent, change, timestamp string) func(t *testing.T, path string) {
	return func(t *testing.T, path string) {
		var buf bytes.Buffer
		for _, e := range good[:10] {
			buf.Write(append(e.frame(), '\n'))
		}
		buf.WriteString(`{"event_type":"price_change","market":"` + fx.known.ConditionID + `","timestamp":` + timestamp +
			`,"price_changes":[{"asset_id":"` + fx.known.ClobTokenUp + `",` + change + `}]}` + "\n")
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMissingHour imports two PMXT hours with the one between them
// missing: the summary names it, the market's books are unknown through
// it, and it is a gap.
func TestMissingHour(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := fxMarket(store.BTC, fxHour, 3)
	m.MarketType, m.EndTime = store.H4, fxHour.Add(4*time.Hour)
	m.Slug = "btc-updown-4hr-" + strconv.FormatInt(fxHour.Unix(), 10)
	dir := t.TempDir()
	h13, h15 := filepath.Join(dir, "13.parquet"), filepath.Join(dir, "15.parquet")
	writePMXT(t, h15, pmxtRows(fxStream(m, fxHour.Add(2*time.Hour), fxHour.Add(2*time.Hour+10*time.Minute), 4, 0)))
	writePMXT(t, h13, pmxtRows(fxStream(m, fxHour, fxHour.Add(10*time.Minute), 3, 0)))
	cp := archive.NewCoinPrices()
	writeKlines(t, cp, store.BTC, fxHour, fxHour.Add(3*time.Hour), func(time.Time) float64 { return 81000 })
	st := memory.New()
	sum, err := archive.Import(ctx, st, archive.Options{Format: archive.PMXTv2, Files: []string{h15, h13}, Markets: []store.Market{m}, Prices: cp})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.MissingHours) != 1 || !sum.MissingHours[0].Equal(fxHour.Add(time.Hour)) {
		t.Fatalf("missing hours %v, want [%s]", sum.MissingHours, fxHour.Add(time.Hour))
	}
	if !sum.Import.From.Equal(fxHour) || !sum.Import.To.Equal(fxHour.Add(3*time.Hour)) {
		t.Errorf("import covers %s to %s, want the three hours", sum.Import.From, sum.Import.To)
	}
	gaps, err := st.ListGaps(ctx, m.Slug)
	if err != nil {
		t.Fatal(err)
	}
	hour14 := slices.ContainsFunc(gaps, func(g store.Gap) bool {
		return !g.From.After(fxHour.Add(time.Hour)) && !g.To.Before(fxHour.Add(2*time.Hour))
	})
	if !hour14 {
		t.Errorf("gaps %v: none covers the missing hour", gaps)
	}
	for _, s := range snapshotsOf(t, st, m.Slug) {
		if s.Time.After(fxHour.Add(10*time.Minute+3*time.Second)) && s.Time.Before(fxHour.Add(2*time.Hour)) {
			t.Fatalf("snapshot at %s, in the hours without data", s.Time)
		}
	}
}

// TestChainlinkPrices imports a ws-jsonl dump whose coin price is the
// Chainlink frames it carries beside the market channel's (no klines):
// snapshots take the latest price heard, none is taken before the first,
// and a price frame with a bad value is an error naming its line and
// field.
func TestChainlinkPrices(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	dir := t.TempDir()
	sorted := slices.Clone(fx.events)
	slices.SortStableFunc(sorted, func(a, b fxEvent) int { return cmp.Compare(a.received, b.received) })
	firstPrice := fx.known.StartTime.Add(time.Minute)
	price := func(at time.Time) float64 { return 90000 + float64(at.Unix()%61) }
	write := func(name string, bad bool) (string, int) {
		var buf bytes.Buffer
		next, line, badLine := firstPrice, 0, 0
		for _, e := range sorted {
			for !next.After(time.UnixMilli(e.received)) {
				v := fmt.Sprint(price(next))
				if bad && badLine == 0 && next.Sub(firstPrice) > time.Minute {
					v, badLine = "0", line+1
				}
				fmt.Fprintf(&buf, `{"topic":"crypto_prices_chainlink","type":"update","timestamp":%d,"payload":{"symbol":"btc/usd","timestamp":%d,"value":%s}}`+"\n",
					next.UnixMilli(), next.UnixMilli(), v)
				line++
				next = next.Add(time.Second)
			}
			buf.Write(append(e.frame(), '\n'))
			line++
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return path, badLine
	}
	good, _ := write("good.jsonl", false)
	st := memory.New()
	sum, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{good}, Markets: []store.Market{fx.known}, SkipUnknown: true})
	if err != nil {
		t.Fatal(err)
	}
	snaps := snapshotsOf(t, st, fx.known.Slug)
	if len(snaps) < 100 || sum.NoPrice == 0 {
		t.Fatalf("%d snapshots, %d instants without a price: want many, and some before the first price", len(snaps), sum.NoPrice)
	}
	for _, s := range snaps {
		if s.Time.Before(firstPrice) {
			t.Fatalf("a snapshot at %s, before the first price at %s", s.Time, firstPrice)
		}
		// The latest price heard: the second's, or the one before when
		// the frames of that instant came later.
		if at := s.Time.Truncate(time.Second); s.CoinPrice != price(at) && s.CoinPrice != price(at.Add(-time.Second)) {
			t.Fatalf("snapshot at %s: coin price %v, want %v", s.Time, s.CoinPrice, price(at))
		}
	}

	bad, badLine := write("bad.jsonl", true)
	_, err = archive.Import(ctx, memory.New(), archive.Options{Format: archive.WSJSONL, Files: []string{bad}, Markets: []store.Market{fx.known}, SkipUnknown: true})
	var ie *archive.InputError
	if !errors.As(err, &ie) || ie.Pos.Line != int64(badLine) || ie.Field != "payload" {
		t.Errorf("a bad price frame on line %d: %v, want an input error naming the line and payload", badLine, err)
	}
}

// beginsLate is a store whose imports cannot begin until their context
// ends (or, so that a test fails rather than hangs, a while passes).
type beginsLate struct{ *memory.Store }

var errBeganLate = errors.New("the import was not ended while it waited to begin")

func (s beginsLate) BeginImport(ctx context.Context) (store.ImportTx, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(10 * time.Second):
		return nil, errBeganLate
	}
}

// TestRerunEndedUnderWay re-runs an import on a store where an import's
// writing waits: the digest of the inputs, made while the import goes on
// (writes do not wait for it), finds the first import and ends this one
// where it is, with the first import back and nothing changed. (An
// import that skipped markets is run again whole, to find whether it
// would skip the same ones: TestSkippedMarketsImportedLater.)
func TestRerunEndedUnderWay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	jsonl := filepath.Join(t.TempDir(), "dump.jsonl")
	writeJSONL(t, jsonl, fx.eventsOf(fx.known))
	st := memory.New()
	opt := archive.Options{Format: archive.WSJSONL, Files: []string{jsonl}, Markets: []store.Market{fx.known}, Prices: fx.klines(t)}
	first, err := archive.Import(ctx, st, opt)
	if err != nil {
		t.Fatal(err)
	}
	before := snapshotsOf(t, st, fx.known.Slug)
	again, err := archive.Import(ctx, beginsLate{st}, opt)
	if err != nil || again.Fresh || again.Import.ID != first.Import.ID {
		t.Fatalf("re-run: %+v, %v; want the first import back", again, err)
	}
	if imps, _ := st.ListImports(ctx); len(imps) != 1 {
		t.Errorf("%d imports after a re-run", len(imps))
	}
	if after := snapshotsOf(t, st, fx.known.Slug); len(after) != len(before) {
		t.Errorf("a re-run changed the snapshots: %d, were %d", len(after), len(before))
	}
}

// TestPMXTManyMarkets imports an hour of six markets, two of them not in
// the markets file, as pmxt-v2 (whose rows are decoded on a goroutine of
// their own, a market ahead of the folding) and as ws-jsonl: the same
// markets, snapshots, trades and skipped events. The same hour with a bad
// row in a market after others were read fails naming the row and field,
// and stores nothing.
func TestPMXTManyMarkets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var all []store.Market
	var events []fxEvent
	for i, c := range []store.Coin{store.BTC, store.ETH, store.SOL, store.BTC, store.ETH, store.SOL} {
		m := fxMarket(c, fxHour.Add(time.Duration(5*i)*time.Minute), 10+i)
		all = append(all, m)
		events = append(events, fxStream(m, m.StartTime.Add(-10*time.Second), m.EndTime, uint64(10+i), 0)...)
	}
	known := []store.Market{all[0], all[2], all[3], all[5]}
	prices := func() *archive.CoinPrices {
		cp := archive.NewCoinPrices()
		for _, c := range []store.Coin{store.BTC, store.ETH, store.SOL} {
			writeKlines(t, cp, c, fxHour, fxHour.Add(time.Hour), func(at time.Time) float64 { return 1000 + float64(at.Unix()%89) })
		}
		return cp
	}
	dir := t.TempDir()
	jsonl, pq := filepath.Join(dir, "dump.jsonl"), filepath.Join(dir, "2026-05-12T13.parquet")
	byTime := slices.Clone(events)
	slices.SortStableFunc(byTime, func(a, b fxEvent) int { return cmp.Compare(a.received, b.received) })
	writeJSONL(t, jsonl, byTime)
	writePMXT(t, pq, pmxtRows(events))

	sums := map[archive.Format]archive.Summary{}
	stores := map[archive.Format]*memory.Store{}
	for f, file := range map[archive.Format]string{archive.WSJSONL: jsonl, archive.PMXTv2: pq} {
		st := memory.New()
		sum, err := archive.Import(ctx, st, archive.Options{Format: f, Files: []string{file}, Markets: known, Prices: prices()})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		sums[f], stores[f] = sum, st
	}
	a, b := sums[archive.WSJSONL], sums[archive.PMXTv2]
	if a.Import.Markets != int64(len(known)) || b.Import.Markets != a.Import.Markets || b.Import.Snapshots != a.Import.Snapshots ||
		b.Import.Trades != a.Import.Trades || b.Skipped != a.Skipped || b.SkippedMarkets != 2 || a.SkippedMarkets != 2 {
		t.Fatalf("ws-jsonl %+v, pmxt-v2 %+v: want %d markets each, the same rows, two markets skipped", a, b, len(known))
	}
	for _, m := range known {
		sa, sb := snapshotsOf(t, stores[archive.WSJSONL], m.Slug), snapshotsOf(t, stores[archive.PMXTv2], m.Slug)
		if len(sa) < 500 || len(sa) != len(sb) {
			t.Fatalf("%s: ws-jsonl %d snapshots, pmxt-v2 %d", m.Slug, len(sa), len(sb))
		}
		for i := range sa {
			if !sa[i].Time.Equal(sb[i].Time) || !sameSnapshot(sa[i], sb[i]) {
				t.Fatalf("%s: snapshot %d: ws-jsonl %s %s, pmxt-v2 %s %s", m.Slug, i, sa[i].Time, fmtSnap(sa[i]), sb[i].Time, fmtSnap(sb[i]))
			}
		}
		ta, _, _ := stores[archive.WSJSONL].ListMarketTrades(ctx, m.Slug, store.MarketTradeQuery{Ascending: true})
		tb, _, _ := stores[archive.PMXTv2].ListMarketTrades(ctx, m.Slug, store.MarketTradeQuery{Ascending: true})
		if len(ta) == 0 || !slices.Equal(ta, tb) {
			t.Errorf("%s: trades: ws-jsonl %d, pmxt-v2 %d", m.Slug, len(ta), len(tb))
		}
	}

	// A bad number in the last market the file holds (sorted by condition
	// id): the markets before it were read and folded by then.
	rows := pmxtRows(events)
	last := slices.MaxFunc(known, func(x, y store.Market) int { return cmp.Compare(x.ConditionID, y.ConditionID) })
	bad := slices.IndexFunc(rows, func(r pmxtRow) bool { return r.Market == last.ConditionID && r.EventType == "last_trade_price" })
	cheap := "cheap"
	rows[bad].Price = &cheap
	badPQ := filepath.Join(dir, "bad", "2026-05-12T13.parquet")
	os.MkdirAll(filepath.Dir(badPQ), 0o755)
	writePMXT(t, badPQ, rows)
	st := memory.New()
	_, err := archive.Import(ctx, st, archive.Options{Format: archive.PMXTv2, Files: []string{badPQ}, Markets: known, Prices: prices()})
	want := fmt.Sprintf("row %d: field price", bad+1)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("bad row: %v, want an error naming %q", err, want)
	}
	if _, n, _ := st.ListMarkets(ctx, store.MarketFilter{}); n != 0 {
		t.Errorf("a failed import stored %d markets", n)
	}
}

// TestEmptyFileImportsNothing: a file without a single event (a download
// cut short, the wrong hour) is an error, and leaves no import recorded.
func TestEmptyFileImportsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	st := memory.New()
	_, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{empty}, Markets: []store.Market{fx.known}, Prices: fx.klines(t)})
	if err == nil || !strings.Contains(err.Error(), "no events") {
		t.Errorf("an empty file: %v, want an error saying it holds no events", err)
	}
	if imps, _ := st.ListImports(ctx); len(imps) != 0 {
		t.Errorf("%d imports recorded for an empty file", len(imps))
	}
}
