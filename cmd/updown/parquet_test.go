package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/parquet-go/parquet-go"

	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
)

func readParquetFile[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := parquet.Read[T](f, fi.Size())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows
}

// TestExportParquet: `updown export --format parquet` as one file and split
// by market and by day; every market and snapshot lands once, in the file
// its split names, in time order.
func TestExportParquet(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	src, seeded := seededDatabase(ctx, t)
	dir := t.TempDir()

	one := filepath.Join(dir, "snapshots.parquet")
	runBinaryOK(t, "export", "--database-url", src, "--out", one, "--what", "snapshots")
	if rows := readParquetFile[transfer.ParquetBookSnapshot](t, one); len(rows) != seeded.Snapshots {
		t.Errorf("one file: %d rows, seeded %d", len(rows), seeded.Snapshots)
	}

	for _, split := range []string{"market", "day"} {
		t.Run(split, func(t *testing.T) {
			t.Parallel() // into a folder of its own
			out := filepath.Join(dir, split)
			var sum map[string]float64
			if err := json.Unmarshal(runBinaryOK(t, "export", "--database-url", src, "--format", "parquet", "--split", split, "--out", out), &sum); err != nil {
				t.Fatal(err)
			}
			markets := readParquetFile[transfer.ParquetMarket](t, filepath.Join(out, "markets.parquet"))
			if len(markets) != seeded.Markets || int(sum["markets"]) != seeded.Markets {
				t.Fatalf("markets file: %d rows, summary %v, seeded %d", len(markets), sum, seeded.Markets)
			}
			start := map[string]time.Time{}
			for _, m := range markets {
				start[m.Slug] = m.StartTime
			}
			files, err := filepath.Glob(filepath.Join(out, "snapshots", "*.parquet"))
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, f := range files {
				key := strings.TrimSuffix(filepath.Base(f), ".parquet")
				rows := readParquetFile[transfer.ParquetBookSnapshot](t, f)
				n += len(rows)
				for i, r := range rows {
					s, ok := start[r.Slug]
					switch {
					case !ok:
						t.Fatalf("%s: snapshot of unknown market %s", f, r.Slug)
					case split == "market" && r.Slug != key:
						t.Fatalf("%s holds a snapshot of %s", f, r.Slug)
					case split == "day" && s.UTC().Format(time.DateOnly) != key:
						t.Fatalf("%s holds a snapshot of %s, which starts %s", f, r.Slug, s)
					case i > 0 && r.Slug == rows[i-1].Slug && !r.Time.After(rows[i-1].Time):
						t.Fatalf("%s: snapshots of %s out of order at row %d", f, r.Slug, i)
					}
				}
			}
			if n != seeded.Snapshots || int(sum["snapshots"]) != seeded.Snapshots {
				t.Errorf("%d snapshot rows in %d files, summary %v, seeded %d", n, len(files), sum, seeded.Snapshots)
			}
			// Trades and gaps beside the snapshots, in files of the same keys.
			count := func(kind string, read func(string) int) int {
				files, err := filepath.Glob(filepath.Join(out, kind, "*.parquet"))
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				for _, f := range files {
					if _, err := os.Stat(filepath.Join(out, "snapshots", filepath.Base(f))); err != nil {
						t.Errorf("%s has no snapshots file beside it: %v", f, err)
					}
					n += read(f)
				}
				return n
			}
			trades := count("trades", func(f string) int { return len(readParquetFile[transfer.ParquetTrade](t, f)) })
			gaps := count("gaps", func(f string) int { return len(readParquetFile[transfer.ParquetGap](t, f)) })
			if trades != seeded.Trades || gaps != seeded.Gaps || int(sum["trades"]) != seeded.Trades || seeded.Trades == 0 {
				t.Errorf("%d trade rows and %d gap rows, summary %v, seeded %d and %d", trades, gaps, sum, seeded.Trades, seeded.Gaps)
			}
		})
	}
	for _, bad := range [][]string{
		{"export", "--database-url", src, "--format", "parquet"},
		{"export", "--database-url", src, "--format", "parquet", "--split", "week", "--out", dir},
		{"export", "--database-url", src, "--format", "parquet", "--split", "day"},
	} {
		if err := run(ctx, bad, os.Stderr, os.Stderr); err == nil {
			t.Errorf("updown %s succeeded", strings.Join(bad, " "))
		}
	}
}

