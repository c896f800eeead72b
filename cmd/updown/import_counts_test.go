package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/store/postgres/pgtest"
)

// TestImportPrintsWrittenAndKept runs `updown import` on a database twice
// with one export, JSON Lines and Parquet: the first prints every record
// written, the second the snapshots, trades and gaps kept (the database
// had them) and none written; a file that stops at a bad line says the
// same of what came before it.
func TestImportPrintsWrittenAndKept(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	src, seeded := seededDatabase(ctx, t)
	dst := pgtest.NewDatabase(t)
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	command := func(args ...string) (map[string]float64, error) {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := run(ctx, args, &out, &errOut); err != nil {
			return nil, err
		}
		var s map[string]float64
		if err := json.Unmarshal(out.Bytes(), &s); err != nil {
			t.Fatalf("updown %s printed %q: %v", strings.Join(args, " "), out.String(), err)
		}
		return s, nil
	}
	mustRun := func(args ...string) map[string]float64 {
		t.Helper()
		s, err := command(args...)
		if err != nil {
			t.Fatalf("updown %s: %v", strings.Join(args, " "), err)
		}
		return s
	}
	exported := mustRun("export", "--database-url", src, "--out", path("all.jsonl"))
	mustRun("export", "--database-url", src, "--out", path("snapshots.parquet"), "--what", "snapshots")
	if int(exported["snapshots"]) != seeded.Snapshots || exported["trades"] == 0 || exported["gaps"] == 0 {
		t.Fatalf("exported %v of %+v: want snapshots, trades and gaps", exported, seeded)
	}
	check := func(what string, got map[string]float64, want map[string]float64) {
		t.Helper()
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: printed %s %v, want %v (all: %v)", what, k, got[k], v, got)
			}
		}
	}
	importOf := func(file string) map[string]float64 {
		t.Helper()
		return mustRun("import", "--database-url", dst, "--in", path(file))
	}
	check("first import", importOf("all.jsonl"), map[string]float64{
		"markets": exported["markets"], "snapshots": exported["snapshots"], "trades": exported["trades"], "gaps": exported["gaps"],
		"kept_markets": 0, "kept_snapshots": 0, "kept_trades": 0, "kept_gaps": 0,
	})
	check("second import", importOf("all.jsonl"), map[string]float64{
		"markets": exported["markets"], "snapshots": 0, "trades": 0, "gaps": 0, // a market as new as the stored one is written
		"kept_markets": 0, "kept_snapshots": exported["snapshots"], "kept_trades": exported["trades"], "kept_gaps": exported["gaps"],
	})
	check("Parquet snapshots imported again", importOf("snapshots.parquet"), map[string]float64{
		"snapshots": 0, "kept_snapshots": exported["snapshots"],
	})

	// Five snapshots the database has, then a bad line.
	data, err := os.ReadFile(path("all.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	for line := range strings.SplitSeq(string(data), "\n") {
		if strings.HasPrefix(line, `{"type":"snapshot"`) && len(bad) < 5 {
			bad = append(bad, line)
		}
	}
	if err := os.WriteFile(path("bad.jsonl"), []byte(strings.Join(bad, "\n")+"\n{nope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = command("import", "--database-url", dst, "--in", path("bad.jsonl"))
	const want = "before the error: 0 markets, 0 snapshots, 0 trades and 0 gaps written; 0, 5, 0 and 0 the store had already, kept as they were"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "line 6") {
		t.Errorf("import of a bad line after five stored snapshots: %v; want it to say %q at line 6", err, want)
	}
}
