package api_test

import (
	"context"
	"net/http"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/updown/updown/jobs/backtest"
	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/postgres/pgtest"
)

// replayData posts body as a Pro customer and returns the answer's
// result, checking that it is what the engine answers of the store as it
// is now (replayAsEngine).
func replayData(t *testing.T, b *bundle, q *queue, body string) replay.Result {
	t.Helper()
	_, res := replayAsEngine(t, b, q, body)
	return res
}

// TestReplayAfterSnapshotsAppended: a snapshot appended to a resolved
// market after it was replayed (an archive import, a late flush) is in
// the answer to the same request sent again, within the time a finished
// result is kept for reuse.
func TestReplayAfterSnapshotsAppended(t *testing.T) {
	t.Parallel()
	b, q := replaySetup(t, 30*time.Second, true)
	slug, _ := snapshotMarket()
	body := replayBody(slug, nil)
	if res := replayData(t, b, q, body); res.TotalSnapshots != 30 {
		t.Fatalf("first replay: %d snapshots, want 30", res.TotalSnapshots)
	}
	m, err := q.store.GetMarket(t.Context(), slug)
	if err != nil {
		t.Fatal(err)
	}
	late := store.Snapshot{Time: m.StartTime.Add(899 * time.Second), CoinPrice: 95100, PriceUp: 0.9, PriceDown: 0.1}
	if n, err := q.store.AppendSnapshots(t.Context(), slug, []store.Snapshot{late}); err != nil || n != 1 {
		t.Fatalf("append: %d %v", n, err)
	}
	if res := replayData(t, b, q, body); res.TotalSnapshots != 31 {
		t.Errorf("replay after an append: %d snapshots, want 31", res.TotalSnapshots)
	}
	// Nothing new: the result is reused, and says the same.
	if _, err := q.store.AppendSnapshots(t.Context(), slug, []store.Snapshot{late}); err != nil {
		t.Fatal(err)
	}
	if res := replayData(t, b, q, body); res.TotalSnapshots != 31 {
		t.Errorf("replay after a repeated append: %d snapshots, want 31", res.TotalSnapshots)
	}
}

// TestReplayAfterTradesAndGapsChanged: a replay that reads the market's
// trades (display prices) answers trades appended since it last ran (the
// collector's backfill after a restart), and a trades gap recorded or
// removed since (the warning it gives).
func TestReplayAfterTradesAndGapsChanged(t *testing.T) {
	t.Parallel()
	b, q := replaySetup(t, 30*time.Second, true)
	slug, _ := snapshotMarket()
	body := replayBody(slug, func(m map[string]any) {
		m["entryConditions"] = []map[string]any{{"field": "display_up", "operator": "<", "value": 0.2}}
	})
	first := replayData(t, b, q, body)
	m, err := q.store.GetMarket(t.Context(), slug)
	if err != nil {
		t.Fatal(err)
	}
	// A trade at 0.05 makes the display price of the snapshots without
	// books (every other one) that price: the entry is taken.
	trade := store.MarketTrade{Time: m.StartTime.Add(20 * time.Second), Outcome: store.OutcomeUp, Side: "BUY", Price: 0.05, Size: 10, TxHash: "0xlate"}
	if n, err := q.store.AppendMarketTrades(t.Context(), slug, []store.MarketTrade{trade}); err != nil || n != 1 {
		t.Fatalf("append trades: %d %v", n, err)
	}
	second := replayData(t, b, q, body)
	if second.Performance.TotalTrades == first.Performance.TotalTrades && len(second.Trades) == len(first.Trades) {
		t.Errorf("the appended trade changed nothing: %d trades before and after; the test needs one that does", len(first.Trades))
	}
	// A resting order over a trades gap is warned of.
	resting := replayBody(slug, func(m map[string]any) {
		m["orderType"], m["reentryCooldownMs"] = "GTC", 30000
	})
	before := replayData(t, b, q, resting)
	gap := store.Gap{From: m.StartTime, To: m.EndTime, Kind: store.GapTrades}
	if _, err := q.store.RecordGaps(t.Context(), slug, []store.Gap{gap}); err != nil {
		t.Fatal(err)
	}
	gapped := replayData(t, b, q, resting)
	if len(gapped.Warnings) <= len(before.Warnings) {
		t.Errorf("warnings after a trades gap was recorded: %q, before %q", gapped.Warnings, before.Warnings)
	}
	// The backfill found the trades: the gap goes, and its warning.
	if err := q.store.RemoveGaps(t.Context(), slug, []store.Gap{gap}); err != nil {
		t.Fatal(err)
	}
	if after := replayData(t, b, q, resting); len(after.Warnings) != len(before.Warnings) {
		t.Errorf("warnings after the trades gap was removed: %q, want %q", after.Warnings, before.Warnings)
	}
}

