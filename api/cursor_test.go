package api_test

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// recraft rewrites a real cursor as a client could (cursors are not
// signed): its time to us microseconds (as the 8 bytes hold them,
// unsigned) and, when key is not nil, its key.
func recraft(t *testing.T, cursor string, us uint64, key []byte) string {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(b) < 17 {
		t.Fatalf("cursor %q: %v", cursor, err)
	}
	binary.BigEndian.PutUint64(b[1:9], us)
	if key != nil {
		b = append(b[:17], key...) // version, time, 8 bytes of scope
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// tradeKey is a trade's position past its time as cursors hold it.
func tradeKey(price float64, hash string) []byte {
	b := []byte{0, 0}
	for _, x := range []float64{price, 10, 1000} {
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(x))
	}
	return append(binary.AppendUvarint(b, uint64(len(hash))), hash...)
}

// TestCraftedCursors (issue 28, item 7): a cursor whose position no store
// can hold (a time before 1970 or past year 9999, the year -5000 or
// 9.4e18 µs of the report, the largest int64; for trades, a hash with a
// NUL or not UTF-8, a number that is not finite) is 400 VALIDATION_ERROR
// naming the cursor on every cursor route and on both stores: never 500,
// and never a page from somewhere else (int64-max on an ascending
// snapshot walk used to start over at the first snapshot).
func TestCraftedCursors(t *testing.T) {
	t.Parallel()
	onBothStores(t, func(t *testing.T, b *bundle) {
		loadHistory(t, b.store)
		slug, _ := snapshotMarket()
		year := func(y int) uint64 { return uint64(time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()) }
		badTimes := map[string]uint64{
			"year -5000":        year(-5000),
			"9.4e18 µs":         9_400_000_000_000_000_000,
			"int64 max":         math.MaxInt64,
			"int64 min":         1 << 63,
			"-1 µs":             math.MaxUint64,
			"year 10000":        year(10000),
			"year 1, before 70": year(1),
		}
		refused := func(t *testing.T, path string) {
			t.Helper()
			e := wantError(t, b.get(store.Enterprise, path), http.StatusBadRequest, "VALIDATION_ERROR")
			d, _ := e["details"].(map[string]any)
			errs, _ := d["errors"].([]any)
			if len(errs) != 1 || errs[0].(map[string]any)["location"] != "query.cursor" {
				t.Errorf("%s: details %v do not name query.cursor", path, d)
			}
		}
		routes := []struct{ name, path string }{
			{"snapshots, ascending", "/v1/markets/" + slug + "/snapshots?limit=2&order=asc"},
			{"snapshots, descending", "/v1/markets/" + slug + "/snapshots?limit=2"},
			{"trades, ascending", "/v1/markets/" + slug + "/trades?limit=2&order=asc"},
			{"trades, descending", "/v1/markets/" + slug + "/trades?limit=2"},
			{"depth history, ascending", "/v1/btc/spot/snapshots?limit=2&order=asc"},
			{"depth history, descending", "/v1/btc/spot/snapshots?limit=2"},
		}
		for _, rt := range routes {
			r := b.get(store.Enterprise, rt.path)
			next := decode[struct {
				NextCursor *string `json:"next_cursor"`
			}](t, r).NextCursor
			if next == nil || *next == "" {
				t.Fatalf("%s: no next_cursor to craft from: %s", rt.name, r.body)
			}
			real := *next
			// The real cursor still works.
			if r := b.get(store.Enterprise, rt.path+"&cursor="+real); r.status != http.StatusOK {
				t.Errorf("%s: the real cursor: %d %s", rt.name, r.status, r.body)
			}
			for name, us := range badTimes {
				t.Run(rt.name+"/"+name, func(t *testing.T) { refused(t, rt.path+"&cursor="+recraft(t, real, us, nil)) })
			}
		}

		// Trade keys no store can compare, at a time a trade could have.
		at := uint64(activityTrades()[10].Time.UnixMicro())
		base := "/v1/markets/" + slug + "/trades?limit=2&order=asc"
		real := *decode[tradeRangePage](t, b.get(store.Enterprise, base)).NextCursor
		for name, key := range map[string][]byte{
			"NUL in the hash":       tradeKey(0.5, "0x\x00ab"),
			"hash not UTF-8":        tradeKey(0.5, "0x\xff\xfe"),
			"NaN price":             tradeKey(math.NaN(), "0xab"),
			"infinite price":        tradeKey(math.Inf(1), "0xab"),
			"hash longer than said": append(tradeKey(0.5, "0xab"), 'c'),
		} {
			t.Run("trades/"+name, func(t *testing.T) { refused(t, base+"&cursor="+recraft(t, real, at, key)) })
		}
		// A well-formed crafted position is served: the page after it.
		if r := b.get(store.Enterprise, base+"&cursor="+recraft(t, real, at, tradeKey(0.5, "0xab"))); r.status != http.StatusOK {
			t.Errorf("a well-formed crafted trade cursor: %d %s", r.status, r.body)
		}
	})
}
