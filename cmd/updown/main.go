// Command updown runs the updown service and its administration commands.
//
//	updown dev                      api + worker + generated data in one process (make run)
//	updown api | worker | collect   the production processes (Procfile)
//	updown migrate | seed           database set-up
//	updown drop-snapshots           drop old months of snapshots
//	updown export | import          bulk JSONL/CSV out of and into the database
//	updown customers ... | keys ...
//	updown version
//
// Configuration is environment first, flags override; see `updown help`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

const usage = `updown: market history, exchange data and strategy replay for up/down prediction markets.

Usage: updown <command> [flags]

Service:
  dev                    api + worker + generated data in one process, no Postgres or Redis needed
  api                    the HTTP API (needs DATABASE_URL and REDIS_URL)
  worker                 an Asynq worker (needs DATABASE_URL and REDIS_URL)
  collect                record Polymarket and Binance data (needs DATABASE_URL and REDIS_URL;
                         upstreams: POLYMARKET_GAMMA_URL, POLYMARKET_CLOB_URL, BINANCE_SPOT_URL, BINANCE_FUTURES_URL)

Database:
  migrate                apply migrations to DATABASE_URL
  seed                   write generated data into DATABASE_URL
  export                 stream markets and snapshots out of DATABASE_URL as JSONL, CSV or Parquet
  import                 load a JSONL, CSV or Parquet export into DATABASE_URL
  import events FILE...  import archived Polymarket events (ws-jsonl, pmxt-v2) into DATABASE_URL
  import list            the archive imports of DATABASE_URL
  markets fetch          save Gamma's markets of a series (--series btc-5m --from --to --out markets.json)
  markets fill-fees      fill the fee fields stored markets lack from Gamma ([--slug S] [--from --to] [--dry-run])
  drop-snapshots         drop the snapshots of the months before one (--before YYYY-MM [--dry-run])

Customers and keys (DATABASE_URL; 'updown customers --help', 'updown keys --help'):
  customers create --email E [--name N] [--tier T] prints {"customer_id","key_id","api_key"} (tier STARTER unless given)
  customers list
  customers set-tier (--id ID | --email E) (--tier T | --billing)
  customers set-limits (--id ID | --email E) [--per-minute N] [--per-day N] [--ai-generations N]
                       [--sweep-trials N] [--sweep-markets N] [--sweep-replays N]   ENTERPRISE; 0: the plan's default
  keys create (--customer ID | --email E)           prints {"key_id","customer_id","api_key"}
  keys list (--customer ID | --email E)
  keys revoke --id KEY_ID

  version                prints the release, commit and Go version

Environment: PORT (8080), DATABASE_URL, REDIS_URL, LOG_LEVEL (info), LOG_FORMAT (json|text).
Run 'updown <command> -h' for a command's flags and every variable it reads.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp): // help asked for is success
	default:
		fmt.Fprintln(os.Stderr, "updown:", err)
		os.Exit(2)
	}
}

// run dispatches a command line; main's only job is signals and exit codes.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	cmd, rest := args[0], args[1:]
	if !asksForHelp(args) {
		if err := checkEnv(os.Getenv); err != nil {
			return err
		}
	}
	switch cmd {
	case "dev":
		return stopped(ctx, runDev(ctx, rest, stdout, stderr))
	case "api":
		return stopped(ctx, runAPI(ctx, rest, stderr))
	case "worker":
		return stopped(ctx, runWorker(ctx, rest, stderr))
	case "collect":
		return stopped(ctx, runCollect(ctx, rest, stdout, stderr))
	case "export":
		return runExport(ctx, rest, stdout, stderr)
	case "import":
		return runImport(ctx, rest, stdout, stderr)
	case "markets":
		return runMarkets(ctx, rest, stdout, stderr)
	case "migrate":
		return runMigrate(ctx, rest, stdout, stderr)
	case "seed":
		return runSeed(ctx, rest, stdout, stderr)
	case "drop-snapshots":
		return runDropSnapshots(ctx, rest, stdout, stderr)
	case "customers":
		return runCustomers(ctx, rest, stdout, stderr)
	case "keys":
		return runKeys(ctx, rest, stdout, stderr)
	case "version", "--version":
		if len(rest) == 1 && slices.Contains([]string{"-h", "-help", "--help", "help"}, rest[0]) {
			fmt.Fprint(stdout, "Usage: updown version\n\nPrints the release, the commit and the Go version it was built from, and the API version. It takes no flags.\n")
			return nil
		}
		if len(rest) > 0 {
			return fmt.Errorf("version: %s: it takes none", unexpected(rest))
		}
		fmt.Fprintln(stdout, versionString())
		return nil
	case "help", "-h", "-help", "--help":
		// updown help export: that command's help. updown help help (or
		// -h -h) is this one: it ran itself without end and died of a
		// stack overflow, a Go stack trace for an answer.
		if len(rest) > 0 && !isHelp(rest[0]) {
			return run(ctx, append(rest, "-h"), stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
}

// asksForHelp reports whether a command line asks for help or the
// version, which a bad variable must not stand in the way of: -h is where
// a variable's form is explained.
func asksForHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "help", "-h", "-help", "--help", "version", "--version":
			return true
		}
	}
	return false
}

// stopped is a service's error, or none when it is only the signal that
// stopped it, come before the service was up (generating dev's data,
// waiting for the schema): stopping a service is what a signal asks, not
// a failure. Commands that do a job (import, say) fail when interrupted:
// their job is not done.
func stopped(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.Cause(ctx))) {
		return nil
	}
	return err
}

// parseFlags parses a command's flags and refuses anything else: no
// command takes positional arguments, and one ignored (updown import FILE)
// would quietly do something other than what was asked.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if helpArgument(fs, args) {
		return flag.ErrHelp
	}
	sets := recordSets(fs)
	err := fs.Parse(args)
	sets.stop()
	if err != nil {
		return err
	}
	if err := sets.givenOnce(); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		hint := unquotedHint(fs, args, sets.given)
		return &leftoverError{msg: fmt.Sprintf("%s: %s: it takes flags only (see updown %s -h)%s", fs.Name(), unexpected(fs.Args()), fs.Name(), hint),
			split: hint != ""}
	}
	return nil
}

// helpArgument prints fs's usage and reports true when args are only
// "help": `updown export help` asks for help as `updown help export` and
// `updown customers help` do, where it was refused as an argument (and
// import events took it for a file; a file named help is ./help).
func helpArgument(fs *flag.FlagSet, args []string) bool {
	if len(args) == 1 && args[0] == "help" {
		fs.Usage()
		return true
	}
	return false
}

// leftoverError is parseFlags's refusal of arguments left over after the
// flags; split says its hint tells them as the rest of a flag's value the
// shell split at its spaces (unquotedHint).
type leftoverError struct {
	msg   string
	split bool
}

func (e *leftoverError) Error() string { return e.msg }

// withArgumentHint adds a command's hint (how to give what an argument
// would name) to parseFlags's refusal of arguments left over, unless
// they are the rest of a flag's value (which unquotedHint explains).
func withArgumentHint(err error, hint string) error {
	if left := (*leftoverError)(nil); errors.As(err, &left) && !left.split {
		return fmt.Errorf("%w; %s", err, hint)
	}
	return err
}

// unquotedHint is the hint for arguments left over after a flag's value,
// the rest of a value with spaces the shell split (updown export --out
// my data.jsonl: --out "my" and an argument "data.jsonl"): the value
// quoted, whole. given is what the parse of args gave fs's flags, in
// order: its last is the flag the parse stopped after. "" when the
// left-over arguments follow no flag's value (a bool flag's, or --).
func unquotedHint(fs *flag.FlagSet, args []string, given []flagValue) string {
	at := len(args) - fs.NArg() // the first left over
	if at < 1 || args[at-1] == "--" || len(given) == 0 {
		return ""
	}
	last := given[len(given)-1]
	if last.isBool {
		return ""
	}
	whole := strings.Join(append([]string{last.value}, wordsBeforeFlag(fs.Args())...), " ")
	return fmt.Sprintf("; if --%s's value has spaces, quote it whole: --%s %s", last.name, last.name, shellQuote(whole))
}

// wordsBeforeFlag is args up to the first that looks like a flag: the
// words of a name split at its spaces, not the flags given after it.
func wordsBeforeFlag(args []string) []string {
	for i, a := range args {
		if strings.HasPrefix(a, "-") && a != "-" {
			return args[:i]
		}
	}
	return args
}

// shellQuote is s as a POSIX shell reads it back as one word.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// repeatable reports whether a flag is given once for each of several
// values (--slug a --slug b); every other flag is given at most once.
func repeatable(name string) bool {
	return name == "slug" || name == "coin-prices"
}

// flagValue is a value a parse gave a flag: isBool for a bool flag's.
type flagValue struct {
	name, value string
	isBool      bool
}

// flagSets records the values parses give a flag set's flags, in order,
// for what the flag package does not keep: a flag given twice keeps only
// the last value, and the flag a parse stopped after is not told.
type flagSets struct {
	fs    *flag.FlagSet
	given []flagValue
	orig  map[string]flag.Value
	usage func()
}

// recordingValue is a flag's Value while its flag set's parses are
// recorded.
type recordingValue struct {
	flag.Value
	name string
	sets *flagSets
}

func (v *recordingValue) Set(s string) error {
	v.sets.given = append(v.sets.given, flagValue{name: v.name, value: s, isBool: v.IsBoolFlag()})
	return v.Value.Set(s)
}

// IsBoolFlag is the flag's own: the flag package reads a bool flag
// without a value.
func (v *recordingValue) IsBoolFlag() bool {
	b, ok := v.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// recordSets records the values fs's parses give its flags until stop.
// The usage a parse prints (-h, a mistyped flag) stops the recording
// first, for it shows the flags' own types and defaults.
func recordSets(fs *flag.FlagSet) *flagSets {
	r := &flagSets{fs: fs, orig: map[string]flag.Value{}, usage: fs.Usage}
	fs.VisitAll(func(f *flag.Flag) {
		r.orig[f.Name] = f.Value
		f.Value = &recordingValue{Value: f.Value, name: f.Name, sets: r}
	})
	fs.Usage = func() {
		r.stop()
		if fs.Usage != nil {
			fs.Usage()
			return
		}
		fmt.Fprintf(fs.Output(), "Usage of %s:\n", fs.Name()) // the flag package's default
		fs.PrintDefaults()
	}
	return r
}

// stop gives fs its flags' own values and usage back; a second stop does
// nothing more.
func (r *flagSets) stop() {
	r.fs.VisitAll(func(f *flag.Flag) {
		if v, ok := r.orig[f.Name]; ok {
			f.Value = v
		}
	})
	r.fs.Usage = r.usage
}

// givenOnce refuses a flag given twice: the flag package keeps the last
// value, and the first (updown customers create --email a@x.com --email
// b@x.com) was dropped without a word.
func (r *flagSets) givenOnce() error {
	first := map[string]string{}
	for _, g := range r.given {
		if v, twice := first[g.name]; twice && !repeatable(g.name) {
			return fmt.Errorf("%s: --%s is given twice (%q, then %q): give it once", r.fs.Name(), g.name, v, g.value)
		}
		first[g.name] = g.value
	}
	return nil
}

// unexpected names arguments a command does not take.
func unexpected(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = strconv.Quote(a)
	}
	if len(args) == 1 {
		return "unexpected argument " + quoted[0]
	}
	return "unexpected arguments " + strings.Join(quoted, ", ")
}

// newLogger builds the process logger from LOG_LEVEL and LOG_FORMAT, and
// makes it the Redis client's too.
func newLogger(w io.Writer, defaultFormat string) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(envOr("LOG_LEVEL", "info"))); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	var log *slog.Logger
	if strings.EqualFold(envOr("LOG_FORMAT", defaultFormat), "text") {
		log = slog.New(slog.NewTextHandler(w, opts))
	} else {
		log = slog.New(slog.NewJSONHandler(w, opts))
	}
	routeRedisLog(log)
	return log
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
