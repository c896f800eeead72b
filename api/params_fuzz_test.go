package api

import (
	"net/http"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/updown/updown/store"
)

// FuzzParseTimeParam: any text is either no time, a time inside
// [1970, 9999], or 400 VALIDATION_ERROR naming the parameter; never a
// panic.
func FuzzParseTimeParam(f *testing.F) {
	for _, s := range []string{"", "0", "-1", "1777467600000", "253402300799999", "253402300800000", "9223372036854775808",
		"2026-04-29T13:00:00Z", "2026-04-29T13:00:00+14:00", "2026-04-29T13:00", "2026-04-29", "0000-01-01", "9999-12-31T23:59:59-23:59",
		"1e400", "NaN", " 12 ", "\xff\xfe", "2026-02-30"} {
		f.Add(s)
	}
	lo, hi := time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(10000, 1, 2, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		got, err := parseTimeParam("query.start_time", v)
		if err != nil {
			e, ok := err.(*Error)
			if !ok || e.Status != http.StatusBadRequest || e.Code != CodeValidation || got != nil {
				t.Fatalf("%q: %v %v", v, got, err)
			}
			if _, mErr := e.MarshalJSON(); mErr != nil {
				t.Fatalf("%q: the error does not encode: %v", v, mErr)
			}
			return
		}
		if got == nil {
			return
		}
		if got.Before(lo) || got.After(hi) || got.Location() != time.UTC {
			t.Fatalf("%q: parsed to %v", v, got)
		}
		if s := formatTime(*got); !utf8.ValidString(s) {
			t.Fatalf("%q: formats as %q", v, s)
		}
	})
}

// FuzzParseMarketFilter: any query either makes a filter the store can
// run (a valid coin and type, ordered times) or is 400 VALIDATION_ERROR.
func FuzzParseMarketFilter(f *testing.F) {
	f.Add("BTC", "5m", "true", "", "", 100, 0)
	f.Add("eth", "24hr", "", "0", "1", 1, 5)
	f.Add(" sol ", "1hr", "FALSE", "2026-04-29", "2026-04-28", 0, -1)
	f.Add("\xff", "4hr", "maybe", "1e400", "NaN", 101, 1<<62)
	f.Fuzz(func(t *testing.T, coin, mt, resolved, start, end string, limit, offset int) {
		// Huma parses resolved before parseMarketFilter sees it.
		var r optionalBool
		if resolved != "" {
			v, err := strconv.ParseBool(resolved)
			if err != nil {
				return
			}
			r = optionalBool{Value: v, Set: true}
		}
		in := &listMarketsInput{Coin: coin, MarketType: mt, Resolved: r, StartTime: start, EndTime: end, Limit: limit, Offset: offset}
		got, err := parseMarketFilter(in)
		if err != nil {
			e, ok := err.(*Error)
			if !ok || e.Status != http.StatusBadRequest || e.Code != CodeValidation {
				t.Fatalf("%+v: %v", in, err)
			}
			if _, mErr := e.MarshalJSON(); mErr != nil {
				t.Fatalf("%+v: the error does not encode: %v", in, mErr)
			}
			return
		}
		if !got.Coin.Valid() || (got.MarketType != "" && (!got.MarketType.Valid() || !got.MarketType.AvailableFor(got.Coin))) {
			t.Fatalf("%+v: accepted as %+v", in, got)
		}
		if got.StartAfter != nil && got.StartBefore != nil && !got.StartAfter.Before(*got.StartBefore) {
			t.Fatalf("%+v: times out of order in %+v", in, got)
		}
		_ = store.MarketFilter(got)
	})
}
