package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestExportImportRoundTrip moves a Postgres database through `updown
// export` and `updown import` into a fresh one and exports that: JSON
// Lines (plain and gzipped) and CSV come out byte for byte as they went in.
func TestExportImportRoundTrip(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	src, seeded := seededDatabase(ctx, t)
	if seeded.Snapshots <= 5000 {
		t.Fatalf("seeded %d snapshots: want more than export's page of 5000", seeded.Snapshots)
	}
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }

	summary := func(out []byte) map[string]float64 {
		t.Helper()
		var s map[string]float64
		if err := json.Unmarshal(out, &s); err != nil {
			t.Fatalf("summary %q: %v", out, err)
		}
		return s
	}
	for _, tc := range []struct {
		name  string
		files []string   // exported from the source, imported in this order
		flags [][]string // export flags per file
	}{
		{"jsonl", []string{"all.jsonl"}, [][]string{nil}},
		{"jsonl.gz", []string{"all.jsonl.gz"}, [][]string{nil}},
		{"csv", []string{"markets.csv", "snapshots.csv.gz"}, [][]string{{"--what", "markets"}, {"--what", "snapshots"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each into a database and files of its own
			dst := pgtest.NewDatabase(t)
			for i, f := range tc.files {
				args := append([]string{"export", "--database-url", src, "--out", path("a-" + f)}, tc.flags[i]...)
				s := summary(runBinaryOK(t, args...))
				if tc.flags[i] == nil && (int(s["markets"]) != seeded.Markets || int(s["snapshots"]) != seeded.Snapshots) {
					t.Fatalf("exported %v, seeded %+v", s, seeded)
				}
				in := summary(runBinaryOK(t, "import", "--database-url", dst, "--in", path("a-"+f)))
				t.Logf("%s: export %v, import %v", f, s, in)
				if in["markets"] != s["markets"] || in["snapshots"] != s["snapshots"] {
					t.Fatalf("imported %v of an export of %v", in, s)
				}
			}
			for i, f := range tc.files {
				args := append([]string{"export", "--database-url", dst, "--out", path("b-" + f)}, tc.flags[i]...)
				runBinaryOK(t, args...)
				a, b := readMaybeGzip(t, path("a-"+f)), readMaybeGzip(t, path("b-"+f))
				if len(a) == 0 || !bytes.Equal(a, b) {
					t.Fatalf("%s: export → import → export differs (%d vs %d bytes)", f, len(a), len(b))
				}
			}
		})
	}

	// Export to stdout: the data alone on stdout, the summary on stderr.
	var out, errOut bytes.Buffer
	if err := run(ctx, []string{"export", "--database-url", src, "--coin", "eth", "--market-type", "5m", "--books=false"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], `{"type":"market"`) || strings.Contains(out.String(), "orderbook") ||
		strings.Contains(out.String(), `"coin":"BTC"`) || !strings.Contains(errOut.String(), "snapshots_per_second") {
		t.Errorf("export to stdout: %d lines, first %.80q; stderr %q", len(lines), lines[0], errOut.String())
	}
	for _, bad := range [][]string{
		{"export", "--database-url", src, "--format", "csv"},
		{"export", "--database-url", src, "--coin", "DOGE"},
		{"export", "--database-url", src, "--from", "last tuesday"},
		{"import", "--database-url", src, "--in", path("missing.jsonl")},
	} {
		if err := run(ctx, bad, &out, &errOut); err == nil {
			t.Errorf("updown %s succeeded", strings.Join(bad, " "))
		}
	}
}

// smallGenConfig is a few markets of every series, with books and a
// collector gap (holes in the longer markets, whole 5m markets without
// snapshots): enough to cross export's pages, small enough to be quick.
func smallGenConfig(now time.Time) gen.Config {
	cfg := gen.DefaultConfig(now)
	for mt := range cfg.Markets {
		cfg.Markets[mt] = 3
	}
	cfg.Markets["5m"] = 15
	cfg.MaxSnapshotsPerMarket = 110
	cfg.OutageAgo = 40 * time.Minute
	cfg.DepthHistory = 0
	return cfg
}

// seededDatabase is a new Postgres database seeded with smallGenConfig, and
// what the seed wrote.
func seededDatabase(ctx context.Context, t *testing.T) (string, gen.Stats) {
	t.Helper()
	url := pgtest.NewDatabase(t)
	st, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	seeded, err := gen.Seed(ctx, smallGenConfig(time.Now()), st)
	if err != nil {
		t.Fatal(err)
	}
	return url, seeded
}

func readMaybeGzip(t *testing.T, name string) []byte {
	t.Helper()
	r, closeIn, err := openIn(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeIn()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(r); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
