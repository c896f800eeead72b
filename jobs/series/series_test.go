package series_test

import (
	"testing"
	"time"

	"github.com/updown/updown/jobs/series"
	"github.com/updown/updown/store"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func TestWindows(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		mt         store.MarketType
		at         string
		start, end string
	}{
		{"5m", store.M5, "2026-11-24T06:07:08Z", "2026-11-24T06:05:00Z", "2026-11-24T06:10:00Z"},
		{"15m", store.M15, "2026-11-24T06:07:08Z", "2026-11-24T06:00:00Z", "2026-11-24T06:15:00Z"},
		{"1hr", store.H1, "2026-11-24T06:07:08Z", "2026-11-24T06:00:00Z", "2026-11-24T07:00:00Z"},
		// REFERENCE: 1771923600 is 04:00 EST.
		{"4hr winter", store.H4, "2026-02-24T10:00:00Z", "2026-02-24T09:00:00Z", "2026-02-24T13:00:00Z"},
		{"4hr on the boundary", store.H4, "2026-02-24T09:00:00Z", "2026-02-24T09:00:00Z", "2026-02-24T13:00:00Z"},
		{"4hr summer", store.H4, "2026-07-04T03:59:59Z", "2026-07-04T00:00:00Z", "2026-07-04T04:00:00Z"},
		// 2026-03-08: clocks go from 02:00 EST to 03:00 EDT; 00-04 ET lasts 3 h.
		{"4hr spring forward", store.H4, "2026-03-08T07:30:00Z", "2026-03-08T05:00:00Z", "2026-03-08T08:00:00Z"},
		// 2026-11-01: clocks go from 02:00 EDT back to 01:00 EST; 00-04 ET lasts 5 h.
		{"4hr fall back", store.H4, "2026-11-01T06:30:00Z", "2026-11-01T04:00:00Z", "2026-11-01T09:00:00Z"},
		// REFERENCE: the July 5 daily runs 2026-07-04 12:00 EDT to 07-05 12:00 EDT.
		{"24hr summer", store.H24, "2026-07-05T15:59:59Z", "2026-07-04T16:00:00Z", "2026-07-05T16:00:00Z"},
		{"24hr morning belongs to the day before", store.H24, "2026-11-24T16:59:59Z", "2026-11-23T17:00:00Z", "2026-11-24T17:00:00Z"},
		{"24hr noon starts one", store.H24, "2026-11-24T17:00:00Z", "2026-11-24T17:00:00Z", "2026-11-25T17:00:00Z"},
		{"24hr spring forward: 23 h", store.H24, "2026-03-08T12:00:00Z", "2026-03-07T17:00:00Z", "2026-03-08T16:00:00Z"},
		{"24hr fall back: 25 h", store.H24, "2026-11-01T12:00:00Z", "2026-10-31T16:00:00Z", "2026-11-01T17:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := series.Start(tc.mt, utc(tc.at))
			if !start.Equal(utc(tc.start)) || start.Location() != time.UTC {
				t.Errorf("Start(%s, %s) = %v, want %s", tc.mt, tc.at, start, tc.start)
			}
			if end := series.End(tc.mt, start); !end.Equal(utc(tc.end)) {
				t.Errorf("End(%s, %v) = %v, want %s", tc.mt, start, end, tc.end)
			}
			if prev := series.Previous(tc.mt, start); !series.End(tc.mt, prev).Equal(start) || !prev.Before(start) {
				t.Errorf("Previous(%s, %v) = %v, which does not end at it", tc.mt, start, prev)
			}
		})
	}
}

func TestUpstreamSlug(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		coin  store.Coin
		mt    store.MarketType
		start string
		want  string
	}{
		{store.BTC, store.M5, "2026-05-12T11:10:00Z", "btc-updown-5m-1778584200"},
		{store.BTC, store.M15, "2026-08-19T21:00:00Z", "btc-updown-15m-1787173200"},
		{store.BTC, store.H4, "2026-02-24T09:00:00Z", "btc-updown-4h-1771923600"},
		{store.BTC, store.H1, "2026-03-17T08:00:00Z", "bitcoin-up-or-down-march-17-2026-4am-et"},
		{store.BTC, store.H1, "2026-11-24T06:00:00Z", "bitcoin-up-or-down-november-24-2026-1am-et"},
		{store.ETH, store.H1, "2026-11-24T05:00:00Z", "ethereum-up-or-down-november-24-2026-12am-et"},
		{store.SOL, store.H1, "2026-11-24T17:00:00Z", "solana-up-or-down-november-24-2026-12pm-et"},
		{store.SOL, store.H1, "2026-11-25T04:00:00Z", "solana-up-or-down-november-24-2026-11pm-et"},
		{store.BTC, store.H24, "2026-07-04T16:00:00Z", "bitcoin-up-or-down-on-july-5-2026"},
		{store.BTC, store.H24, "2026-11-23T17:00:00Z", "bitcoin-up-or-down-on-november-24-2026"},
	} {
		if got := series.UpstreamSlug(tc.coin, tc.mt, utc(tc.start)); got != tc.want {
			t.Errorf("UpstreamSlug(%s, %s, %s) = %q, want %q", tc.coin, tc.mt, tc.start, got, tc.want)
		}
	}
}
