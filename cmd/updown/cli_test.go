package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/updown/updown/store/postgres/pgtest"
)

// runBinary runs the real binary and returns its exit code and output.
func runBinary(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(updownBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("updown %v: %v", args, err)
	}
	return code, out.String(), errOut.String()
}

// runBinaryOK runs the real binary and returns what it printed on stdout;
// the test fails when it exits non-zero. The tests that move a database
// through export and import run them so: the binary is not built with
// -race, which makes them ten times slower (the code is jobs/transfer's,
// whose own tests run it under the race detector).
func runBinaryOK(t *testing.T, args ...string) []byte {
	t.Helper()
	code, out, errOut := runBinary(t, nil, args...)
	if code != 0 {
		t.Fatalf("updown %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
	}
	return []byte(out)
}

// TestHelpIsSuccess: asking any command for help exits 0 and prints its
// usage; a bad flag or a missing subcommand exits 2.
func TestHelpIsSuccess(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"help"}, {"--help"}, {"-h"},
		{"dev", "--help"}, {"api", "--help"}, {"api", "-h"}, {"worker", "--help"}, {"collect", "--help"},
		{"migrate", "--help"}, {"seed", "-h"}, {"export", "--help"}, {"import", "--help"},
		{"customers", "--help"}, {"customers", "-h"}, {"customers", "help"}, {"customers", "create", "--help"},
		{"customers", "list", "-h"}, {"customers", "set-tier", "--help"},
		{"keys", "--help"}, {"keys", "create", "--help"}, {"keys", "list", "--help"}, {"keys", "revoke", "-h"},
		{"version", "-h"}, {"version", "--help"},
		{"markets", "-h"}, {"markets", "--help"}, {"help", "markets"}, {"markets", "fetch", "-h"}, {"markets", "fill-fees", "-h"},
		{"import", "events", "-h"}, {"import", "list", "--help"},
		// Help of help is the help: it ran itself until the stack overflowed.
		{"help", "help"}, {"help", "-h"}, {"-h", "-h"}, {"--help", "help", "export"},
		// A command's help asked as `updown customers help` is: it was
		// refused as an unexpected argument.
		{"export", "help"}, {"import", "help"}, {"seed", "help"}, {"migrate", "help"}, {"customers", "create", "help"},
		{"keys", "revoke", "help"}, {"drop-snapshots", "help"}, {"markets", "fill-fees", "help"},
		// import events, which takes files, too: it looked for a file named help.
		{"import", "events", "help"},
	} {
		code, stdout, stderr := runBinary(t, nil, args...)
		if code != 0 || !strings.Contains(stdout+stderr, "Usage") && !strings.Contains(stdout+stderr, "-database-url") {
			t.Errorf("updown %s: exit %d, want 0 and usage\n%s%s", strings.Join(args, " "), code, stdout, stderr)
		}
	}
	for _, args := range [][]string{
		{"api", "--bogus"}, {"worker", "--nope=1"}, {"dev", "--port", "1"}, {"customers", "create", "--mail", "a@b.co"},
		{"keys", "list", "--bogus"}, {"customers"}, {"keys"}, {"frobnicate"}, {}, {"version", "extra"},
	} {
		if code, stdout, stderr := runBinary(t, nil, args...); code != 2 {
			t.Errorf("updown %s: exit %d, want 2\n%s%s", strings.Join(args, " "), code, stdout, stderr)
		}
	}
	// The subcommands are named in their command's help.
	for cmd, subs := range map[string][]string{"customers": {"create", "list", "set-tier", "key_id"}, "keys": {"create", "list", "revoke"}} {
		_, stdout, _ := runBinary(t, nil, cmd, "--help")
		for _, s := range subs {
			if !strings.Contains(stdout, s) {
				t.Errorf("updown %s --help does not name %s:\n%s", cmd, s, stdout)
			}
		}
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"version", "--version"} {
		code, stdout, _ := runBinary(t, nil, arg)
		if code != 0 || !regexp.MustCompile(`^updown \S+ \(.*go1\.\d+.*, API \d+\.\d+\.\d+\)\n$`).MatchString(stdout) {
			t.Errorf("updown %s: exit %d, %q", arg, code, stdout)
		}
	}
}

