package archive

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/updown/updown/jobs/book"
	"github.com/updown/updown/store"
)

// The parsers of the archive's inputs, fuzzed: none may panic on any
// input, and each either fails with an error or returns what its callers
// rely on.

// FuzzChainlinkFrame: a frame read as Chainlink prices gives prices that
// are positive and finite, at positive times.
func FuzzChainlinkFrame(f *testing.F) {
	for _, s := range []string{
		`{"topic":"crypto_prices_chainlink","type":"update","timestamp":1778584367504,"payload":{"symbol":"btc/usd","timestamp":1778584367464,"value":80745.63}}`,
		`{"topic":"crypto_prices_chainlink","type":"subscribe","timestamp":5,"payload":{"symbol":"btc/usd","data":[{"timestamp":1800000000000,"value":99999},{"timestamp":"1800000001000","value":"100000.5"}]}}`,
		`{"topic":"crypto_prices_chainlink","payload":{"symbol":"eth/usd","timestamp":"x","value":1}}`,
		`{"topic":"crypto_prices","type":"update","timestamp":1,"payload":{"symbol":"btcusdt","timestamp":1,"value":1}}`,
		`{"topic":"crypto_prices_chainlink","payload":{"data":[]}}`,
		`{"event_type":"book"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			return
		}
		ps, ok, err := chainlinkFrame(b)
		if !ok || err != nil {
			return
		}
		for _, p := range ps {
			if !(p.value > 0) || math.IsInf(p.value, 0) || p.at.UnixMilli() <= 0 {
				t.Fatalf("%q: a price %v at %v", b, p.value, p.at)
			}
		}
	})
}

// FuzzAddKlines: klines read are in order of their open, each once, and
// price instants with positive prices.
func FuzzAddKlines(f *testing.F) {
	for _, s := range []string{
		"1778583600000000,80740.00,80742.16,80739.00,80741.16,1.0,1778583600999999,1.0,10,0.5,0.5,0\n1778583601000000,80741.16,80742.85,80740.16,80741.85,1.0,1778583601999999,1.0,10,0.5,0.5,0\n",
		"open_time,open,high,low,close,volume,close_time,quote_volume,count,taker_buy_volume,taker_buy_quote_volume,ignore\n1634860800000,60000,60001,59999,60000.5,1,1634860859999,1,1,1,1,0\n",
		"1,2,3\n",
		"1634860800000,NaN,1,1,1,1,1634860859999\n",
	} {
		f.Add([]byte(s))
	}
	var zipped bytes.Buffer
	zw := zip.NewWriter(&zipped)
	w, _ := zw.Create("BTCUSDT-1m-2021-10-22.csv")
	w.Write([]byte("1634860800000,60000,60001,59999,60000.5,1,1634860859999,1,1,1,1,0\n"))
	zw.Close()
	f.Add(zipped.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		cp := NewCoinPrices()
		if err := cp.AddKlines(store.BTC, "k.csv", bytes.NewReader(b)); err != nil {
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("an error that names no place: %v", err)
			}
			return
		}
		ks := cp.klines[store.BTC]
		for i, k := range ks {
			if i > 0 && ks[i-1].open >= k.open {
				t.Fatalf("klines out of order: %+v then %+v", ks[i-1], k)
			}
			if k.close < k.open || !(k.o > 0) || !(k.c > 0) {
				t.Fatalf("a kline kept: %+v", k)
			}
			if p, ok := cp.At(store.BTC, time.UnixMilli(k.open)); !ok || !(p > 0) {
				t.Fatalf("the instant of a kline's open has price %v, %v", p, ok)
			}
		}
	})
}

// FuzzPMXTLevels: a book side of the PMXT archive, pairs or objects, reads
// as levels or fails.
func FuzzPMXTLevels(f *testing.F) {
	for _, s := range []string{
		`[["0.48","30"],["0.47","12.5"]]`,
		`[{"price":"0.48","size":"30"}]`,
		`[[0.48,30]]`,
		`[["0.48"]]`,
		`[]`,
		`null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		levels, err := pmxtLevels(b)
		if err != nil {
			return
		}
		for _, l := range levels {
			if l.Price.Set && (math.IsNaN(l.Price.V) || math.IsInf(l.Price.V, 0)) {
				t.Fatalf("%q: a price %v", b, l.Price.V)
			}
		}
	})
}

