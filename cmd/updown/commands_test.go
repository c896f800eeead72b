package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/updown/updown/store/postgres/pgtest"
)

// everyCommand is every command line that reaches a command's own flags:
// each command, and each subcommand of customers and keys.
var everyCommand = [][]string{
	{"dev"}, {"api"}, {"worker"}, {"collect"}, {"migrate"}, {"seed"}, {"export"}, {"import"},
	{"customers", "create"}, {"customers", "list"}, {"customers", "set-tier"}, {"customers", "set-limits"},
	{"keys", "create"}, {"keys", "list"}, {"keys", "revoke"},
	{"import", "list"}, {"markets", "fetch"}, {"markets", "fill-fees"}, {"drop-snapshots"},
}

// usageCommand finds a command or subcommand in `updown help`.
var usageCommand = regexp.MustCompile(`(?m)^  ([a-z-]+)(?: ([a-z-]+))?(?: |$)`)

// TestEveryCommandIsListed keeps everyCommand complete: every command and
// subcommand `updown help` names is in it (version and help take no flags).
func TestEveryCommandIsListed(t *testing.T) {
	t.Parallel()
	listed := map[string]bool{"version": true}
	for _, c := range everyCommand {
		listed[strings.Join(c, " ")] = true
		listed[c[0]] = true
	}
	for _, m := range usageCommand.FindAllStringSubmatch(usage, -1) {
		name := m[1]
		if m[1] == "customers" || m[1] == "keys" {
			name += " " + m[2]
		}
		if !listed[name] {
			t.Errorf("updown help names %q, which everyCommand does not list", name)
		}
	}
}

// TestHelpRedactsPasswords: the -h of every command, whose flags default
// to DATABASE_URL, REDIS_URL and the upstream URLs of the environment,
// shows those defaults without their passwords, whatever form the URL
// takes.
func TestHelpRedactsPasswords(t *testing.T) {
	t.Parallel()
	for _, env := range [][]string{
		{"DATABASE_URL=postgres://updown:Pg-Secret-1@db.internal:5432/updown", "REDIS_URL=redis://default:Redis-Secret-2@cache:6379/0",
			"POLYMARKET_GAMMA_URL=https://proxy:Gamma-Secret-3@gamma.internal", "BINANCE_SPOT_URL=https://u:Spot-Secret-4@spot.internal"},
		{"DATABASE_URL=postgres://updown@db.internal/updown?sslmode=require&password=Pg-Secret-1", "REDIS_URL=rediss://:Redis-Secret-2@cache:6380"},
		{"DATABASE_URL=host=db.internal user=updown password=Pg-Secret-1 dbname=updown", "REDIS_URL=redis://:Redis-Secret-2@cache"},
		{"DATABASE_URL=host=db.internal password='Pg Secret-1' dbname=updown"},
	} {
		for _, args := range everyCommand {
			args := append(append([]string{}, args...), "-h")
			code, stdout, stderr := runBinary(t, env, args...)
			out := stdout + stderr
			if code != 0 || !strings.Contains(out, "-database-url") && args[0] != "dev" && args[0] != "markets" {
				t.Errorf("updown %s: exit %d, want 0 and its flags\n%s", strings.Join(args, " "), code, out)
			}
			if strings.Contains(out, "Secret-") {
				t.Errorf("updown %s with %q prints a password:\n%s", strings.Join(args, " "), env, out)
			}
		}
	}
}

// TestCommandsRefuseArguments: every command refuses positional
// arguments, alone or after its flags, with a message naming them and a
// non-zero exit, before it touches anything (no database or Redis here);
// import's message says how to give it a file.
func TestCommandsRefuseArguments(t *testing.T) {
	t.Parallel()
	env := []string{"DATABASE_URL=postgres://nobody@127.0.0.1:1/none?connect_timeout=1", "REDIS_URL=redis://127.0.0.1:1/0"}
	lines := append(append([][]string{}, everyCommand...), []string{"version"})
	for _, cmd := range lines {
		for _, extra := range [][]string{{"stray.jsonl"}, {"--", "stray.jsonl", "more"}} {
			args := append(append([]string{}, cmd...), extra...)
			code, stdout, stderr := runBinary(t, env, args...)
			if code == 0 || !strings.Contains(stderr, `unexpected argument`) || !strings.Contains(stderr, `"stray.jsonl"`) {
				t.Errorf("updown %s: exit %d, want non-zero and the argument named\n%s%s", strings.Join(args, " "), code, stdout, stderr)
			}
		}
	}
	if _, _, stderr := runBinary(t, env, "import", "notes.jsonl"); !strings.Contains(stderr, "--in notes.jsonl") {
		t.Errorf("updown import notes.jsonl does not suggest --in:\n%s", stderr)
	}
	// `updown help CMD` is CMD's help.
	for _, cmd := range everyCommand {
		args := append([]string{"help"}, cmd...)
		if code, stdout, stderr := runBinary(t, nil, args...); code != 0 || !strings.Contains(stdout+stderr, "Usage") && !strings.Contains(stdout+stderr, "-database-url") {
			t.Errorf("updown %s: exit %d, want 0 and its usage\n%s%s", strings.Join(args, " "), code, stdout, stderr)
		}
	}
}