// envLiteral finds where a process reads an environment variable.
var envLiteral = regexp.MustCompile(`(?:os\.Getenv|os\.LookupEnv|envOr|envDuration|envInt64|tierCaps|getenv)\("([A-Z][A-Z0-9_]*)"`)

// TestHelpNamesEveryVariable: `api -h` names every environment variable
// the api reads, and every variable read in the service code is named by
// the -h of the api or the worker.
func TestHelpNamesEveryVariable(t *testing.T) {
	t.Parallel()
	help := map[string]string{}
	for _, cmd := range []string{"api", "worker", "dev", "collect", "export", "import", "migrate"} {
		_, out, errOut := runBinary(t, nil, cmd, "-h")
		help[cmd] = out + errOut
	}
	names := func(cmd string, vars ...string) {
		t.Helper()
		for _, v := range vars {
			if !strings.Contains(help[cmd], v) {
				t.Errorf("updown %s -h does not name %s", cmd, v)
			}
		}
	}
	// What each service reads, beside the rest of its own (the api's
	// tuning is dev's too: dev runs the same api).
	tuning := []string{"JOB_WAIT", "JOBS_IN_FLIGHT", "READS_IN_FLIGHT", "MONITORING_WRITE", "PUBLIC_URL", "BILLING_URL", "BILLING_PRODUCT_TIERS", "LOG_LEVEL", "LOG_FORMAT"}
	names("api", append([]string{"PORT", "DATABASE_URL", "REDIS_URL", "TOKEN_SECRET", "WEBHOOK_SECRET", "MONITORING_ADMIN_TOKEN", "MIGRATE_ON_START"}, tuning...)...)
	names("dev", append([]string{"PORT", "TOKEN_SECRET", "WEBHOOK_SECRET", "AI_PROVIDER", "OPENAI_API_KEY", "OPENAI_TIMEOUT"}, tuning...)...)
	names("worker", "WORKER_ADDR", "SHUTDOWN_TIMEOUT", "REPLAY_CACHE_MIB", "WORKER_MEMORY_MB", "AI_PROVIDER", "OPENAI_API_KEY", "OPENAI_BASE_URL",
		"OPENAI_MODEL", "REDIS_URL", "LOG_LEVEL", "POLYMARKET_GAMMA_URL", "BINANCE_SPOT_URL")
	names("collect", "DATABASE_URL", "REDIS_URL", "COLLECT_SERIES", "COLLECT_EXCHANGE", "COLLECT_INTERVAL", "COLLECT_HEALTH_ADDR", "COLLECT_UNHEALTHY_AFTER",
		"COLLECT_DISCOVERY_INTERVAL", "COLLECT_RESOLVE_DELAY", "COLLECT_QUICK_WINDOWS", "SNAPSHOT_BOOKS_VERSION", "POLYMARKET_WS_URL",
		"POLYMARKET_DATA_URL", "BINANCE_FUTURES_URL", "LOG_LEVEL", "LOG_FORMAT")
	if regexp.MustCompile(`(?m)^\s+-addr\b`).MatchString(help["worker"]) {
		t.Errorf("updown worker -h offers --addr, which a worker does not listen on:\n%s", help["worker"])
	}
	// Every variable any file of the command reads is named by some
	// command's -h.
	all := strings.Join(slices.Collect(maps.Values(help)), "\n")
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range envLiteral.FindAllStringSubmatch(string(src), -1) {
			if !strings.Contains(all, m[1]) {
				t.Errorf("%s reads %s, which no command's -h names", file, m[1])
			}
		}
	}
}