// FuzzReadWSJSONL reads any file as a ws-jsonl dump: it fails with an
// input error that names the file and line, or hands over events of a
// checked shape and prices.
func FuzzReadWSJSONL(f *testing.F) {
	for _, s := range []string{
		`{"event_type":"book","asset_id":"1","market":"0x1","timestamp":"1778480069765","bids":[{"price":"0.01","size":"505"}],"asks":[{"price":"0.99","size":"2501"}],"tick_size":"0.01","last_trade_price":""}` + "\n" +
			`{"market":"0x1","price_changes":[{"asset_id":"1","price":"0.05","size":"0","side":"BUY","best_bid":"0.99","best_ask":"1"}],"timestamp":"1778481000000","event_type":"price_change"}` + "\n",
		`[{"event_type":"last_trade_price","asset_id":"1","market":"0x1","price":"0.60","size":"100","side":"BUY","timestamp":"1778480999940","transaction_hash":"abc"}]` + "\nPONG\n\n",
		`{"topic":"crypto_prices_chainlink","type":"update","timestamp":1,"payload":{"symbol":"btc/usd","timestamp":1778584367464,"value":80745.63}}`,
		"\x1f\x8b\x08\x00",
		`{"event_type":"tick_size_change","asset_id":"1","new_tick_size":"2"}`,
	} {
		f.Add([]byte(s))
	}
	// The real market-channel frames (their sources in SOURCES.md there),
	// one a line as a dump keeps them.
	paths, _ := filepath.Glob("../collect/testdata/realdata/ws/*.json")
	var all bytes.Buffer
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		var frames []json.RawMessage
		if json.Unmarshal(b, &frames) != nil {
			frames = []json.RawMessage{b}
		}
		for _, fr := range frames {
			var c bytes.Buffer
			if json.Compact(&c, fr) == nil {
				all.Write(append(c.Bytes(), '\n'))
			}
		}
	}
	f.Add(all.Bytes())
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		name := filepath.Join(dir, "dump.jsonl")
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
		err := readWSJSONL(context.Background(), name, nil, func(evs []book.Event, pos Pos) error {
			if pos.File != name || pos.Line <= 0 {
				t.Fatalf("events at %v", pos)
			}
			for _, e := range evs {
				if e.EventType == "price_change" {
					for _, c := range e.Changes {
						if c.Side != "BUY" && c.Side != "SELL" || book.CheckLevel(c.Price, c.Size) != nil {
							t.Fatalf("a change let through: %+v", c)
						}
					}
				}
			}
			return nil
		}, func(p coinPoint) {
			if !(p.value > 0) {
				t.Fatalf("a price %v", p.value)
			}
		})
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) || ie.Pos.File != name || !strings.Contains(err.Error(), name) {
				t.Fatalf("an error that names no place: %v", err)
			}
		}
		// Read in time order (a file out of order), the same frames come,
		// each whole, or the same error.
		var inOrder, sorted []string
		collect := func(out *[]string) (func([]book.Event, Pos) error, func(coinPoint)) {
			return func(evs []book.Event, pos Pos) error {
					*out = append(*out, fmt.Sprintf("%d:%d", pos.Line, len(evs)))
					return nil
				}, func(p coinPoint) {
					*out = append(*out, fmt.Sprintf("price %s %v", p.at, p.value))
				}
		}
		fn, price := collect(&inOrder)
		err = readWSJSONL(context.Background(), name, nil, fn, price)
		fn, price = collect(&sorted)
		serr := readWSJSONLSorted(context.Background(), name, nil, fn, price)
		if fmt.Sprint(err) != fmt.Sprint(serr) {
			t.Fatalf("read in order: %v; read sorted: %v", err, serr)
		}
		slices.Sort(inOrder)
		slices.Sort(sorted)
		if err == nil && !slices.Equal(inOrder, sorted) {
			t.Fatalf("read in order %v, sorted %v", inOrder, sorted)
		}
	})
}

