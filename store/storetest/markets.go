package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

func marketTests() []test {
	tests := []test{
		{"RoundTrip", testMarketRoundTrip},
		{"NotFound", testMarketNotFound},
		{"UpdateKeepsCreatedAt", testMarketUpdate},
		{"UpdateClearsNullableFields", testMarketUpdateClears},
		{"UpdateMovesInOrder", testMarketUpdateReorders},
		{"CallersCannotMutateStoredData", testMarketCopies},
		{"ExplicitTimestamps", testMarketExplicitTimestamps},
		{"Invalid", testMarketInvalid},
		{"Empty", testMarketsEmpty},
		{"ListFilters", testListMarketsFilters},
		{"ListPaging", testListMarketsPaging},
		{"ListFullRecords", testListMarketsRecords},
		{"NthNewestStart", testNthNewestStart},
		{"PolymarketFieldsUnknown", testMarketPolymarketUnknown},
		{"PolymarketFieldsKeptOnUpdate", testMarketPolymarketKept},
		{"FiftyFiftyWinner", testMarketFiftyFifty},
		{"UpsertNewer", testMarketUpsertNewer},
		{"Swap", testMarketSwap},
		{"EditAfterAnotherWriter", testMarketEdit},
		{"WithoutMarketID", testMarketsWithoutMarketID},
		{"TickChangesKeptInOrder", testMarketTickChangesOrder},
	}
	return append(tests, conflictTests()...)
}

// at is t0 plus some minutes.
func at(minutes int) time.Time { return t0().Add(time.Duration(minutes) * time.Minute) }

// marketSpec describes one market of the fixture.
type marketSpec struct {
	key    string
	coin   store.Coin
	typ    store.MarketType
	start  int    // minutes after t0
	winner string // "" while unresolved
}

// fixtureSpecs is the suite's market set. In start_time descending, slug
// ascending order it reads i c j b h d a k e f g: three markets start at
// t0 (d sorts before a because "btc-updown-15m" < "btc-updown-5m"), two at
// +5 and two at +10, and the insertion order below differs from that order.
func fixtureSpecs() []marketSpec {
	return []marketSpec{
		{"a", store.BTC, store.M5, 0, store.OutcomeUp},
		{"b", store.BTC, store.M5, 5, store.OutcomeDown},
		{"c", store.BTC, store.M5, 10, ""},
		{"d", store.BTC, store.M15, 0, store.OutcomeUp},
		{"e", store.BTC, store.H1, -60, store.OutcomeDown},
		{"f", store.BTC, store.H4, -240, store.OutcomeUp},
		{"g", store.BTC, store.H24, -1440, ""},
		{"h", store.ETH, store.M5, 5, store.OutcomeDown},
		{"i", store.ETH, store.M15, 15, ""},
		{"j", store.SOL, store.M5, 10, ""},
		{"k", store.SOL, store.H1, 0, store.OutcomeUp},
	}
}

// startPriceMicros is each coin's start price in millionths.
func startPriceMicros(c store.Coin) int64 {
	switch c {
	case store.BTC:
		return 97123_450000
	case store.ETH:
		return 3456_780000
	default:
		return 145_123456
	}
}

// newMarket builds a market with every field set, times in a zone other than
// UTC. winner "" leaves it unresolved, with the resolution fields nil.
func newMarket(coin store.Coin, typ store.MarketType, start time.Time, winner string) store.Market {
	slug := fmt.Sprintf("%s-updown-%s-%d", strings.ToLower(string(coin)), typ, start.Unix())
	m := store.Market{
		Slug:           slug,
		MarketID:       "mkt-" + slug,
		EventID:        "evt-" + slug,
		Coin:           coin,
		MarketType:     typ,
		StartTime:      start.In(elsewhere()),
		EndTime:        start.Add(typ.Duration()).In(elsewhere()),
		CoinPriceStart: ptr(micros(startPriceMicros(coin))),
		ConditionID:    "cond-" + slug,
		ClobTokenUp:    "tok-up-" + slug,
		ClobTokenDown:  "tok-down-" + slug,

		UpstreamSlug: fmt.Sprintf("%s-updown-%s-%d", strings.ToLower(string(coin)), strings.TrimSuffix(string(typ), "r"), start.Unix()),
		TakerFeeRate: ptr(micros(70000)),
		FeeExponent:  ptr(1),
		FeeType:      store.FeeTypeCryptoV2,
		// Polymarket's crypto markets' rebate share (REFERENCE.md, Gamma's
		// feeSchedule.rebateRate).
		MakerRebateRate: ptr(micros(200000)),
		TickSize:        ptr(micros(1000)),
		// Times with sub-microsecond digits in another zone: the store keeps
		// them to the microsecond, in UTC.
		TickSizeChanges: []store.TickSizeChange{
			{Time: start.Add(time.Minute + 123456789*time.Nanosecond).In(elsewhere()), TickSize: micros(1000)},
		},
		MinOrderSize: ptr(micros(5_000000)),
		PriceToBeat:  ptr(micros(startPriceMicros(coin))),
	}
	if winner != "" {
		resolve(&m, winner)
	}
	return m
}

// resolve sets the resolution fields; ResolvedAt has sub-microsecond digits
// that the store must drop.
func resolve(m *store.Market, winner string) {
	delta := int64(10_500000)
	if winner == store.OutcomeDown {
		delta = -7_250000
	}
	m.Winner = ptr(winner)
	m.CoinPriceEnd = ptr(micros(startPriceMicros(m.Coin) + delta))
	m.FinalVolume = ptr(micros(123456_789012))
	m.FinalLiquidity = ptr(micros(9876_543210))
	m.ResolvedAt = ptr(m.EndTime.Add(3*time.Second + 123456789*time.Nanosecond))
	m.FinalPrice = ptr(*m.CoinPriceEnd)
	m.ResolutionSource = store.SourceChainlink
}

// fixture is the market set as written, by key.
type fixture struct {
	byKey map[string]store.Market
	keys  []string // insertion order
}