// TestImportParquetChecks: a Parquet import writes the books version asked
// for, counts what it stored (not what it read) when it fails, and a file
// that is not Parquet, Parquet on stdin and an export to .parquet.gz are
// refused with a message that says what to do.
func TestImportParquetChecks(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	src, _ := seededDatabase(ctx, t)
	dst, empty := pgtest.NewDatabase(t), pgtest.NewDatabase(t)
	dir := t.TempDir()
	markets, snaps := filepath.Join(dir, "markets.parquet"), filepath.Join(dir, "snapshots.parquet")
	runBinaryOK(t, "export", "--database-url", src, "--out", markets, "--what", "markets")
	runBinaryOK(t, "export", "--database-url", src, "--out", snaps, "--what", "snapshots")

	// Snapshots of markets the database lacks: nothing stored, and the
	// message says so.
	var stderr strings.Builder
	err := run(ctx, []string{"import", "--database-url", empty, "--in", snaps}, io.Discard, &stderr)
	if err == nil || !strings.Contains(err.Error(), "0 markets, 0 snapshots") {
		t.Errorf("snapshots of unknown markets: %v, want nothing counted as stored", err)
	}

	// --books-version 1 writes version 1 books, as the other formats do.
	runBinaryOK(t, "import", "--database-url", dst, "--in", markets)
	runBinaryOK(t, "import", "--database-url", dst, "--in", snaps, "--books-version", "1")
	dstore, err := postgres.Open(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	defer dstore.Close()
	var versions []int32
	rows, err := dstore.Pool().Query(ctx, "select distinct get_byte(books, 0) from snapshot_chunks")
	if err == nil {
		versions, err = pgx.CollectRows(rows, pgx.RowTo[int32])
	}
	if err != nil || len(versions) != 1 || versions[0] != 1 {
		t.Errorf("books versions written %v (%v), want [1]", versions, err)
	}

	notParquet := filepath.Join(dir, "empty.parquet")
	if err := os.WriteFile(notParquet, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	jsonl := filepath.Join(dir, "m.jsonl")
	runBinaryOK(t, "export", "--database-url", src, "--out", jsonl, "--what", "markets")
	for _, bad := range [][]string{
		{"import", "--database-url", dst, "--in", notParquet},
		{"import", "--database-url", dst, "--in", jsonl, "--format", "parquet"},
		{"export", "--database-url", src, "--what", "markets", "--out", filepath.Join(dir, "m.parquet.gz")},
	} {
		if err := run(ctx, bad, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "arquet") {
			t.Errorf("updown %s: %v, want a refusal about Parquet", strings.Join(bad, " "), err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "m.parquet.gz")); err == nil {
		t.Error("m.parquet.gz written")
	}
	cmd := exec.Command(updownBinary(t), "import", "--database-url", dst)
	in, err := os.Open(markets)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	cmd.Stdin = in
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "--in FILE") {
		t.Errorf("Parquet on stdin: %v %s, want a refusal naming --in FILE", err, out)
	}
}

// TestImportNamedFormat: a file named .jsonl or .csv is read as that
// format, so a broken one is told of in its own terms, not sniffed as
// the other; set-tier without --tier says it is missing.
func TestImportNamedFormat(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDatabase(t)
	ctx := context.Background()
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(bad, []byte("garbage{\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(ctx, []string{"import", "--database-url", db, "--in", bad}, io.Discard, io.Discard)
	if err == nil || strings.Contains(err.Error(), "CSV") || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a broken .jsonl: %v, want a JSON error at line 1", err)
	}
	err = run(ctx, []string{"customers", "set-tier", "--database-url", db, "--email", "nobody@example.com"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--tier is required") {
		t.Errorf("set-tier without --tier: %v", err)
	}
}
