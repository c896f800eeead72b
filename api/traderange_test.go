package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

type tradeRangePage struct {
	Trades     []map[string]any `json:"trades"`
	Total      int              `json:"total"`
	Matched    int              `json:"matched"`
	Offset     int              `json:"offset"`
	NextCursor *string          `json:"next_cursor"`
}

// keys returns the page's trades as time|price|size, which tells the
// fixture's trades apart.
func (p tradeRangePage) keys() []string {
	out := make([]string, len(p.Trades))
	for i, tr := range p.Trades {
		out[i] = fmt.Sprint(tr["time"], "|", tr["price"], "|", tr["size"])
	}
	return out
}

func tradeKeys(trades []store.MarketTrade) []string {
	out := make([]string, len(trades))
	for i, tr := range trades {
		out[i] = fmt.Sprint(recordTime(tr.Time), "|", tr.Price, "|", tr.Size)
	}
	return out
}

// TestMarketTradesByTime: the trades routes take a time range, an order and
// a cursor whose position is the whole trade key, so that a page boundary
// inside an instant's trades neither repeats nor skips one.
func TestMarketTradesByTime(t *testing.T) {
	t.Parallel()
	onBothStores(t, func(t *testing.T, b *bundle) {
		slug, marketID := snapshotMarket()
		all := activityTrades()
		// Four more trades at the instant of trade 10: five share it.
		var ties []store.MarketTrade
		for k := range 4 {
			x := all[10]
			x.Price += 0.001 * float64(k+1)
			x.Size += float64(k + 1)
			x.TxHash += fmt.Sprint(k)
			ties = append(ties, x)
		}
		if _, err := b.store.AppendMarketTrades(t.Context(), slug, ties); err != nil {
			t.Fatal(err)
		}
		all = append(all, ties...)
		slices.SortFunc(all, store.CompareMarketTrades)
		in := func(from, to int) []store.MarketTrade { // trades at instants [from, to)
			a, z := activityTrades()[from].Time, activityTrades()[to].Time
			var out []store.MarketTrade
			for _, tr := range all {
				if !tr.Time.Before(a) && tr.Time.Before(z) {
					out = append(out, tr)
				}
			}
			return out
		}
		ms := func(i int) string { return itoa(activityTrades()[i].Time.UnixMilli()) }
		iso := func(i int) string { return url.QueryEscape(activityTrades()[i].Time.Format(time.RFC3339Nano)) }
		base := "/v1/markets/" + slug + "/trades"

		cases := []struct {
			name    string
			query   string
			want    []store.MarketTrade
			matched int
			more    bool
		}{
			{"range, oldest first, ties at the start", "start_time=" + ms(10) + "&end_time=" + iso(20) + "&order=asc", in(10, 20), 14, false},
			{"range, newest first, ties excluded at the end", "start_time=" + iso(5) + "&end_time=" + ms(10), rev(in(5, 10)), 5, false},
			{"range, paged by offset", "start_time=" + ms(8) + "&end_time=" + ms(30) + "&limit=4&offset=2&order=asc", in(8, 30)[2:6], 26, true},
			{"no range", "limit=3", rev(all)[:3], 154, true},
			{"the last instant", "start_time=" + ms(149) + "&end_time=" + itoa(activityTrades()[149].Time.UnixMilli()+1) + "&order=asc", all[153:], 1, false},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				p := decode[tradeRangePage](t, b.get(store.Pro, base+"?"+tc.query))
				if got, want := p.keys(), tradeKeys(tc.want); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("trades %v, want %v", got, want)
				}
				if p.Total != 154 || p.Matched != tc.matched || (p.NextCursor != nil) != tc.more {
					t.Errorf("total %d matched %d next_cursor %v; want 154, %d, one: %t", p.Total, p.Matched, p.NextCursor, tc.matched, tc.more)
				}
			})
		}

		// Walks by cursor, two trades a page so that pages end inside the
		// five trades of one instant, alternating routes, while newer trades
		// arrive: each trade of the range once, in order, then null.
		for _, order := range []string{"asc", "desc"} {
			q := "start_time=" + ms(6) + "&end_time=" + ms(16) + "&order=" + order + "&limit=2"
			want := in(6, 16)
			if order == "desc" {
				want = rev(want)
			}
			var got []string
			path := base + "?" + q
			for pages := 0; ; pages++ {
				if pages > 20 {
					t.Fatal("walk does not end")
				}
				p := decode[tradeRangePage](t, b.get(store.Pro, path))
				got = append(got, p.keys()...)
				if p.NextCursor == nil {
					break
				}
				if p.Matched != len(want) || p.Offset != 0 {
					t.Errorf("page %d: matched %d offset %d", pages, p.Matched, p.Offset)
				}
				route := base
				if pages%2 == 0 {
					route = "/v1/markets/by-market-id/" + marketID + "/trades"
				}
				path = route + "?" + q + "&cursor=" + *p.NextCursor
			}
			if fmt.Sprint(got) != fmt.Sprint(tradeKeys(want)) {
				t.Errorf("walk %s = %v, want %v", order, got, tradeKeys(want))
			}
		}

		// Newest first over the whole market while trades arrive (newer ones,
		// and one at an instant the walk has passed): the walk reads the
		// trades there were when it started, where offsets would repeat.
		var got []string
		path := base + "?limit=40"
		for pages := 0; ; pages++ {
			if pages > 20 {
				t.Fatal("walk does not end")
			}
			p := decode[tradeRangePage](t, b.get(store.Pro, path))
			got = append(got, p.keys()...)
			if p.NextCursor == nil {
				break
			}
			newer := all[len(all)-1]
			newer.Time = newer.Time.Add(time.Duration(pages+1) * time.Second)
			passed := all[len(all)-1-pages*40]
			passed.Size += 1000
			if _, err := b.store.AppendMarketTrades(t.Context(), slug, []store.MarketTrade{newer, passed}); err != nil {
				t.Fatal(err)
			}
			path = base + "?limit=40&cursor=" + *p.NextCursor
		}
		if want := tradeKeys(rev(all)); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("walk under inserts: %d trades, want %d:\n%v\n%v", len(got), len(want), got, want)
		}

		cursor := *decode[tradeRangePage](t, b.get(store.Pro, base+"?limit=2&start_time="+ms(1))).NextCursor
		snapCursor := *decode[rangePage](t, b.get(store.Pro, "/v1/markets/"+slug+"/snapshots?limit=2&start_time="+ms(1))).NextCursor
		other := slugOf(store.BTC, store.M15, now.Truncate(15*time.Minute).Add(-30*time.Minute))
		for _, bad := range []string{
			base + "?cursor=" + cursor + "&start_time=" + ms(1) + "&offset=2",            // cursor with offset
			base + "?cursor=" + cursor + "&start_time=" + ms(2),                          // another range
			base + "?cursor=" + cursor + "&start_time=" + ms(1) + "&order=asc",           // another order
			"/v1/markets/" + other + "/trades?cursor=" + cursor + "&start_time=" + ms(1), // another market
			base + "?cursor=" + snapCursor + "&start_time=" + ms(1),                      // the snapshots' cursor
			"/v1/markets/" + slug + "/snapshots?cursor=" + cursor + "&start_time=" + ms(1),
			base + "?cursor=" + cursor[:len(cursor)-2] + "&start_time=" + ms(1), // cut
			base + "?cursor=not-a-cursor",
			base + "?start_time=" + ms(9) + "&end_time=" + ms(3), // from after to
			base + "?start_time=" + ms(9) + "&end_time=" + ms(9),
			base + "?end_time=yesterday",
			"/v1/markets/by-market-id/" + marketID + "/trades?start_time=" + ms(9) + "&end_time=" + ms(3),
		} {
			wantError(t, b.get(store.Pro, bad), http.StatusBadRequest, "VALIDATION_ERROR")
		}
		if r := b.get(store.Pro, base+"?limit=2&start_time="+ms(1)+"&cursor="+cursor); r.status != http.StatusOK {
			t.Errorf("the cursor on its own query: %d %s", r.status, r.body)
		}
	})
}

// rev returns xs newest first.
func rev(xs []store.MarketTrade) []store.MarketTrade {
	out := slices.Clone(xs)
	slices.Reverse(out)
	return out
}