// slugs maps space-separated keys to slugs.
func (fx fixture) slugs(keys string) []string {
	out := []string{}
	for _, k := range strings.Fields(keys) {
		out = append(out, fx.byKey[k].Slug)
	}
	return out
}

// seedMarkets writes the fixture in two batches.
func seedMarkets(t *testing.T, s store.Store) fixture {
	t.Helper()
	fx := fixture{byKey: map[string]store.Market{}}
	var all []store.Market
	for _, sp := range fixtureSpecs() {
		m := newMarket(sp.coin, sp.typ, at(sp.start), sp.winner)
		if sp.key == "g" {
			m.CoinPriceStart = nil // not yet recorded
		}
		fx.byKey[sp.key] = m
		fx.keys = append(fx.keys, sp.key)
		all = append(all, m)
	}
	mustOK(t, s.UpsertMarkets(t.Context(), all[:6]), "UpsertMarkets first batch")
	mustOK(t, s.UpsertMarkets(t.Context(), all[6:]), "UpsertMarkets second batch")
	return fx
}

// upsert writes one market and reads it back.
func upsert(t *testing.T, s store.Store, m store.Market) store.Market {
	t.Helper()
	mustOK(t, s.UpsertMarkets(t.Context(), []store.Market{m}), "UpsertMarkets "+m.Slug)
	got, err := s.GetMarket(t.Context(), m.Slug)
	mustOK(t, err, "GetMarket "+m.Slug)
	return got
}

func slugsOf(ms []store.Market) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, m.Slug)
	}
	return out
}

func testMarketRoundTrip(t *testing.T, s store.Store) {
	ctx := t.Context()
	before := time.Now()
	fx := seedMarkets(t, s)
	after := time.Now()
	for _, key := range fx.keys {
		want := fx.byKey[key]
		got, err := s.GetMarket(ctx, want.Slug)
		mustOK(t, err, "GetMarket")
		checkMarket(t, "GetMarket", want, got)
		checkRecent(t, want.Slug+" CreatedAt", got.CreatedAt, before, after)
		checkRecent(t, want.Slug+" UpdatedAt", got.UpdatedAt, before, after)

		byID, err := s.GetMarketByMarketID(ctx, want.MarketID)
		mustOK(t, err, "GetMarketByMarketID")
		checkMarket(t, "GetMarketByMarketID", got, byID)
	}
}

func testMarketNotFound(t *testing.T, s store.Store) {
	ctx := t.Context()
	lookups := func(stage string) {
		_, err := s.GetMarket(ctx, "btc-updown-5m-0")
		wantErr(t, err, store.ErrNotFound, stage+": GetMarket of an unknown slug")
		_, err = s.GetMarketByMarketID(ctx, "mkt-unknown")
		wantErr(t, err, store.ErrNotFound, stage+": GetMarketByMarketID of an unknown id")
	}
	lookups("empty store")
	fx := seedMarkets(t, s)
	lookups("seeded store")
	// A slug is not a market id and a market id is not a slug.
	_, err := s.GetMarketByMarketID(ctx, fx.byKey["a"].Slug)
	wantErr(t, err, store.ErrNotFound, "GetMarketByMarketID of a slug")
	_, err = s.GetMarket(ctx, fx.byKey["a"].MarketID)
	wantErr(t, err, store.ErrNotFound, "GetMarket of a market id")
}

// testMarketsWithoutMarketID: markets without an upstream id (an import
// of a file with only the required columns) are not indexed by it: any
// number of them are stored, in one batch or apart, and the empty id
// finds none.
func testMarketsWithoutMarketID(t *testing.T, s store.Store) {
	ctx := t.Context()
	a, b, c := newMarket(store.BTC, store.M5, at(0), ""), newMarket(store.BTC, store.M5, at(5), ""), newMarket(store.ETH, store.M5, at(0), "")
	for _, m := range []*store.Market{&a, &b, &c} {
		m.MarketID = ""
	}
	mustOK(t, s.UpsertMarkets(ctx, []store.Market{a, b}), "two markets without a market_id in one batch")
	mustOK(t, s.UpsertMarkets(ctx, []store.Market{c}), "a third apart")
	for _, m := range []store.Market{a, b, c} {
		if got := get(t, s, m.Slug); got.MarketID != "" {
			t.Errorf("%s: market_id %q, want none", m.Slug, got.MarketID)
		}
	}
	_, err := s.GetMarketByMarketID(ctx, "")
	wantErr(t, err, store.ErrNotFound, "GetMarketByMarketID of the empty id")
}

// changed returns m with every field but Slug and the timestamps changed.
func changed(m store.Market) store.Market {
	start := m.StartTime.Add(time.Minute)
	m.MarketID += "-new"
	m.EventID += "-new"
	m.Coin = store.ETH
	m.MarketType = store.M15
	m.StartTime = start
	m.EndTime = start.Add(store.M15.Duration())
	m.CoinPriceStart = ptr(micros(1_000001))
	m.ConditionID += "-new"
	m.ClobTokenUp += "-new"
	m.ClobTokenDown += "-new"
	resolve(&m, store.OutcomeDown)
	m.UpstreamSlug += "-new"
	m.TakerFeeRate = ptr(micros(62500))
	m.FeeExponent = ptr(2)
	m.FeeType = store.FeeTypeCrypto
	m.MakerRebateRate = ptr(micros(250000))
	m.TickSize = ptr(micros(10000))
	m.TickSizeChanges = append(slices.Clone(m.TickSizeChanges),
		store.TickSizeChange{Time: start.Add(2 * time.Minute), TickSize: micros(10000)})
	m.MinOrderSize = ptr(micros(1_000000))
	m.PriceToBeat = ptr(micros(1_000001))
	m.ResolutionSource = store.SourceRecorded
	return m
}