// TestCommandsRefuseFlagsGivenTwice: a flag given twice is refused, naming
// both values, before the command touches anything (no database here),
// where the flag package kept the last and dropped the first without a
// word: customers create --email a --email b made b's customer. Flags
// given once for each of several values (--slug, --coin-prices) repeat.
func TestCommandsRefuseFlagsGivenTwice(t *testing.T) {
	t.Parallel()
	env := []string{"DATABASE_URL=postgres://nobody@127.0.0.1:1/none?connect_timeout=1", "REDIS_URL=redis://127.0.0.1:1/0"}
	twice := map[string][]string{
		// Each command fails without a database or a network, given
		// twice or not: the last value (what the flag package kept) is
		// one it cannot use.
		"dev":           {"--addr", "127.0.0.1:0", "-addr=bogus"},
		"markets fetch": {"--series", "btc-5m", "--series", "nope"},
		"import events": {"x.jsonl", "--format", "ws-jsonl", "y.jsonl", "--format=pmxt-v2"},
		"export":        {"--books", "--books=false"},
	}
	lines := append(append([][]string{}, everyCommand...), []string{"import", "events"})
	for _, cmd := range lines {
		name := strings.Join(cmd, " ")
		flags, ok := twice[name]
		if !ok {
			flags = []string{"--database-url", "postgres://a@127.0.0.1:1/a", "--database-url=postgres://b@127.0.0.1:1/b"}
		}
		args := append(append([]string{}, cmd...), flags...)
		code, stdout, stderr := runBinary(t, env, args...)
		if code == 0 || !strings.Contains(stderr, "is given twice") {
			t.Errorf("updown %s: exit %d, want non-zero and the flag given twice named\n%s%s", strings.Join(args, " "), code, stdout, stderr)
		}
	}
	if _, _, stderr := runBinary(t, env, "customers", "create", "--email", "a@example.com", "--email", "b@example.com"); !strings.Contains(stderr, `--email is given twice ("a@example.com", then "b@example.com")`) {
		t.Errorf("customers create --email twice:\n%s", stderr)
	}
	for _, args := range [][]string{
		{"markets", "fill-fees", "--slug", "a", "--slug", "b", "--dry-run"},
		{"import", "events", "--coin-prices", "BTC=nonexistent-a.csv", "--coin-prices", "ETH=nonexistent-b.csv", "x.jsonl"},
	} {
		if code, _, stderr := runBinary(t, env, args...); code == 0 || strings.Contains(stderr, "twice") {
			t.Errorf("updown %s: a repeatable flag was refused as given twice (or the command succeeded without a database)\n%s", strings.Join(args, " "), stderr)
		}
	}
}

// TestCustomerCommandsRefuseIDAndEmail: a customer command given both its
// customer id and an email refuses them, before it touches anything,
// where the email was ignored: keys create --customer A --email B gave
// A the key meant for B. Given neither, it names its own id flag.
func TestCustomerCommandsRefuseIDAndEmail(t *testing.T) {
	t.Parallel()
	env := []string{"DATABASE_URL=postgres://nobody@127.0.0.1:1/none?connect_timeout=1", "REDIS_URL=redis://127.0.0.1:1/0"}
	for _, c := range []struct {
		cmd    []string
		idFlag string
		more   []string
	}{
		{[]string{"keys", "create"}, "customer", nil},
		{[]string{"keys", "list"}, "customer", nil},
		{[]string{"customers", "set-tier"}, "id", []string{"--tier", "PRO"}},
		{[]string{"customers", "set-limits"}, "id", []string{"--per-minute", "5"}},
	} {
		args := append(append(append([]string{}, c.cmd...), c.more...), "--"+c.idFlag, "6f0c3a52-7d7e-4a43-9a55-2b8f0f1f2c11", "--email", "b@example.com")
		code, stdout, stderr := runBinary(t, env, args...)
		if code == 0 || !strings.Contains(stderr, "--"+c.idFlag+" or --email, not both") {
			t.Errorf("updown %s: exit %d, want non-zero and both refused\n%s%s", strings.Join(args, " "), code, stdout, stderr)
		}
		args = append(append([]string{}, c.cmd...), c.more...)
		if code, _, stderr := runBinary(t, env, args...); code == 0 || !strings.Contains(stderr, "give --"+c.idFlag+" or --email") {
			t.Errorf("updown %s: exit %d, want the customer asked for by --%s or --email\n%s", strings.Join(args, " "), code, c.idFlag, stderr)
		}
	}
}

