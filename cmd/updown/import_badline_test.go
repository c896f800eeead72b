package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestImportBadLineNamesFileAndLine: a JSON Lines or CSV file with a bad
// line stops the import at it with an error that names the file and the
// line (where it named only the line), and what came before is stored, as
// the README says.
func TestImportBadLineNamesFileAndLine(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db := pgtest.NewDatabase(t)
	dir := t.TempDir()
	slug := "btc-updown-15m-1772366400"
	market := `{"type":"market","slug":"` + slug + `","market_id":"m1","coin":"BTC","market_type":"15m",` +
		`"start_time":"2026-03-01T12:00:00.000000Z","end_time":"2026-03-01T12:15:00.000000Z","condition_id":"0xc"}`
	jsonl := filepath.Join(dir, "export.jsonl")
	if err := os.WriteFile(jsonl, []byte(market+"\n"+
		`{"type":"snapshot","slug":"`+slug+`","time":"2026-03-01T12:00:01.000000Z","coin_price":1,"price_up":0.5,"price_down":0.5}`+"\n"+
		`{"type":"snapshot","slug":"`+slug+`","time":"2026-03-01T12:00:02.000000Z","coin_price":NaN,"price_up":0.5,"price_down":0.5}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	csvFile := filepath.Join(dir, "trades.csv")
	if err := os.WriteFile(csvFile, []byte("slug,time,outcome,price,size,side\n"+
		slug+",2026-03-01T12:00:03Z,Up,0.5,1,BUY\n"+
		slug+",2026-03-01T12:00:04Z,Up,Inf,1,BUY\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, line string }{{jsonl, "line 3"}, {csvFile, "line 3"}} {
		err := run(ctx, []string{"import", "--database-url", db, "--in", tc.name}, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.name) || !strings.Contains(err.Error(), tc.line) {
			t.Errorf("import --in %s: %v, want an error naming the file and %s", tc.name, err, tc.line)
		}
	}
	st, err := postgres.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	snaps, _, err := st.ListSnapshots(ctx, slug, store.SnapshotQuery{})
	if err != nil || len(snaps) != 1 {
		t.Errorf("snapshots stored: %d (%v), want the 1 before the bad line", len(snaps), err)
	}
	trades, _, err := st.ListMarketTrades(ctx, slug, store.MarketTradeQuery{})
	if err != nil || len(trades) != 1 {
		t.Errorf("trades stored: %d (%v), want the 1 before the bad line", len(trades), err)
	}
}