func testMarketUpdate(t *testing.T, s store.Store) {
	ctx := t.Context()
	orig := newMarket(store.BTC, store.M5, t0(), "")
	first := upsert(t, s, orig)
	tick()

	upd := changed(orig)
	upd.CreatedAt = t0() // ignored: an update keeps the stored CreatedAt
	got := upsert(t, s, upd)

	want := upd
	want.CreatedAt = first.CreatedAt
	checkMarket(t, "after update", want, got)
	if !got.UpdatedAt.After(first.UpdatedAt) {
		t.Errorf("UpdatedAt = %v after update, want later than %v", got.UpdatedAt, first.UpdatedAt)
	}

	_, err := s.GetMarketByMarketID(ctx, orig.MarketID)
	wantErr(t, err, store.ErrNotFound, "GetMarketByMarketID of the replaced market id")
	byID, err := s.GetMarketByMarketID(ctx, upd.MarketID)
	mustOK(t, err, "GetMarketByMarketID of the new market id")
	checkMarket(t, "GetMarketByMarketID after update", got, byID)

	n, err := s.CountMarkets(ctx, store.MarketFilter{})
	mustOK(t, err, "CountMarkets")
	if n != 1 {
		t.Errorf("CountMarkets = %d after updating one market, want 1", n)
	}
}

func testMarketUpdateClears(t *testing.T, s store.Store) {
	resolved := newMarket(store.SOL, store.H1, t0(), store.OutcomeUp)
	first := upsert(t, s, resolved)

	cleared := resolved
	cleared.CoinPriceStart = nil
	cleared.CoinPriceEnd = nil
	cleared.Winner = nil
	cleared.FinalVolume = nil
	cleared.FinalLiquidity = nil
	cleared.ResolvedAt = nil
	cleared.UpstreamSlug = ""
	cleared.TakerFeeRate = nil
	cleared.FeeExponent = nil
	cleared.FeeType = ""
	cleared.MakerRebateRate = nil
	cleared.TickSize = nil
	cleared.TickSizeChanges = nil
	cleared.MinOrderSize = nil
	cleared.ResolutionSource = ""
	cleared.PriceToBeat = nil
	cleared.FinalPrice = nil
	got := upsert(t, s, cleared)

	want := cleared
	want.CreatedAt = first.CreatedAt
	checkMarket(t, "after clearing", want, got)
}

func testMarketUpdateReorders(t *testing.T, s store.Store) {
	fx := seedMarkets(t, s)
	// g, the oldest, moves to the newest; i, the newest, to t0, where it
	// sorts between a and k by slug; nothing else changes.
	g, i := fx.byKey["g"], fx.byKey["i"]
	g.StartTime, g.EndTime = at(30), at(30).Add(g.MarketType.Duration())
	i.StartTime, i.EndTime = at(0), at(0).Add(i.MarketType.Duration())
	mustOK(t, s.UpsertMarkets(t.Context(), []store.Market{g, i}), "UpsertMarkets")

	want := fx.slugs("g c j b h d a i k e f")
	checkList(t, s, store.MarketFilter{}, want, len(want))
	checkList(t, s, store.MarketFilter{Coin: store.BTC, Limit: 2}, fx.slugs("g c"), 7)
	checkList(t, s, store.MarketFilter{StartAfter: ptr(at(15))}, fx.slugs("g"), 1)
	got, ok, err := s.NthNewestStart(t.Context(), store.ETH, store.M15, 1, at(1<<20))
	mustOK(t, err, "NthNewestStart")
	if !ok || !got.Equal(at(0)) {
		t.Errorf("NthNewestStart(ETH, 15m, 1) = %v, %v; want %v, true", got, ok, at(0))
	}
}

func testMarketCopies(t *testing.T, s store.Store) {
	ctx := t.Context()
	in := newMarket(store.BTC, store.M5, t0(), store.OutcomeUp)
	want := in
	want.CoinPriceStart, want.CoinPriceEnd = ptr(*in.CoinPriceStart), ptr(*in.CoinPriceEnd)
	want.Winner, want.ResolvedAt = ptr(*in.Winner), ptr(*in.ResolvedAt)
	want.FinalVolume, want.FinalLiquidity = ptr(*in.FinalVolume), ptr(*in.FinalLiquidity)
	want.TakerFeeRate, want.FeeExponent = ptr(*in.TakerFeeRate), ptr(*in.FeeExponent)
	want.MakerRebateRate = ptr(*in.MakerRebateRate)
	want.TickSize, want.TickSizeChanges = ptr(*in.TickSize), slices.Clone(in.TickSizeChanges)
	want.MinOrderSize = ptr(*in.MinOrderSize)
	want.PriceToBeat, want.FinalPrice = ptr(*in.PriceToBeat), ptr(*in.FinalPrice)
	stored := upsert(t, s, in)
	want.CreatedAt, want.UpdatedAt = stored.CreatedAt, stored.UpdatedAt

	scribble := func(m store.Market) {
		*m.CoinPriceStart, *m.CoinPriceEnd = 1, 2
		*m.Winner = "Sideways"
		*m.FinalVolume, *m.FinalLiquidity = 3, 4
		*m.ResolvedAt = time.Time{}
		*m.TakerFeeRate, *m.FeeExponent, *m.TickSize, *m.MinOrderSize = 5, 6, 7, 8
		*m.PriceToBeat, *m.FinalPrice = 9, 10
		*m.MakerRebateRate = 12
		m.TickSizeChanges[0] = store.TickSizeChange{TickSize: 11}
	}
	scribble(in)
	checkMarket(t, "after changing what was written", want, get(t, s, want.Slug))

	scribble(get(t, s, want.Slug))
	byID, err := s.GetMarketByMarketID(ctx, want.MarketID)
	mustOK(t, err, "GetMarketByMarketID")
	scribble(byID)
	ms, _, err := s.ListMarkets(ctx, store.MarketFilter{})
	mustOK(t, err, "ListMarkets")
	for _, m := range ms {
		scribble(m)
	}
	checkMarket(t, "after changing what was read", want, get(t, s, want.Slug))
}

