package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/jobs/collect"
	"github.com/updown/updown/store"
)

// runImportEvents is `updown import events`: archived market-channel events
// (ws-jsonl or pmxt-v2) into DATABASE_URL (DESIGN 9).
func runImportEvents(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("import events", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", "", "ws-jsonl (market-channel frames, one a line; gzip and zstd recognised) or pmxt-v2 (PMXT's hourly Parquet); default: told from the first file")
	marketsFile := fs.String("markets", "", "markets `FILE`: Gamma's JSON as `updown markets fetch` saves it, or an `updown export --what markets` file; events of markets neither stored nor in it are skipped and counted")
	skipUnknown := fs.Bool("skip-unknown", false, "without --markets, skip and count the events of markets not stored instead of stopping at the first")
	var coinFiles []string
	fs.Func("coin-prices", "Binance kline CSV `FILE` (1s or 1m, from data.binance.vision, its zip or the CSV in it; the coin from its name, BTCUSDT-…, or COIN=FILE); repeat for several", func(s string) error {
		coinFiles = append(coinFiles, s)
		return nil
	})
	levels := fs.Int("book-levels", 10, "levels of each book side a snapshot keeps (the collector's)")
	progress := fs.String("progress", "auto", "auto (a bar on a terminal, plain lines otherwise), bar, lines or none")
	booksVersion := booksVersionFlag(fs)
	dbURL := databaseURLFlag(fs)
	fs.Usage = commandUsage(fs, "updown import events [flags] FILE...\n\n"+
		"Import archived Polymarket market-channel events into DATABASE_URL: books rebuilt and snapshots taken by the\n"+
		"collector's rules, trades, tick changes and gaps; all or nothing; recorded rows win; a re-run changes nothing.", adminEnv)
	files, err := parseWithFiles(fs, args)
	if err != nil {
		return err
	}
	if err := checkBooksVersion(*booksVersion); err != nil {
		return err
	}
	// Refused before anything is read, as collect refuses them: 0 was
	// taken for the default of 10 in silence, and a negative count kept no
	// levels: snapshots without books, priced by the last trade if at all.
	if *levels <= 0 {
		return fmt.Errorf("import events: --book-levels %d: a snapshot keeps 1 or more levels of each side (the collector's 10)", *levels)
	}
	switch *progress {
	case "auto", "bar", "lines", "none":
	default:
		return fmt.Errorf("import events: --progress %q is not auto, bar, lines or none", *progress)
	}
	if len(files) == 0 {
		fs.Usage()
		return errors.New("import events: give the event files to import (updown import events --format pmxt-v2 2026-05-12T13.parquet)")
	}
	if slices.Contains(files, "-") {
		// An import reads its files more than once (their digest, the
		// times they begin with, a file out of order sorted).
		return errors.New("import events: the events are read from files, not stdin (-): an import reads them more than once; save the dump to a file (gzip and zstd are read as they are)")
	}
	if err := filesOnce(files); err != nil {
		return err
	}
	f := archive.Format(*format)
	if f == "" {
		if f, err = sniffFormat(files[0]); err != nil {
			return err
		}
	}
	if f != archive.WSJSONL && f != archive.PMXTv2 {
		return fmt.Errorf("import events: --format %q is not ws-jsonl or pmxt-v2", f)
	}
	opt := archive.Options{Format: f, Files: files, SkipUnknown: *skipUnknown, BookLevels: *levels, Prices: archive.NewCoinPrices()}
	if *marketsFile != "" {
		ms, digest, err := archive.LoadMarkets(*marketsFile)
		if err != nil {
			return fmt.Errorf("import events: --markets: %w", err)
		}
		if ms == nil {
			ms = []store.Market{}
		}
		opt.Markets = ms
		opt.KeyExtra = append(opt.KeyExtra, digest)
	}
	for _, spec := range coinFiles {
		digest, err := addCoinPrices(opt.Prices, spec)
		if err != nil {
			return fmt.Errorf("import events: --coin-prices: %w", err)
		}
		opt.KeyExtra = append(opt.KeyExtra, digest)
	}
	st, err := openAdminStore(ctx, *dbURL)
	if err != nil {
		return err
	}
	defer st.Close()
	// The books are written in the layout asked, as collect and import
	// --in write them: SNAPSHOT_BOOKS_VERSION=1, set while a rollback past
	// books version 2 is possible, was ignored here, and the older web
	// and worker could not read the markets imported.
	if err := st.WriteBooksVersion(*booksVersion); err != nil {
		return fmt.Errorf("--books-version: %w", err)
	}
	p := newProgress(stderr, *progress)
	opt.Progress, opt.ProgressEvery = p.report, p.every
	// What the import tells on the way (a file read again in time order,
	// the progress starting over; trades left out; hours missing) goes to
	// stderr, between the progress lines, under the bar.
	opt.Logger = p.logger()
	sum, err := archive.Import(ctx, st, opt)
	p.done()
	if err != nil {
		return fmt.Errorf("import events: nothing was written: %w", err)
	}
	fmt.Fprintln(stdout, summaryLine(sum, len(coinFiles) > 0))
	return nil
}

// parseWithFiles parses flags given before, between or after the files,
// up to a "--" after which every argument names a file;
// help alone asks for the usage, as of every command (parseFlags).
func parseWithFiles(fs *flag.FlagSet, args []string) ([]string, error) {
	if helpArgument(fs, args) {
		return nil, flag.ErrHelp
	}
	var files []string
	sets := recordSets(fs)
	defer sets.stop()
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return files, sets.givenOnce()
		}
		if parsed := len(args) - fs.NArg(); parsed > 0 && args[parsed-1] == "--" {
			// "--" ends the flags: all that follows names files, even a
			// name that begins with a dash.
			return append(files, fs.Args()...), sets.givenOnce()
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// filesOnce refuses a file named twice (by the same name or another, a
// shell glob and a name): its events were read twice over, the summary
// counted them twice, and import list named the file twice.
func filesOnce(files []string) error {
	seen := make([]os.FileInfo, 0, len(files))
	for i, name := range files {
		fi, err := os.Stat(name)
		if err != nil {
			return fmt.Errorf("import events: %w", err)
		}
		for j, prev := range seen {
			if os.SameFile(prev, fi) {
				return fmt.Errorf("import events: %s and %s are the same file: name each file once", files[j], files[i])
			}
		}
		seen = append(seen, fi)
	}
	return nil
}

// sniffFormat tells ws-jsonl from pmxt-v2 by the file's first bytes.
func sniffFormat(name string) (archive.Format, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", fmt.Errorf("import events: %w", err)
	}
	defer f.Close()
	var magic [4]byte
	n, _ := io.ReadFull(f, magic[:])
	if n == 4 && string(magic[:]) == "PAR1" {
		return archive.PMXTv2, nil
	}
	return archive.WSJSONL, nil
}

// addCoinPrices reads one --coin-prices value: FILE or COIN=FILE.
func addCoinPrices(cp *archive.CoinPrices, spec string) (string, error) {
	name := spec
	coin, ok := archive.CoinOfFile(spec)
	if c, file, cut := strings.Cut(spec, "="); cut && store.Coin(strings.ToUpper(c)).Valid() {
		coin, name, ok = store.Coin(strings.ToUpper(c)), file, true
	}
	if !ok {
		return "", fmt.Errorf("%s: name the coin: BTC=%s, or keep Binance's file name (BTCUSDT-1s-2026-05-12.csv)", spec, spec)
	}
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if err := cp.AddKlines(coin, name, io.TeeReader(f, h)); err != nil {
		return "", err
	}
	return string(coin) + ":" + hex.EncodeToString(h.Sum(nil)[:8]), nil
}

// summaryLine is the one line an import ends with; klines: --coin-prices
// was given.
func summaryLine(s archive.Summary, klines bool) string {
	if !s.Fresh {
		return fmt.Sprintf("already imported as import %d (%s, %s): nothing changed", s.Import.ID, s.Import.Source,
			s.Import.CreatedAt.Format(time.RFC3339))
	}
	var gaps []string
	if s.Import.Gaps > 0 {
		gaps = append(gaps, fmt.Sprintf("%d gaps", s.Import.Gaps))
	}
	switch {
	case s.NoPrice > 0 && klines:
		gaps = append(gaps, fmt.Sprintf("%d instants without a coin price (the klines do not cover them: gaps)", s.NoPrice))
	case s.NoPrice > 0:
		gaps = append(gaps, fmt.Sprintf("%d instants without a coin price (no --coin-prices given, and no Chainlink prices in the stream for them: gaps; give Binance klines with --coin-prices)", s.NoPrice))
	}
	if len(s.MissingHours) > 0 {
		gaps = append(gaps, fmt.Sprintf("%d hours missing between the files (gaps)", len(s.MissingHours)))
	}
	if len(gaps) == 0 {
		gaps = []string{"no gaps"}
	}
	return fmt.Sprintf("import %d (%s): %d events in %.1fs (%.0f/s); %d markets created, %d snapshots, %d trades; %s; %d events of %d markets not imported skipped; from %s to %s",
		s.Import.ID, s.Import.Source, s.Events, s.Elapsed.Seconds(), float64(s.Events)/max(s.Elapsed.Seconds(), 1e-9),
		s.Import.Markets, s.Import.Snapshots, s.Import.Trades, strings.Join(gaps, ", "), s.Skipped, s.SkippedMarkets,
		fmtTime(s.Import.From), fmtTime(s.Import.To))
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// progress draws an import's progress: a bar redrawn in place on a
// terminal, a plain line every few seconds otherwise.
type progress struct {
	mu    sync.Mutex // report and the logger's lines, from the import's goroutines
	w     io.Writer
	bar   bool
	off   bool
	every time.Duration
	drawn bool
}

func newProgress(w io.Writer, mode string) *progress {
	term := false
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			term = true
		}
	}
	p := &progress{w: w, every: 10 * time.Second}
	switch mode {
	case "bar":
		p.bar = true
	case "lines":
	case "none":
		p.off = true
	default:
		p.bar = term
	}
	if p.bar {
		p.every = 200 * time.Millisecond
	}
	return p
}

// logger is the import's logger: its records, as text without the time,
// a line each on the progress's writer, a bar drawn ended first (it is
// drawn again under the line), whatever the progress mode.
func (p *progress) logger() *slog.Logger {
	return slog.New(untimed{slog.NewTextHandler(progressLog{p}, nil)})
}

// untimed leaves out a record's time (a record's own "time" attribute is
// kept, as dropping the time key would drop it too).
type untimed struct{ slog.Handler }

func (h untimed) Handle(ctx context.Context, r slog.Record) error {
	r.Time = time.Time{}
	return h.Handler.Handle(ctx, r)
}

func (h untimed) WithAttrs(as []slog.Attr) slog.Handler { return untimed{h.Handler.WithAttrs(as)} }
func (h untimed) WithGroup(name string) slog.Handler    { return untimed{h.Handler.WithGroup(name)} }

// progressLog writes the logger's lines among the progress's.
type progressLog struct{ p *progress }

func (l progressLog) Write(b []byte) (int, error) {
	l.p.mu.Lock()
	defer l.p.mu.Unlock()
	if l.p.bar && l.p.drawn {
		fmt.Fprintln(l.p.w)
	}
	if _, err := io.WriteString(l.p.w, "import: "); err != nil {
		return 0, err
	}
	return l.p.w.Write(b)
}

func (p *progress) report(pr archive.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.off || (pr.Final && !p.drawn) {
		return
	}
	rate := float64(pr.Events) / max(pr.Elapsed.Seconds(), 1e-9)
	eta := "-"
	frac := 0.0
	if pr.Total > 0 {
		frac = min(1, float64(pr.Done)/float64(pr.Total))
		if frac > 0 {
			left := time.Duration(float64(pr.Elapsed) * (1 - frac) / frac)
			eta = left.Round(time.Second).String()
		}
	}
	if p.bar {
		const width = 30
		n := int(frac * width)
		fmt.Fprintf(p.w, "\r[%s%s] %3.0f%% %d rows, %d markets, %.0f rows/s, ETA %s   ",
			strings.Repeat("=", n), strings.Repeat(" ", width-n), 100*frac, pr.Events, pr.Markets, rate, eta)
		p.drawn = true
		return
	}
	if !pr.Final {
		fmt.Fprintf(p.w, "import: %.0f%%: %d rows, %d markets, %.0f rows/s, ETA %s\n", 100*frac, pr.Events, pr.Markets, rate, eta)
		p.drawn = true
	}
}

func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar && p.drawn {
		fmt.Fprintln(p.w)
	}
}

