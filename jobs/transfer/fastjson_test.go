package transfer

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzFastSnapshotLine checks the fast path against encoding/json: a line
// the fast path reads is valid JSON that encoding/json reads the same.
func FuzzFastSnapshotLine(f *testing.F) {
	for _, s := range []string{
		`{"type":"snapshot","slug":"btc-updown-5m-1","time":"2026-01-01T00:00:00.000000Z","coin_price":95000.5,"price_up":0.52,"price_down":0.49,"orderbook_up":{"bids":[{"price":0.51,"size":100}],"asks":[]},"orderbook_down":{"bids":[],"asks":[]}}`,
		` { "price_down" : -0 , "type" : "snapshot" , "price_up":1e-3,"coin_price":0,"time":"x","slug":"" , "orderbook_up" : null } `,
		`{"type":"snapshot","slug":"s","time":"t","coin_price":1,"price_up":1,"price_down":1,"orderbook_up":{"asks":[{"size":1,"price":2}],"bids":null}}`,
		`{"type":"snapshot","slug":"s","slug":"t"}`,
		`{"type":"snapshot","coin_price":01}`,
		`{"type":"snapshot","coin_price":1.}`,
		`{"type":"snapshot","coin_price":1e400}`,
		`{"type":"snapshot","Slug":"s"}`,
		`{"type":"snapshot","orderbook_up":{"bids":[{"price":1,"size":2,}]}}`,
		`{"type":"snapshot",}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, ok := fastSnapshotLine(b)
		if !ok {
			return
		}
		var general jsonLine
		if err := json.Unmarshal(b, &general); err != nil {
			t.Fatalf("fast path read %s, encoding/json refuses it: %v", b, err)
		}
		fr, ferr := fast.record()
		gr, gerr := general.record()
		if (ferr == nil) != (gerr == nil) || !reflect.DeepEqual(fr, gr) {
			t.Fatalf("%s:\nfast    %+v %v\ngeneral %+v %v", b, fr, ferr, gr, gerr)
		}
	})
}