// TestBacktestAfterDataAppended: a backtest on a market given data since
// the same backtest ran answers the data as it
// is now, not the report kept from before.
func TestBacktestAfterDataAppended(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	tok := "Bearer " + b.token(store.Enterprise)
	body := `{"strategy_code":"side=UP entry: price_up < 0.02 exit: price_up > 0.99 size=1","marketCount":2}`
	slugs := newestResolved(t, b.store, store.BTC, store.M15, 2)
	run := func(what string) backtestAnswer {
		t.Helper()
		var rep backtestAnswer
		data(t, b.ai(http.MethodPost, "/v1/backtest-ai/run", tok, body), &rep)
		want := directReport(t, b.store, backtest.Request{Strategy: rep.GeneratedStrategy, Markets: slugs})
		if !reflect.DeepEqual(rep.Aggregate, want.Aggregate) || !reflect.DeepEqual(rep.Results, want.Results) {
			t.Errorf("%s: the report is not the store's data as it is now:\n got %+v\nwant %+v", what, rep.Aggregate, want.Aggregate)
		}
		return rep
	}
	first := run("first run")
	m, err := b.store.GetMarket(t.Context(), slugs[0])
	if err != nil {
		t.Fatal(err)
	}
	// A late snapshot at a price the strategy enters at.
	late := store.Snapshot{Time: m.EndTime.Add(-time.Second), CoinPrice: 95000, PriceUp: 0.01, PriceDown: 0.99}
	if n, err := b.store.AppendSnapshots(t.Context(), m.Slug, []store.Snapshot{late}); err != nil || n != 1 {
		t.Fatalf("append: %d %v", n, err)
	}
	second := run("after a snapshot was appended")
	if reflect.DeepEqual(first.Aggregate, second.Aggregate) {
		t.Errorf("the appended snapshot changed nothing (%+v): the test needs one that does", first.Aggregate)
	}
}

// appendAfterRead is a store that appends one snapshot to a market right
// after the api reads its record, once: a snapshot landing while the api
// reads a replay's market.
type appendAfterRead struct {
	store.Store
	once sync.Once
	late store.Snapshot
}

func (s *appendAfterRead) GetMarket(ctx context.Context, slug string) (store.Market, error) {
	m, err := s.Store.GetMarket(ctx, slug)
	if err == nil && !s.late.Time.IsZero() {
		s.once.Do(func() { _, err = s.Store.AppendSnapshots(ctx, slug, []store.Snapshot{s.late}) })
	}
	return m, err
}

// TestReplayVersionMatchesItsTape: a trade-reading replay whose market
// gains a snapshot while the api reads it replays the market as the
// version names it, not the worker's tape cached before, so that the
// answer kept under that version (and given to every identical request
// after) is the store's data.
func TestReplayVersionMatchesItsTape(t *testing.T) {
	t.Parallel()
	st := memory.New()
	loadFixtures(t, st)
	q := newQueue(t, st) // the worker reads the store itself, with its tape cache
	q.startWorker(t)
	racy := &appendAfterRead{Store: st}
	b := setup(t, func(o *setupOpts) { o.store, o.jobs, o.jobWait = racy, q.client, 30*time.Second })
	slug, _ := snapshotMarket()
	body := replayBody(slug, func(m map[string]any) {
		m["entryConditions"] = []map[string]any{{"field": "display_up", "operator": "<", "value": 0.2}}
	})
	if res := replayData(t, b, q, body); res.TotalSnapshots != 30 {
		t.Fatalf("first replay: %d snapshots, want 30", res.TotalSnapshots)
	}
	m, err := st.GetMarket(t.Context(), slug)
	if err != nil {
		t.Fatal(err)
	}
	racy.late = store.Snapshot{Time: m.StartTime.Add(899 * time.Second), CoinPrice: 95100, PriceUp: 0.9, PriceDown: 0.1}
	if r := b.replay(store.Pro, body); r.status != http.StatusOK {
		t.Fatalf("replay with the append between the reads: %d %s", r.status, r.body)
	}
	if res := replayData(t, b, q, body); res.TotalSnapshots != 31 {
		t.Errorf("replay after the append: %d snapshots, want 31", res.TotalSnapshots)
	}
}

// TestReplayAfterSnapshotsDroppedAndRefilled: a resolved market whose
// month was dropped (drop-snapshots) and as many snapshots imported again,
// its record and count as they were, is replayed afresh by the same
// request sent again, not answered with the result kept from before.
func TestReplayAfterSnapshotsDroppedAndRefilled(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewStore(t)
	loadFixtures(t, pg)
	q := newQueue(t, pg)
	q.startWorker(t)
	b := setup(t, func(o *setupOpts) { o.store, o.jobs, o.jobWait = pg, q.client, 30*time.Second })
	slug, _ := snapshotMarket()
	body := replayBody(slug, nil)
	first := replayData(t, b, q, body)
	ctx := t.Context()
	m, err := pg.GetMarket(ctx, slug)
	if err != nil {
		t.Fatal(err)
	}
	snaps, _, err := pg.ListSnapshots(ctx, slug, store.SnapshotQuery{Ascending: true, WithBooks: true})
	if err != nil || len(snaps) == 0 {
		t.Fatalf("%d snapshots, %v", len(snaps), err)
	}
	month := time.Date(m.StartTime.Year(), m.StartTime.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, 1, 0)
	if _, err := pg.DropSnapshotsBefore(ctx, month, false); err != nil {
		t.Fatal(err)
	}
	for i := range snaps { // other prices at the same times: no trade now
		snaps[i].PriceUp, snaps[i].PriceDown = 0.99, 0.01
	}
	if _, err := pg.AppendSnapshots(ctx, slug, snaps); err != nil {
		t.Fatal(err)
	}
	again := replayData(t, b, q, body) // fails unless the answer is the store's now
	if again.TotalSnapshots != first.TotalSnapshots {
		t.Errorf("%d snapshots after, %d before", again.TotalSnapshots, first.TotalSnapshots)
	}
}
