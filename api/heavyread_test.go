package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updown/updown/api"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
	"github.com/updown/updown/store/redis/redistest"
)

// heldStore counts the store's heavy reads of one market (or one depth
// series) and holds each until released, so that a test can keep a burst
// in flight for as long as it looks; other reads pass straight through.
type heldStore struct {
	store.Store
	key     string        // the held market's slug, or depth kind
	release chan struct{} // closed: held reads go on
	heavy   atomic.Int64  // held reads started
	counts  atomic.Int64  // CountSnapshots calls
}

func newHeldStore(st store.Store, key string) *heldStore {
	return &heldStore{Store: st, key: key, release: make(chan struct{})}
}

func (h *heldStore) hold(ctx context.Context, key string) error {
	if key != h.key {
		return nil
	}
	h.heavy.Add(1)
	select {
	case <-h.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *heldStore) ListSnapshots(ctx context.Context, slug string, q store.SnapshotQuery) ([]store.Snapshot, int, error) {
	if err := h.hold(ctx, slug); err != nil {
		return nil, 0, err
	}
	return h.Store.ListSnapshots(ctx, slug, q)
}

func (h *heldStore) CountSnapshots(ctx context.Context, slug string, q store.SnapshotQuery) (int, error) {
	h.counts.Add(1)
	return h.Store.CountSnapshots(ctx, slug, q)
}

func (h *heldStore) ListDepth(ctx context.Context, f store.DepthFilter) ([]store.DepthSnapshot, int, error) {
	if err := h.hold(ctx, string(f.Kind)); err != nil {
		return nil, 0, err
	}
	return h.Store.ListDepth(ctx, f)
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for pause := time.Millisecond; !cond(); pause = min(2*pause, maxPause) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never happened (gave up after %v)", what, patience)
		}
		time.Sleep(pause)
	}
}

// maxPause is the longest waitFor sleeps between two looks. Its looks are
// often requests, counted by the customer's per-minute rate limit (PRO's
// 300): a look every millisecond spent it in a few hundred milliseconds
// of a loaded machine, and the test's next request was refused.
const maxPause = 250 * time.Millisecond

// patience is how long waitFor waits for something that must happen. It
// bounds a hang, not a speed: the tests assert what happens, and a loaded
// machine only makes them slower.
const patience = 2 * time.Minute

// seriesMarket appends n snapshots, one a second, to the resolved 24hr
// fixture market and returns its slug.
func seriesMarket(t *testing.T, st store.Store, n int) string {
	t.Helper()
	start := now.Truncate(24 * time.Hour).Add(-24 * time.Hour)
	slug := slugOf(store.BTC, store.H24, start)
	snaps := make([]store.Snapshot, n)
	for i := range snaps {
		snaps[i] = store.Snapshot{Time: start.Add(time.Duration(i) * time.Second), PriceUp: 0.5, PriceDown: 0.5, CoinPrice: 95_000 + float64(i%100)}
	}
	if _, err := st.AppendSnapshots(context.Background(), slug, snaps); err != nil {
		t.Fatal(err)
	}
	return slug
}