func testMarketExplicitTimestamps(t *testing.T, s store.Store) {
	created := t0().Add(-time.Hour + 987654321*time.Nanosecond).In(elsewhere())
	updated := created.Add(30 * time.Minute)
	m := newMarket(store.ETH, store.M5, t0(), "")
	m.CreatedAt, m.UpdatedAt = created, updated
	checkMarket(t, "insert with timestamps", m, upsert(t, s, m))

	// An update keeps the stored CreatedAt and takes a given UpdatedAt.
	upd := changed(m)
	upd.CreatedAt = t0()
	upd.UpdatedAt = updated.Add(time.Hour)
	want := upd
	want.CreatedAt = created
	checkMarket(t, "update with timestamps", want, upsert(t, s, upd))
}

// conflictTests are UpsertMarkets batches that must fail with ErrConflict
// and store nothing, each written to a store holding markets a and b.
func conflictTests() []test {
	a := newMarket(store.BTC, store.M5, at(0), "")
	b := newMarket(store.BTC, store.M5, at(5), "")
	c := newMarket(store.BTC, store.M5, at(10), "")
	d := newMarket(store.BTC, store.M5, at(15), "")
	withID := func(m store.Market, id string) store.Market { m.MarketID = id; return m }

	cases := []struct {
		name   string
		batch  []store.Market
		absent []store.Market // must not be stored afterwards
	}{
		{"NewSlugTakesStoredMarketID", []store.Market{withID(c, a.MarketID)}, []store.Market{c}},
		{"StoredSlugTakesAnothersMarketID", []store.Market{withID(b, a.MarketID)}, nil},
		{"TwoNewSlugsShareMarketID", []store.Market{c, withID(d, c.MarketID)}, []store.Market{c, d}},
		{"BatchIsAllOrNothing", []store.Market{d, withID(c, b.MarketID)}, []store.Market{c, d}},
	}
	var tests []test
	for _, tc := range cases {
		tests = append(tests, test{"Conflict" + tc.name, func(t *testing.T, s store.Store) {
			checkConflict(t, s, []store.Market{a, b}, tc.batch, tc.absent)
		}})
	}
	return tests
}

// checkConflict writes stored, then batch, which must fail with ErrConflict
// and leave the store as it was.
func checkConflict(t *testing.T, s store.Store, stored, batch, absent []store.Market) {
	ctx := t.Context()
	mustOK(t, s.UpsertMarkets(ctx, stored), "UpsertMarkets")
	var before []store.Market
	for _, m := range stored {
		before = append(before, get(t, s, m.Slug))
	}

	wantErr(t, s.UpsertMarkets(ctx, batch), store.ErrConflict, "UpsertMarkets of the conflicting batch")

	for _, m := range absent {
		_, err := s.GetMarket(ctx, m.Slug)
		wantErr(t, err, store.ErrNotFound, "GetMarket of "+m.Slug+" from the rejected batch")
	}
	for _, m := range before {
		checkMarket(t, "stored market after the rejected batch", m, get(t, s, m.Slug))
		byID, err := s.GetMarketByMarketID(ctx, m.MarketID)
		mustOK(t, err, "GetMarketByMarketID after the rejected batch")
		checkMarket(t, "GetMarketByMarketID after the rejected batch", m, byID)
	}
	if n := count(t, s, store.MarketFilter{}); n != len(stored) {
		t.Errorf("CountMarkets = %d after the rejected batch, want %d", n, len(stored))
	}
}

func get(t *testing.T, s store.Store, slug string) store.Market {
	t.Helper()
	m, err := s.GetMarket(t.Context(), slug)
	mustOK(t, err, "GetMarket "+slug)
	return m
}

func count(t *testing.T, s store.Store, f store.MarketFilter) int {
	t.Helper()
	n, err := s.CountMarkets(t.Context(), f)
	mustOK(t, err, "CountMarkets")
	return n
}

func testMarketInvalid(t *testing.T, s store.Store) {
	ctx := t.Context()
	valid := newMarket(store.BTC, store.M5, t0(), "")
	noSlug := newMarket(store.ETH, store.M5, t0(), "")
	noSlug.Slug = ""
	err := s.UpsertMarkets(ctx, []store.Market{valid, noSlug})
	wantErr(t, err, store.ErrInvalid, "UpsertMarkets with a market without a slug")
	_, err = s.GetMarket(ctx, valid.Slug)
	wantErr(t, err, store.ErrNotFound, "GetMarket of the valid market of the rejected batch")

	mustOK(t, s.UpsertMarkets(ctx, nil), "UpsertMarkets of no markets")
	if n := count(t, s, store.MarketFilter{}); n != 0 {
		t.Errorf("CountMarkets = %d, want 0", n)
	}
}

func testMarketsEmpty(t *testing.T, s store.Store) {
	ctx := t.Context()
	ms, total, err := s.ListMarkets(ctx, store.MarketFilter{Limit: 10})
	mustOK(t, err, "ListMarkets")
	if len(ms) != 0 || total != 0 {
		t.Errorf("ListMarkets on an empty store = %d markets, total %d; want none, 0", len(ms), total)
	}
	if n := count(t, s, store.MarketFilter{Coin: store.BTC}); n != 0 {
		t.Errorf("CountMarkets on an empty store = %d, want 0", n)
	}
	_, ok, err := s.NthNewestStart(ctx, store.BTC, store.M5, 1, at(1<<20))
	mustOK(t, err, "NthNewestStart")
	if ok {
		t.Error("NthNewestStart on an empty store: ok = true, want false")
	}
}

