package polytest_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updown/updown/jobs/collect/polytest"
	"github.com/updown/updown/store"
)

// TestDataAPITrades: /trades lists a market's tape newest first, every row
// with the Data API's fields (numbers as numbers, the time in Unix
// seconds), pages by limit and offset within the API's bounds, and lists
// nothing for an unknown market.
func TestDataAPITrades(t *testing.T) {
	now := time.Now().Truncate(5 * time.Minute).Add(time.Minute) // a minute into a 5m window
	var clock atomic.Pointer[time.Time]
	clock.Store(&now)
	s := polytest.New(t, polytest.Options{TradeEvery: 50 * time.Millisecond, WSInterval: 10 * time.Millisecond,
		Clock: func() time.Time { return *clock.Load() }})
	m := s.AddWindow(store.BTC, store.M5, now)
	s.Tape(m.UpToken) // the tapes begin
	s.Tape(m.DownToken)
	later := now.Add(time.Second) // and stand still there
	clock.Store(&later)

	get := func(query string) ([]map[string]any, int) {
		t.Helper()
		res, err := http.Get(s.URL + "/trades?" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var rows []map[string]any
		if res.StatusCode == http.StatusOK {
			if err := json.NewDecoder(res.Body).Decode(&rows); err != nil {
				t.Fatal(err)
			}
		}
		return rows, res.StatusCode
	}
	rows, _ := get("market=" + m.ConditionID + "&limit=10000")
	tape := len(s.Tape(m.UpToken)) + len(s.Tape(m.DownToken))
	if len(rows) < 10 || len(rows) != tape {
		t.Fatalf("%d rows, tape of %d trades", len(rows), tape)
	}
	want := []string{"asset", "bio", "conditionId", "eventSlug", "icon", "name", "outcome", "outcomeIndex", "price", "profileImage",
		"profileImageOptimized", "proxyWallet", "pseudonym", "side", "size", "slug", "timestamp", "title", "transactionHash"}
	for i, r := range rows {
		if keys := slices.Sorted(maps.Keys(r)); !slices.Equal(keys, want) {
			t.Fatalf("row %d has fields %v, want %v", i, keys, want)
		}
		if _, ok := r["price"].(float64); !ok {
			t.Errorf("row %d: price %#v is not a number", i, r["price"])
		}
		ts, _ := r["timestamp"].(float64)
		if at := time.Unix(int64(ts), 0); at.Before(now.Add(-time.Second)) || at.After(later) || ts != float64(int64(ts)) {
			t.Errorf("row %d: timestamp %v is not a Unix second of the test", i, r["timestamp"])
		}
		if i > 0 && ts > rows[i-1]["timestamp"].(float64) {
			t.Errorf("row %d is newer than the one before", i)
		}
		if r["conditionId"] != m.ConditionID || (r["asset"] != m.UpToken && r["asset"] != m.DownToken) {
			t.Errorf("row %d of another market: %v", i, r)
		}
	}
	page, _ := get("market=" + m.ConditionID + "&limit=3&offset=2")
	if len(page) != 3 || page[0]["transactionHash"] != rows[2]["transactionHash"] {
		t.Errorf("limit=3&offset=2 gave %d rows, first %v; want rows 2-4", len(page), page)
	}
	if none, _ := get("market=0x00"); len(none) != 0 {
		t.Errorf("an unknown market lists %d rows", len(none))
	}
	if _, code := get("market=" + m.ConditionID + "&offset=10001"); code != http.StatusBadRequest {
		t.Errorf("offset past 10,000: status %d, want 400", code)
	}
}