// runImportList is `updown import list`: the archive imports, oldest first.
func runImportList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("import list", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "JSON instead of a table")
	dbURL := databaseURLFlag(fs)
	fs.Usage = commandUsage(fs, "updown import list [flags]\n\nThe archive imports (updown import events) of DATABASE_URL, oldest first.", adminEnv)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	st, err := openAdminStore(ctx, *dbURL)
	if err != nil {
		return err
	}
	defer st.Close()
	imps, err := st.ListImports(ctx)
	if err != nil {
		return fmt.Errorf("import list: %w", err)
	}
	if *asJSON {
		type row struct {
			ID        int64     `json:"id"`
			Source    string    `json:"source"`
			Files     []string  `json:"files"`
			From      time.Time `json:"from"`
			To        time.Time `json:"to"`
			Markets   int64     `json:"markets"`
			Snapshots int64     `json:"snapshots"`
			Trades    int64     `json:"trades"`
			Gaps      int64     `json:"gaps"`
			Skipped   int64     `json:"skipped"`
			CreatedAt time.Time `json:"created_at"`
		}
		out := make([]row, len(imps))
		for i, m := range imps {
			out[i] = row{m.ID, m.Source, m.Files, m.From, m.To, m.Markets, m.Snapshots, m.Trades, m.Gaps, m.Skipped, m.CreatedAt}
		}
		return json.NewEncoder(stdout).Encode(out)
	}
	if len(imps) == 0 {
		fmt.Fprintln(stdout, "no imports yet (updown import events)")
		return nil
	}
	fmt.Fprintf(stdout, "%-4s %-9s %-20s %-20s %8s %10s %8s %6s %9s  %s\n", "ID", "SOURCE", "FROM", "TO", "MARKETS", "SNAPSHOTS", "TRADES", "GAPS", "SKIPPED", "FILES")
	for _, m := range imps {
		fmt.Fprintf(stdout, "%-4d %-9s %-20s %-20s %8d %10d %8d %6d %9d  %s\n", m.ID, m.Source, fmtTime(m.From), fmtTime(m.To),
			m.Markets, m.Snapshots, m.Trades, m.Gaps, m.Skipped, strings.Join(m.Files, " "))
	}
	return nil
}

