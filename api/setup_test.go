package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/api"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// now is the pinned clock of every api test.
var now = time.Date(2026, 4, 29, 13, 7, 30, 0, time.UTC)

// bundle is one test's server, store and keys.
type bundle struct {
	t     *testing.T
	srv   *httptest.Server
	store store.Store
	keys  map[store.Tier]string
	ids   map[store.Tier]string
}

type setupOpts struct {
	devKeys bool
	store   store.Store
	jobs    api.JobRunner
	sweeps  api.SweepQueue
	jobWait time.Duration
	live    store.LiveExchange
	// liveTimeout is Config.LiveTimeout (its default when 0).
	liveTimeout time.Duration
	// Billing and rate limits (billing_test.go, ratelimit_test.go).
	redis         redis.UniversalClient
	webhookSecret string
	productTiers  map[string]store.Tier // BILLING_PRODUCT_TIERS
	rateLimits    map[store.Tier]api.RateLimit
	publicURL     string
	billingURL    string
	tokenSecret   []byte           // TOKEN_SECRET: bearer tokens (none when nil)
	clock         func() time.Time // the pinned now when nil
	logger        *slog.Logger     // discards when nil
}

// setup starts the real router over HTTP on a memory store holding the
// fixture markets and one customer (with a key) per tier.
func setup(t *testing.T, opts ...func(*setupOpts)) *bundle {
	t.Helper()
	var o setupOpts
	for _, f := range opts {
		f(&o)
	}
	st := o.store
	if st == nil {
		st = memory.New()
		loadFixtures(t, st)
	}
	clock, logger := o.clock, o.logger
	if clock == nil {
		clock = func() time.Time { return now }
	}
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv, err := api.New(api.Config{
		Store:  st,
		Logger: logger,
		Now:    clock,
		Redis:  o.redis,
		// Generous: a loaded machine's Redis must not make the caps and
		// limits under test fail open (the default is 250 ms).
		RedisTimeout:        10 * time.Second,
		WebhookSecret:       o.webhookSecret,
		BillingProductTiers: o.productTiers,
		RateLimits:          o.rateLimits,
		DevKeys:             o.devKeys,
		Jobs:                o.jobs,
		Sweeps:              o.sweeps,
		JobWait:             o.jobWait,
		Live:                o.live,
		LiveTimeout:         o.liveTimeout,
		PublicURL:           o.publicURL,
		BillingURL:          o.billingURL,
		AI:                  api.AIConfig{TokenSecret: o.tokenSecret},
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	b := &bundle{t: t, srv: ts, store: st, keys: map[store.Tier]string{}, ids: map[store.Tier]string{}}
	ctx := context.Background()
	for _, tier := range store.Tiers {
		c, err := st.CreateCustomer(ctx, store.Customer{Email: strings.ToLower(string(tier)) + "@test.example", Tier: tier})
		if err != nil {
			t.Fatal(err)
		}
		plain, k := api.NewKey(c.ID)
		if _, err := st.CreateAPIKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		b.keys[tier], b.ids[tier] = plain, c.ID
	}
	return b
}

// response is a decoded answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, r.body)
	}
	return m
}

// get sends a GET with the tier's key ("" tier: no key).
func (b *bundle) get(tier store.Tier, path string) response {
	b.t.Helper()
	return b.do(http.MethodGet, path, b.keys[tier], "", "")
}

func (b *bundle) do(method, path, key, contentType, body string) response {
	b.t.Helper()
	req, err := http.NewRequest(method, b.srv.URL+path, strings.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: data}
}

