package api

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// TestSnapshotPageMatchesSchemaTypes checks the hand-written JSON against
// encoding/json of the documented types, field for field.
func TestSnapshotPageMatchesSchemaTypes(t *testing.T) {
	t.Parallel()
	ts := time.Date(2026, 4, 29, 13, 0, 0, 300_000_000, time.UTC)
	snaps := []store.Snapshot{
		{Time: ts, CoinPrice: 95000.12, PriceUp: 0.53, PriceDown: 0.48,
			BookUp:   &store.Book{Bids: []store.Level{{Price: 0.52, Size: 10.5}}, Asks: []store.Level{{Price: 0.54, Size: 1e-7}}},
			BookDown: nil},
	}
	m := store.Market{Slug: "btc-updown-5m-1", StartTime: ts, EndTime: ts.Add(5 * time.Minute), MarketType: store.M5}
	for _, books := range []bool{false, true} {
		page := &snapshotPageBody{Market: toMarketJSON(m), Snapshots: snaps, Total: 1, Limit: 1000, books: books}
		doc := snapshotPage{Market: page.Market, Total: 1, Limit: 1000, Snapshots: []snapshotJSON{{
			Time: "2026-04-29T13:00:00.300000Z", CoinPrice: 95000.12, PriceUp: 0.53, PriceDown: 0.48,
		}}}
		if books {
			doc.Snapshots[0].OrderbookUp = &bookJSON{Asks: []levelJSON{{Size: 1e-7, Price: 0.54}}, Bids: []levelJSON{{Size: 10.5, Price: 0.52}}}
			doc.Snapshots[0].OrderbookDown = &bookJSON{Asks: []levelJSON{}, Bids: []levelJSON{}}
		}
		want, _ := json.Marshal(doc)
		if got := page.AppendJSON(nil); string(got) != string(want) {
			t.Errorf("books=%v:\n got %s\nwant %s", books, got, want)
		}
	}
}

// TestUnescapeHTML: the HTML escapes become their characters; an escaped
// backslash before the text "u003c" stays what it is, and the result
// decodes to the same value.
func TestUnescapeHTML(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"a < b && c > d", `\u003c is text`, `\\u003c`, `"<\>"`, "\u2028<", "plain", ""} {
		escaped, _ := json.Marshal(map[string]string{"k<": s})
		got := unescapeHTML(append([]byte(nil), escaped...))
		var back map[string]string
		if err := json.Unmarshal(got, &back); err != nil || back["k<"] != s {
			t.Errorf("%q: %s decodes to %q (%v)", s, got, back, err)
		}
		for _, esc := range []string{`\u003c`, `\u003e`, `\u0026`} {
			if n := strings.Count(string(got), esc); n != strings.Count(s, esc) {
				t.Errorf("%q: %s keeps %s", s, got, esc)
			}
		}
	}
}