// FuzzPMXTRow reads a PMXT row whose columns are text, as the archive's
// untyped columns are: an event checked as a frame is, or an error that
// names the row and the field.
func FuzzPMXTRow(f *testing.F) {
	f.Add("1778480069800", "1778480069765", "book", "1", `[["0.01","505"],["0.59","15.25"]]`, `[{"price":"0.99","size":"2501"}]`, "", "", "", "", "")
	f.Add("1778480999950", "1778480999942", "price_change", "1", "", "", "0.05", "2849.22", "BUY", "0.99", "1")
	f.Add("1778480999950", "1778480999940", "last_trade_price", "1", "", "", "0.60", "100", "SELL", "", "")
	f.Add("1778480999950", "1778480999940", "tick_size_change", "1", "", "", "", "", "", "", "")
	f.Add("x", "", "", "", "", "", "", "", "", "", "")
	f.Fuzz(func(t *testing.T, received, ts, eventType, asset, bids, asks, price, size, side, bestBid, bestAsk string) {
		p := &pmxtFile{name: "h.parquet"}
		for i := range p.scales {
			p.scales[i] = -1
		}
		var vals [16]parquet.Value
		for i, s := range []string{received, ts, "0x1", eventType, asset, bids, asks, price, size, side, bestBid, bestAsk, "", "", "0.01", "0.001"} {
			vals[i] = parquet.ByteArrayValue([]byte(s))
		}
		ev, _, err := p.event(&vals, Pos{File: p.name, Row: 7})
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) || ie.Pos.Row != 7 {
				t.Fatalf("an error that names no row: %v", err)
			}
			return
		}
		for _, l := range append(slices.Clone(ev.Bids), ev.Asks...) {
			if book.CheckLevel(l.Price, l.Size) != nil {
				t.Fatalf("a level let through: %+v", l)
			}
		}
		for _, c := range ev.Changes {
			if book.CheckLevel(c.Price, c.Size) != nil {
				t.Fatalf("a change let through: %+v", c)
			}
		}
	})
}

// FuzzLoadMarkets reads any file as a markets file (--markets): markets,
// or an error that names the file.
func FuzzLoadMarkets(f *testing.F) {
	// The real Gamma event of a 5m market (its source in SOURCES.md there).
	if b, err := os.ReadFile("../collect/testdata/realdata/gamma/events_btc-updown-5m-1778584200_2026-05-12.json"); err == nil {
		f.Add(b)
	}
	for _, s := range []string{
		`[{"id":"473573","slug":"btc-updown-5m-1778584200","startTime":"2026-05-12T11:10:00Z","endDate":"2026-05-12T11:15:00Z","markets":[{"id":"2229686","conditionId":"0xa5","slug":"btc-updown-5m-1778584200","outcomes":"[\"Up\", \"Down\"]","clobTokenIds":"[\"1\", \"2\"]","eventStartTime":"2026-05-12T11:10:00Z","endDate":"2026-05-12T11:15:00Z","closed":true,"outcomePrices":"[\"0\", \"1\"]"}]}]`,
		`{"type":"market","slug":"btc-updown-5m-1778584200","market_id":"1","coin":"BTC","market_type":"5m","start_time":"2026-05-12T11:10:00Z","end_time":"2026-05-12T11:15:00Z"}`,
		"slug,market_id\n",
		"[]",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		name := filepath.Join(dir, "markets.json")
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
		ms, digest, err := LoadMarkets(name)
		if err != nil {
			if !strings.Contains(err.Error(), name) {
				t.Fatalf("an error that names no file: %v", err)
			}
			return
		}
		if !strings.HasPrefix(digest, "markets:") {
			t.Fatalf("digest %q", digest)
		}
		for _, m := range ms {
			_ = m.Resolved()
		}
	})
}