func testListMarketsFilters(t *testing.T, s store.Store) {
	fx := seedMarkets(t, s)
	resolved, unresolved := ptr(true), ptr(false)
	timePtr := func(minutes int) *time.Time { return ptr(at(minutes).In(elsewhere())) }

	cases := []struct {
		name string
		f    store.MarketFilter
		want string // keys in order
	}{
		{"no filter", store.MarketFilter{}, "i c j b h d a k e f g"},
		{"coin BTC", store.MarketFilter{Coin: store.BTC}, "c b d a e f g"},
		{"coin ETH", store.MarketFilter{Coin: store.ETH}, "i h"},
		{"coin SOL type 5m", store.MarketFilter{Coin: store.SOL, MarketType: store.M5}, "j"},
		{"type 5m", store.MarketFilter{MarketType: store.M5}, "c j b h a"},
		{"coin BTC type 24hr", store.MarketFilter{Coin: store.BTC, MarketType: store.H24}, "g"},
		{"coin ETH type 4hr", store.MarketFilter{Coin: store.ETH, MarketType: store.H4}, ""},
		{"resolved", store.MarketFilter{Resolved: resolved}, "b h d a k e f"},
		{"unresolved", store.MarketFilter{Resolved: unresolved}, "i c j g"},
		{"coin BTC unresolved", store.MarketFilter{Coin: store.BTC, Resolved: unresolved}, "c g"},
		{"start after t0 (exclusive)", store.MarketFilter{StartAfter: timePtr(0)}, "i c j b h"},
		{"start before +10 (exclusive)", store.MarketFilter{StartBefore: timePtr(10)}, "b h d a k e f g"},
		{"start after t0 and before +10", store.MarketFilter{StartAfter: timePtr(0), StartBefore: timePtr(10)}, "b h"},
		{"start after the newest", store.MarketFilter{StartAfter: timePtr(15)}, ""},
		{"start before the oldest", store.MarketFilter{StartBefore: timePtr(-1440)}, ""},
		{"window min start t0 (inclusive)", store.MarketFilter{Window: &store.Window{MinStart: at(0)}}, "i c j b h d a k"},
		{"window of zero value", store.MarketFilter{Window: &store.Window{}}, "i c j b h d a k e f g"},
		{
			"window by type (inclusive, absent types excluded)",
			store.MarketFilter{Window: &store.Window{MinStartByType: map[store.MarketType]time.Time{
				store.M5: at(5), store.H1: at(-60),
			}}},
			"c j b h k e",
		},
		{
			"window by type, empty map excludes all",
			store.MarketFilter{Window: &store.Window{MinStartByType: map[store.MarketType]time.Time{}}},
			"",
		},
		{
			"window min start and by type both apply",
			store.MarketFilter{Window: &store.Window{MinStart: at(0), MinStartByType: map[store.MarketType]time.Time{
				store.M5: {}, store.M15: at(15),
			}}},
			"i c j b h a",
		},
		{
			"coin, start before and window together",
			store.MarketFilter{Coin: store.BTC, StartBefore: timePtr(10), Window: &store.Window{MinStart: at(-240)}},
			"b d a e f",
		},
		{
			"everything together",
			store.MarketFilter{
				Coin: store.BTC, MarketType: store.M5, Resolved: resolved,
				StartAfter: timePtr(-1), StartBefore: timePtr(10),
				Window: &store.Window{MinStartByType: map[store.MarketType]time.Time{store.M5: at(5)}},
			},
			"b",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkList(t, s, tc.f, fx.slugs(tc.want), len(fx.slugs(tc.want)))
		})
	}
}

// checkList fails the test unless ListMarkets(f) returns the slugs in order
// and total, and CountMarkets(f) returns total.
func checkList(t *testing.T, s store.Store, f store.MarketFilter, want []string, total int) {
	t.Helper()
	ms, gotTotal, err := s.ListMarkets(t.Context(), f)
	mustOK(t, err, "ListMarkets")
	if got := slugsOf(ms); !slices.Equal(got, want) {
		t.Errorf("ListMarkets slugs:\n got  %v\n want %v", got, want)
	}
	if gotTotal != total {
		t.Errorf("ListMarkets total = %d, want %d", gotTotal, total)
	}
	if n := count(t, s, f); n != total {
		t.Errorf("CountMarkets = %d, want %d (the ListMarkets total)", n, total)
	}
}

func testListMarketsPaging(t *testing.T, s store.Store) {
	fx := seedMarkets(t, s)
	all := fx.slugs("i c j b h d a k e f g")
	btc := fx.slugs("c b d a e f g")
	page := func(list []string, limit, offset int) []string {
		lo := min(offset, len(list))
		hi := len(list)
		if limit > 0 {
			hi = min(lo+limit, len(list))
		}
		return list[lo:hi]
	}
	cases := []struct {
		coin          store.Coin
		limit, offset int
	}{
		{"", 3, 0},
		{"", 3, 3},
		{"", 3, 9},
		{"", 1, 10},
		{"", 0, 4},
		{"", 0, 0},
		{"", 100, 0},
		{"", 5, 11},
		{"", 5, 50},
		{"", 0, 11},
		{store.BTC, 2, 1},
		{store.BTC, 2, 6},
		{store.BTC, 0, 3},
		{store.BTC, 2, 7},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("coin=%q limit=%d offset=%d", tc.coin, tc.limit, tc.offset), func(t *testing.T) {
			list := all
			if tc.coin != "" {
				list = btc
			}
			f := store.MarketFilter{Coin: tc.coin, Limit: tc.limit, Offset: tc.offset}
			checkList(t, s, f, page(list, tc.limit, tc.offset), len(list))
		})
	}
}

func testListMarketsRecords(t *testing.T, s store.Store) {
	fx := seedMarkets(t, s)
	ms, _, err := s.ListMarkets(t.Context(), store.MarketFilter{})
	mustOK(t, err, "ListMarkets")
	if len(ms) != len(fx.keys) {
		t.Fatalf("ListMarkets returned %d markets, want %d", len(ms), len(fx.keys))
	}
	for _, got := range ms {
		checkMarket(t, "ListMarkets entry", get(t, s, got.Slug), got)
	}
}

