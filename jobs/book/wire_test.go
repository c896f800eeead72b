package book

import (
	"encoding/json"
	"testing"
)

// FuzzFastLevel checks the fast path of book levels against the general
// decoder: where the fast path accepts a level, both read the same values.
func FuzzFastLevel(f *testing.F) {
	for _, s := range []string{`{"price":"0.48","size":"30"}`, ` { "size" : 1.5e2 , "price" : "0.5" } `,
		`{"price":"0.5","size":"1","x":1}`, `{"price":"0\u002e5","size":"1"}`, `{"price":"","size":"1"}`,
		`{"price":"0.5","price":"0.6"}`, `{"price":null,"size":"1"}`, `{"price":"NaN","size":"1"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		p, s, ok := FastLevel(b)
		if !ok {
			return
		}
		type plain Level
		var want plain
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("fast path accepted %s, the general decoder refuses it: %v", b, err)
		}
		if p != want.Price || s != want.Size {
			t.Fatalf("%s: fast path %+v %+v, general %+v %+v", b, p, s, want.Price, want.Size)
		}
	})
}
