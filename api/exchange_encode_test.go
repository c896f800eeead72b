package api

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/jsonenc"
	"github.com/updown/updown/store"
)

// sameJSON fails the test unless got and want encode the same JSON value.
func sameJSON(t *testing.T, what string, got []byte, want any) {
	t.Helper()
	wantBytes, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s is not JSON: %v\n%s", what, err, got)
	}
	if err := json.Unmarshal(wantBytes, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s differs from its documented type:\n got %s\nwant %s", what, got, wantBytes)
	}
}

func randomLevels(r *rand.Rand, n int) []store.DepthLevel {
	out := make([]store.DepthLevel, n)
	for i := range out {
		out[i] = store.DepthLevel{Price: r.Float64() * 100_000, Quantity: r.ExpFloat64()}
	}
	return out
}

func docLevels(ls []store.DepthLevel, rounded bool) []depthLevelJSON {
	out := make([]depthLevelJSON, len(ls))
	for i, l := range ls {
		out[i] = depthLevelJSON{Price: l.Price, Quantity: l.Quantity}
		if rounded {
			out[i] = depthLevelJSON{Price: round(l.Price, 2), Quantity: round(l.Quantity, 5)}
		}
	}
	return out
}

// TestExchangeBodiesMatchDocs holds the hand-written bodies to the types
// the OpenAPI document describes, on random data.
func TestExchangeBodiesMatchDocs(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	for range 50 {
		snaps := make([]store.DepthSnapshot, r.IntN(4))
		doc := depthPage{Data: []depthSnapshotJSON{}, Total: r.IntN(1000), Limit: 1 + r.IntN(1000), Offset: r.IntN(100)}
		if r.IntN(2) == 0 {
			doc.Warning = "start_time is before \"the\" window <&>"
		}
		for i := range snaps {
			snaps[i] = store.DepthSnapshot{Symbol: "BTCUSDT", Time: time.UnixMilli(r.Int64N(1 << 41)), CoinPrice: r.Float64() * 1e5,
				Bids: randomLevels(r, r.IntN(5)), Asks: randomLevels(r, r.IntN(5)), LastUpdateID: r.Int64()}
			s := snaps[i]
			doc.Data = append(doc.Data, depthSnapshotJSON{Symbol: s.Symbol, TimeEpochMs: s.Time.UnixMilli(), CoinPrice: s.CoinPrice,
				Bids: docLevels(s.Bids, false), Asks: docLevels(s.Asks, false), LastUpdateID: s.LastUpdateID})
		}
		page := &depthPageBody{Data: snaps, Total: doc.Total, Limit: doc.Limit, Offset: doc.Offset, Warning: doc.Warning}
		sameJSON(t, "depth page", page.AppendJSON(nil), doc)

		d := store.DepthSnapshot{CoinPrice: r.Float64() * 1e5, Bids: randomLevels(r, r.IntN(5)), Asks: randomLevels(r, r.IntN(5))}
		sameJSON(t, "latest depth", (&latestDepthBody{d: d}).AppendJSON(nil), latestDepthDoc{Data: latestDepthJSON{
			CoinPrice: round(d.CoinPrice, 2), Bids: docLevels(d.Bids, true), Asks: docLevels(d.Asks, true)}})

		trades := make([]store.Trade, r.IntN(5))
		spot := spotTradesDoc{Data: []spotTradeJSON{}, Total: len(trades), Limit: 1 + r.IntN(1000)}
		fut := futureTradesDoc{Data: []futureTradeJSON{}, Total: len(trades), Limit: spot.Limit}
		for i := range trades {
			tr := store.Trade{ID: r.Int64N(1 << 40), Price: r.Float64() * 1e5, Qty: r.ExpFloat64(), QuoteQty: r.Float64() * 1e4,
				Time: time.UnixMilli(r.Int64N(1 << 41)), IsBuyerMaker: r.IntN(2) == 0}
			if r.IntN(3) > 0 {
				v := r.IntN(2) == 0
				tr.IsBestMatch = &v
			}
			trades[i] = tr
			f := futureTradeJSON{ID: tr.ID, Price: round(tr.Price, 2), Qty: round(tr.Qty, 5), QuoteQty: round(tr.QuoteQty, 5),
				Time: tr.Time.UnixMilli(), IsBuyerMaker: tr.IsBuyerMaker}
			fut.Data = append(fut.Data, f)
			spot.Data = append(spot.Data, spotTradeJSON{ID: f.ID, Price: f.Price, Qty: f.Qty, QuoteQty: f.QuoteQty, Time: f.Time,
				IsBuyerMaker: f.IsBuyerMaker, IsBestMatch: tr.IsBestMatch})
		}
		sameJSON(t, "spot trades", (&tradesBody{trades: trades, limit: spot.Limit, spot: true}).AppendJSON(nil), spot)
		sameJSON(t, "futures trades", (&tradesBody{trades: trades, limit: fut.Limit}).AppendJSON(nil), fut)
		if len(trades) > 0 {
			sameJSON(t, "spot trade", (&tradeBody{trade: trades[0], spot: true}).AppendJSON(nil), spotTradeDoc{Data: spot.Data[0]})
			sameJSON(t, "futures trade", (&tradeBody{trade: trades[0]}).AppendJSON(nil), futureTradeDoc{Data: fut.Data[0]})
		}
	}
}

