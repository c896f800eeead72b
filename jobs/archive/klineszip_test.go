package archive_test

import (
	"archive/zip"
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
)

// TestKlinesZip reads klines as Binance's public archive serves them: a
// zip holding the day's CSV (data.binance.vision has no other form).
// Prices are those of the CSV itself, where the zip's bytes were read as
// a CSV whose first line "has 1 fields".
func TestKlinesZip(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 5, 12, 11, 0, 0, 0, time.UTC)
	var csv bytes.Buffer
	for s := range 600 {
		at := from.Add(time.Duration(s) * time.Second)
		o, c := 80000+float64(s), 80000.5+float64(s)
		fmt.Fprintf(&csv, "%d,%.2f,%.2f,%.2f,%.2f,1.0,%d,1.0,10,0.5,0.5,0\n", at.UnixMicro(), o, c+1, o-1, c, at.Add(time.Second).UnixMicro()-1)
	}
	var zipped bytes.Buffer
	zw := zip.NewWriter(&zipped)
	w, err := zw.Create("BTCUSDT-1s-2026-05-12.csv")
	if err != nil {
		t.Fatal(err)
	}
	w.Write(csv.Bytes())
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	plain, fromZip := archive.NewCoinPrices(), archive.NewCoinPrices()
	if err := plain.AddKlines(store.BTC, "BTCUSDT-1s-2026-05-12.csv", bytes.NewReader(csv.Bytes())); err != nil {
		t.Fatal(err)
	}
	if err := fromZip.AddKlines(store.BTC, "BTCUSDT-1s-2026-05-12.zip", bytes.NewReader(zipped.Bytes())); err != nil {
		t.Fatalf("klines from a zip: %v", err)
	}
	for at := from; at.Before(from.Add(10 * time.Minute)); at = at.Add(300 * time.Millisecond) {
		want, wok := plain.At(store.BTC, at)
		got, gok := fromZip.At(store.BTC, at)
		if got != want || gok != wok || !gok {
			t.Fatalf("at %s: %v %v from the zip, %v %v from the CSV", at, got, gok, want, wok)
		}
	}

	// A bad line inside the zip is named by the zip, the CSV and the line.
	bad := bytes.Replace(csv.Bytes(), []byte(",80011.50,80009.00,80010.50,"), []byte(",80011.50,80009.00,cheap,"), 1)
	zipped.Reset()
	zw = zip.NewWriter(&zipped)
	w, _ = zw.Create("BTCUSDT-1s-2026-05-12.csv")
	w.Write(bad)
	zw.Close()
	err = archive.NewCoinPrices().AddKlines(store.BTC, "k.zip", bytes.NewReader(zipped.Bytes()))
	for _, s := range []string{"k.zip", "BTCUSDT-1s-2026-05-12.csv", "line 11", "close"} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("a bad kline in a zip: %v, want it to say %q", err, s)
		}
	}
}