func testNthNewestStart(t *testing.T, s store.Store) {
	seedMarkets(t, s)
	none := at(1 << 20) // after every market: each counts
	cases := []struct {
		coin      store.Coin
		typ       store.MarketType
		n         int
		startedBy time.Time
		want      int // minutes after t0
		wantOK    bool
	}{
		{store.BTC, store.M5, 1, none, 10, true},
		// Markets starting after startedBy (listed ahead) take no place;
		// one starting at it does.
		{store.BTC, store.M5, 1, at(9), 5, true},
		{store.BTC, store.M5, 1, at(5), 5, true},
		{store.BTC, store.M5, 2, at(5), 0, true},
		{store.BTC, store.M5, 3, at(5), 0, false},
		{store.BTC, store.M5, 1, at(-1), 0, false},
		{store.BTC, store.M5, 2, none, 5, true},
		{store.BTC, store.M5, 3, none, 0, true},
		{store.BTC, store.M5, 4, none, 0, false},
		{store.BTC, store.M5, 100, none, 0, false},
		{store.ETH, store.M5, 1, none, 5, true},
		{store.ETH, store.M5, 2, none, 0, false},
		{store.SOL, store.H1, 1, none, 0, true},
		{store.BTC, store.H24, 1, none, -1440, true},
		{store.ETH, store.H4, 1, none, 0, false},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s %s n=%d by=%v", tc.coin, tc.typ, tc.n, tc.startedBy.Format(time.RFC3339)), func(t *testing.T) {
			got, ok, err := s.NthNewestStart(t.Context(), tc.coin, tc.typ, tc.n, tc.startedBy)
			mustOK(t, err, "NthNewestStart")
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v (time %v)", ok, tc.wantOK, got)
			}
			if !ok {
				return
			}
			var d diff
			eqTime(&d, "start", at(tc.want), got)
			d.check(t, "NthNewestStart")
		})
	}
	for _, n := range []int{0, -1} {
		_, _, err := s.NthNewestStart(t.Context(), store.BTC, store.M5, n, none)
		wantErr(t, err, store.ErrInvalid, fmt.Sprintf("NthNewestStart n=%d", n))
	}
}

// testMarketPolymarketUnknown writes a market that knows none of the
// upstream's extra fields: they read back unknown (nil, "", no tick
// changes), not as zeros, and a later write that knows them sets them.
func testMarketPolymarketUnknown(t *testing.T, s store.Store) {
	full := newMarket(store.ETH, store.H1, t0(), store.OutcomeDown)
	bare := full
	bare.UpstreamSlug = ""
	bare.TakerFeeRate, bare.FeeExponent, bare.MakerRebateRate = nil, nil, nil
	bare.FeeType = ""
	bare.TickSize, bare.TickSizeChanges = nil, nil
	bare.MinOrderSize = nil
	bare.ResolutionSource = ""
	bare.PriceToBeat, bare.FinalPrice = nil, nil
	got := upsert(t, s, bare)
	checkMarket(t, "market without upstream fields", bare, got)
	if got.TakerFeeRate != nil || got.FeeExponent != nil || got.MakerRebateRate != nil || got.TickSize != nil || got.MinOrderSize != nil ||
		got.PriceToBeat != nil || got.FinalPrice != nil || len(got.TickSizeChanges) != 0 {
		t.Errorf("market without upstream fields reads back with some set: %+v", got)
	}

	// Zero is a value, not unknown: a zero fee rate is a market without fees.
	zero := bare
	zero.TakerFeeRate, zero.FeeExponent, zero.MakerRebateRate = ptr(0.0), ptr(0), ptr(0.0)
	zero.TickSizeChanges = []store.TickSizeChange{} // empty is none
	want := zero
	want.CreatedAt = got.CreatedAt
	checkMarket(t, "market with a zero fee schedule", want, upsert(t, s, zero))

	want = full
	want.CreatedAt = got.CreatedAt
	checkMarket(t, "market with upstream fields", want, upsert(t, s, full))
}

// testMarketPolymarketKept resolves a market the way the resolver does
// (an upsert of the market read back, with the resolution set): every
// upstream field written before is kept, tick changes in order.
func testMarketPolymarketKept(t *testing.T, s store.Store) {
	m := newMarket(store.BTC, store.H4, t0(), "")
	m.TickSizeChanges = append(m.TickSizeChanges,
		store.TickSizeChange{Time: m.StartTime.Add(30 * time.Minute), TickSize: micros(10000)},
		store.TickSizeChange{Time: m.StartTime.Add(90 * time.Minute), TickSize: micros(1000)})
	first := upsert(t, s, m)
	checkMarket(t, "before resolution", m, first)

	upd := first
	upd.UpdatedAt = time.Time{}
	resolve(&upd, store.OutcomeUp)
	got := upsert(t, s, upd)
	want := upd
	want.CreatedAt = first.CreatedAt
	checkMarket(t, "after resolution", want, got)
	if len(got.TickSizeChanges) != 3 {
		t.Fatalf("tick size changes after resolution = %v, want the 3 written", got.TickSizeChanges)
	}

	// Listings carry the same fields as a lookup.
	ms, _, err := s.ListMarkets(t.Context(), store.MarketFilter{})
	mustOK(t, err, "ListMarkets")
	if len(ms) != 1 {
		t.Fatalf("ListMarkets = %d markets, want 1", len(ms))
	}
	checkMarket(t, "ListMarkets", got, ms[0])
}

// testMarketFiftyFifty stores a daily tie: winner 50-50, equal start and
// end prices; it counts as resolved.
func testMarketFiftyFifty(t *testing.T, s store.Store) {
	m := newMarket(store.BTC, store.H24, t0(), store.OutcomeUp)
	m.Winner = ptr(store.OutcomeFiftyFifty)
	m.CoinPriceEnd = ptr(*m.CoinPriceStart)
	m.FinalPrice = ptr(*m.PriceToBeat)
	m.ResolutionSource = store.SourceBinance1mNoonET
	checkMarket(t, "50-50 market", m, upsert(t, s, m))
	checkList(t, s, store.MarketFilter{Resolved: ptr(true)}, []string{m.Slug}, 1)
	checkList(t, s, store.MarketFilter{Resolved: ptr(false)}, []string{}, 0)
}

