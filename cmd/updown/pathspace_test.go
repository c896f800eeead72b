package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/updown/updown/store/postgres/pgtest"
)

// TestPathsWithSpaces: files and directories whose names have spaces are
// written and read by export --out (a file, and --split's directory),
// import --in and import --in of Parquet; a name the shell split in two
// because it was not quoted is refused with the name quoted whole, ready
// to paste, where the refusal named only the part after the space.
func TestPathsWithSpaces(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	dir := filepath.Join(t.TempDir(), "my exports")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, args := range [][]string{
		{"export", "--what", "markets", "--out", filepath.Join(dir, "all markets.jsonl.gz")},
		{"export", "--what", "markets", "--out=" + filepath.Join(dir, "all markets.parquet")},
		{"export", "--what", "markets", "--format", "csv", "--split", "day", "--out", filepath.Join(dir, "split dir")},
		{"import", "--in", filepath.Join(dir, "all markets.jsonl.gz")},
		{"import", "--in", filepath.Join(dir, "all markets.parquet")},
		{"import", "--in=" + filepath.Join(dir, "split dir", "markets.csv")},
	} {
		var errOut bytes.Buffer
		if err := run(ctx, append(args, "--database-url", dbURL), &bytes.Buffer{}, &errOut); err != nil {
			t.Errorf("updown %q: %v\n%s", args, err, errOut.String())
		}
	}
	for _, name := range []string{"all markets.jsonl.gz", "all markets.parquet", "split dir/markets.csv"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"export", "--out", "/tmp/my data.jsonl"}, `--out '/tmp/my data.jsonl'`},
		{[]string{"export", "--out=/tmp/my", "data.jsonl"}, `--out '/tmp/my data.jsonl'`},
		{[]string{"export", "--what", "markets", "--out", "/tmp/it's", "a", "file.csv"}, `--out '/tmp/it'\''s a file.csv'`},
		{[]string{"import", "--in", "/tmp/my data.jsonl"}, `--in '/tmp/my data.jsonl'`},
		{[]string{"import", "/tmp/my data.jsonl"}, `give it as --in '/tmp/my data.jsonl'`},
		{[]string{"import", "/tmp/my", "data.jsonl"}, `give it as --in '/tmp/my data.jsonl'`},
	} {
		// As the shell passes a name with a space it was not told to
		// keep whole: two arguments.
		args := c.args
		if len(args) == 3 || args[0] == "import" && len(args) == 2 {
			args = append(args[:len(args)-1:len(args)-1], strings.SplitN(args[len(args)-1], " ", 2)...)
		}
		err := run(ctx, append(args, "--database-url", dbURL), &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("updown %q: %v; want it to say %s", args, err, c.want)
		}
	}
}

// TestExportToGivenAFileNamesOut: export --to (or --from) given a file
// name, as other tools name their destination, is refused naming --out
// with the name quoted whole, where it said only that the name was not a
// time; a time of the wrong form gets no such hint, nor does a command
// that writes no file (markets fill-fees, whose flags are export's).
func TestExportToGivenAFileNamesOut(t *testing.T) {
	t.Parallel()
	const nowhere = "postgres://nobody@127.0.0.1:1/none?connect_timeout=1"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"export", "--to", "/tmp/my data.jsonl"}, `give it as --out '/tmp/my data.jsonl'`},
		{[]string{"export", "--what", "markets", "--to", "markets.parquet"}, `give it as --out markets.parquet`},
		{[]string{"export", "--from", "out/all.csv.gz"}, `give it as --out out/all.csv.gz`},
		{[]string{"export", "--to", "2026-13-01"}, ""},
		{[]string{"markets", "fill-fees", "--to", "markets.jsonl"}, ""},
		{[]string{"markets", "fill-fees", "--from", "out/all.csv"}, ""},
	} {
		err := run(context.Background(), append(c.args, "--database-url", nowhere), &bytes.Buffer{}, &bytes.Buffer{})
		switch {
		case err == nil:
			t.Errorf("updown %q was taken", c.args)
		case c.want == "" && strings.Contains(err.Error(), "--out"):
			t.Errorf("updown %q: %v; a time of the wrong form names no --out", c.args, err)
		case c.want != "" && !strings.Contains(err.Error(), c.want):
			t.Errorf("updown %q: %v; want it to say %s", c.args, err, c.want)
		}
	}
}