// TestFillFeesRefusesEmptySlug: markets fill-fees --slug "" (a shell
// variable unset) names no market, and is refused before the database,
// where it went on to every stored market (with --overwrite, writing
// Gamma's fees over all of them).
func TestFillFeesRefusesEmptySlug(t *testing.T) {
	t.Parallel()
	env := []string{"DATABASE_URL=postgres://nobody@127.0.0.1:1/none?connect_timeout=1"}
	for _, slug := range []string{"", " ", ",", " , "} {
		args := []string{"markets", "fill-fees", "--slug", slug, "--overwrite"}
		if code, stdout, stderr := runBinary(t, env, args...); code == 0 || !strings.Contains(stderr, "names no market") {
			t.Errorf("updown markets fill-fees --slug %q: exit %d, want it refused as naming no market\n%s%s", slug, code, stdout, stderr)
		}
	}
}

// TestFillFeesArgumentsSayToUseSlug: markets fill-fees given slugs as
// arguments says to give them as --slug, as import says to give a file
// as --in: the hint was written but never reached, the refusal of every
// command's arguments coming first.
func TestFillFeesArgumentsSayToUseSlug(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"btc-updown-5m-1778584200":                  "; to name markets, give them as --slug btc-updown-5m-1778584200",
		"a b --dry-run":                             "; to name markets, give them as --slug a,b",
		"--coin BTC stray":                          "quote it whole: --coin 'BTC stray'",
		"--dry-run btc-updown-5m-1778584200 --coin": "; to name markets, give them as --slug btc-updown-5m-1778584200",
	} {
		err := run(context.Background(), append([]string{"markets", "fill-fees"}, strings.Fields(args)...), io.Discard, io.Discard)
		if err == nil || !strings.HasSuffix(err.Error(), want) || strings.Count(err.Error(), ";") != 1 {
			t.Errorf("updown markets fill-fees %s: %v; want it to end %q", args, err, want)
		}
	}
}

// TestTransferRefusesEmptyFileName: export --out "" and import --in ""
// (a shell variable unset) are refused before the database, naming the
// flag, where export ran the whole export and then failed renaming its
// temporary file to "", and import said `open : no such file`.
func TestTransferRefusesEmptyFileName(t *testing.T) {
	t.Parallel()
	env := []string{"DATABASE_URL=postgres://nobody@127.0.0.1:1/none?connect_timeout=1"}
	for _, args := range [][]string{{"export", "--what", "markets", "--out", ""}, {"import", "--in", ""}} {
		flag := args[len(args)-2]
		if code, stdout, stderr := runBinary(t, env, args...); code == 0 || !strings.Contains(stderr, flag+` "" names no file`) {
			t.Errorf("updown %q: exit %d, want %s \"\" refused\n%s%s", args, code, flag, stdout, stderr)
		}
	}
	// With --split, --out names a directory: "" (and stdout) too are
	// refused before the database, where the database's error came first.
	for _, out := range []string{"", "-"} {
		args := []string{"export", "--split", "day", "--out", out}
		if code, stdout, stderr := runBinary(t, env, args...); code == 0 || !strings.Contains(stderr, "--split writes a directory of files: give it as --out") {
			t.Errorf("updown %q: exit %d, want --out refused as no directory\n%s%s", args, code, stdout, stderr)
		}
	}
	// A --split that is no split is told first: --out comes after.
	args := []string{"export", "--split", "weekly"}
	if code, stdout, stderr := runBinary(t, env, args...); code == 0 || !strings.Contains(stderr, `--split "weekly" is not market or day`) {
		t.Errorf("updown %q: exit %d, want the --split value refused first\n%s%s", args, code, stdout, stderr)
	}
}

