package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/collect"
	"github.com/updown/updown/jobs/collect/binancetest"
	"github.com/updown/updown/jobs/collect/polytest"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
	"github.com/updown/updown/store/redis/redistest"
)

// TestCollectAndSettleEverySeries runs `updown collect` and `updown
// worker`, processes of the real binary, on Postgres and Redis against the
// fake Polymarket and Binance, for every series (5 types × the coins that
// have them) on windows of a few seconds (--quick-windows), through the
// end of several windows and their settlement. It checks discovery, the
// snapshot cadence (at least 95% of the 300 ms grid on the windows
// recorded whole), both books in every snapshot, Polymarket's trades, the
// settlement (winner, reference prices, source, a daily 50-50 tie) and how
// long after the end it landed, fees and ticks (a tick change mid-market),
// and a gap when every source of books fails for four seconds.
func TestCollectAndSettleEverySeries(t *testing.T) {
	t.Parallel()
	updownBinary(t)
	dbURL := pgtest.NewDatabase(t)
	redisURL := redistest.New(t)
	const length = 8 * time.Second
	scheme := collect.QuickScheme{Length: length}
	poly := polytest.New(t, polytest.Options{Scheme: scheme, SettleAfter: time.Second, TradeEvery: 500 * time.Millisecond})
	bin := binancetest.New(t, binancetest.Options{})
	series := collect.AllSeries()
	now := time.Now()
	poly.AddRange(series, now, now.Add(6*length))
	// A daily tie, settled 50-50.
	w2Start, _ := scheme.Window(store.BTC, store.H24, now.Add(2*length))
	poly.Edit(poly.AddWindow(store.BTC, store.H24, w2Start), func(m *polytest.Market) { m.Tie = true })

	env := []string{"DATABASE_URL=" + dbURL, "REDIS_URL=" + redisURL, "LOG_LEVEL=info", "MIGRATE_ON_START=false", "WORKER_ADDR=off",
		collect.EnvGammaURL + "=" + poly.URL, collect.EnvCLOBURL + "=" + poly.URL, collect.EnvPolymarketWSURL + "=" + poly.WSURL,
		collect.EnvPolymarketDataURL + "=" + poly.URL, collect.EnvBinanceSpotURL + "=" + bin.URL, collect.EnvBinanceFuturesURL + "=" + bin.URL}
	startProc(t, "worker", env, "worker", "--ops-addr", "off")
	ops := freeAddr(t)
	collector := startProc(t, "collect", env, "collect", "--quick-windows", length.String(), "--resolve-delay", "2s", "--health-addr", ops)
	waitUp(t, collector, "http://"+ops)
	began := time.Now()

	// The windows recorded whole: the first two that start after the
	// collector did. The fault is in the third.
	w1, _ := scheme.Window(store.BTC, store.M5, began.Add(length))
	w2, w3 := w1.Add(length), w1.Add(2*length)
	time.Sleep(time.Until(w3.Add(2 * time.Second)))
	ctx := context.Background()
	st, err := postgres.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// A tick change on one live market of the third window, once the
	// collector knows the market: discovered after the change (a loaded
	// machine's discovery can lag), it would start in the new tick, with
	// no change to record.
	told := poly.WSStats().TickChanges
	tickMarket := poly.AddWindow(store.BTC, store.M5, w3)
	for deadline := time.Now().Add(4 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := st.GetMarket(ctx, collect.Slug(store.BTC, store.M5, w3)); err == nil {
			break
		}
	}
	poly.ChangeTick(tickMarket, 0.001)
	// The change told on the websocket before the fault below drops it: a
	// socket subscribed again is sent books in the new tick, not the
	// change, and a loaded machine may not have sent it within a second.
	for deadline := time.Now().Add(10 * time.Second); poly.WSStats().TickChanges == told && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second)
	// Every source of books fails for four seconds: a gap in every live
	// market.
	poly.FailAlways(polytest.RouteWS, polytest.Fault{Status: 503})
	poly.FailAlways(polytest.RouteBooks, polytest.Fault{Status: 503})
	poly.DropSockets()
	faultFrom := time.Now()
	time.Sleep(4 * time.Second)
	poly.Recover(polytest.RouteBooks)
	poly.Recover(polytest.RouteWS)
	faultTo := time.Now()
	// Through the end of the third window and its settlement.
	time.Sleep(time.Until(w3.Add(length + 6*time.Second)))

	act, hasActivity := any(st).(store.MarketActivityStore)
	if !hasActivity {
		t.Errorf("the Postgres store keeps no trades or gaps (store.MarketActivityStore)")
	}
	grid := 300 * time.Millisecond
	var report []string
	for _, sr := range series {
		found, snapsWhole, gridWhole := 0, 0, 0
		var lags []time.Duration
		for _, ws := range []time.Time{w1, w2, w3} {
			up := poly.AddWindow(sr.Coin, sr.MarketType, ws)
			slug := polytest.SlugOf(up)
			m, err := st.GetMarket(ctx, slug)
			if err != nil {
				t.Errorf("%s: %s not discovered: %v", sr, slug, err)
				continue
			}
			found++
			snaps, n, err := st.ListSnapshots(ctx, slug, store.SnapshotQuery{Ascending: true, WithBooks: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range snaps {
				if s.BookUp == nil || s.BookDown == nil || len(s.BookUp.Asks) == 0 || len(s.BookDown.Asks) == 0 || len(s.BookUp.Bids) == 0 {
					t.Errorf("%s: snapshot at %v lacks a book", slug, s.Time)
					break
				}
			}
			want := int((length + grid - 1) / grid)
			if !ws.Equal(w3) {
				snapsWhole += n
				gridWhole += want
			}

			// Settlement as Polymarket settled it.
			start, end := poly.ReferencePrices(up)
			switch {
			case !m.Resolved():
				t.Errorf("%s: not resolved %v after its end", slug, time.Since(up.End).Round(time.Millisecond))
			case *m.Winner != poly.Winner(up) || *m.CoinPriceStart != start || *m.CoinPriceEnd != end:
				t.Errorf("%s: settled %s %v → %v, Polymarket %s %v → %v", slug, *m.Winner, *m.CoinPriceStart, *m.CoinPriceEnd,
					poly.Winner(up), start, end)
			default:
				lags = append(lags, m.UpdatedAt.Sub(up.End))
			}
			if up.Tie && (m.Winner == nil || *m.Winner != store.OutcomeFiftyFifty) {
				t.Errorf("%s: a tie settled %v", slug, m.Winner)
			}
			wantSource := map[store.MarketType]string{store.H1: store.SourceBinance1h, store.H24: store.SourceBinance1mNoonET}[sr.MarketType]
			if wantSource == "" {
				wantSource = store.SourceChainlink
			}
			if m.ResolutionSource != wantSource || m.UpstreamSlug != up.Slug || m.TakerFeeRate == nil || *m.TakerFeeRate != 0.07 ||
				m.FeeExponent == nil || *m.FeeExponent != 1 || m.MinOrderSize == nil || *m.MinOrderSize != 5 || m.TickSize == nil {
				t.Errorf("%s: source %q upstream %q fee %v^%v min %v tick %v", slug, m.ResolutionSource, m.UpstreamSlug,
					ptrVal(m.TakerFeeRate), ptrVal(m.FeeExponent), ptrVal(m.MinOrderSize), ptrVal(m.TickSize))
			}
			if up.Slug == tickMarket.Slug {
				if m.TickSize == nil || *m.TickSize != 0.001 || len(m.TickSizeChanges) != 1 {
					t.Errorf("%s: tick %v changes %+v after a change to 0.001", slug, ptrVal(m.TickSize), m.TickSizeChanges)
				}
			} else if m.TickSize != nil && *m.TickSize != 0.01 {
				t.Errorf("%s: tick %v", slug, *m.TickSize)
			}
			if !hasActivity {
				continue
			}
			trades, nt, err := act.ListMarketTrades(ctx, slug, store.MarketTradeQuery{Ascending: true})
			if err != nil || nt == 0 {
				t.Errorf("%s: %d trades stored (%v)", slug, nt, err)
			}
			sent := append(poly.Trades(up.UpToken), poly.Trades(up.DownToken)...)
			for _, tr := range trades {
				if !slices.ContainsFunc(sent, func(s store.MarketTrade) bool {
					return s.TxHash == tr.TxHash && s.Price == tr.Price && s.Size == tr.Size && s.Outcome == tr.Outcome && s.Time.Equal(tr.Time)
				}) {
					t.Errorf("%s: stored trade %+v was not sent", slug, tr)
					break
				}
			}
			all, err := act.ListGaps(ctx, slug)
			if err != nil {
				t.Fatal(err)
			}
			// The websocket failed with the books: its trades are a gap of
			// their own kind (issue 28).
			var gaps, tradeGaps []store.Gap
			for _, g := range all {
				if g.Kind == store.GapTrades {
					tradeGaps = append(tradeGaps, g)
				} else {
					gaps = append(gaps, g)
				}
			}
			// A fault that came late (a loaded machine's waits before it)
			// may leave the window less than a gap's worth (GapAfter, 3 s).
			if ws.Equal(w3) && (len(tradeGaps) > 1 || len(tradeGaps) == 0 && faultInWindow(faultFrom, faultTo, w3.Add(length)) > 3*time.Second+time.Second) {
				t.Errorf("%s: trades gaps %+v; the websocket failed from %v to %v, the window's end %v", slug, tradeGaps, faultFrom, faultTo, w3.Add(length))
			}
			if end := w3.Add(length); ws.Equal(w3) && faultTo.After(end.Add(-time.Second)) {
				// The fault ran past the window's end (a loaded machine's
				// waits before it came late): what the window lost is the
				// stretch from the fault to its end, a gap only when longer
				// than GapAfter (3 s), and never past the end.
				if len(gaps) > 1 || len(gaps) == 1 && (gaps[0].From.Before(faultFrom.Add(-time.Second)) || gaps[0].To.After(end)) ||
					len(gaps) == 0 && end.Sub(faultFrom) > 3*time.Second+time.Second {
					t.Errorf("%s: gaps %+v; books failed from %v to %v, past the window's end %v", slug, gaps, faultFrom, faultTo, end)
				}
			} else if ws.Equal(w3) {
				// A snapshot is stamped with its grid instant and may be
				// filled by an answer up to MaxLag (1 s) late, after the
				// books came back: a loaded machine's gap can end that much
				// before the fault did (3.2 s of a 4 s fault, once).
				if len(gaps) != 1 || gaps[0].To.Sub(gaps[0].From) < faultTo.Sub(faultFrom)-time.Second-300*time.Millisecond ||
					gaps[0].From.Before(faultFrom.Add(-time.Second)) || gaps[0].To.After(faultTo.Add(2*time.Second)) {
					var times []string
					for _, s := range snaps {
						times = append(times, s.Time.Format("05.0"))
					}
					t.Errorf("%s: gaps %+v; books failed from %v to %v; snapshots at %v", slug, gaps, faultFrom, faultTo, times)
				}
			} else if len(gaps) != 0 {
				t.Errorf("%s: gaps %+v in a window recorded whole", slug, gaps)
			}
		}
		ratio := float64(snapsWhole) / float64(max(gridWhole, 1))
		if ratio < 0.95 {
			t.Errorf("%s: %d snapshots over two whole windows, %.1f%% of the 300 ms grid (want at least 95%%)", sr, snapsWhole, 100*ratio)
		}
		var maxLag time.Duration
		for _, l := range lags {
			maxLag = max(maxLag, l)
		}
		report = append(report, fmt.Sprintf("%-10s markets %d/3, snapshots %.1f per whole window of %d (%.1f%%), settled %d, max lag after end %v",
			sr, found, float64(snapsWhole)/2, int((length+grid-1)/grid), 100*ratio, len(lags), maxLag.Round(10*time.Millisecond)))
	}
	t.Logf("per series, windows of %v:\n%s", length, strings.Join(report, "\n"))

	// The same through the API: the market object's extra fields, its
	// trades and its gap.
	key := createKey(t, dbURL, "collect-e2e@example.com", store.Enterprise)
	_, base := startAPI(t, services{dbURL: dbURL, redisURL: redisURL, key: key})
	slug := polytest.SlugOf(tickMarket)
	get := func(path string, out any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.Header.Set("X-API-Key", key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(res.Body)
			t.Fatalf("GET %s: %d %s", path, res.StatusCode, b)
		}
		if err := json.NewDecoder(res.Body).Decode(out); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	type apiMarket struct {
		Winner           *string  `json:"winner"`
		UpstreamSlug     *string  `json:"upstream_slug"`
		TakerFeeRate     *float64 `json:"taker_fee_rate"`
		FeeExponent      *int     `json:"fee_exponent"`
		TickSize         *float64 `json:"tick_size"`
		TickSizeChanges  []any    `json:"tick_size_changes"`
		ResolutionSource *string  `json:"resolution_source"`
		PriceToBeat      *float64 `json:"price_to_beat"`
		FinalPrice       *float64 `json:"final_price"`
	}
	var trades struct {
		Market apiMarket `json:"market"`
		Trades []struct {
			Price   float64 `json:"price"`
			Outcome string  `json:"outcome"`
		} `json:"trades"`
		Total int `json:"total"`
	}
	get("/v1/markets/"+slug+"/trades?limit=1000", &trades)
	_, stored, _ := act.ListMarketTrades(ctx, slug, store.MarketTradeQuery{Limit: 1})
	mk := trades.Market
	start, end := poly.ReferencePrices(tickMarket)
	if trades.Total == 0 || trades.Total != stored || len(trades.Trades) != stored || mk.Winner == nil || *mk.Winner != poly.Winner(tickMarket) ||
		ptrVal(mk.UpstreamSlug) != tickMarket.Slug || ptrVal(mk.TakerFeeRate) != 0.07 || ptrVal(mk.FeeExponent) != 1 ||
		ptrVal(mk.TickSize) != 0.001 || len(mk.TickSizeChanges) != 1 || ptrVal(mk.ResolutionSource) != store.SourceChainlink ||
		ptrVal(mk.PriceToBeat) != start || ptrVal(mk.FinalPrice) != end {
		t.Errorf("API trades of %s: %d (%d stored), market %+v", slug, trades.Total, stored, mk)
	}
	var gaps struct {
		Gaps []struct {
			From time.Time `json:"from"`
			To   time.Time `json:"to"`
			Kind string    `json:"kind"`
		} `json:"gaps"`
	}
	get("/v1/markets/"+slug+"/gaps", &gaps)
	// The API answers the gaps the store holds, checked above against the
	// fault: one of trades, and one of snapshots unless the fault ran past
	// the window's end and left less than a gap's worth.
	held, err := act.ListGaps(ctx, slug)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for i, g := range gaps.Gaps {
		kinds[g.Kind]++
		if i >= len(held) || !g.From.Equal(held[i].From) || !g.To.Equal(held[i].To) || g.Kind != held[i].Kind.Name() {
			t.Errorf("API gaps of %s: %+v, the store holds %+v", slug, gaps.Gaps, held)
			break
		}
	}
	pastEnd := faultTo.After(w3.Add(length - time.Second))
	short := faultInWindow(faultFrom, faultTo, w3.Add(length)) <= 3*time.Second+time.Second
	if len(gaps.Gaps) != len(held) || kinds["trades"] != 1 && !(short && kinds["trades"] == 0) ||
		kinds["snapshots"] != 1 && !(pastEnd && kinds["snapshots"] == 0) {
		t.Errorf("API gaps of %s: %+v, want one of each kind (the fault from %v to %v, the window's end %v)",
			slug, gaps.Gaps, faultFrom, faultTo, w3.Add(length))
	}
}

// faultInWindow is how much of the fault [from, to) fell before the
// window's end.
func faultInWindow(from, to, end time.Time) time.Duration {
	if to.After(end) {
		to = end
	}
	return to.Sub(from)
}

func ptrVal[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
