package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/collect/polytest"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestImportEventsSaysSortedReading imports a dump whose lines are out of
// time order: the command says on stderr that the file is read again in
// the order of its times (the progress starting over), where the import
// had no logger and the bar dropped to 0 unexplained.
func TestImportEventsSaysSortedReading(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmptyDatabase(t)
	poly := polytest.New(t, polytest.Options{})
	start := time.Now().Add(-3 * time.Hour).Truncate(5 * time.Minute)
	pm := poly.AddWindow(store.BTC, store.M5, start)
	dir := t.TempDir()
	markets := filepath.Join(dir, "markets.json")
	runCmd(t, "markets", "fetch", "--series", "btc-5m", "--from", start.Format(time.RFC3339), "--to", start.Add(5*time.Minute).Format(time.RFC3339),
		"--out", markets, "--gamma-url", poly.URL)
	ms := func(d time.Duration) int64 { return start.Add(d).UnixMilli() }
	lines := []string{
		fmt.Sprintf(`{"event_type":"book","market":%q,"asset_id":%q,"timestamp":"%d","bids":[{"price":"0.50","size":"10"}],"asks":[{"price":"0.52","size":"12"}]}`, pm.ConditionID, pm.UpToken, ms(0)),
		fmt.Sprintf(`{"event_type":"book","market":%q,"asset_id":%q,"timestamp":"%d","bids":[{"price":"0.48","size":"10"}],"asks":[{"price":"0.50","size":"12"}]}`, pm.ConditionID, pm.DownToken, ms(time.Millisecond)),
	}
	var changes []string
	for i := 1; i < 200; i++ {
		tok, p := pm.UpToken, "0.51"
		if i%2 == 0 {
			tok, p = pm.DownToken, "0.49"
		}
		changes = append(changes, fmt.Sprintf(`{"event_type":"price_change","market":%q,"timestamp":"%d","price_changes":[{"asset_id":%q,"price":%q,"size":"%d","side":"BUY"}]}`,
			pm.ConditionID, ms(time.Duration(i)*250*time.Millisecond), tok, p, i))
	}
	slices.Reverse(changes) // out of time order
	dump := filepath.Join(dir, "dump.jsonl")
	if err := os.WriteFile(dump, []byte(strings.Join(append(lines, changes...), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var kl bytes.Buffer
	for s := -60; s < 300; s++ {
		at := start.Add(time.Duration(s) * time.Second)
		fmt.Fprintf(&kl, "%d,95000.0,95010.0,94990.0,95001.5,3.2,%d,300000,40,1.5,142000,0\n", at.UnixMicro(), at.Add(time.Second).UnixMicro()-1)
	}
	klines := filepath.Join(dir, "BTCUSDT-1s-2026-05-12.csv")
	if err := os.WriteFile(klines, kl.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"import", "events", "--database-url", db, "--markets", markets, "--coin-prices", klines,
		"--progress", "none", dump}, &out, &errOut)
	if err != nil {
		t.Fatalf("import events: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(errOut.String(), "read again in the order of their times") || !strings.Contains(errOut.String(), "dump.jsonl") ||
		!strings.Contains(errOut.String(), "time=") {
		t.Errorf("an import of a file out of order did not say it was read again sorted; stderr:\n%s", errOut.String())
	}
	if !strings.Contains(out.String(), "1 markets created") {
		t.Errorf("summary %q", out.String())
	}
}