// wantError checks the SPEC 7 envelope, status and code.
func wantError(t *testing.T, r response, status int, code string) map[string]any {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	m := r.json(t)
	if m["success"] != false {
		t.Errorf("success = %v, want false", m["success"])
	}
	e, _ := m["error"].(map[string]any)
	if e == nil || e["code"] != code {
		t.Fatalf("error = %v, want code %s", m["error"], code)
	}
	if msg, _ := e["message"].(string); msg == "" {
		t.Errorf("error.message is empty")
	}
	if ts, _ := m["timestamp"].(string); ts == "" {
		t.Errorf("timestamp missing")
	} else if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
		t.Errorf("timestamp %q is not ISO 8601: %v", ts, err)
	}
	if r.header.Get("X-Request-Id") == "" {
		t.Errorf("X-Request-Id missing on error response")
	}
	return e
}

// Fixture markets: per series a run of markets ending before now, newest
// one live (unresolved). Counts exceed Starter's window where it matters.
type series struct {
	coin  store.Coin
	mt    store.MarketType
	count int
}

var fixtureSeries = []series{
	{store.BTC, store.M5, 55},
	{store.BTC, store.M15, 52},
	{store.BTC, store.H1, 26},
	{store.BTC, store.H4, 25},
	{store.BTC, store.H24, 7},
	{store.ETH, store.M5, 3},
	{store.SOL, store.H1, 2},
}

func slugOf(c store.Coin, mt store.MarketType, start time.Time) string {
	return fmt.Sprintf("%s-updown-%s-%d", strings.ToLower(string(c)), mt, start.Unix())
}

func loadFixtures(t *testing.T, st store.Store) {
	t.Helper()
	ctx := context.Background()
	var markets []store.Market
	for _, s := range fixtureSeries {
		d := s.mt.Duration()
		live := now.Truncate(d)
		for i := 0; i < s.count; i++ {
			start := live.Add(-time.Duration(i) * d)
			m := store.Market{
				Slug: slugOf(s.coin, s.mt, start), MarketID: fmt.Sprintf("%s-%s-%d", s.coin, s.mt, i),
				EventID: fmt.Sprintf("ev-%s-%s-%d", s.coin, s.mt, i), Coin: s.coin, MarketType: s.mt,
				StartTime: start, EndTime: start.Add(d), ConditionID: "0xabc", ClobTokenUp: "111", ClobTokenDown: "222",
				CoinPriceStart: ptr(95000.0),
			}
			if i > 0 {
				m.CoinPriceEnd, m.Winner = ptr(95100.0), ptr(store.OutcomeUp)
				m.FinalVolume, m.FinalLiquidity = ptr(1234.5), ptr(999.25)
				m.ResolvedAt = ptr(start.Add(d + time.Minute))
			}
			markets = append(markets, m)
		}
	}
	if err := st.UpsertMarkets(ctx, markets); err != nil {
		t.Fatal(err)
	}
	// Snapshots for the newest resolved BTC 15m market: 30 at 30 s cadence,
	// with books on every other one.
	m := markets[56] // BTC 15m, i = 1
	if m.MarketType != store.M15 || m.Winner == nil {
		t.Fatalf("fixture layout changed: %s", m.Slug)
	}
	var snaps []store.Snapshot
	for i := 0; i < 30; i++ {
		s := store.Snapshot{Time: m.StartTime.Add(time.Duration(i) * 30 * time.Second), CoinPrice: 95000 + float64(i),
			PriceUp: 0.5 + float64(i)/100, PriceDown: 0.49 - float64(i)/100}
		if i%2 == 0 {
			s.BookUp = &store.Book{Bids: []store.Level{{Price: 0.49, Size: 100}}, Asks: []store.Level{{Price: 0.51, Size: 200.5}, {Price: 0.52, Size: 10}}}
			s.BookDown = &store.Book{Bids: []store.Level{{Price: 0.48, Size: 50}}, Asks: []store.Level{}}
		}
		snaps = append(snaps, s)
	}
	if _, err := st.AppendSnapshots(ctx, m.Slug, snaps); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

// snapshotMarket is the fixture market that has snapshots.
func snapshotMarket() (slug, marketID string) {
	start := now.Truncate(15 * time.Minute).Add(-15 * time.Minute)
	return slugOf(store.BTC, store.M15, start), "BTC-15m-1"
}