func TestRound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		x      float64
		places int
		want   string
	}{
		{95123.456789, 2, "95123.46"},
		{0.123456789, 5, "0.12346"},
		{11743.63869555, 5, "11743.6387"},
		{95123.45, 2, "95123.45"},
		{0.000001, 5, "0"},
		{-0.000001, 5, "0"}, // not -0
		{1.000004999, 5, "1"},
		{0.125, 2, "0.13"}, // halves away from zero
		{2.5e-5, 5, "0.00003"},
		// Decimal halves a float holds a hair below the half: the mid of a
		// one-cent spread, as the collector records it (decimalMid).
		{76600.025, 2, "76600.03"},
		{1.005, 2, "1.01"},
		{2.675, 2, "2.68"},
		{180.005, 2, "180.01"},
		{-1.005, 2, "-1.01"},
		{0.123455, 5, "0.12346"},
		{1.0049999, 2, "1"}, // near a half, not one
	} {
		if got := string(jsonenc.AppendFloat(nil, round(tc.x, tc.places))); got != tc.want {
			t.Errorf("round(%v, %d) = %s, want %s", tc.x, tc.places, got, tc.want)
		}
	}
}

// FuzzRound checks that a rounded number is written with at most its
// places of decimals and lies within half a unit of the last place of the
// input, for every magnitude prices and quantities have.
func FuzzRound(f *testing.F) {
	for _, v := range []float64{95123.456789, 0.123456789, 0.125, 1.005, 2.675, 180.005, -3.14159, 0, 1e-9, 999999.999995} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, x float64) {
		if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > 1e9 {
			return
		}
		for _, places := range []int{pricePlaces, quantityPlaces} {
			r := round(x, places)
			s := string(jsonenc.AppendFloat(nil, r))
			if i := strings.IndexByte(s, '.'); i >= 0 && len(s)-i-1 > places {
				t.Fatalf("round(%v, %d) is written %s", x, places, s)
			}
			if strings.ContainsAny(s, "e-") && r >= 0 {
				t.Fatalf("round(%v, %d) is written %s", x, places, s)
			}
			if d := math.Abs(r - x); d > 0.5*math.Pow10(-places)*(1+1e-9)+math.Abs(x)*1e-15 {
				t.Fatalf("round(%v, %d) = %v is %v away", x, places, r, d)
			}
			if back, err := strconv.ParseFloat(s, 64); err != nil || back != r {
				t.Fatalf("round(%v, %d) written %s does not read back (%v)", x, places, s, err)
			}
		}
	})
}

// FuzzExchangeHistoryNotFound checks the catch-all's path parser: it
// answers 404 for /v1/<coin>/<kind>/snapshots shapes only, and never
// for a path the router serves.
func FuzzExchangeHistoryNotFound(f *testing.F) {
	for _, p := range []string{"/v1/eth/spot/snapshots", "/v1/BTC/future/snapshots", "/v1/doge/spot/snapshots", "/v1/btc/spot/snapshots",
		"/v1/markets/abc/snapshots", "/v1/eth/spot/latest", "/v1//spot/snapshots", "/v1/eth/spot/snapshots/", "/v2/eth/spot/snapshots", ""} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, path string) {
		e := exchangeHistoryNotFound(path)
		if e == nil {
			return
		}
		parts := strings.Split(path, "/")
		if len(parts) != 5 || parts[0] != "" || parts[1] != "v1" || parts[4] != "snapshots" || (parts[3] != "spot" && parts[3] != "future") {
			t.Fatalf("%q answered %v, but is not /v1/<coin>/<kind>/snapshots", path, e)
		}
		if parts[2] == historyCoin {
			t.Fatalf("%q is the router's, yet answered %v", path, e)
		}
		if e.Status != 404 || e.Code != CodeNotFound || e.Message == "" {
			t.Fatalf("%q answered %+v", path, e)
		}
	})
}