// TestSeriesCoalescedAndCached (issue 28, item 3): a burst of the same
// /series call costs one store read, a resolved market's series is then
// served from the cache, and a late snapshot or a corrected winner shows
// on the next call.
func TestSeriesCoalescedAndCached(t *testing.T) {
	t.Parallel()
	mem := memory.New()
	loadFixtures(t, mem)
	slug := seriesMarket(t, mem, 3_000)
	st := newHeldStore(mem, slug)
	b := setup(t, func(o *setupOpts) { o.store = st })
	path := "/v1/markets/" + slug + "/series"

	const burst = 250
	answers := make([]response, burst)
	var wg sync.WaitGroup
	for i := range burst {
		wg.Go(func() { answers[i] = b.get(store.Pro, path) })
	}
	// Every call has counted the snapshots (the step before the read)
	// while the one read is held.
	waitFor(t, "the burst to reach the read", func() bool { return st.counts.Load() >= burst && st.heavy.Load() >= 1 })
	close(st.release)
	wg.Wait()
	if n := st.heavy.Load(); n != 1 {
		t.Errorf("%d concurrent identical calls made %d store reads, want 1", burst, n)
	}
	for i, r := range answers {
		if r.status != http.StatusOK {
			t.Fatalf("call %d: %d %s", i, r.status, r.body)
		}
	}
	decode := func(r response) seriesResp {
		t.Helper()
		if r.status != http.StatusOK {
			t.Fatalf("series: %d %s", r.status, r.body)
		}
		var s seriesResp
		if err := json.Unmarshal(r.body, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if d := decode(answers[0]).Data; d.Snapshots != 3_000 {
		t.Errorf("snapshots = %d, want 3,000", d.Snapshots)
	}

	// Resolved and unchanged: from the cache.
	decode(b.get(store.Pro, path))
	if n := st.heavy.Load(); n != 1 {
		t.Errorf("a cached series read the store again: %d reads", n)
	}

	// A late snapshot changes the count: read again, and kept again.
	ctx := context.Background()
	m, err := mem.GetMarket(ctx, slug)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mem.AppendSnapshots(ctx, slug, []store.Snapshot{{Time: m.EndTime.Add(-time.Second), PriceUp: 0.9, PriceDown: 0.1, CoinPrice: 95_500}}); err != nil {
		t.Fatal(err)
	}
	if d := decode(b.get(store.Pro, path)).Data; d.Snapshots != 3_001 || st.heavy.Load() != 2 {
		t.Errorf("after a late snapshot: %d snapshots, %d reads; want 3,001 and 2", d.Snapshots, st.heavy.Load())
	}
	decode(b.get(store.Pro, path))
	if n := st.heavy.Load(); n != 2 {
		t.Errorf("the re-read series was not kept: %d reads", n)
	}

	// A corrected winner changes the record.
	m.Winner, m.UpdatedAt = ptr(store.OutcomeDown), m.UpdatedAt.Add(time.Second)
	if err := mem.UpsertMarkets(ctx, []store.Market{m}); err != nil {
		t.Fatal(err)
	}
	r := b.get(store.Pro, path)
	decode(r)
	market, _ := r.json(t)["data"].(map[string]any)["market"].(map[string]any)
	if market["winner"] != store.OutcomeDown || st.heavy.Load() != 3 {
		t.Errorf("after a correction: winner %v, %d reads; want %s and 3", market["winner"], st.heavy.Load(), store.OutcomeDown)
	}
}

// burstCase is one heavy read fired in a burst by one customer while
// another customer reads.
type burstCase struct {
	held   string // what heldStore holds: the burst's market slug or depth kind
	path   string // the burst's request
	accept string // its Accept header ("": JSON)
	// small is another customer's small request, heavy another
	// customer's heavy read of something the burst does not hold.
	small, heavy string
}

// runBurst (issue 28, item 3; DESIGN 4): a PRO customer fires a burst of
// heavy reads, twice its cap, which the store holds. Its cap (4) of them
// reach the handlers; the rest are 429 RATE_LIMIT_EXCEEDED with
// details.limit "concurrent_reads" and Retry-After: 1 while the four are
// still in flight (so they did not queue behind them); another customer's
// small request and heavy read answer 200 while the burst is still held;
// then the burst's four answer 200 and give their slots back.
func runBurst(t *testing.T, st *heldStore, c burstCase) {
	t.Helper()
	rdb := redistest.Client(t)
	b := setup(t, func(o *setupOpts) { o.store, o.redis = st, rdb })
	const burst, limit = 12, 4
	slots := "updown:rl:{" + b.ids[store.Pro] + "}:reads"

	answers := make(chan response, burst)
	var wg sync.WaitGroup
	for range burst {
		wg.Go(func() { answers <- b.send(store.Pro, c.path, c.accept) })
	}
	waitFor(t, "the burst to take its slots", func() bool { return rdb.ZCard(t.Context(), slots).Val() == limit })
	for i := range burst - limit {
		var r response
		select {
		case r = <-answers:
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of the burst's excess answered while the burst was held", i)
		}
		e := wantError(t, r, http.StatusTooManyRequests, "RATE_LIMIT_EXCEEDED")
		wantLimitDetails(t, e, "concurrent_reads")
		if d, _ := e["details"].(map[string]any); d["max"] != float64(limit) {
			t.Errorf("details = %v, want max %d", d, limit)
		}
		if got := r.header.Get("Retry-After"); got != "1" {
			t.Errorf("Retry-After = %q, want 1", got)
		}
	}

	// The burst is still held: another customer is answered meanwhile.
	for _, path := range []string{c.small, c.heavy} {
		if r := b.send(store.Enterprise, path, ""); r.status != http.StatusOK {
			t.Errorf("another customer's %s during the burst: %d %s", path, r.status, r.body)
		}
	}
	if n := len(answers); n != 0 {
		r := <-answers
		t.Fatalf("%d of the burst's held reads answered before their release, one with %d %.200s", n, r.status, r.body)
	}
	if n := rdb.ZCard(t.Context(), slots).Val(); n != limit {
		t.Errorf("%d slots in flight during the burst, want %d", n, limit)
	}

	close(st.release)
	wg.Wait()
	close(answers)
	for r := range answers {
		if r.status != http.StatusOK {
			t.Errorf("a held read of the burst: %d %s", r.status, r.body)
		}
	}
	waitFor(t, "the slots to come back", func() bool { return rdb.ZCard(t.Context(), slots).Val() == 0 })
	if r := b.send(store.Pro, c.path, c.accept); r.status != http.StatusOK {
		t.Errorf("after the burst: %d %s", r.status, r.body)
	}
}

// send is a GET with the tier's key and an Accept header.
func (b *bundle) send(tier store.Tier, path, accept string) response {
	req, err := http.NewRequest(http.MethodGet, b.srv.URL+path, nil)
	if err != nil {
		return response{status: -1, body: []byte(err.Error())}
	}
	req.Header.Set("X-API-Key", b.keys[tier])
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	// The burst's reads are held until the test releases them: on a busy
	// machine that is many seconds, which a short client timeout would
	// turn into answers before their release.
	res, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		return response{status: -1, body: []byte(err.Error())}
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return response{status: -1, body: []byte(err.Error())}
	}
	return response{status: res.StatusCode, header: res.Header, body: data}
}

func TestBurstSeries(t *testing.T) {
	t.Parallel()
	mem := memory.New()
	loadFixtures(t, mem)
	slug := seriesMarket(t, mem, 3_000)
	small, _ := snapshotMarket()
	runBurst(t, newHeldStore(mem, slug), burstCase{held: slug, path: "/v1/markets/" + slug + "/series",
		small: "/v1/markets/" + small + "/snapshots?limit=10", heavy: "/v1/markets/" + small + "/series"})
}

func TestBurstSnapshotsWithBooks(t *testing.T) {
	t.Parallel()
	mem := memory.New()
	loadFixtures(t, mem)
	other := seriesMarket(t, mem, 100)
	slug, _ := snapshotMarket()
	runBurst(t, newHeldStore(mem, slug), burstCase{held: slug, path: "/v1/markets/" + slug + "/snapshots?include_orderbook=true",
		small: "/v1/markets/" + slug, heavy: "/v1/markets/" + other + "/snapshots?include_orderbook=true"})
}

func TestBurstParquet(t *testing.T) {
	t.Parallel()
	mem := memory.New()
	loadFixtures(t, mem)
	other := seriesMarket(t, mem, 100)
	slug, _ := snapshotMarket()
	runBurst(t, newHeldStore(mem, slug), burstCase{held: slug, path: "/v1/markets/" + slug + "/snapshots?limit=100",
		accept: "application/vnd.apache.parquet",
		small:  "/v1/markets/" + other + "/snapshots?limit=10", heavy: "/v1/markets/" + other + "/series"})
}

func TestBurstDepthHistory(t *testing.T) {
	t.Parallel()
	mem := memory.New()
	loadFixtures(t, mem)
	slug, _ := snapshotMarket()
	runBurst(t, newHeldStore(mem, string(store.Spot)), burstCase{held: string(store.Spot), path: "/v1/btc/spot/snapshots?limit=100",
		small: "/v1/markets/" + slug + "/snapshots?limit=10", heavy: "/v1/btc/future/snapshots?limit=100"})
}

// TestReadCapDocumented: every route that can be a heavy read says in its
// 429 that concurrent_reads may answer it.
func TestReadCapDocumented(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct{ Description string }
		}
	}
	if err := json.Unmarshal(b.get("", "/openapi.json").body, &doc); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/markets/{slug}/series", "/v1/markets/{slug}/snapshots", "/v1/markets/by-market-id/{marketId}/snapshots",
		"/v1/markets/{slug}/trades", "/v1/btc/spot/snapshots", "/v1/btc/future/snapshots"} {
		if d := doc.Paths[path]["get"].Responses["429"].Description; !strings.Contains(d, `"concurrent_reads"`) {
			t.Errorf("%s: 429 says %q", path, d)
		}
	}
	if d := doc.Paths["/v1/markets/{slug}"]["get"].Responses["429"].Description; strings.Contains(d, "concurrent_reads") {
		t.Errorf("a light route documents the read cap: %q", d)
	}
}

