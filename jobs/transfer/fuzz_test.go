package transfer_test

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/updown/updown/jobs/transfer"
)

// decodeAll reads every record until the end or the first error.
func decodeAll(data []byte, f transfer.Format) ([]transfer.Record, error) {
	dec, err := transfer.NewDecoder(bytes.NewReader(data), f)
	if err != nil {
		return nil, err
	}
	var out []transfer.Record
	for {
		r, err := dec.Decode()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
}

// encodeAll writes records in the format.
func encodeAll(t *testing.T, recs []transfer.Record, f transfer.Format, what transfer.What) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc, err := transfer.NewEncoder(&buf, f, what)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			t.Fatalf("a decoded record does not encode: %v (%+v)", err, r)
		}
	}
	if err := enc.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// checkRoundTrip is the parsers' property: whatever decodes, encodes; and
// what was encoded decodes to the same records and encodes to the same
// bytes again.
func checkRoundTrip(t *testing.T, data []byte, f transfer.Format) {
	recs, _ := decodeAll(data, f)
	if len(recs) == 0 {
		return
	}
	what := transfer.All
	if f == transfer.CSV {
		what = recs[0].What()
	}
	once := encodeAll(t, recs, f, what)
	again, err := decodeAll(once, f)
	if err != nil {
		t.Fatalf("re-encoded records do not decode: %v\n%s", err, once)
	}
	twice := encodeAll(t, again, f, what)
	if !bytes.Equal(once, twice) {
		t.Fatalf("encode(decode(encode(x))) differs:\n%s\n%s", once, twice)
	}
	if !reflect.DeepEqual(again, mustDecode(t, twice, f)) {
		t.Fatalf("records differ after a second round trip")
	}
}

func mustDecode(t *testing.T, data []byte, f transfer.Format) []transfer.Record {
	t.Helper()
	recs, err := decodeAll(data, f)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func FuzzJSONL(f *testing.F) {
	f.Add([]byte(`{"type":"market","slug":"btc-updown-5m-1","market_id":"1","coin":"BTC","market_type":"5m","start_time":"2026-01-01T00:00:00Z","end_time":"2026-01-01T00:05:00.5+01:00","coin_price_start":95000.25,"winner":"Up","resolved_at":"2026-01-01T00:06:00Z"}` + "\n" +
		`{"type":"snapshot","slug":"btc-updown-5m-1","time":"2026-01-01T00:00:00.123456789Z","coin_price":1e3,"price_up":0.5,"price_down":-0,"orderbook_up":{"bids":[{"price":0.5,"size":1}],"asks":[]},"orderbook_down":{}}`))
	f.Add([]byte("\n\n{\"type\":\"snapshot\",\"slug\":\"x\u00e9\\u0001\",\"time\":\"2026-01-01T00:00:00Z\",\"coin_price\":1,\"price_up\":2,\"price_down\":3}\n"))
	f.Add([]byte(`{"type":"market","slug":"s","coin":"ETH","market_type":"24hr","start_time":"2026-01-01T00:00:00Z","end_time":"9999-12-31T23:59:59Z","final_volume":1.7976931348623157e308}`))
	f.Add([]byte(`{"type":"market","slug":"s","coin":"BTC","market_type":"24hr","start_time":"2026-01-01T17:00:00Z","end_time":"2026-01-02T17:00:00Z","winner":"50-50","upstream_slug":"bitcoin-up-or-down-on-january-2-2026","taker_fee_rate":0.07,"fee_exponent":1,"tick_size":0.01,"tick_size_changes":[{"time":"2026-01-01T18:00:00Z","tick_size":0.001}],"min_order_size":5,"resolution_source":"binance-1m-noon-et","price_to_beat":95000,"final_price":95000}` + "\n" +
		`{"type":"trade","slug":"s","time":"2026-01-01T18:00:00.123Z","outcome":"Up","price":0.5,"size":10,"side":"BUY","fee_rate_bps":1000,"tx_hash":"0xab"}` + "\n" +
		`{"type":"gap","slug":"s","from":"2026-01-01T18:00:00Z","to":"2026-01-01T18:00:04Z"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRoundTrip(t, data, transfer.JSONL)
	})
}

func FuzzCSV(f *testing.F) {
	f.Add([]byte("slug,time,coin_price,price_up,price_down,orderbook_up,orderbook_down\n" +
		"btc-updown-5m-1,2026-01-01T00:00:00Z,95000.5,0.52,0.49,0.51:100|0.52:12.5 0.53:1,|\n" +
		"\"a,b\",2026-01-01T00:00:00.3Z,1e2,0.5,0.51,,\n"))
	f.Add([]byte("market_type,slug,coin,start_time,end_time,winner,coin_price_end,resolved_at\n" +
		"5m,btc-updown-5m-1,BTC,2026-01-01T00:00:00Z,2026-01-01T00:05:00Z,Down,1.5,2026-01-01T00:06:00+02:00\n"))
	f.Add([]byte("\ufeffslug,time,coin_price,price_up,price_down\r\nx,2026-01-01T00:00:00Z,1,2,3\r\n"))
	f.Add([]byte("slug,coin,market_type,start_time,end_time,winner,fee_exponent,taker_fee_rate,tick_size_changes\n" +
		"s,BTC,24hr,2026-01-01T17:00:00Z,2026-01-02T17:00:00Z,50-50,1,0.07,2026-01-01T18:00:00Z=0.001 2026-01-01T19:00:00.5+01:00=0.01\n"))
	f.Add([]byte("slug,time,outcome,price,size,side,fee_rate_bps,tx_hash\nx,2026-01-01T00:00:00.123Z,Up,0.51,10,BUY,1000,0xab\ny,2026-01-01T00:00:01Z,Down,0.49,5.5,SELL,,\n"))
	f.Add([]byte("to,slug,from\n2026-01-01T00:00:05Z,x,2026-01-01T00:00:00.000001Z\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRoundTrip(t, data, transfer.CSV)
	})
}
