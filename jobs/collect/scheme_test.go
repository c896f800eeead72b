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
		upstream   string
		slug       string
	}{
		// REFERENCE.md's example: the 13:00–13:15Z window.
		{store.BTC, store.M15, "2026-04-29T13:07:31Z", "2026-04-29T13:00:00Z", "2026-04-29T13:15:00Z",
			"btc-updown-15m-1777467600", "btc-updown-15m-1777467600"},
		{store.ETH, store.M5, "2026-04-29T13:04:59Z", "2026-04-29T13:00:00Z", "2026-04-29T13:05:00Z",
			"eth-updown-5m-1777467600", "eth-updown-5m-1777467600"},
		// 17:30 EST is in the 5pm ET hour.
		{store.BTC, store.H1, "2026-01-20T22:30:00Z", "2026-01-20T22:00:00Z", "2026-01-20T23:00:00Z",
			"bitcoin-up-or-down-january-20-5pm-et", "btc-updown-1hr-1768946400"},
		// Midnight and noon ET, in summer time.
		{store.SOL, store.H1, "2026-07-04T04:10:00Z", "2026-07-04T04:00:00Z", "2026-07-04T05:00:00Z",
			"solana-up-or-down-july-4-12am-et", "sol-updown-1hr-1783137600"},
		{store.ETH, store.H1, "2026-07-04T16:59:59Z", "2026-07-04T16:00:00Z", "2026-07-04T17:00:00Z",
			"ethereum-up-or-down-july-4-12pm-et", "eth-updown-1hr-1783180800"},
		{store.BTC, store.H4, "2026-04-29T13:07:31Z", "2026-04-29T12:00:00Z", "2026-04-29T16:00:00Z",
			"btc-updown-4h-1777464000", "btc-updown-4hr-1777464000"},
		// Daily windows run noon ET to noon ET and are named by their end.
		{store.BTC, store.H24, "2026-01-20T18:00:00Z", "2026-01-20T17:00:00Z", "2026-01-21T17:00:00Z",
			"bitcoin-up-or-down-on-january-21", "btc-updown-24hr-1768928400"},
		{store.BTC, store.H24, "2026-01-20T16:59:59Z", "2026-01-19T17:00:00Z", "2026-01-20T17:00:00Z",
			"bitcoin-up-or-down-on-january-20", "btc-updown-24hr-1768842000"},
		// Across the start of summer time the day is 23 hours long.
		{store.BTC, store.H24, "2026-03-08T01:00:00Z", "2026-03-07T17:00:00Z", "2026-03-08T16:00:00Z",
			"bitcoin-up-or-down-on-march-8", "btc-updown-24hr-1772902800"},
	} {
		start, end := s.Window(tc.coin, tc.mt, mustTime(t, tc.at))
		if !start.Equal(mustTime(t, tc.start)) || !end.Equal(mustTime(t, tc.end)) {
			t.Errorf("%s %s at %s: window [%s, %s), want [%s, %s)", tc.coin, tc.mt, tc.at, start, end, tc.start, tc.end)
		}
		if got := s.Slugs(tc.coin, tc.mt, start); !slices.Equal(got, []string{tc.upstream}) {
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
			if d := next.Sub(start); d < sr.MarketType.Duration()-time.Hour || d > sr.MarketType.Duration()+time.Hour {
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