// TestAdminHelpNamesItsVariables: the -h of every administration command
// says what it does and names the variables it reads, as the services' do
// (README: "updown <command> -h lists a command's flags and every variable
// it reads"). They printed Go's bare "Usage of seed:" and their flags,
// without MIGRATE_ON_START, which seed, customers and keys obey, or
// REDIS_URL, through which set-tier, set-limits and revoke tell the apis.
func TestAdminHelpNamesItsVariables(t *testing.T) {
	t.Parallel()
	admin := []string{"DATABASE_URL", "MIGRATE_ON_START"}
	changes := append(admin, "REDIS_URL")
	for cmd, vars := range map[string][]string{
		"migrate": {"DATABASE_URL"}, "seed": admin, "drop-snapshots": admin,
		"customers create": admin, "customers list": admin, "customers set-tier": changes, "customers set-limits": changes,
		"keys create": admin, "keys list": admin, "keys revoke": changes,
	} {
		code, stdout, stderr := runBinary(t, nil, append(strings.Fields(cmd), "-h")...)
		help := stdout + stderr
		if code != 0 || !strings.HasPrefix(help, "Usage: updown "+cmd) {
			t.Errorf("updown %s -h: exit %d, want 0 and a usage line naming the command:\n%s", cmd, code, help)
		}
		env, ok := strings.CutPrefix(help[strings.Index(help, "\nEnvironment")+1:], "Environment")
		if !ok {
			t.Errorf("updown %s -h has no Environment section:\n%s", cmd, help)
			continue
		}
		for _, v := range vars {
			if !strings.Contains(env, v) {
				t.Errorf("updown %s -h does not name %s among its variables:\n%s", cmd, v, help)
			}
		}
	}
}

// TestHelpInFlightDefaultsArePlans: the defaults `api -h` and `dev -h`
// give for JOBS_IN_FLIGHT and READS_IN_FLIGHT are the plan table's caps for
// every plan that has one (DESIGN 4, README), not an example that leaves out
// STARTER, PRO_TRIAL and SUITE as if they had no cap.
func TestHelpInFlightDefaultsArePlans(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env  string
		want string
	}{
		{"JOBS_IN_FLIGHT", "(default PRO=4,PRO_TRIAL=4,ENTERPRISE=16)"},
		{"READS_IN_FLIGHT", "(default STARTER=2,PRO=4,PRO_TRIAL=4,SUITE=4,ENTERPRISE=16)"},
	} {
		i := slices.IndexFunc(apiTuning, func(d envDoc) bool { return d.name == c.env })
		if i < 0 {
			t.Fatalf("apiTuning does not name %s", c.env)
		}
		if got := apiTuning[i].meaning; !strings.Contains(got, c.want) {
			t.Errorf("-h says of %s %q; want the plans' caps %s", c.env, got, c.want)
		}
	}
}

// TestCustomersAndKeys: customers create validates the email and prints
// the key id; keys list shows a customer's keys by id and prefix, revoked
// ones marked, never a key itself.
func TestCustomersAndKeys(t *testing.T) {
	t.Setenv("DATABASE_URL", pgtest.NewDatabase(t))
	for _, bad := range []string{"", "ada", "ada@", "@example.com", "ada@example", "Ada <ada@example.com>", "ada@example.com, bob@example.com", "ada example@x.com"} {
		var stderr bytes.Buffer
		err := run(context.Background(), []string{"customers", "create", "--email", bad, "--tier", "PRO"}, io.Discard, &stderr)
		if err == nil || !strings.Contains(err.Error(), "--email") {
			t.Errorf("customers create --email %q: %v", bad, err)
		}
	}
	if out := runCmd(t, "customers", "list"); strings.TrimSpace(string(out)) != "[]" {
		t.Fatalf("a bad email made a customer: %s", out)
	}
	var created struct {
		CustomerID string `json:"customer_id"`
		KeyID      string `json:"key_id"`
		APIKey     string `json:"api_key"`
	}
	if err := json.Unmarshal(runCmd(t, "customers", "create", "--email", "ada@example.com", "--tier", "PRO"), &created); err != nil {
		t.Fatal(err)
	}
	if created.KeyID == "" || created.CustomerID == "" || !strings.HasPrefix(created.APIKey, "ud_live_") {
		t.Fatalf("customers create: %+v", created)
	}
	var second struct {
		KeyID  string `json:"key_id"`
		APIKey string `json:"api_key"`
	}
	if err := json.Unmarshal(runCmd(t, "keys", "create", "--customer", created.CustomerID), &second); err != nil {
		t.Fatal(err)
	}
	runCmd(t, "keys", "revoke", "--id", created.KeyID)

	out := runCmd(t, "keys", "list", "--email", "ada@example.com")
	var keys []struct {
		KeyID      string  `json:"key_id"`
		CustomerID string  `json:"customer_id"`
		Prefix     string  `json:"prefix"`
		CreatedAt  string  `json:"created_at"`
		RevokedAt  *string `json:"revoked_at"`
	}
	if err := json.Unmarshal(out, &keys); err != nil || len(keys) != 2 {
		t.Fatalf("keys list: %s %v", out, err)
	}
	revoked := map[string]bool{}
	for _, k := range keys {
		if k.CustomerID != created.CustomerID || k.CreatedAt == "" || !strings.HasPrefix(k.Prefix, "ud_live_") {
			t.Errorf("keys list row: %+v", k)
		}
		revoked[k.KeyID] = k.RevokedAt != nil
	}
	if !revoked[created.KeyID] || revoked[second.KeyID] || len(revoked) != 2 {
		t.Errorf("keys list: revoked %v; want %s revoked, %s not", revoked, created.KeyID, second.KeyID)
	}
	for _, key := range []string{created.APIKey, second.APIKey} {
		if bytes.Contains(out, []byte(key)) || bytes.Contains(out, []byte(key[len(key)-16:])) {
			t.Errorf("keys list shows a key: %s", out)
		}
	}
	if err := run(context.Background(), []string{"keys", "list"}, io.Discard, io.Discard); err == nil {
		t.Error("keys list without a customer: no error")
	}
}