// TestHeavyReadsBoundPerProcess: a process runs at most Config.HeavyReads
// heavy store reads at once, whoever asks (here one ENTERPRISE customer
// under its cap of 16), and light reads pass beside them meanwhile; the
// reads waiting their turn then answer.
func TestHeavyReadsBoundPerProcess(t *testing.T) {
	t.Parallel()
	mem := memory.New()
	loadFixtures(t, mem)
	other := seriesMarket(t, mem, 100)
	slug, _ := snapshotMarket()
	st := newHeldStore(mem, slug)
	a := setup(t, func(o *setupOpts) { o.store = st })
	b := &bundle{t: t, store: st, keys: a.keys, ids: a.ids,
		srv: secondProcess(t, a, func(c *api.Config) { c.HeavyReads = 2 })}

	const burst = 6
	answers := make(chan response, burst)
	var wg sync.WaitGroup
	// Pages of their own (limit k+1): a page another read answered is kept
	// (pagecache.go) and answers an identical read without the store.
	for k := range burst {
		wg.Go(func() {
			answers <- b.send(store.Enterprise, fmt.Sprintf("/v1/markets/%s/snapshots?include_orderbook=true&limit=%d", slug, k+1), "")
		})
	}
	waitFor(t, "two heavy reads", func() bool { return st.heavy.Load() == 2 })
	for _, path := range []string{"/v1/markets/" + slug, "/v1/markets/" + other + "/snapshots?limit=5", "/v1/markets?coin=BTC&limit=5"} {
		if r := b.send(store.Pro, path, ""); r.status != http.StatusOK {
			t.Errorf("a light read beside the heavy ones: %s: %d %s", path, r.status, r.body)
		}
	}
	if n := st.heavy.Load(); n != 2 {
		t.Errorf("%d heavy reads at once, want 2", n)
	}
	close(st.release)
	wg.Wait()
	close(answers)
	for r := range answers {
		if r.status != http.StatusOK {
			t.Errorf("a heavy read that waited its turn: %d %s", r.status, r.body)
		}
	}
	if n := st.heavy.Load(); n != burst {
		t.Errorf("%d heavy reads in all, want %d", n, burst)
	}
}

