package api

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/updown/updown/store"
)

// craftCursor is a cursor of scope at us microseconds with key, written
// by hand as a client could (cursors are not signed).
func craftCursor(scope []byte, us uint64, key []byte) string {
	b := append([]byte{cursorVersion}, binary.BigEndian.AppendUint64(nil, us)...)
	b = append(append(b, scope...), key...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// FuzzDecodeCursor (issue 28, item 7): whatever a cursor holds, decoding
// it either refuses it, or yields a position a store can hold (a time
// between the epoch and the end of year 9999; for trades, a key of finite
// numbers and a hash of valid UTF-8 without NUL) that encodes back to
// itself; parseSeriesQuery answers a refused one 400 VALIDATION_ERROR
// naming the cursor; never a panic.
func FuzzDecodeCursor(f *testing.F) {
	const series = "trades\x00btc-updown-15m-1777467600"
	scope := cursorScope(series, seriesQuery{})
	trade := store.MarketTrade{Outcome: store.OutcomeDown, Side: store.SideSell, Price: 0.51, Size: 12.5, FeeRateBps: 1000, TxHash: "0xabc"}
	year := func(y int) uint64 { return uint64(time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()) }
	for _, us := range []uint64{0, 1777467600000000, maxCursorMicros, maxCursorMicros + 1, math.MaxUint64 /* -1 */, math.MaxInt64,
		1 << 63 /* the least int64 */, 9_400_000_000_000_000_000, year(-5000), year(1), year(300_000)} {
		f.Add(craftCursor(scope, us, nil))
		f.Add(craftCursor(scope, us, appendTradeKey(nil, trade)))
	}
	for _, hash := range []string{"0x\x00ab", "\xff\xfe", "", strings.Repeat("a", 200)} {
		tr := trade
		tr.TxHash = hash
		f.Add(craftCursor(scope, 1777467600000000, appendTradeKey(nil, tr)))
	}
	for _, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		tr := trade
		tr.Price = x
		f.Add(craftCursor(scope, 1777467600000000, appendTradeKey(nil, tr)))
	}
	f.Add("")
	f.Add("not-a-cursor")
	f.Add("AQ")
	lo, hi := time.Unix(0, 0), time.UnixMicro(maxCursorMicros)
	f.Fuzz(func(t *testing.T, c string) {
		if c == "" {
			return // no cursor: the first page
		}
		at, key, ok := decodeCursor(c, scope)
		q, err := parseSeriesQuery(series, seriesParams{Cursor: c}, false)
		if ok != (err == nil) {
			t.Fatalf("%q: decodeCursor ok %v, parseSeriesQuery %v", c, ok, err)
		}
		if !ok {
			var e *Error
			if !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Code != CodeValidation {
				t.Fatalf("%q: %v, want 400 VALIDATION_ERROR", c, err)
			}
			if errs, _ := e.Details["errors"].([]map[string]any); len(errs) != 1 || errs[0]["location"] != "query.cursor" {
				t.Fatalf("%q: details %v do not name query.cursor", c, e.Details)
			}
			if _, err := e.MarshalJSON(); err != nil {
				t.Fatalf("%q: the error does not encode: %v", c, err)
			}
			return
		}
		if at.Before(lo) || at.After(hi) || at.Location() != time.UTC || !q.After.Equal(at) {
			t.Fatalf("%q: position %v", c, at)
		}
		again, key2, ok := decodeCursor(*(seriesQuery{scope: scope}).cursorAt(at, key), scope)
		if !ok || !again.Equal(at) || !bytes.Equal(key2, key) {
			t.Fatalf("%q: (%v, %x) encodes to a cursor that decodes to (%v, %x, %v)", c, at, key, again, key2, ok)
		}
		tr, ok := decodeTradeKey(at, key)
		if !ok {
			return
		}
		if !utf8.ValidString(tr.TxHash) || strings.IndexByte(tr.TxHash, 0) >= 0 {
			t.Fatalf("%q: trade hash %q", c, tr.TxHash)
		}
		for _, x := range []float64{tr.Price, tr.Size, tr.FeeRateBps} {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				t.Fatalf("%q: trade %+v", c, tr)
			}
		}
		if !bytes.Equal(appendTradeKey(nil, tr), key) {
			t.Fatalf("%q: trade key %x encodes back as %x", c, key, appendTradeKey(nil, tr))
		}
	})
}