// testMarketUpsertNewer upserts markets only where they are newer than
// the stored ones (an import of an older export must not take back a
// resolution): a stored market with a later updated_at is left as it is,
// an equal or later one is written, and so are a new market and one
// without updated_at.
func testMarketUpsertNewer(t *testing.T, s store.Store) {
	ctx := t.Context()
	resolved := newMarket(store.BTC, store.M15, t0(), "Up")
	resolved.UpdatedAt = at(30)
	upsert(t, s, resolved)
	older := newMarket(store.BTC, store.M15, t0(), "")
	older.UpdatedAt = at(10)
	fresh := newMarket(store.ETH, store.M15, t0(), "")
	fresh.UpdatedAt = at(5)
	n, err := s.UpsertMarketsNewer(ctx, []store.Market{older, fresh})
	mustOK(t, err, "UpsertMarketsNewer")
	if n != 1 {
		t.Errorf("UpsertMarketsNewer wrote %d, want 1 (the new market only)", n)
	}
	got, err := s.GetMarket(ctx, resolved.Slug)
	mustOK(t, err, "GetMarket")
	if got.Winner == nil || *got.Winner != "Up" || !got.UpdatedAt.Equal(at(30)) {
		t.Errorf("an older record took back the market: winner %v, updated_at %v", got.Winner, got.UpdatedAt)
	}
	if _, err := s.GetMarket(ctx, fresh.Slug); err != nil {
		t.Errorf("the new market was not written: %v", err)
	}
	newer := newMarket(store.BTC, store.M15, t0(), "Down")
	newer.UpdatedAt = at(30)
	undated := newMarket(store.ETH, store.M15, t0(), "Up")
	undated.UpdatedAt = time.Time{}
	n, err = s.UpsertMarketsNewer(ctx, []store.Market{newer, undated})
	mustOK(t, err, "UpsertMarketsNewer")
	if n != 2 {
		t.Errorf("UpsertMarketsNewer of an equal and an undated record wrote %d, want 2", n)
	}
	if got, _ := s.GetMarket(ctx, resolved.Slug); got.Winner == nil || *got.Winner != "Down" {
		t.Errorf("a record as new as the stored one was not written: winner %v", got.Winner)
	}
	if got, _ := s.GetMarket(ctx, undated.Slug); got.Winner == nil || *got.Winner != "Up" {
		t.Errorf("a record without updated_at was not written: winner %v", got.Winner)
	}
}

// testMarketSwap writes a market over the one read only while no one has
// written it since: a swap from the updated_at read is written, stamped
// later, keeping created_at; a second swap from the same read writes
// nothing; an unknown market is ErrNotFound; a market_id of another slug
// is ErrConflict.
func testMarketSwap(t *testing.T, s store.Store) {
	ctx := t.Context()
	read := upsert(t, s, newMarket(store.BTC, store.M15, t0(), ""))
	other := upsert(t, s, newMarket(store.ETH, store.M15, t0(), ""))

	edited := read
	edited.Winner = ptr("Up")
	edited.TickSizeChanges = []store.TickSizeChange{{Time: at(3), TickSize: 0.001}}
	got, ok, err := s.SwapMarket(ctx, edited, read.UpdatedAt)
	mustOK(t, err, "SwapMarket")
	if !ok {
		t.Fatal("SwapMarket from the updated_at just read wrote nothing")
	}
	if !got.UpdatedAt.After(read.UpdatedAt) || !got.CreatedAt.Equal(read.CreatedAt) {
		t.Errorf("swapped market: updated_at %v (read %v), created_at %v (was %v): want updated_at later and created_at kept",
			got.UpdatedAt, read.UpdatedAt, got.CreatedAt, read.CreatedAt)
	}
	stored, err := s.GetMarket(ctx, read.Slug)
	mustOK(t, err, "GetMarket")
	checkMarket(t, "SwapMarket's answer", stored, got)
	want := edited
	want.UpdatedAt = stored.UpdatedAt
	checkMarket(t, "swapped market", want, stored)

	late := read
	late.Winner = ptr("Down")
	if _, ok, err := s.SwapMarket(ctx, late, read.UpdatedAt); err != nil || ok {
		t.Errorf("SwapMarket from a read another write came after = %v, %v; want false, nil", ok, err)
	}
	if again, _ := s.GetMarket(ctx, read.Slug); again.Winner == nil || *again.Winner != "Up" || !again.UpdatedAt.Equal(stored.UpdatedAt) {
		t.Errorf("a stale swap changed the market: winner %v, updated_at %v", again.Winner, again.UpdatedAt)
	}

	unknown := newMarket(store.SOL, store.M15, t0(), "")
	if _, _, err := s.SwapMarket(ctx, unknown, t0()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SwapMarket of a market not stored = %v, want ErrNotFound", err)
	}
	taken := other
	taken.MarketID = read.MarketID
	if _, _, err := s.SwapMarket(ctx, taken, other.UpdatedAt); !errors.Is(err, store.ErrConflict) {
		t.Errorf("SwapMarket giving a second slug the market_id %q = %v, want ErrConflict", read.MarketID, err)
	}
}

// testMarketEdit edits a market that another writer writes between
// EditMarket's read and its write: the edit is made again on what the
// other wrote, and both changes are kept.
func testMarketEdit(t *testing.T, s store.Store) {
	ctx := t.Context()
	m := upsert(t, s, newMarket(store.BTC, store.H1, t0(), ""))
	calls := 0
	got, changed, err := store.EditMarket(ctx, s, m.Slug, func(m *store.Market) bool {
		calls++
		if calls == 1 {
			// Another writer, between this read and its write.
			other := *m
			other.Winner = ptr("Up")
			other.UpdatedAt = time.Time{}
			mustOK(t, s.UpsertMarkets(ctx, []store.Market{other}), "UpsertMarkets by another writer")
		}
		m.PriceToBeat = ptr(101.5)
		return true
	})
	mustOK(t, err, "EditMarket")
	if !changed || calls != 2 {
		t.Errorf("EditMarket: changed %v after %d edits; want true after 2 (one more after the other write)", changed, calls)
	}
	if got.Winner == nil || *got.Winner != "Up" || got.PriceToBeat == nil || *got.PriceToBeat != 101.5 {
		t.Errorf("EditMarket undid a write: winner %v, price_to_beat %v; want Up and 101.5", got.Winner, got.PriceToBeat)
	}
	same, changed, err := store.EditMarket(ctx, s, m.Slug, func(*store.Market) bool { return false })
	mustOK(t, err, "EditMarket leaving it")
	if changed || !same.UpdatedAt.Equal(got.UpdatedAt) {
		t.Errorf("EditMarket whose edit declined: changed %v, updated_at %v (was %v)", changed, same.UpdatedAt, got.UpdatedAt)
	}
	if _, _, err := store.EditMarket(ctx, s, "no-such-market", func(*store.Market) bool { return true }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("EditMarket of a market not stored = %v, want ErrNotFound", err)
	}
}

