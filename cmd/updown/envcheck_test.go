package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCheckEnv: a variable set in a form it does not take is refused,
// naming it, rather than silently read as its default; good values and
// unset variables pass.
func TestCheckEnv(t *testing.T) {
	t.Parallel()
	cases := []struct {
		env  map[string]string
		want string // the error's start; "" for none
	}{
		{map[string]string{}, ""},
		{map[string]string{"JOB_WAIT": "90s", "SHUTDOWN_TIMEOUT": "1m", "MIGRATE_ON_START": "1", "LOG_LEVEL": "debug", "LOG_FORMAT": "text",
			"REPLAY_CACHE_MIB": "-1", "COLLECT_QUICK_WINDOWS": "0", "SNAPSHOT_BOOKS_VERSION": "1"}, ""},
		{map[string]string{"JOB_WAIT": "banana"}, `JOB_WAIT="banana"`},
		{map[string]string{"OPENAI_TIMEOUT": "45s"}, ""},
		{map[string]string{"OPENAI_TIMEOUT": "2m"}, `OPENAI_TIMEOUT="2m"`},
		{map[string]string{"OPENAI_TIMEOUT": "500ms"}, `OPENAI_TIMEOUT="500ms"`},
		{map[string]string{"OPENAI_TIMEOUT": "30"}, `OPENAI_TIMEOUT="30"`},
		{map[string]string{"JOB_WAIT": "30"}, `JOB_WAIT="30"`},
		{map[string]string{"JOB_WAIT": "-5s"}, `JOB_WAIT="-5s"`},
		{map[string]string{"SHUTDOWN_TIMEOUT": "abc"}, `SHUTDOWN_TIMEOUT="abc"`},
		{map[string]string{"COLLECT_INTERVAL": "fast"}, `COLLECT_INTERVAL="fast"`},
		{map[string]string{"COLLECT_QUICK_WINDOWS": "-1s"}, `COLLECT_QUICK_WINDOWS="-1s"`},
		{map[string]string{"REPLAY_CACHE_MIB": "lots"}, `REPLAY_CACHE_MIB="lots"`},
		{map[string]string{"MIGRATE_ON_START": "yes"}, `MIGRATE_ON_START="yes"`},
		{map[string]string{"LOG_LEVEL": "verbose"}, `LOG_LEVEL="verbose"`},
		{map[string]string{"LOG_FORMAT": "xml"}, `LOG_FORMAT="xml"`},
		{map[string]string{"LOG_FORMAT": "JSON", "LOG_LEVEL": "WARN"}, ""},
		{map[string]string{"PUBLIC_URL": "https://updown.example.com", "BILLING_URL": "https://pay.example.com/checkout?p=1"}, ""},
		{map[string]string{"PUBLIC_URL": "http://localhost:8080/", "PORT": "5000"}, ""},
		{map[string]string{"PORT": "abc"}, `PORT="abc"`},
		{map[string]string{"PORT": ":8080"}, `PORT=":8080"`},
		{map[string]string{"PORT": "70000"}, `PORT="70000"`},
		{map[string]string{"PUBLIC_URL": "updown.example.com"}, `PUBLIC_URL="updown.example.com"`},
		{map[string]string{"PUBLIC_URL": "https//updown.example.com"}, `PUBLIC_URL="https//updown.example.com"`},
		{map[string]string{"BILLING_URL": "ftp:/x"}, `BILLING_URL="ftp:/x"`},
		{map[string]string{"BILLING_URL": "javascript:alert(1)"}, `BILLING_URL="javascript:alert(1)"`},
		{map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1", "POLYMARKET_GAMMA_URL": "https://gamma-api.polymarket.com",
			"POLYMARKET_CLOB_URL": "https://clob.polymarket.com", "POLYMARKET_DATA_URL": "https://data-api.polymarket.com",
			"BINANCE_SPOT_URL": "https://api.binance.com", "BINANCE_FUTURES_URL": "https://fapi.binance.com"}, ""},
		{map[string]string{"OPENAI_BASE_URL": "api.openai.com/v1"}, `OPENAI_BASE_URL="api.openai.com/v1"`},
		{map[string]string{"POLYMARKET_GAMMA_URL": "gamma-api.polymarket.com"}, `POLYMARKET_GAMMA_URL="gamma-api.polymarket.com"`},
		{map[string]string{"POLYMARKET_CLOB_URL": "clob"}, `POLYMARKET_CLOB_URL="clob"`},
		{map[string]string{"POLYMARKET_DATA_URL": "ftp://data"}, `POLYMARKET_DATA_URL="ftp://data"`},
		{map[string]string{"BINANCE_SPOT_URL": "api.binance.com"}, `BINANCE_SPOT_URL="api.binance.com"`},
		{map[string]string{"BINANCE_FUTURES_URL": "fapi"}, `BINANCE_FUTURES_URL="fapi"`},
	}
	for _, tc := range cases {
		err := checkEnv(func(k string) string { return tc.env[k] })
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.env, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%v: %v, want an error naming %s", tc.env, err, tc.want)
		}
	}
}

