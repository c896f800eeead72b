package collect

import (
	"slices"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestPolymarketScheme(t *testing.T) {
	t.Parallel()
	s := NewPolymarketScheme()
	for _, tc := range []struct {
		coin       store.Coin
		mt         store.MarketType
		at         string
		start, end string
		upstream   []string
		slug       string
	}{
		// REFERENCE.md's example: the 13:00–13:15Z window.
		{store.BTC, store.M15, "2026-04-29T13:07:31Z", "2026-04-29T13:00:00Z", "2026-04-29T13:15:00Z",
			[]string{"btc-updown-15m-1777467600"}, "btc-updown-15m-1777467600"},
		// The real 5m market of realdata/gamma/events_btc-updown-5m-1778584200.
		{store.BTC, store.M5, "2026-05-12T11:12:49Z", "2026-05-12T11:10:00Z", "2026-05-12T11:15:00Z",
			[]string{"btc-updown-5m-1778584200"}, "btc-updown-5m-1778584200"},
		{store.ETH, store.M5, "2026-04-29T13:04:59Z", "2026-04-29T13:00:00Z", "2026-04-29T13:05:00Z",
			[]string{"eth-updown-5m-1777467600"}, "eth-updown-5m-1777467600"},
		// Hourly: the year first, then the older form without it. 17:30 EST
		// is in the 5pm ET hour.
		{store.BTC, store.H1, "2026-01-20T22:30:00Z", "2026-01-20T22:00:00Z", "2026-01-20T23:00:00Z",
			[]string{"bitcoin-up-or-down-january-20-2026-5pm-et", "bitcoin-up-or-down-january-20-5pm-et"}, "btc-updown-1hr-1768946400"},
		// The brief's example: 1am EST on November 24.
		{store.BTC, store.H1, "2026-11-24T06:59:59Z", "2026-11-24T06:00:00Z", "2026-11-24T07:00:00Z",
			[]string{"bitcoin-up-or-down-november-24-2026-1am-et", "bitcoin-up-or-down-november-24-1am-et"}, "btc-updown-1hr-1795500000"},
		// Real slugs from realdata (SOURCES.md): March 17 4am EDT, March 1 9am EST.
		{store.BTC, store.H1, "2026-03-17T08:00:00Z", "2026-03-17T08:00:00Z", "2026-03-17T09:00:00Z",
			[]string{"bitcoin-up-or-down-march-17-2026-4am-et", "bitcoin-up-or-down-march-17-4am-et"}, "btc-updown-1hr-1773734400"},
		{store.BTC, store.H1, "2026-03-01T14:20:00Z", "2026-03-01T14:00:00Z", "2026-03-01T15:00:00Z",
			[]string{"bitcoin-up-or-down-march-1-2026-9am-et", "bitcoin-up-or-down-march-1-9am-et"}, "btc-updown-1hr-1772373600"},
		// Midnight is 12am and noon 12pm, in summer time.
		{store.SOL, store.H1, "2026-07-04T04:10:00Z", "2026-07-04T04:00:00Z", "2026-07-04T05:00:00Z",
			[]string{"solana-up-or-down-july-4-2026-12am-et", "solana-up-or-down-july-4-12am-et"}, "sol-updown-1hr-1783137600"},
		{store.ETH, store.H1, "2026-07-04T16:59:59Z", "2026-07-04T16:00:00Z", "2026-07-04T17:00:00Z",
			[]string{"ethereum-up-or-down-july-4-2026-12pm-et", "ethereum-up-or-down-july-4-12pm-et"}, "eth-updown-1hr-1783180800"},
		{store.ETH, store.H1, "2026-09-20T00:30:00Z", "2026-09-20T00:00:00Z", "2026-09-20T01:00:00Z",
			[]string{"ethereum-up-or-down-september-19-2026-8pm-et", "ethereum-up-or-down-september-19-8pm-et"}, "eth-updown-1hr-1789862400"},
		// 4h windows are aligned to US Eastern time (realdata: 1771923600 is
		// 04:00 EST, endDate 13:00Z; 1775635200 is 04:00 EDT).
		{store.BTC, store.H4, "2026-02-24T10:07:31Z", "2026-02-24T09:00:00Z", "2026-02-24T13:00:00Z",
			[]string{"btc-updown-4h-1771923600"}, "btc-updown-4hr-1771923600"},
		{store.BTC, store.H4, "2026-04-08T11:59:59Z", "2026-04-08T08:00:00Z", "2026-04-08T12:00:00Z",
			[]string{"btc-updown-4h-1775635200"}, "btc-updown-4hr-1775635200"},
		{store.BTC, store.H4, "2026-01-24T22:00:00Z", "2026-01-24T21:00:00Z", "2026-01-25T01:00:00Z",
			[]string{"btc-updown-4h-1769288400"}, "btc-updown-4hr-1769288400"},
		// The 20:00–24:00 ET window ends at midnight ET.
		{store.BTC, store.H4, "2026-04-09T03:00:00Z", "2026-04-09T00:00:00Z", "2026-04-09T04:00:00Z",
			[]string{"btc-updown-4h-1775692800"}, "btc-updown-4hr-1775692800"},
		// Summer time starts 2026-03-08 at 2am: 00:00 EST to 04:00 EDT is 3 h.
		{store.BTC, store.H4, "2026-03-08T06:30:00Z", "2026-03-08T05:00:00Z", "2026-03-08T08:00:00Z",
			[]string{"btc-updown-4h-1772946000"}, "btc-updown-4hr-1772946000"},
		// It ends 2026-11-01 at 2am: 00:00 EDT to 04:00 EST is 5 h.
		{store.BTC, store.H4, "2026-11-01T08:30:00Z", "2026-11-01T04:00:00Z", "2026-11-01T09:00:00Z",
			[]string{"btc-updown-4h-1793505600"}, "btc-updown-4hr-1793505600"},
		// Daily windows run noon ET to noon ET and are named by their end,
		// with the year first.
		{store.BTC, store.H24, "2026-01-20T18:00:00Z", "2026-01-20T17:00:00Z", "2026-01-21T17:00:00Z",
			[]string{"bitcoin-up-or-down-on-january-21-2026", "bitcoin-up-or-down-on-january-21"}, "btc-updown-24hr-1768928400"},
		{store.BTC, store.H24, "2026-01-20T16:59:59Z", "2026-01-19T17:00:00Z", "2026-01-20T17:00:00Z",
			[]string{"bitcoin-up-or-down-on-january-20-2026", "bitcoin-up-or-down-on-january-20"}, "btc-updown-24hr-1768842000"},
		// realdata: bitcoin-up-or-down-on-july-5-2026 ends 2026-07-05T16:00Z.
		{store.BTC, store.H24, "2026-07-05T15:59:59Z", "2026-07-04T16:00:00Z", "2026-07-05T16:00:00Z",
			[]string{"bitcoin-up-or-down-on-july-5-2026", "bitcoin-up-or-down-on-july-5"}, "btc-updown-24hr-1783180800"},
		// Across the start of summer time the day is 23 hours long, across
		// its end 25.
		{store.BTC, store.H24, "2026-03-08T01:00:00Z", "2026-03-07T17:00:00Z", "2026-03-08T16:00:00Z",
			[]string{"bitcoin-up-or-down-on-march-8-2026", "bitcoin-up-or-down-on-march-8"}, "btc-updown-24hr-1772902800"},
		{store.BTC, store.H24, "2026-11-01T12:00:00Z", "2026-10-31T16:00:00Z", "2026-11-01T17:00:00Z",
			[]string{"bitcoin-up-or-down-on-november-1-2026", "bitcoin-up-or-down-on-november-1"}, "btc-updown-24hr-1793462400"},
	} {
		start, end := s.Window(tc.coin, tc.mt, mustTime(t, tc.at))
		if !start.Equal(mustTime(t, tc.start)) || !end.Equal(mustTime(t, tc.end)) {
			t.Errorf("%s %s at %s: window [%s, %s), want [%s, %s)", tc.coin, tc.mt, tc.at, start, end, tc.start, tc.end)
		}
		if got := s.Slugs(tc.coin, tc.mt, start); !slices.Equal(got, tc.upstream) {
			t.Errorf("%s %s at %s: upstream slugs %q, want %q", tc.coin, tc.mt, tc.at, got, tc.upstream)
		}
		if got := Slug(tc.coin, tc.mt, start); got != tc.slug {
			t.Errorf("%s %s at %s: slug %q, want %q", tc.coin, tc.mt, tc.at, got, tc.slug)
		}
	}
}

// TestPolymarketSchemeWindowsTile checks that every series' windows follow
// one another without gap or overlap, and that upstream slugs name one
// window each, over most of a year (daily slugs carry no year) — except the
// hour that US Eastern time repeats when summer time ends, which the
// hourly form cannot tell apart (discovery then keeps Gamma's own times).
func TestPolymarketSchemeWindowsTile(t *testing.T) {
	t.Parallel()
	s := NewPolymarketScheme()
	for _, sr := range AllSeries() {
		from := mustTime(t, "2026-01-01T00:00:00Z")
		_, end := s.Window(sr.Coin, sr.MarketType, from)
		seen := map[string]time.Time{}
		for end.Before(from.AddDate(0, 0, 360)) {
			start, next := s.Window(sr.Coin, sr.MarketType, end)
			if !start.Equal(end) || !next.After(start) {
				t.Fatalf("%s: window after one ending %s is [%s, %s)", sr, end, start, next)
			}
			// Eastern windows gain or lose the hour summer time moves.
			if d := next.Sub(start); d < sr.MarketType.Duration()-time.Hour || d > sr.MarketType.Duration()+time.Hour ||
				(d != sr.MarketType.Duration() && sr.MarketType != store.H4 && sr.MarketType != store.H24) {
				t.Fatalf("%s: window [%s, %s) lasts %v", sr, start, next, d)
			}
			up := s.Slugs(sr.Coin, sr.MarketType, start)[0]
			if first, dup := seen[up]; dup {
				wall := func(t time.Time) string { return t.In(s.et).Format("2006-01-02 15") }
				if wall(first) != wall(start) {
					t.Fatalf("%s: upstream slug %s names windows at %s and %s", sr, up, first, start)
				}
			} else {
				seen[up] = start
			}
			end = next
		}
	}
}