// TestSnapshotPageCacheSeesLateSnapshots: a resolved market's snapshot
// page, once kept by the page cache, is not served as it was after
// snapshots are added to the market (a late write, `updown import` of a
// snapshots file): the page's total and rows are the store's, as the
// chart series' are (TestSeriesCoalescedAndCached).
func TestSnapshotPageCacheSeesLateSnapshots(t *testing.T) {
	t.Parallel()
	mem := memory.New()
	loadFixtures(t, mem)
	slug := seriesMarket(t, mem, 50)
	b := setup(t, func(o *setupOpts) { o.store = mem })
	path := "/v1/markets/" + slug + "/snapshots?limit=5"
	page := func() (total int, first string) {
		t.Helper()
		r := b.get(store.Pro, path)
		if r.status != http.StatusOK {
			t.Fatalf("snapshots: %d %s", r.status, r.body)
		}
		var p struct {
			Total     int `json:"total"`
			Snapshots []struct {
				Time string `json:"time"`
			} `json:"snapshots"`
		}
		if err := json.Unmarshal(r.body, &p); err != nil {
			t.Fatal(err)
		}
		return p.Total, p.Snapshots[0].Time
	}
	// Asked three times: kept from the second on, served from the cache
	// on the third.
	for range 3 {
		if total, _ := page(); total != 50 {
			t.Fatalf("total = %d, want 50", total)
		}
	}
	ctx := context.Background()
	m, err := mem.GetMarket(ctx, slug)
	if err != nil {
		t.Fatal(err)
	}
	late := m.EndTime.Add(-time.Second)
	if _, err := mem.AppendSnapshots(ctx, slug, []store.Snapshot{{Time: late, PriceUp: 0.9, PriceDown: 0.1, CoinPrice: 95_500}}); err != nil {
		t.Fatal(err)
	}
	total, first := page()
	if want := late.Format("2006-01-02T15:04:05.000000Z"); total != 51 || first != want {
		t.Errorf("after a late snapshot: total %d, newest %s; want 51 and %s (a page the cache kept from before)", total, first, want)
	}
}