// TestCheckEnvHidesPasswords: a URL refused for its form is quoted in the
// error, which goes to the process's log, without the password it holds
// (a proxy's, in OPENAI_BASE_URL), whatever the form was refused for.
func TestCheckEnvHidesPasswords(t *testing.T) {
	t.Parallel()
	const pw = "s3cr3t-Pa55"
	for name, v := range map[string]string{
		"OPENAI_BASE_URL":      "user:" + pw + "@llm.internal:4000/v1",
		"PUBLIC_URL":           "https//admin:" + pw + "@updown.example.com",
		"BILLING_URL":          "ftp://u:" + pw + "@pay.example.com/checkout",
		"POLYMARKET_GAMMA_URL": "https://u:" + pw + "@/events",
		"BINANCE_SPOT_URL":     "https:/u:" + pw + "@api.binance.com",
	} {
		err := checkEnv(func(k string) string {
			if k == name {
				return v
			}
			return ""
		})
		if err == nil || !strings.HasPrefix(err.Error(), name+"=") {
			t.Errorf("%s=%s: %v, want an error naming %s", name, v, err, name)
			continue
		}
		if strings.Contains(err.Error(), pw) {
			t.Errorf("%s: the error quotes the password: %v", name, err)
		}
	}
}

// TestBadVariableLeavesHelp: a bad variable stops a command, but not its
// -h, help or version, where the variable's form is explained.
func TestBadVariableLeavesHelp(t *testing.T) {
	t.Setenv("JOB_WAIT", "30")
	for _, args := range [][]string{{"api", "-h"}, {"help"}, {"help", "api"}, {"version"}} {
		var out, errOut strings.Builder
		if err := run(t.Context(), args, &out, &errOut); err != nil && !errors.Is(err, flag.ErrHelp) {
			t.Errorf("updown %v with JOB_WAIT=30: %v", args, err)
		}
	}
	if err := run(t.Context(), []string{"api"}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "JOB_WAIT") {
		t.Errorf("updown api with JOB_WAIT=30: %v, want the variable named", err)
	}
}

// TestAIConfigTakesOpenAITimeout: OPENAI_TIMEOUT is the generator's bound
// on one call to the model; unset, the strategy package's default.
func TestAIConfigTakesOpenAITimeout(t *testing.T) {
	t.Parallel()
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_MODEL": "m", "OPENAI_TIMEOUT": "45s"}
	cfg := aiConfig("openai", func(k string) string { return env[k] })
	if cfg.Timeout != 45*time.Second || cfg.APIKey != "sk-test" || cfg.Model != "m" || cfg.Provider != "openai" {
		t.Errorf("config %+v, want the timeout 45s and the key, model and provider given", cfg)
	}
	delete(env, "OPENAI_TIMEOUT")
	if cfg := aiConfig("openai", func(k string) string { return env[k] }); cfg.Timeout != 0 {
		t.Errorf("without OPENAI_TIMEOUT the timeout is %v, want 0 (strategy.DefaultTimeout)", cfg.Timeout)
	}
}