// runMarkets is `updown markets fetch` and `updown markets fill-fees`.
func runMarkets(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && isHelp(args[0]) {
		// Its subcommands, and fetch's help: asking for help is success.
		fmt.Fprintln(stderr, "updown markets fetch | fill-fees ('updown markets fill-fees -h' for its flags)")
		return runMarkets(ctx, []string{"fetch", "-h"}, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "fill-fees" {
		return runMarketsFillFees(ctx, args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "fetch" {
		return errors.New("markets: the commands are `updown markets fetch --series btc-5m --from DATE --to DATE --out markets.json` and `updown markets fill-fees`")
	}
	fs := flag.NewFlagSet("markets fetch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seriesFlag := fs.String("series", "", "the series: btc-5m, eth-15m, sol-1hr, btc-4hr, btc-24hr, …")
	from := fs.String("from", "", "first window start (RFC 3339, a date, or epoch ms)")
	to := fs.String("to", "", "windows starting before this (RFC 3339, a date, or epoch ms)")
	out := fs.String("out", "-", "file to write Gamma's events to (JSON); - is stdout")
	maxWindows := fs.Int("max-windows", collect.DefaultFetchWindows, "the most windows (one Gamma request or more each, all held in memory until written) to fetch; a longer range is refused")
	gammaURL := urlFlag(fs, "gamma-url", envOr("POLYMARKET_GAMMA_URL", collect.DefaultGammaURL), "Gamma API base `URL` (env POLYMARKET_GAMMA_URL)")
	fs.Usage = commandUsage(fs, "updown markets fetch --series S --from T --to T [--out FILE]\n\n"+
		"Save Gamma's records of a series' markets (closed ones too), found by the collector's slug rules: the --markets\n"+
		"file of `updown import events`.", nil)
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	s, err := collect.ParseSeries(*seriesFlag)
	if err != nil {
		return fmt.Errorf("markets fetch: --series: %w", err)
	}
	fromT, err := parseWhen(*from)
	if err != nil || *from == "" {
		return fmt.Errorf("markets fetch: --from %q: give a time (RFC 3339, a date, or epoch ms)", *from)
	}
	toT, err := parseWhen(*to)
	if err != nil || *to == "" || !toT.After(fromT) {
		return fmt.Errorf("markets fetch: --to %q: give a time after --from", *to)
	}
	if *maxWindows < 1 {
		return fmt.Errorf("markets fetch: --max-windows %d: give a number of windows from 1", *maxWindows)
	}
	// The file is checked before Gamma is asked (a request a window: a
	// day of 5m windows is 288): --out "" or a missing directory failed
	// only once everything was fetched, and all of it was lost.
	if err := namesFile(fs, "out", *out, "stdout"); err != nil {
		return err
	}
	if *out != "-" {
		if fi, err := os.Stat(filepath.Dir(*out)); err != nil || !fi.IsDir() {
			return fmt.Errorf("markets fetch: --out %s: its directory %s does not exist: create it first", *out, filepath.Dir(*out))
		}
	}
	// A request a window, nothing written until the last: a range of more
	// than --max-windows is refused before Gamma is asked.
	res, err := collect.FetchMarkets(ctx, collect.FetchConfig{Upstreams: collect.Upstreams{Gamma: *gammaURL}, MaxWindows: *maxWindows}, s, fromT, toT)
	if tooMany := (*collect.TooManyWindowsError)(nil); errors.As(err, &tooMany) {
		return fmt.Errorf("markets fetch: %s from %s to %s is %s windows, at least one Gamma request each, held in memory until the last is fetched; "+
			"fetch at most --max-windows %d at a time (split the range into several files), or raise --max-windows to fetch it in one",
			*seriesFlag, fmtTime(fromT), fmtTime(toT), tooMany.Count(), *maxWindows)
	}
	if err != nil {
		// What was fetched before a failure or an interrupt is kept
		// (it was all lost), and the message says where to go on from.
		if *out == "-" || len(res.Events) == 0 || res.Stopped.IsZero() {
			return fmt.Errorf("markets fetch: %w", err)
		}
		data, mErr := json.MarshalIndent(res.Events, "", "  ")
		if mErr == nil {
			mErr = writeMarketsFile(*out, append(data, '\n'))
		}
		if mErr != nil {
			return fmt.Errorf("markets fetch: %w (and the markets fetched before it could not be written: %v)", err, mErr)
		}
		return fmt.Errorf("markets fetch: %w; the %d markets of the %d windows before %s are written to %s: fetch the rest with --from %s",
			err, len(res.Events), res.Windows, fmtTime(res.Stopped), *out, fmtTime(res.Stopped))
	}
	data, err := json.MarshalIndent(res.Events, "", "  ")
	if err != nil {
		return fmt.Errorf("markets fetch: %w", err)
	}
	if len(res.Events) == 0 {
		data = []byte("[]")
	}
	data = append(data, '\n')
	if *out == "-" {
		_, err = stdout.Write(data)
		return err
	}
	if err := writeMarketsFile(*out, data); err != nil {
		return fmt.Errorf("markets fetch: %w", err)
	}
	fmt.Fprintf(stdout, "%d markets of %d windows written to %s (%d windows have none on Gamma)\n", len(res.Events), res.Windows, *out, res.Missing)
	return nil
}

// writeMarketsFile writes a markets file as an export writes its file
// (createOut): into a temporary renamed into place, so that a fetch that
// fails part way, writing what it got, leaves no file of an earlier fetch
// half overwritten, and a device or pipe is written into.
func writeMarketsFile(name string, data []byte) error {
	o, err := createOut(name, io.Discard)
	if err != nil {
		return err
	}
	if _, err := o.Write(data); err != nil {
		o.abort()
		return fmt.Errorf("write %s: %w", name, err)
	}
	return o.commit()
}

// isParquet reports whether the file starts as Parquet does (PAR1).
func isParquet(name string) bool {
	if name == "-" {
		return false
	}
	f, err := os.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [4]byte
	n, _ := io.ReadFull(f, magic[:])
	return n == 4 && string(magic[:]) == "PAR1"
}

// importParquet is `updown import --in FILE.parquet`: an `updown export
// --format parquet` file back into DATABASE_URL, or the way to import a
// PMXT archive hour.
func importParquet(ctx context.Context, name, dbURL string, booksVersion int, stdout io.Writer) error {
	kind, err := archive.KindOfParquet(name)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if kind == archive.ParquetPMXT {
		return fmt.Errorf("import: %s is a PMXT archive hour of raw market-channel events, not an export: import it with `updown import events --format pmxt-v2 --markets markets.json %s`", name, name)
	}
	st, err := openAdminStore(ctx, dbURL)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.WriteBooksVersion(booksVersion); err != nil {
		return fmt.Errorf("--books-version: %w", err)
	}
	began := time.Now()
	stats, err := archive.ImportExportParquet(ctx, st, name)
	if err != nil {
		return fmt.Errorf("import (%s): %w", importedBefore(stats), err)
	}
	return writeJSON(stdout, importSummary(stats, time.Since(began)))
}