// TestAdminRedisDownSaysItOnce: `customers set-tier` with Redis
// unreachable stores the change and says once that the api processes
// could not be told, without the Redis client's own log lines beside it.
func TestAdminRedisDownSaysItOnce(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDatabase(t)
	bin := updownBinary(t)
	// A port held by a listener that hangs up on every connection: Redis
	// is down there, and no other test's server can take the port (a
	// port freed for the test was, once, a running Redis by the time
	// set-tier dialled it).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	dead := "redis://" + ln.Addr().String()
	cmd := exec.Command(bin, "customers", "create", "--email", "ada@example.com")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+db)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("customers create: %v\n%s", err, out)
	}
	var stderr bytes.Buffer
	cmd = exec.Command(bin, "customers", "set-tier", "--email", "ada@example.com", "--tier", "PRO", "--redis-url", dead)
	cmd.Env, cmd.Stderr = append(os.Environ(), "DATABASE_URL="+db), &stderr
	if out, err := cmd.Output(); err != nil || !strings.Contains(string(out), `"PRO"`) {
		t.Fatalf("set-tier with Redis down: %v %s\n%s", err, out, stderr.String())
	}
	if got := stderr.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "could not be told") {
		t.Errorf("set-tier with Redis down said:\n%s\nwant the one warning", got)
	}
}

// TestUnknownCustomerIsNamed: a customer command given a customer the
// database lacks fails naming the id or email looked for and where the
// customers are listed, where it said only "no such customer".
func TestUnknownCustomerIsNamed(t *testing.T) {
	t.Setenv("DATABASE_URL", pgtest.NewDatabase(t))
	for _, args := range [][]string{
		{"keys", "create", "--email", "nobody@example.com"},
		{"keys", "list", "--customer", "6f0c3a52-7d7e-4a43-9a55-2b8f0f1f2c11"},
		{"customers", "set-tier", "--email", "nobody@example.com", "--tier", "PRO"},
		{"customers", "set-limits", "--id", "6f0c3a52-7d7e-4a43-9a55-2b8f0f1f2c11", "--per-day", "5"},
	} {
		err := run(context.Background(), args, io.Discard, io.Discard)
		want := args[len(args)-1]
		if args[1] == "set-tier" || args[1] == "set-limits" {
			want = args[3]
		}
		if err == nil || !strings.Contains(err.Error(), strconv.Quote(want)) || !strings.Contains(err.Error(), "updown customers list") {
			t.Errorf("updown %s: %v; want the customer looked for named, and customers list", strings.Join(args, " "), err)
		}
	}
}
