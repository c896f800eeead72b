package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
)

// runExport is `updown export`: markets, snapshots, trades and gaps of DATABASE_URL,
// streamed as JSON Lines or CSV to a file or stdout (gzipped when the file
// name ends in .gz).
func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "-", "file to write; - is stdout; a name ending in .gz is gzipped")
	format := fs.String("format", "", "jsonl, csv or parquet (default: from --out's extension, else jsonl)")
	split := fs.String("split", "", "market or day: --out is a directory that gets markets.<format>, snapshots/<slug or YYYY-MM-DD>.<format>, and trades/ and gaps/ files of the same keys; a day's files hold the markets that start that UTC day, whole (a 24hr market's snapshots of the next day too)")
	what := fs.String("what", "", "all (JSON Lines: each market, then its snapshots, trades and gaps), markets, snapshots, trades or gaps (CSV and Parquet hold one kind)")
	coin := fs.String("coin", "", "only markets of this coin (BTC, ETH, SOL)")
	marketType := fs.String("market-type", "", "only markets of this type (5m, 15m, 1hr, 4hr, 24hr)")
	from := fs.String("from", "", "only markets starting at or after this time (RFC 3339, a date, or epoch ms)")
	to := fs.String("to", "", "only markets starting before this time (RFC 3339, a date, or epoch ms)")
	resolved := fs.String("resolved", "", "only resolved (true) or unresolved (false) markets")
	books := fs.Bool("books", true, "include the snapshots' order books")
	dbURL := databaseURLFlag(fs)
	fs.Usage = commandUsage(fs, "updown export [flags]\n\n"+
		"Markets, snapshots, trades and gaps of DATABASE_URL as JSON Lines, CSV or Parquet, to a file, stdout or (--split) a directory.", adminEnv)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	// --out "" (a shell variable unset) was taken for a file with no
	// name: the whole export ran, then failed renaming ".tmp-…" to "".
	if *split == "" {
		if err := namesFile(fs, "out", *out, "stdout"); err != nil {
			return err
		}
	}

	opt := transfer.ExportOptions{Format: transfer.Format(*format), What: transfer.What(*what), Books: *books}
	if opt.Format == "" {
		opt.Format = formatOf(*out)
	}
	if err := checkExport(opt.Format, opt.What, *split); err != nil {
		return err
	}
	// With --split, --out names no directory: told before the database as
	// well (it was told once the database was open, or as its error), and
	// after a --split that is no split at all.
	if *split != "" && (*out == "" || *out == "-") {
		return errors.New("export: --split writes a directory of files: give it as --out")
	}
	if opt.Format == transfer.Parquet && strings.HasSuffix(*out, ".gz") {
		return fmt.Errorf("export: Parquet compresses its own columns: name the file %s, not %s", strings.TrimSuffix(*out, ".gz"), *out)
	}
	var err error
	if opt.Filter, err = marketFilter("export", *coin, *marketType, *from, *to, *resolved, fileNotTimeHint); err != nil {
		return err
	}
	st, err := openAdminStore(ctx, *dbURL)
	if err != nil {
		return err
	}
	defer st.Close()
	if *split != "" {
		return exportSplit(ctx, st, *out, transfer.Split(*split), opt, stdout)
	}

	o, err := createOut(*out, stdout)
	if err != nil {
		return err
	}
	began := time.Now()
	stats, err := transfer.Export(ctx, st, o, opt)
	if err != nil {
		o.abort()
		return fmt.Errorf("export: %w", err)
	}
	if err := o.commit(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	summary := stdout
	if *out == "-" || o.direct != nil {
		summary = stderr // stdout is the data, or may be (/dev/stdout, a pipe)
	}
	return writeJSON(summary, transferSummary(stats, time.Since(began)))
}

