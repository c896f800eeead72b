package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/updown/updown/api"
	"github.com/updown/updown/jobs/collect"
)

// envDoc is one environment variable a command reads, for its -h.
type envDoc struct{ name, meaning string }

// Environment variables of the service processes, as their -h prints
// them. A variable a process reads belongs here (TestHelpNamesEveryVariable).
var (
	logEnv = []envDoc{
		{"LOG_LEVEL", "debug, info (default), warn or error"},
		{"LOG_FORMAT", "json (default) or text"},
	}
	apiEnv = append([]envDoc{
		{"PORT", "listen port (default 8080); --addr overrides"},
		{"DATABASE_URL", "Postgres URL (required); --database-url overrides"},
		{"REDIS_URL", "Redis URL, e.g. redis://127.0.0.1:6379/0, or a Sentinel group,\n" +
			"                           redis+sentinel://[:password@]host:port,host:port/master-name/db (required); --redis-url overrides"},
		{"TOKEN_SECRET", "signs the agent's bearer tokens (required, at least 32 bytes; never the dev one)"},
		{"WEBHOOK_SECRET", "the billing provider's whsec_... webhook signing secret (required; never the dev one)"},
		{"MONITORING_ADMIN_TOKEN", "turns /monitoring on, behind HTTP Basic auth: any user name, this token (at least 16 characters) as password (off when unset)"},
		{"MIGRATE_ON_START", "apply migrations at start: true (default) or false; --migrate overrides"},
	}, append(apiTuning, logEnv...)...)
	// apiTuning is what the api reads beside its backends and secrets,
	// in production and in dev alike.
	apiTuning = []envDoc{
		{"JOB_WAIT", "how long a request waits for its replay or backtest before 504 JOB_TIMEOUT (default 60s)"},
		{"JOBS_IN_FLIGHT", "per-plan caps on a customer's jobs running at once, TIER=N pairs that replace the plan's (default PRO=4,PRO_TRIAL=4,ENTERPRISE=16)"},
		{"READS_IN_FLIGHT", "per-plan caps on a customer's heavy reads at once, TIER=N pairs that replace the plan's (default STARTER=2,PRO=4,PRO_TRIAL=4,SUITE=4,ENTERPRISE=16)"},
		{"MONITORING_WRITE", "true lets /monitoring change the queues (pause, delete, run, archive); default false: it only shows"},
		{"PUBLIC_URL", "the address users reach the service at; https://... makes the dashboard's session cookie Secure"},
		{"BILLING_URL", "the checkout link GET /v1/account/billing and the dashboard offer (none when empty)"},
		{"BILLING_PRODUCT_TIERS", "billing product ids to tiers, PRODUCT=TIER pairs (e.g. pdt_abc=PRO,pdt_def=ENTERPRISE): a subscription.active's tier is then its\n" +
			"                           data.product_id's, its data.metadata.tier ignored, and an unmapped product is unknown_tier (unset: data.metadata.tier)"},
	}
	devEnv = append([]envDoc{
		{"PORT", "listen port on 127.0.0.1 (default 8080); --addr overrides"},
		{"TOKEN_SECRET", "signs bearer tokens instead of the built-in dev secret"},
		{"WEBHOOK_SECRET", "verifies billing webhooks instead of the built-in dev secret"},
		{"AI_PROVIDER", "builtin (default) or openai, with OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL, OPENAI_TIMEOUT (see updown worker -h)"},
		{"DATABASE_URL", "ignored: dev never touches a database unless given --database"},
		{"LOG_LEVEL", "debug, info (default), warn or error"},
		{"LOG_FORMAT", "text (default in dev) or json"},
	}, apiTuning...)
	workerEnv = append([]envDoc{
		{"DATABASE_URL", "Postgres URL (required); --database-url overrides"},
		{"REDIS_URL", "Redis URL (required); --redis-url overrides"},
		{"WORKER_ADDR", "address of /healthz, /readyz and /metrics, or \"off\"; --ops-addr overrides"},
		{"PORT", "without WORKER_ADDR, the ops address is :$PORT (a Procfile runner gives each process its own), else :9090;\n" +
			"                           a default address another worker holds is skipped with a warning"},
		{"SHUTDOWN_TIMEOUT", "on SIGTERM, how long running tasks may finish (default 25s); --shutdown-timeout overrides"},
		{"REPLAY_CACHE_MIB", "memory for the tapes of resolved markets kept for the next replay, in MiB (0: off); --cache-mib overrides"},
		{"WORKER_MEMORY_MB", "MiB of market data the replays running at once may hold (default 256, also when 0); a larger replay waits its turn"},
		{"AI_PROVIDER", "openai or builtin (default: openai when OPENAI_API_KEY or OPENAI_BASE_URL is set, else builtin)"},
		{"OPENAI_API_KEY", "key of the OpenAI-compatible endpoint that turns prompts into strategies"},
		{"OPENAI_BASE_URL", "base URL of that endpoint (default OpenAI's)"},
		{"OPENAI_MODEL", "model name at that endpoint"},
		{"OPENAI_TIMEOUT", "how long one call to the model may take, 1s to 55s (default 20s; a slow reasoning model needs more)"},
		{collect.EnvGammaURL + ", " + collect.EnvCLOBURL, "Polymarket base URLs, read to resolve markets (see updown collect -h)"},
		{collect.EnvBinanceSpotURL, "Binance spot base URL, read to resolve markets by their closing price"},
	}, logEnv...)
	collectEnv = append([]envDoc{
		{"DATABASE_URL", "Postgres URL (required); --database-url overrides"},
		{"REDIS_URL", "Redis URL (required); --redis-url overrides"},
		{"COLLECT_SERIES", "series to record (default all); --series overrides"},
		{"COLLECT_EXCHANGE", "coins whose Binance depth and trades to keep: all (default), none, or e.g. btc,eth; one collector per address should keep them; --exchange overrides"},
		{"COLLECT_INTERVAL", "snapshot cadence (default 300ms; at most 3s, over which a stretch without a snapshot is a gap); --interval overrides"},
		{"COLLECT_HEALTH_ADDR", "address of /healthz, /readyz and /metrics, or \"off\"; without it :$PORT, else :9091; --health-addr overrides"},
		{"COLLECT_UNHEALTHY_AFTER, COLLECT_DISCOVERY_INTERVAL, COLLECT_RESOLVE_DELAY, COLLECT_QUICK_WINDOWS", "as the flags of the same names"},
		{"SNAPSHOT_BOOKS_VERSION", "the stored layout of books (default 2; 1 for workers older than it); --books-version overrides"},
		{collect.EnvGammaURL + ", " + collect.EnvCLOBURL + ", " + collect.EnvBinanceSpotURL + ", " + collect.EnvBinanceFuturesURL,
			"upstream base URLs (default the real ones); the flags override"},
		{collect.EnvPolymarketWSURL + ", " + collect.EnvPolymarketDataURL, "the websocket and the Data API; set empty, each is off"},
	}, logEnv...)
)