// TestSnapshotPageCacheSeesADropRefilled: a resolved market's snapshot
// page, once kept by the page cache, is not served as it was after the
// market's month is dropped (drop-snapshots) and as many snapshots are
// imported again, which leaves its record and its count as they were: by
// slug and by market id.
func TestSnapshotPageCacheSeesADropRefilled(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewStore(t)
	loadFixtures(t, pg)
	slug := seriesMarket(t, pg, 50)
	b := setup(t, func(o *setupOpts) { o.store = pg })
	ctx := context.Background()
	m, err := pg.GetMarket(ctx, slug)
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{"/v1/markets/" + slug + "/snapshots?limit=5"}
	if m.MarketID != "" {
		paths = append(paths, "/v1/markets/by-market-id/"+m.MarketID+"/snapshots?limit=5")
	}
	page := func(path string) (total int, priceUp float64) {
		t.Helper()
		r := b.get(store.Pro, path)
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", path, r.status, r.body)
		}
		var p struct {
			Total     int `json:"total"`
			Snapshots []struct {
				PriceUp float64 `json:"price_up"`
			} `json:"snapshots"`
		}
		if err := json.Unmarshal(r.body, &p); err != nil {
			t.Fatal(err)
		}
		return p.Total, p.Snapshots[0].PriceUp
	}
	// Asked three times: kept from the second on, served from the cache
	// on the third.
	for _, path := range paths {
		for range 3 {
			if total, up := page(path); total != 50 || up != 0.5 {
				t.Fatalf("%s: total %d, price_up %v; want 50 and 0.5", path, total, up)
			}
		}
	}
	dropAndRefill(t, pg, m)
	for _, path := range paths {
		if total, up := page(path); total != 50 || up != 0.9 {
			t.Errorf("%s after a drop and a re-import: total %d, price_up %v; want 50 and 0.9 (a page the cache kept from before)", path, total, up)
		}
	}
}

// TestSeriesCacheSeesADropRefilled: a resolved market's chart series,
// once cached, is not served as it was after the market's month is
// dropped (drop-snapshots) and as many snapshots are imported again,
// which leaves its record and count as they were.
func TestSeriesCacheSeesADropRefilled(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewStore(t)
	loadFixtures(t, pg)
	slug := seriesMarket(t, pg, 50)
	b := setup(t, func(o *setupOpts) { o.store = pg })
	ctx := context.Background()
	m, err := pg.GetMarket(ctx, slug)
	if err != nil {
		t.Fatal(err)
	}
	first := func() float64 {
		t.Helper()
		r := b.get(store.Pro, "/v1/markets/"+slug+"/series")
		if r.status != http.StatusOK {
			t.Fatalf("series: %d %s", r.status, r.body)
		}
		var s seriesResp
		if err := json.Unmarshal(r.body, &s); err != nil {
			t.Fatal(err)
		}
		if s.Data.Snapshots != 50 || len(s.Data.PriceUp.First) == 0 {
			t.Fatalf("series of %d snapshots, %d buckets; want 50", s.Data.Snapshots, len(s.Data.PriceUp.First))
		}
		return s.Data.PriceUp.First[0]
	}
	for range 2 { // read, then from the cache
		if up := first(); up != 0.5 {
			t.Fatalf("price_up %v, want 0.5", up)
		}
	}
	dropAndRefill(t, pg, m)
	if up := first(); up != 0.9 {
		t.Errorf("after a drop and a re-import: price_up %v, want 0.9 (the series cached before)", up)
	}
}

// dropAndRefill drops the month of m's snapshots (drop-snapshots) and
// imports 50 again at price_up 0.9: m's record and count stay as they
// were, its data does not.
func dropAndRefill(t *testing.T, pg *postgres.Store, m store.Market) {
	t.Helper()
	ctx := context.Background()
	month := time.Date(m.StartTime.Year(), m.StartTime.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, 1, 0)
	if _, err := pg.DropSnapshotsBefore(ctx, month, false); err != nil {
		t.Fatal(err)
	}
	refill := make([]store.Snapshot, 50)
	for i := range refill {
		refill[i] = store.Snapshot{Time: m.StartTime.Add(time.Duration(i) * time.Second), PriceUp: 0.9, PriceDown: 0.1, CoinPrice: 95_000}
	}
	if _, err := pg.AppendSnapshots(ctx, m.Slug, refill); err != nil {
		t.Fatal(err)
	}
}