// testMarketTickChangesOrder: a market's tick changes written out of time
// order, two of them at one instant and two within one microsecond, are
// read back oldest first, one at each instant (the first written of those
// at it), whichever way the market was written: UpsertMarkets,
// UpsertMarketsNewer, SwapMarket, an import's AddMarket of a new market and
// its merge into one only imports wrote, where a change within a stored
// one's microsecond is at the stored one's instant.
func testMarketTickChangesOrder(t *testing.T, s store.Store) {
	ctx := t.Context()
	tc := func(at time.Time, size float64) store.TickSizeChange {
		return store.TickSizeChange{Time: at.In(elsewhere()), TickSize: size}
	}
	start := t0()
	given := []store.TickSizeChange{
		tc(start.Add(3*time.Minute), micros(10000)),
		tc(start.Add(time.Minute+100*time.Nanosecond), micros(10000)),
		tc(start.Add(2*time.Minute), micros(1000)),
		tc(start.Add(time.Minute+900*time.Nanosecond), micros(1000)), // the microsecond of the one before
		tc(start.Add(3*time.Minute), micros(1000)),                   // the instant of the first
	}
	// Each a change from the one before: an import's merge drops a
	// "change" to the tick in force (store.MergeTickChanges).
	want := []store.TickSizeChange{
		tc(start.Add(time.Minute), micros(10000)),
		tc(start.Add(2*time.Minute), micros(1000)),
		tc(start.Add(3*time.Minute), micros(10000)),
	}
	check := func(op string, m store.Market) {
		t.Helper()
		got := get(t, s, m.Slug).TickSizeChanges
		if len(got) != len(want) {
			t.Errorf("%s: tick changes %v, want %v", op, got, want)
			return
		}
		for i, w := range want {
			if !got[i].Time.Equal(w.Time) || got[i].TickSize != w.TickSize {
				t.Errorf("%s: tick changes %v, want %v", op, got, want)
				return
			}
		}
	}
	withTicks := func(m store.Market) store.Market {
		m.TickSizeChanges = slices.Clone(given)
		return m
	}

	upserted := withTicks(newMarket(store.BTC, store.M15, start, ""))
	mustOK(t, s.UpsertMarkets(ctx, []store.Market{upserted}), "UpsertMarkets")
	check("UpsertMarkets", upserted)

	newer := withTicks(newMarket(store.ETH, store.M15, start, ""))
	_, err := s.UpsertMarketsNewer(ctx, []store.Market{newer})
	mustOK(t, err, "UpsertMarketsNewer")
	check("UpsertMarketsNewer", newer)

	read := upsert(t, s, newMarket(store.SOL, store.M15, start, ""))
	_, ok, err := s.SwapMarket(ctx, withTicks(read), read.UpdatedAt)
	mustOK(t, err, "SwapMarket")
	if !ok {
		t.Fatal("SwapMarket from the updated_at just read wrote nothing")
	}
	check("SwapMarket", read)

	imported := withTicks(newMarket(store.BTC, store.M5, start, ""))
	tx := begin(t, s)
	_, err = tx.AddMarket(ctx, imported, "pmxt-v2")
	mustOK(t, err, "import: add market")
	_, _, err = tx.Commit(ctx, store.Import{Key: "tick-order-1", Source: "pmxt-v2"})
	mustOK(t, err, "import: commit")
	check("an import's new market", imported)

	// A market only imports wrote, holding the first change, gains the
	// others from a later import.
	merged := newMarket(store.BTC, store.H1, start, "")
	merged.TickSizeChanges = []store.TickSizeChange{want[0]}
	tx = begin(t, s)
	_, err = tx.AddMarket(ctx, merged, "pmxt-v2")
	mustOK(t, err, "import: add market")
	_, _, err = tx.Commit(ctx, store.Import{Key: "tick-order-2", Source: "pmxt-v2"})
	mustOK(t, err, "import: commit")
	tx = begin(t, s)
	_, err = tx.AddMarket(ctx, withTicks(merged), "pmxt-v2")
	mustOK(t, err, "import: add the market again")
	_, _, err = tx.Commit(ctx, store.Import{Key: "tick-order-3", Source: "pmxt-v2"})
	mustOK(t, err, "import: commit")
	check("an import merging into a market imported before", merged)

	// A change within the microsecond of a stored one is at its instant:
	// the stored one wins, and the tick size stays the last change's.
	tx = begin(t, s)
	again := merged
	again.TickSizeChanges = []store.TickSizeChange{tc(start.Add(3*time.Minute+500*time.Nanosecond), micros(1000))}
	_, err = tx.AddMarket(ctx, again, "pmxt-v2")
	mustOK(t, err, "import: add the market once more")
	_, _, err = tx.Commit(ctx, store.Import{Key: "tick-order-4", Source: "pmxt-v2"})
	mustOK(t, err, "import: commit")
	check("an import of a change within a stored one's microsecond", merged)
	if got, last := get(t, s, merged.Slug).TickSize, want[len(want)-1].TickSize; got == nil || *got != last {
		shown := "none"
		if got != nil {
			shown = fmt.Sprint(*got)
		}
		t.Errorf("tick size %s after an import of a change within a stored one's microsecond, want %v, the last change's", shown, last)
	}
}