// TestMarketsFetchChecksOutFirst: markets fetch refuses --out "" and an
// --out whose directory is missing before it asks Gamma anything (here
// an address nothing answers at), where it failed only once every
// window was fetched, losing them.
func TestMarketsFetchChecksOutFirst(t *testing.T) {
	t.Parallel()
	for out, want := range map[string]string{
		"": `--out "" names no file`,
		filepath.Join(t.TempDir(), "no", "m.json"): "does not exist: create it first",
	} {
		args := []string{"markets", "fetch", "--series", "btc-5m", "--from", "2026-05-12", "--to", "2026-05-13", "--gamma-url", "http://127.0.0.1:1", "--out", out}
		if code, stdout, stderr := runBinary(t, nil, args...); code == 0 || !strings.Contains(stderr, want) || strings.Contains(stderr, "Gamma") {
			t.Errorf("updown markets fetch --out %q: exit %d, want %q before Gamma is asked\n%s%s", out, code, want, stdout, stderr)
		}
	}
}

// TestMarketsFetchRefusesHugeRanges: a range of more windows than
// --max-windows (10,000 unless raised) is refused before Gamma is asked,
// saying how many requests it would make: 2020 to 2026 of btc-5m asked
// Gamma some 727,000 times without a word, holding everything in memory.
func TestMarketsFetchRefusesHugeRanges(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "m.json")
	base := []string{"markets", "fetch", "--series", "btc-5m", "--from", "2020-01-01", "--to", "2026-11-30", "--gamma-url", "http://127.0.0.1:1", "--out", out}
	code, stdout, stderr := runBinary(t, nil, base...)
	if code == 0 || !strings.Contains(stderr, "is 727200 windows, at least one Gamma request each") || !strings.Contains(stderr, "--max-windows 10000") ||
		strings.Contains(stderr, "/events") {
		t.Errorf("updown %q: exit %d, want a refusal counting the windows before Gamma is asked\n%s%s", base, code, stdout, stderr)
	}
	// A day is 288 windows: more than a cap of 100 windows, refused.
	day := []string{"markets", "fetch", "--series", "btc-5m", "--from", "2026-05-12", "--to", "2026-05-13", "--gamma-url", "http://127.0.0.1:1", "--out", out}
	if code, stdout, stderr := runBinary(t, nil, append(day, "--max-windows", "100")...); code == 0 || !strings.Contains(stderr, "is 288 windows") {
		t.Errorf("288 windows with --max-windows set to 100: exit %d, want the 288 windows refused\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runBinary(t, nil, append(base, "--max-windows", "0")...); code == 0 || !strings.Contains(stderr, "--max-windows 0") {
		t.Errorf("--max-windows 0: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestMarketsFetchKeepsWhatItFetched: when Gamma fails part way, the
// markets of the windows before the failure are written to --out and the
// error says where to go on from (they were all lost).
func TestMarketsFetchKeepsWhatItFetched(t *testing.T) {
	t.Parallel()
	var asked atomic.Int32
	gamma := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if asked.Add(1) > 2 {
			http.Error(w, "no", http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, `[{"slug":%q}]`, r.URL.Query().Get("slug"))
	}))
	defer gamma.Close()
	out := filepath.Join(t.TempDir(), "m.json")
	err := run(context.Background(), []string{"markets", "fetch", "--series", "btc-5m", "--from", "2026-05-12T00:00:00Z", "--to", "2026-05-12T01:00:00Z",
		"--gamma-url", gamma.URL, "--out", out}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "the 2 markets of the 2 windows before 2026-05-12T00:10:00Z are written to "+out) ||
		!strings.Contains(err.Error(), "--from 2026-05-12T00:10:00Z") {
		t.Fatalf("markets fetch with Gamma failing at the third window: %v", err)
	}
	var events []map[string]any
	if b, rErr := os.ReadFile(out); rErr != nil || json.Unmarshal(b, &events) != nil || len(events) != 2 {
		t.Fatalf("%s: %d events (%v), want the 2 fetched", out, len(events), rErr)
	}
}

// TestCustomerCommandsNameTheCustomerNotFound: each command naming a
// customer the store does not have says which, by the flag it was named
// by, and where to find the right one.
func TestCustomerCommandsNameTheCustomerNotFound(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	const id = "6f0c3a52-7d7e-4a43-9a55-2b8f0f1f2c11"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"keys", "create", "--customer", id}, `no customer with id "` + id + `"`},
		{[]string{"keys", "list", "--email", "nobody@example.com"}, `no customer with email "nobody@example.com"`},
		{[]string{"customers", "set-tier", "--email", "nobody@example.com", "--tier", "PRO"}, `no customer with email "nobody@example.com"`},
		{[]string{"customers", "set-limits", "--id", id, "--per-minute", "5"}, `no customer with id "` + id + `"`},
	} {
		err := run(context.Background(), append(c.args, "--database-url", dbURL), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "updown customers list") {
			t.Errorf("updown %s: %v; want %s, and where to look", strings.Join(c.args, " "), err, c.want)
		}
	}
}
