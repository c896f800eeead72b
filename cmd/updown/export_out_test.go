package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres/pgtest"
)

// assertOnly checks that dir holds exactly the files named, no temporary
// left beside them.
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, " ") != strings.Join(names, " ") {
		t.Errorf("%s holds %q, want %q", dir, got, names)
	}
}

// TestOutputReplacesOnlyOnCommit: an export's file is written beside its
// name and renamed over it on commit, keeping the permissions of the file
// it replaces; aborted, the old file stays and nothing else does.
func TestOutputReplacesOnlyOnCommit(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"notes.txt", "all.jsonl.gz"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, []byte("old\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			o, err := createOut(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.WriteString(o, "half an export")
			o.abort()
			if b, err := os.ReadFile(path); err != nil || string(b) != "old\n" {
				t.Fatalf("after abort %s holds %q (%v)", name, b, err)
			}
			assertOnly(t, dir, name)

			if o, err = createOut(path, nil); err != nil {
				t.Fatal(err)
			}
			_, _ = io.WriteString(o, "new\n")
			if err := o.commit(); err != nil {
				t.Fatal(err)
			}
			if b := readMaybeGzip(t, path); string(b) != "new\n" {
				t.Fatalf("after commit %s holds %q", name, b)
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("after commit %s: %v %v; want the replaced file's mode 0600", name, fi.Mode(), err)
			}
			assertOnly(t, dir, name)
		})
	}
}

// TestFailedExportKeepsTheFile: `updown export --out FILE` that fails,
// refused at once or broken mid-way by the database, leaves FILE as it was
// and no temporary beside it; one that succeeds replaces it.
func TestFailedExportKeepsTheFile(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	seedMarkets(t, dbURL, store.M5, store.M15)
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	const old = "my notes\n"
	if err := os.WriteFile(notes, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	export := func(args ...string) error {
		return run(context.Background(), append([]string{"export", "--database-url", dbURL, "--out", notes}, args...), io.Discard, io.Discard)
	}
	kept := func(what string) {
		t.Helper()
		if b, err := os.ReadFile(notes); err != nil || string(b) != old {
			t.Errorf("%s: notes.txt holds %q (%v), want it untouched", what, b, err)
		}
		assertOnly(t, dir, "notes.txt")
	}

	if err := export("--format", "xml"); err == nil {
		t.Fatal("export --format xml succeeded")
	}
	kept("export --format xml")

	// The snapshots' table gone: the markets are written, then it fails.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "alter table snapshot_chunks rename to snapshot_chunks_away"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "alter table snapshot_series rename to snapshot_series_away"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := export("--format", "jsonl"); err == nil || !strings.Contains(err.Error(), "snapshot_") {
		t.Fatalf("export without the snapshots' tables: %v", err)
	}
	kept("an export failing mid-way")

	if _, err := conn.Exec(ctx, "alter table snapshot_chunks_away rename to snapshot_chunks; alter table snapshot_series_away rename to snapshot_series"); err != nil {
		t.Fatal(err)
	}
	if err := export("--format", "jsonl"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(notes)
	if err != nil || !strings.HasPrefix(string(b), `{"type":"market"`) || strings.Count(string(b), `"type":"snapshot"`) < 100 {
		t.Errorf("a successful export wrote %.200q (%v)", b, err)
	}
	assertOnly(t, dir, "notes.txt")
}

// TestFailedSplitExportCompletesNoOpenFile: `updown export --split` broken
// mid-way by the database completes none of the files it had open (the
// markets' file, the market's snapshots): each would look like a whole
// Parquet file holding part of the data. Nothing is left under a final
// name, and no temporary.
func TestFailedSplitExportCompletesNoOpenFile(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	seedMarkets(t, dbURL, store.M5, store.M15)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// The trades' table gone: the first market's snapshots are written,
	// then reading its trades fails.
	if _, err := conn.Exec(ctx, "alter table market_trades rename to market_trades_away"); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"parquet", "csv"} {
		out := filepath.Join(t.TempDir(), "out")
		err := run(ctx, []string{"export", "--database-url", dbURL, "--format", format, "--split", "market", "--out", out}, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "market_trades") {
			t.Fatalf("%s export without the trades' table: %v", format, err)
		}
		var files []string
		if err := filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, strings.TrimPrefix(path, out+string(filepath.Separator)))
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if len(files) > 0 {
			t.Errorf("a failed %s split export left %q", format, files)
		}
	}
}