// runImport is `updown import`: an export (JSON Lines or CSV, gzipped or
// not) from a file or stdin into DATABASE_URL.
func runImport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "events":
			return runImportEvents(ctx, args[1:], stdout, stderr)
		case "list":
			return runImportList(ctx, args[1:], stdout, stderr)
		}
	}
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	in := fs.String("in", "-", "file to read; - is stdin; gzipped input is recognised")
	format := fs.String("format", "", "jsonl, csv or parquet (default: told from the input; Parquet is read from a file, --in)")
	batch := fs.Int("batch", 5000, "snapshots per store write")
	booksVersion := booksVersionFlag(fs)
	dbURL := databaseURLFlag(fs)
	fs.Usage = commandUsage(fs, "updown import [flags]\n\n"+
		"Load an export (JSON Lines or CSV, gzipped or not, from --in FILE or piped to stdin; Parquet from --in FILE)\n"+
		"into DATABASE_URL. Importing a file again writes nothing twice: a snapshot, trade or gap the store has\n"+
		"already is kept as it was, as is a market it holds with a later updated_at (one as new is written again,\n"+
		"unchanged). It prints the records written (markets, snapshots, trades, gaps) and apart those the store\n"+
		"had already and kept (kept_markets, kept_snapshots, kept_trades, kept_gaps; a gap is kept when the\n"+
		"store's gaps and those before it in the file cover it); snapshots_per_second counts the file's\n"+
		"snapshots, written or kept.", adminEnv)
	if err := parseFlags(fs, args); err != nil {
		return withArgumentHint(err, "to import a file, give it as --in "+shellQuote(strings.Join(wordsBeforeFlag(fs.Args()), " ")))
	}
	if err := namesFile(fs, "in", *in, "stdin"); err != nil {
		return err
	}
	if err := checkBooksVersion(*booksVersion); err != nil {
		return err
	}
	if *batch < 1 {
		return fmt.Errorf("import: --batch %d: want 1 or more snapshots per store write", *batch)
	}
	// Told before anything is opened: the database was opened and
	// migrated first, and behind an unreachable one the typo was told as
	// the database's error.
	switch transfer.Format(*format) {
	case "", transfer.JSONL, transfer.CSV, transfer.Parquet:
	default:
		return fmt.Errorf("import: --format %q is not jsonl, csv or parquet", *format)
	}
	switch {
	case isParquet(*in):
		return importParquet(ctx, *in, *dbURL, *booksVersion, stdout)
	case transfer.Format(*format) == transfer.Parquet || *in != "-" && formatOf(*in) == transfer.Parquet:
		return fmt.Errorf("import: %s is not a Parquet file (Parquet is read from a file given as --in FILE.parquet)", inName(*in))
	}
	r, closeIn, err := openIn(*in, os.Stdin)
	if err != nil {
		return err
	}
	defer closeIn()
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(4); string(magic) == "PAR1" {
		return fmt.Errorf("import: %s is Parquet, which is read from its end: give it as --in FILE", inName(*in))
	}
	if head, _ := br.Peek(512); bytes.IndexByte(head, 0) >= 0 {
		// A binary file (a zip, a zstd dump, the binary itself) was read
		// as a CSV file whose header was its first line: the error quoted
		// kilobytes of escaped bytes.
		return fmt.Errorf("import: %s holds binary data, not an export of updown (JSON Lines or CSV, gzipped or not, or Parquet); "+
			"archived Polymarket events (zstd, Parquet hours) go to `updown import events`", inName(*in))
	}
	if isMarketChannelFrame(br) {
		return fmt.Errorf("import: %s holds Polymarket market-channel frames (a websocket dump), not an export: import it with `updown import events --format ws-jsonl --markets markets.json %s`", inName(*in), *in)
	}
	st, err := openAdminStore(ctx, *dbURL)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.WriteBooksVersion(*booksVersion); err != nil {
		return fmt.Errorf("--books-version: %w", err)
	}
	began := time.Now()
	if *format == "" && *in != "-" {
		// A file named for its format is read as it, so that a broken one
		// is told of in its own terms (a JSON error at its line), not
		// sniffed as the other format.
		switch name := strings.TrimSuffix(*in, ".gz"); {
		case strings.HasSuffix(name, ".jsonl"), strings.HasSuffix(name, ".ndjson"):
			*format = string(transfer.JSONL)
		case strings.HasSuffix(name, ".csv"):
			*format = string(transfer.CSV)
		}
	}
	stats, err := transfer.Import(ctx, st, br, transfer.ImportOptions{Format: transfer.Format(*format), SnapshotBatch: *batch})
	if err != nil {
		// The file is named as a Parquet import names it, beside the line.
		return fmt.Errorf("import (%s): %s: %w", importedBefore(stats), inName(*in), err)
	}
	return writeJSON(stdout, importSummary(stats, time.Since(began)))
}

