package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestDropSnapshots runs `updown drop-snapshots` as an operator would: a
// dry run says what would go and drops nothing; the run drops the months
// before the one given, says so, and leaves every market listed and
// counted as what it has (the one across the month's start its later
// snapshots, the one before it none); the current month, a month not
// written as YYYY-MM, or none, are refused before the database is
// touched.
func TestDropSnapshots(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDatabase(t)
	ctx := t.Context()
	st, err := postgres.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	july := time.Date(2025, 7, 1, 0, 0, 0, 0, time.UTC)
	market := func(start time.Time, n int) (string, []store.Snapshot) {
		slug := "btc-updown-15m-" + start.Format("20060102150405")
		m := store.Market{Slug: slug, MarketID: "m-" + slug, EventID: "e-" + slug, Coin: store.BTC, MarketType: store.M15,
			StartTime: start, EndTime: start.Add(15 * time.Minute), ConditionID: "c-" + slug, ClobTokenUp: "u-" + slug, ClobTokenDown: "d-" + slug}
		if err := st.UpsertMarkets(ctx, []store.Market{m}); err != nil {
			t.Fatal(err)
		}
		snaps := make([]store.Snapshot, n)
		for i := range snaps {
			snaps[i] = store.Snapshot{Time: start.Add(time.Duration(i) * time.Second), CoinPrice: 100_000, PriceUp: 0.5, PriceDown: 0.5}
		}
		for i := 0; i < n; i += 20 { // as the collector writes them
			if _, err := st.AppendSnapshots(ctx, slug, snaps[i:min(i+20, n)]); err != nil {
				t.Fatal(err)
			}
		}
		return slug, snaps
	}
	across, _ := market(july.Add(-5*time.Minute), 600) // 300 in June, 300 in July
	june, _ := market(july.Add(-10*24*time.Hour), 100)
	count := func(slug string) int {
		t.Helper()
		_, sc, err := st.GetMarketSeries(ctx, slug)
		if err != nil {
			t.Fatal(err)
		}
		n := sc.N
		if _, total, err := st.ListSnapshots(ctx, slug, store.SnapshotQuery{}); err != nil || total != n {
			t.Errorf("%s: listed %d, %v; counted %d", slug, total, err, n)
		}
		if tape, err := st.ReadTape(ctx, slug, store.OutcomeUp); err != nil || len(tape.Ticks) != n {
			t.Errorf("%s: tape %v; counted %d", slug, err, n)
		}
		return n
	}
	drop := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"drop-snapshots", "--database-url", db}, args...), &out, &errOut)
		return out.String() + errOut.String(), err
	}

	want := "400 snapshots of 2 markets before 2025-07 (partitions snapshot_chunks_p202506); 1 markets left with none"
	out, err := drop("--before", "2025-07", "--dry-run")
	if err != nil || !strings.Contains(out, "would drop (dry run: nothing dropped) "+want) {
		t.Errorf("dry run: %v\n%s", err, out)
	}
	if a, j := count(across), count(june); a != 600 || j != 100 {
		t.Errorf("after the dry run: %d and %d snapshots, want 600 and 100", a, j)
	}
	out, err = drop("--before", "2025-07")
	if err != nil || !strings.Contains(out, "dropped "+want) {
		t.Errorf("drop: %v\n%s", err, out)
	}
	if a, j := count(across), count(june); a != 300 || j != 0 {
		t.Errorf("after the drop: %d and %d snapshots, want 300 and 0", a, j)
	}
	if out, err := drop("--before", "2025-07"); err != nil || !strings.Contains(out, "nothing stored before 2025-07") {
		t.Errorf("again: %v\n%s", err, out)
	}

	// Refused before the database is opened: an unreachable one is never
	// reached.
	now := time.Now().UTC()
	next := time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC).Format("2006-01")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--before", next}, "would drop the current month"},
		{[]string{"--before", "2025-07-01"}, "want a month as YYYY-MM"},
		{[]string{"--before", "July"}, "want a month as YYYY-MM"},
		{nil, "--before YYYY-MM is required"},
	} {
		var out bytes.Buffer
		args := append([]string{"drop-snapshots", "--database-url", "postgres://nobody@127.0.0.1:1/none?connect_timeout=1"}, tc.args...)
		if err := run(context.Background(), args, &out, &out); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("drop-snapshots %q: %v, want %q\n%s", tc.args, err, tc.want, out.String())
		}
	}
}