// commandUsage is a command's -h: what it does, its flags and the
// environment variables it reads.
func commandUsage(fs *flag.FlagSet, synopsis string, env []envDoc) func() {
	return func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
		if len(env) == 0 {
			return
		}
		fmt.Fprintln(w, "\nEnvironment (flags override):")
		for _, e := range env {
			fmt.Fprintf(w, "  %-24s %s\n", e.name, e.meaning)
		}
	}
}

const customersUsage = `Usage: updown customers <subcommand> [flags]    (on DATABASE_URL, or --database-url)

  create --email E [--name N] [--tier T]    a customer and its first API key; prints
                                            {"customer_id","key_id","api_key"}: the key is shown once
  list                                      every customer, as JSON
  set-tier (--id ID | --email E) --tier T   change a customer's plan (a plan without sweeps cancels its running ones);
                                            billing events of the subscriptions the customer had before do not
                                            undo it, a new subscription's activation does
  set-tier (--id ID | --email E) --billing  undo setting the plan by hand: back to the plan the customer's
                                            billing events leave (STARTER without a subscription)
  set-limits (--id ID | --email E) [--per-minute N] [--per-day N] [--ai-generations N]
             [--sweep-trials N] [--sweep-markets N] [--sweep-replays N]
                                            an ENTERPRISE customer's own limits: rate limits, monthly
                                            AI generations, sweep sizes (0: the plan's default; a limit
                                            not given keeps its value; running sweeps over new sizes stop)

Plans: STARTER (default), PRO, PRO_TRIAL, SUITE, ENTERPRISE.
Run 'updown customers <subcommand> -h' for its flags.
`

const keysUsage = `Usage: updown keys <subcommand> [flags]    (on DATABASE_URL, or --database-url)

  create (--customer ID | --email E)   a new API key for a customer; prints {"key_id","customer_id","api_key"}:
                                       the key is shown once and stored hashed
  list (--customer ID | --email E)     the customer's keys: id, prefix, created_at, revoked_at (never the keys)
  revoke --id KEY_ID                   the key stops working at once

Run 'updown keys <subcommand> -h' for its flags.
`

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	switch arg {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}

// subcommandHelp answers a command of subcommands (customers, keys) given
// none, or asked for help: help goes to stdout and is success; no
// subcommand is a usage error.
func subcommandHelp(cmd string, args []string, usage string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return errors.New(cmd + ": give a subcommand")
}

// version is the release this binary is, set when it is built:
// go build -ldflags "-X main.version=v1.2.3" (make build does).
var version string

// versionString is `updown version`: the release, the commit it was built
// from (from the Go build info), the Go version and the API version.
func versionString() string {
	v := version
	info, ok := debug.ReadBuildInfo()
	if v == "" && ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	if v == "" {
		v = "devel"
	}
	var details []string
	if ok {
		settings := map[string]string{}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		if rev := settings["vcs.revision"]; rev != "" {
			c := "commit " + rev[:min(12, len(rev))]
			if settings["vcs.modified"] == "true" {
				c += " (modified)"
			}
			if t := settings["vcs.time"]; t != "" {
				c += " of " + t
			}
			details = append(details, c)
		}
	}
	details = append(details, runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH, "API "+api.Version)
	return fmt.Sprintf("updown %s (%s)", v, strings.Join(details, ", "))
}