// namesFile refuses a command's file flag (--out, --in) given as "" (a
// shell variable unset), which names no file, before anything is done;
// std is what - stands for (stdout, stdin).
func namesFile(fs *flag.FlagSet, flagName, value, std string) error {
	if value == "" {
		return fmt.Errorf(`%s: --%s "" names no file: give a file, or - for %s`, fs.Name(), flagName, std)
	}
	return nil
}

// isMarketChannelFrame reports whether the input begins with a frame of
// Polymarket's market channel, as a raw websocket dump (ws-jsonl) does:
// an object, or an array of them (an initial dump's books), whose first
// field read is not an export's "type" but names an event_type. Only the
// buffered start is looked at.
func isMarketChannelFrame(br *bufio.Reader) bool {
	head, _ := br.Peek(br.Size())
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		head = head[:i]
	}
	head = bytes.TrimLeft(head, " \t\r[")
	if len(head) == 0 || head[0] != '{' {
		return false
	}
	return bytes.Contains(head, []byte(`"event_type"`)) && !bytes.Contains(head, []byte(`"type":`)) && !bytes.Contains(head, []byte(`"type" :`))
}

// inName names --in for a message: stdin for -.
func inName(in string) string {
	if in == "-" {
		return "stdin"
	}
	return in
}

// checkExport refuses a format, kind of record or split export cannot
// write, before anything is opened or created.
func checkExport(format transfer.Format, what transfer.What, split string) error {
	switch format {
	case transfer.JSONL, transfer.CSV, transfer.Parquet:
	default:
		return fmt.Errorf("export: --format %q is not jsonl, csv or parquet", format)
	}
	switch what {
	case "", transfer.All, transfer.Markets, transfer.Snapshots, transfer.Trades, transfer.Gaps:
	default:
		return fmt.Errorf("export: --what %q is not all, markets, snapshots, trades or gaps", what)
	}
	switch transfer.Split(split) {
	case "", transfer.SplitMarket, transfer.SplitDay:
	default:
		return fmt.Errorf("export: --split %q is not market or day", split)
	}
	if (what == "" || what == transfer.All) && split == "" && format != transfer.JSONL {
		return fmt.Errorf("export: a %s file holds one kind of record: give --what markets, snapshots, trades or gaps, or --split market|day", format)
	}
	return nil
}

func transferSummary(s transfer.Stats, took time.Duration) map[string]any {
	return map[string]any{"markets": s.Markets, "snapshots": s.Snapshots, "trades": s.Trades, "gaps": s.Gaps, "seconds": took.Seconds(),
		"snapshots_per_second": float64(s.Snapshots) / max(took.Seconds(), 1e-9)}
}

// importSummary is what an import prints: the records written, those the
// store had already and kept, and the rate of the input's snapshots
// (written or kept: a second import of a file reads as fast as the first).
func importSummary(s transfer.Stats, took time.Duration) map[string]any {
	out := transferSummary(s, took)
	out["kept_markets"], out["kept_snapshots"], out["kept_trades"], out["kept_gaps"] = s.Kept.Markets, s.Kept.Snapshots, s.Kept.Trades, s.Kept.Gaps
	out["snapshots_per_second"] = float64(s.Snapshots+s.Kept.Snapshots) / max(took.Seconds(), 1e-9)
	return out
}

