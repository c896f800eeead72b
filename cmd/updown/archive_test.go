package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/parquet-go/parquet-go"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/jobs/collect/polytest"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestImportParquetAnswers: `updown import --in x.parquet` used to answer
// "CSV header: parse error"; a PMXT hour now gets the command that imports
// it, before any database is needed.
func TestImportParquetAnswers(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	schema := parquet.NewSchema("pmxt", parquet.Group{
		"timestamp_received": parquet.Int(64), "timestamp": parquet.Int(64), "market": parquet.String(), "event_type": parquet.String(),
		"asset_id": parquet.String(), "bids": parquet.String(), "asks": parquet.String(), "price": parquet.String(), "size": parquet.String(),
		"side": parquet.String(), "best_bid": parquet.String(), "best_ask": parquet.String(), "fee_rate_bps": parquet.String(),
		"transaction_hash": parquet.String(), "old_tick_size": parquet.String(), "new_tick_size": parquet.String(),
	})
	w := parquet.NewWriter(f, schema)
	if err := w.Write(map[string]any{"timestamp_received": int64(1), "timestamp": int64(1), "market": "0x1", "event_type": "book", "asset_id": "1",
		"bids": "[]", "asks": "[]", "price": "", "size": "", "side": "", "best_bid": "", "best_ask": "", "fee_rate_bps": "",
		"transaction_hash": "", "old_tick_size": "", "new_tick_size": ""}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	f.Close()
	var out, errOut bytes.Buffer
	err = run(context.Background(), []string{"import", "--in", path, "--database-url", "postgres://nobody@127.0.0.1:1/none"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "updown import events --format pmxt-v2") || strings.Contains(err.Error(), "CSV") {
		t.Fatalf("import of a PMXT hour: %v", err)
	}
}

// TestBackfillCommands runs the README's Backfill on a fresh database:
// markets fetch from (the fake) Gamma, import events with klines, import
// list, and a re-run that changes nothing.
func TestBackfillCommands(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmptyDatabase(t)
	poly := polytest.New(t, polytest.Options{})
	start := time.Now().Add(-3 * time.Hour).Truncate(5 * time.Minute)
	pm := poly.AddWindow(store.BTC, store.M5, start)
	dir := t.TempDir()
	markets := filepath.Join(dir, "markets.json")
	out := runCmd(t, "markets", "fetch", "--series", "btc-5m", "--from", start.Format(time.RFC3339), "--to", start.Add(5*time.Minute).Format(time.RFC3339),
		"--out", markets, "--gamma-url", poly.URL)
	if !strings.Contains(string(out), "1 markets of 1 windows") {
		t.Fatalf("markets fetch: %s", out)
	}

	// A minute of the market's events, and klines for it.
	var frames bytes.Buffer
	ms := func(d time.Duration) int64 { return start.Add(d).UnixMilli() }
	book := func(tok string, at int64, bid, ask string) {
		fmt.Fprintf(&frames, `[{"event_type":"book","market":%q,"asset_id":%q,"timestamp":"%d","bids":[{"price":%q,"size":"10"}],"asks":[{"price":%q,"size":"12"}]}]`+"\n",
			pm.ConditionID, tok, at, bid, ask)
	}
	book(pm.UpToken, ms(0), "0.50", "0.52")
	book(pm.DownToken, ms(time.Millisecond), "0.48", "0.50")
	for i := 1; i < 200; i++ {
		tok, p := pm.UpToken, "0.51"
		if i%2 == 0 {
			tok, p = pm.DownToken, "0.49"
		}
		fmt.Fprintf(&frames, `{"event_type":"price_change","market":%q,"timestamp":"%d","price_changes":[{"asset_id":%q,"price":%q,"size":"%d","side":"BUY"}]}`+"\n",
			pm.ConditionID, ms(time.Duration(i)*250*time.Millisecond), tok, p, i)
		if i%10 == 0 {
			fmt.Fprintf(&frames, `{"event_type":"last_trade_price","market":%q,"asset_id":%q,"timestamp":"%d","price":"0.52","size":"5","side":"BUY","fee_rate_bps":"0","transaction_hash":"0x%x"}`+"\n",
				pm.ConditionID, pm.UpToken, ms(time.Duration(i)*250*time.Millisecond+time.Millisecond), i)
		}
	}
	dump := filepath.Join(dir, "dump.jsonl")
	os.WriteFile(dump, frames.Bytes(), 0o644)
	var kl bytes.Buffer
	for s := -60; s < 300; s++ {
		at := start.Add(time.Duration(s) * time.Second)
		fmt.Fprintf(&kl, "%d,95000.0,95010.0,94990.0,95001.5,3.2,%d,300000,40,1.5,142000,0\n", at.UnixMicro(), at.Add(time.Second).UnixMicro()-1)
	}
	klines := filepath.Join(dir, "BTCUSDT-1s-2026-05-12.csv")
	os.WriteFile(klines, kl.Bytes(), 0o644)

	args := []string{"import", "events", "--database-url", db, "--markets", markets, "--coin-prices", klines, "--progress", "lines", dump}
	line := string(runCmd(t, args...))
	if !strings.HasPrefix(line, "import 1 (ws-jsonl):") || !strings.Contains(line, "1 markets created") || strings.Contains(line, " 0 snapshots") {
		t.Fatalf("summary %q", line)
	}
	if again := string(runCmd(t, args...)); !strings.Contains(again, "already imported as import 1") {
		t.Fatalf("re-run: %q", again)
	}
	// Books in the layout asked (SNAPSHOT_BOOKS_VERSION, --books-version),
	// as collect and import --in write them: 2 by default, 1 for builds
	// older than books version 2 to read.
	db1 := pgtest.NewEmptyDatabase(t)
	if code, _, errOut := runBinary(t, []string{"SNAPSHOT_BOOKS_VERSION=1"},
		"import", "events", "--database-url", db1, "--markets", markets, "--coin-prices", klines, "--progress", "none", dump); code != 0 {
		t.Fatalf("import events with SNAPSHOT_BOOKS_VERSION=1: exit %d\n%s", code, errOut)
	}
	for url, want := range map[string]int32{db: 2, db1: 1} {
		st, err := postgres.Open(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		var versions []int32
		rows, err := st.Pool().Query(t.Context(), "select distinct get_byte(books, 0) from snapshot_chunks")
		if err == nil {
			versions, err = pgx.CollectRows(rows, pgx.RowTo[int32])
		}
		st.Close()
		if err != nil || len(versions) != 1 || versions[0] != want {
			t.Errorf("import events wrote books versions %v (%v), want [%d]", versions, err, want)
		}
	}
	var list []map[string]any
	if err := json.Unmarshal(runCmd(t, "import", "list", "--json", "--database-url", db), &list); err != nil || len(list) != 1 || list[0]["source"] != "ws-jsonl" {
		t.Fatalf("import list: %v %v", list, err)
	}
	if table := string(runCmd(t, "import", "list", "--database-url", db)); !strings.Contains(table, "ws-jsonl") || !strings.Contains(table, "dump.jsonl") {
		t.Fatalf("import list: %s", table)
	}
}

// TestImportEventsStdin: `updown import events -` (a dump piped in, as
// `updown import` takes an export) says the events are read from files,
// and why, before any database is needed, where it answered "open -: no
// such file or directory".
func TestImportEventsStdin(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"import", "events", "--database-url", "postgres://nobody@127.0.0.1:1/none", "-"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "stdin") || !strings.Contains(err.Error(), "gzip") || strings.Contains(err.Error(), "no such file") {
		t.Fatalf("import events -: %v", err)
	}
}

// TestSummaryWithoutCoinPrices: an import given no --coin-prices whose
// instants had no coin price (a pmxt-v2 hour carries none) says so, and
// what to give, where it said "the klines do not cover them" of klines
// never given.
func TestSummaryWithoutCoinPrices(t *testing.T) {
	t.Parallel()
	sum := archive.Summary{Fresh: true, NoPrice: 1000, Import: store.Import{ID: 2, Source: "pmxt-v2"}}
	if line := summaryLine(sum, false); !strings.Contains(line, "1000 instants without a coin price") || !strings.Contains(line, "--coin-prices") || strings.Contains(line, "klines do not cover") {
		t.Errorf("without --coin-prices: %q", line)
	}
	if line := summaryLine(sum, true); !strings.Contains(line, "the klines do not cover them") {
		t.Errorf("with --coin-prices: %q", line)
	}
}

// TestImportEventsFileOnce: import events given one file twice (by the
// same name, or by another) refuses it before any database is needed,
// where it read the events twice over, counted them twice in its summary
// and recorded the file twice in import list.
func TestImportEventsFileOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dump := filepath.Join(dir, "dump.jsonl")
	if err := os.WriteFile(dump, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, second := range []string{dump, dir + "/./dump.jsonl"} {
		err := run(context.Background(), []string{"import", "events", "--database-url", "postgres://nobody@127.0.0.1:1/none?connect_timeout=1", dump, second}, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "are the same file") {
			t.Errorf("import events %s %s: %v, want the file named twice refused", dump, second, err)
		}
	}
}
