package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestExportHelpNamesParquet: the help of export, and the command list,
// name Parquet among export's formats.
func TestExportHelpNamesParquet(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	if err := run(context.Background(), []string{"export", "-h"}, io.Discard, &stderr); err == nil || !strings.Contains(err.Error(), "help") {
		t.Fatalf("export -h: %v", err)
	}
	synopsis, _, _ := strings.Cut(stderr.String(), "Flags:")
	if !strings.Contains(synopsis, "Parquet") || !strings.Contains(synopsis, "CSV") {
		t.Errorf("export -h does not say it writes Parquet:\n%s", stderr.String())
	}
	// --split day files a market by the UTC day it starts, whole: a user
	// looking for a 24hr market's second day must be told where it is.
	if !strings.Contains(stderr.String(), "start that UTC day") {
		t.Errorf("export -h does not say which day's file holds a market:\n%s", stderr.String())
	}
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"help"}, &stdout, io.Discard); err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(stdout.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "export ") && !strings.Contains(line, "Parquet") {
			t.Errorf("updown help: %q does not name Parquet", line)
		}
	}
}

// TestExportRefusesBadOptions: a format, kind or split export cannot
// write is refused with the choices named, before any database is opened
// (the URL here answers nowhere).
func TestExportRefusesBadOptions(t *testing.T) {
	t.Parallel()
	const nowhere = "postgres://nobody@127.0.0.1:1/none?connect_timeout=1"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--format", "xml"}, `--format "xml" is not jsonl, csv or parquet`},
		{[]string{"--out", "x.csv"}, "a csv file holds one kind of record"},
		{[]string{"--format", "parquet", "--what", "all"}, "a parquet file holds one kind of record"},
		{[]string{"--what", "books"}, `--what "books" is not all, markets, snapshots, trades or gaps`},
		{[]string{"--split", "week", "--out", "dir"}, `--split "week" is not market or day`},
		// Filters that can match nothing, as the API refuses them.
		{[]string{"--coin", "eth", "--market-type", "4hr"}, "4hr markets exist for BTC only"},
		{[]string{"--from", "2026-05-02", "--to", "2026-05-01"}, "--from 2026-05-02 is not before --to 2026-05-01"},
		{[]string{"--from", "2026-05-01", "--to", "2026-05-01"}, "is not before --to"},
		// Epoch seconds, which read as milliseconds are January 1970:
		// --to exported nothing, --from everything.
		{[]string{"--to", "1777467600"}, "--to: 1777467600 looks like epoch seconds (2026-04-29T13:00:00Z)"},
		{[]string{"--from", "1777467600"}, "--from: 1777467600 looks like epoch seconds"},
	} {
		args := append([]string{"export", "--database-url", nowhere}, tc.args...)
		err := run(context.Background(), args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("updown %s: %v; want an error saying %q", strings.Join(args, " "), err, tc.want)
		}
	}
}

// TestExportTimesFinerThanStored: a --from or --to finer than the stores'
// microsecond (nanoseconds) selects what it says, as the API's time
// parameters do: --to a nanosecond after a market's start holds the
// market, --from a nanosecond after it does not.
func TestExportTimesFinerThanStored(t *testing.T) {
	t.Parallel()
	st := memory.New()
	start := time.Date(2026, 4, 29, 13, 0, 0, 0, time.UTC)
	m := store.Market{Slug: "btc-updown-15m-1777467600", MarketID: "1", Coin: store.BTC, MarketType: store.M15,
		StartTime: start, EndTime: start.Add(15 * time.Minute)}
	if err := st.UpsertMarkets(context.Background(), []store.Market{m}); err != nil {
		t.Fatal(err)
	}
	nano := func(d time.Duration) string { return start.Add(d).Format(time.RFC3339Nano) }
	for _, tc := range []struct {
		from, to string
		want     int
	}{
		{"", nano(time.Nanosecond), 1},
		{nano(-time.Nanosecond), nano(time.Nanosecond), 1},
		{nano(time.Nanosecond), "", 0},
		{nano(-time.Nanosecond), "", 1},
	} {
		f, err := marketFilter("export", "", "", tc.from, tc.to, "", nil)
		if err != nil {
			t.Fatalf("--from %q --to %q: %v", tc.from, tc.to, err)
		}
		n, err := st.CountMarkets(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		if n != tc.want {
			t.Errorf("--from %q --to %q selects %d markets, want %d", tc.from, tc.to, n, tc.want)
		}
	}
}