// importedBefore says what an import that failed did before the error.
func importedBefore(s transfer.Stats) string {
	return fmt.Sprintf("before the error: %d markets, %d snapshots, %d trades and %d gaps written; %d, %d, %d and %d the store had already, kept as they were",
		s.Markets, s.Snapshots, s.Trades, s.Gaps, s.Kept.Markets, s.Kept.Snapshots, s.Kept.Trades, s.Kept.Gaps)
}

// formatOf tells the format from a file name.
func formatOf(name string) transfer.Format {
	switch base := strings.TrimSuffix(name, ".gz"); {
	case strings.HasSuffix(base, ".csv"):
		return transfer.CSV
	case strings.HasSuffix(base, ".parquet"):
		return transfer.Parquet
	}
	return transfer.JSONL
}

// exportSplit is `updown export --split`: a directory of files, markets in
// one and snapshots, trades and gaps in one per market or per day (DESIGN
// 13). runExport has checked dir and split (checkExport).
func exportSplit(ctx context.Context, st transfer.Source, dir string, split transfer.Split, opt transfer.ExportOptions, stdout io.Writer) error {
	ext := "." + string(opt.Format)
	completed := 0 // files renamed into place
	create := func(name string) (io.WriteCloser, error) {
		path := filepath.Join(dir, filepath.FromSlash(name)+ext)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
		o, err := createOut(path, nil)
		if err != nil {
			return nil, err
		}
		commit := func() error {
			err := o.commit()
			if err == nil {
				completed++
			}
			return err
		}
		return writeCloser{o, commit, o.abort}, nil
	}
	began := time.Now()
	stats, err := transfer.ExportSplit(ctx, st, create, split, opt)
	if err != nil && completed > 0 {
		// The files of the keys done before it stopped are whole and
		// stay: say so, and that the export is not, where an interrupted
		// export's directory looked like a finished one short of markets.
		return fmt.Errorf("export: %w; the export is unfinished: %s holds the %d files completed before it stopped, "+
			"but not markets%s, which is written last and which an import reads first: run the export again to complete it", err, dir, completed, ext)
	}
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return writeJSON(stdout, transferSummary(stats, time.Since(began)))
}

// writeCloser pairs a writer with the functions that complete it and
// give it up (transfer.Aborter).
type writeCloser struct {
	io.Writer
	close func() error
	abort func()
}

func (w writeCloser) Close() error { return w.close() }

func (w writeCloser) Abort() { w.abort() }