// TestBooksVersionRefusedFirst: a books layout this build does not write,
// as --books-version or SNAPSHOT_BOOKS_VERSION, stops collect, import and
// import events at start, naming it, before they connect anywhere (this
// test has no backends): it was told only once the database was open
// (and, for the collector, its schema waited for), so with the database
// down the error named the database instead.
func TestBooksVersionRefusedFirst(t *testing.T) {
	dead := []string{"--database-url", "postgres://127.0.0.1:1/none"}
	in := filepath.Join(t.TempDir(), "export.jsonl")
	if err := os.WriteFile(in, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	commands := map[string][]string{
		"collect":       append([]string{"collect", "--redis-url", "redis://127.0.0.1:1/0", "--health-addr", "off"}, dead...),
		"import":        append([]string{"import", "--in", in}, dead...),
		"import events": append([]string{"import", "events", "--format", "ws-jsonl"}, dead...),
	}
	for name, args := range commands {
		t.Run(name+" flag", func(t *testing.T) {
			args := append(append([]string{}, args...), "--books-version", "3")
			if name == "import events" {
				args = append(args, in)
			}
			err := run(context.Background(), args, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), "--books-version 3") {
				t.Errorf("%s --books-version 3: %v; want an error naming --books-version", name, err)
			}
		})
		t.Run(name+" env", func(t *testing.T) {
			t.Setenv("SNAPSHOT_BOOKS_VERSION", "0")
			args := append([]string{}, args...)
			if name == "import events" {
				args = append(args, in)
			}
			err := run(context.Background(), args, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), "SNAPSHOT_BOOKS_VERSION") {
				t.Errorf("%s with SNAPSHOT_BOOKS_VERSION=0: %v; want an error naming SNAPSHOT_BOOKS_VERSION", name, err)
			}
		})
	}
}

// TestImportRefusesBadBatch: an import --batch of 0 or below is refused,
// naming it, before anything connects, rather than read as the default
// of 5,000.
func TestImportRefusesBadBatch(t *testing.T) {
	t.Parallel()
	in := filepath.Join(t.TempDir(), "export.jsonl")
	if err := os.WriteFile(in, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"0", "-1"} {
		err := run(context.Background(), []string{"import", "--in", in, "--batch", n, "--database-url", "postgres://127.0.0.1:1/none"}, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--batch "+n) {
			t.Errorf("import --batch %s: %v; want an error naming --batch", n, err)
		}
	}
}

// TestImportRefusesBadFormat: an import --format it does not read is
// refused, naming it, before anything connects.
func TestImportRefusesBadFormat(t *testing.T) {
	t.Parallel()
	in := filepath.Join(t.TempDir(), "export.jsonl")
	if err := os.WriteFile(in, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"import", "--in", in, "--format", "json", "--database-url", "postgres://127.0.0.1:1/none"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `--format "json"`) {
		t.Errorf("import --format json: %v; want an error naming --format", err)
	}
}

// TestImportEventsRefusesBadFlags: import events refuses a --book-levels
// of 0 or below and a --progress it has no mode of, naming them, before
// anything connects: 0 was read as the default of 10, a negative count
// kept no levels (snapshots without books), and an unknown progress mode
// was read as auto.
func TestImportEventsRefusesBadFlags(t *testing.T) {
	t.Parallel()
	in := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(in, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, flag := range [][]string{{"--book-levels", "0"}, {"--book-levels", "-3"}, {"--progress", "bars"}} {
		args := append([]string{"import", "events", "--format", "ws-jsonl", "--database-url", "postgres://127.0.0.1:1/none"}, flag...)
		err := run(context.Background(), append(args, in), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), flag[0]) {
			t.Errorf("import events %s %s: %v; want an error naming %s", flag[0], flag[1], err, flag[0])
		}
	}
}