// fileNotTimeHint is the hint for an export's --to or --from given a file
// name (updown export --to "my data.jsonl", as other tools name their
// destination): those flags bound the markets' start times, the file is
// --out. "" for a value that does not look like a file name.
func fileNotTimeHint(flagName, value string) string {
	ext := strings.ToLower(strings.TrimSuffix(value, ".gz"))
	if !strings.ContainsAny(value, `/\`) && !strings.HasSuffix(ext, ".jsonl") && !strings.HasSuffix(ext, ".ndjson") &&
		!strings.HasSuffix(ext, ".csv") && !strings.HasSuffix(ext, ".parquet") && !strings.HasSuffix(ext, ".json") {
		return ""
	}
	return fmt.Sprintf("; %s bounds the markets' start times: to write the export to a file, give it as --out %s", flagName, shellQuote(value))
}

// marketFilter is the market selection of the flags --coin, --market-type,
// --from, --to and --resolved of the command cmd, which its errors name.
// notTime, when not nil, is the command's hint added to the refusal of a
// --from or --to that is not a time (fileNotTimeHint).
func marketFilter(cmd, coin, marketType, from, to, resolved string, notTime func(flagName, value string) string) (store.MarketFilter, error) {
	if notTime == nil {
		notTime = func(string, string) string { return "" }
	}
	var f store.MarketFilter
	if coin != "" {
		f.Coin = store.Coin(strings.ToUpper(coin))
		if !f.Coin.Valid() {
			return f, fmt.Errorf(cmd+": --coin %q is not BTC, ETH or SOL", coin)
		}
	}
	if marketType != "" {
		f.MarketType = store.MarketType(marketType)
		if !f.MarketType.Valid() {
			return f, fmt.Errorf(cmd+": --market-type %q is not 5m, 15m, 1hr, 4hr or 24hr", marketType)
		}
	}
	if from != "" {
		t, err := parseWhen(from)
		if err != nil {
			return f, fmt.Errorf(cmd+": --from: %w%s", err, notTime("--from", from))
		}
		t = ceilMicro(t).Add(-time.Microsecond) // StartAfter is strict; --from is inclusive
		f.StartAfter = &t
	}
	if to != "" {
		t, err := parseWhen(to)
		if err != nil {
			return f, fmt.Errorf(cmd+": --to: %w%s", err, notTime("--to", to))
		}
		t = ceilMicro(t)
		f.StartBefore = &t
	}
	if resolved != "" {
		b, err := strconv.ParseBool(resolved)
		if err != nil {
			return f, fmt.Errorf(cmd+": --resolved %q is not true or false", resolved)
		}
		f.Resolved = &b
	}
	// Filters that can match nothing are refused, as the API refuses
	// them, rather than exported as an empty file.
	if f.Coin != "" && f.MarketType != "" && !f.MarketType.AvailableFor(f.Coin) {
		return f, fmt.Errorf(cmd+": --market-type %s: %s markets exist for BTC only; %s has 5m, 15m and 1hr markets", f.MarketType, f.MarketType, f.Coin)
	}
	if f.StartAfter != nil && f.StartBefore != nil && !f.StartAfter.Before(f.StartBefore.Add(-time.Microsecond)) {
		return f, fmt.Errorf(cmd+": --from %s is not before --to %s: no market starts between them", from, to)
	}
	return f, nil
}

// ceilMicro is t rounded up to the microsecond, the stores' precision,
// which cut a bound down to it: a --from or --to finer than that then
// selects what it says (a market starting a nanosecond before --to is
// before it), as the API's time parameters do.
func ceilMicro(t time.Time) time.Time {
	c := t.Truncate(time.Microsecond)
	if c.Before(t) {
		c = c.Add(time.Microsecond)
	}
	return c
}

// parseWhen reads RFC 3339, a date (midnight UTC) or epoch milliseconds.
//
// Epoch seconds of this century (ten or eleven digits) are refused, as the
// API's time parameters refuse them: read as milliseconds they are days of
// January 1970, so --to exported nothing and --from everything, without a
// word.
func parseWhen(s string) (time.Time, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms >= 1e9 && ms < 1e11 {
			return time.Time{}, fmt.Errorf("%s looks like epoch seconds (%s): times are epoch milliseconds, %s000, RFC 3339 or a date",
				s, time.Unix(ms, 0).UTC().Format(time.RFC3339), s)
		}
		return time.UnixMilli(ms).UTC(), nil
	}
	for _, layout := range []string{time.RFC3339Nano, time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not RFC 3339, a date (2006-01-02) or epoch milliseconds", s)
}

// output is where an export goes: stdout, or a file written under a
// temporary name beside it and renamed over it once complete, so that an
// export that fails (or is interrupted) leaves the file as it was.
//
// A name that is not a regular file (/dev/null, /dev/stdout, a named pipe,
// a shell's <(...) or >(...)) is written to as it is: renaming a file over
// it replaced the device or pipe with a regular file (as root, /dev/null
// itself), or failed creating the temporary file beside it (in /dev). A
// symbolic link to a file is followed: the file it names is replaced, the
// link kept.
type output struct {
	io.Writer
	flush  []func() error // the compression and buffering, innermost first
	tmp    *os.File       // nil for stdout and a name written as it is
	direct *os.File       // a name that is not a regular file, opened for writing
	name   string         // as given, for messages
	dest   string         // the file renamed over: name, its symbolic links followed
}

// createOut opens the export's destination, name or ("-") stdout;
// gzipped when name ends in .gz. Commit or abort it.
func createOut(name string, stdout io.Writer) (*output, error) {
	o := &output{Writer: stdout, name: name, dest: name}
	if fi, err := os.Stat(name); name != "-" && err == nil && !fi.Mode().IsRegular() {
		if fi.IsDir() {
			return nil, fmt.Errorf("export: create %s: it is a directory (--split writes a directory of files)", name)
		}
		f, err := os.OpenFile(name, os.O_WRONLY, 0)
		if err != nil {
			return nil, fmt.Errorf("export: open %s: %w", name, err)
		}
		o.direct, o.Writer = f, f
	} else if name != "-" {
		if target, err := filepath.EvalSymlinks(name); err == nil {
			o.dest = target
		}
		f, err := os.CreateTemp(filepath.Dir(o.dest), "."+filepath.Base(o.dest)+".tmp-*")
		if err != nil {
			return nil, fmt.Errorf("export: create %s: %w", name, err)
		}
		o.tmp, o.Writer = f, f
	}
	bw := bufio.NewWriterSize(o.Writer, 1<<20)
	o.Writer, o.flush = bw, []func() error{bw.Flush}
	if strings.HasSuffix(name, ".gz") {
		zw := gzip.NewWriter(bw)
		o.Writer, o.flush = zw, []func() error{zw.Close, bw.Flush}
	}
	return o, nil
}

// commit completes the output: flushed, and a file renamed into place,
// with the permissions of the file it replaces (0644 for a new one). When
// that fails, the temporary file is removed and the old one left.
func (o *output) commit() error {
	var errs []error
	for _, f := range o.flush {
		errs = append(errs, f())
	}
	if o.direct != nil {
		errs = append(errs, o.direct.Close())
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("write %s: %w", o.name, err)
		}
		return nil
	}
	if o.tmp == nil {
		return errors.Join(errs...)
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(o.dest); err == nil {
		mode = fi.Mode().Perm()
	}
	errs = append(errs, o.tmp.Chmod(mode), o.tmp.Close())
	if err := errors.Join(errs...); err != nil {
		_ = os.Remove(o.tmp.Name())
		return fmt.Errorf("write %s: %w", o.name, err)
	}
	if err := os.Rename(o.tmp.Name(), o.dest); err != nil {
		_ = os.Remove(o.tmp.Name())
		return fmt.Errorf("write %s: %w", o.name, err)
	}
	return nil
}

// abort gives up the output: a file's temporary is removed, leaving what
// was at its name before.
func (o *output) abort() {
	if o.direct != nil {
		_ = o.direct.Close() // what was written to a device or pipe is gone already
	}
	if o.tmp != nil {
		_ = o.tmp.Close()
		_ = os.Remove(o.tmp.Name())
	}
}

// openIn opens the import's source, name or ("-") stdin, ungzipping input
// that starts with the gzip magic bytes. Stdin must be piped or redirected
// and carry something: a terminal, or nothing at all, is a mistake (a
// forgotten --in) that would otherwise import nothing and succeed.
func openIn(name string, stdin *os.File) (io.Reader, func(), error) {
	var r io.Reader = stdin
	closeIn := func() {}
	if name == "-" {
		if fi, err := stdin.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return nil, nil, errors.New("import: stdin is a terminal (or another device), not a piped export: give the file as --in FILE, or pipe it in (updown import < export.jsonl)")
		}
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, nil, fmt.Errorf("import: %w", err)
		}
		r, closeIn = f, func() { _ = f.Close() }
	}
	br := bufio.NewReaderSize(r, 1<<20)
	if _, err := br.Peek(1); name == "-" && err != nil {
		closeIn()
		if errors.Is(err, io.EOF) {
			return nil, nil, errors.New("import: read nothing from stdin: give the export as --in FILE, or pipe it in (updown import < export.jsonl)")
		}
		return nil, nil, fmt.Errorf("import: read stdin: %w", err)
	}
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			closeIn()
			return nil, nil, fmt.Errorf("import: %w", err)
		}
		return zr, closeIn, nil
	}
	return br, closeIn, nil
}
