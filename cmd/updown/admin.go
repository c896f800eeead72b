package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/api"
	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres"
)

// adminEnv is what an administration command reads from the environment.
var adminEnv = []envDoc{
	{"DATABASE_URL", "Postgres URL (required); --database-url overrides"},
	{"MIGRATE_ON_START", "false leaves migrating to updown migrate: a schema older than this build's is refused, not migrated (default true)"},
}

// adminRedisEnv is what the commands that change a customer read beside
// adminEnv: the Redis the api processes share, to tell them at once.
var adminRedisEnv = append(append([]envDoc{}, adminEnv...), envDoc{"REDIS_URL",
	"Redis URL of the api processes, told of the change at once (without it they see it within 5 s); --redis-url overrides"})

// adminUsage is the -h of the administration subcommands (customers and
// keys): what each does, its flags and the variables it reads.
var adminUsage = map[string]struct {
	synopsis string
	env      []envDoc
}{
	"customers create": {"updown customers create --email E [--name N] [--tier T]\n\n" +
		"Creates a customer and its first API key; prints {\"customer_id\",\"key_id\",\"api_key\"}: the key is shown once and stored hashed.", adminEnv},
	"customers list": {"updown customers list\n\nEvery customer, as JSON; tier_set_by_hand: the plan was set by set-tier --tier (set-tier --billing hands it back).", adminEnv},
	"customers set-tier": {"updown customers set-tier (--id ID | --email E) (--tier T | --billing)\n\n" +
		"Changes a customer's plan, starting its rate limits afresh; running sweeps the new plan could not have started are cancelled.\n" +
		"Billing events of the subscriptions the customer had before leave the plan set by hand; a new subscription's change it.\n" +
		"--billing undoes setting the plan by hand: the customer goes back to the plan its billing events leave it on\n" +
		"(those received since included; STARTER when it never had a subscription), and every event applies again as if\n" +
		"the plan had never been set by hand.", adminRedisEnv},
	"customers set-limits": {"updown customers set-limits (--id ID | --email E) [--per-minute N] [--per-day N] [--ai-generations N]\n" +
		"                                [--sweep-trials N] [--sweep-markets N] [--sweep-replays N]\n\n" +
		"Sets an ENTERPRISE customer's own limits (0: the plan's default; a limit not given keeps its value);\n" +
		"running sweeps over new sweep sizes are cancelled.", adminRedisEnv},
	"keys create": {"updown keys create (--customer ID | --email E)\n\n" +
		"A new API key for a customer; prints {\"key_id\",\"customer_id\",\"api_key\"}: the key is shown once and stored hashed.", adminEnv},
	"keys list":   {"updown keys list (--customer ID | --email E)\n\nThe customer's keys: id, prefix, created_at, revoked_at (never the keys).", adminEnv},
	"keys revoke": {"updown keys revoke --id KEY_ID\n\nRevokes a key: it stops working at once.", adminRedisEnv},
}

// adminFlagSet is the flag set of an administration subcommand (such as
// "customers create"), with its -h.
func adminFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if u, ok := adminUsage[name]; ok {
		fs.Usage = commandUsage(fs, u.synopsis, u.env)
	}
	return fs
}

// adminStore parses an administration command's flags, runs checks on
// them, and opens DATABASE_URL for it, migrated. The checks come before
// the database: a flag missing or mistyped is told as itself, not as an
// unreachable database's error (and migrates nothing).
func adminStore(ctx context.Context, fs *flag.FlagSet, args []string, checks ...func() error) (*postgres.Store, error) {
	url := databaseURLFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	for _, check := range checks {
		if err := check(); err != nil {
			return nil, err
		}
	}
	return openAdminStore(ctx, *url)
}

// customerFlags are the flags naming the customer of a customer command:
// its id (--id, or --customer: idFlag) or its email.
type customerFlags struct {
	fs        *flag.FlagSet
	idFlag    string
	id, email *string
}

// registerCustomer registers a customer command's --id (or --customer,
// idFlag) and --email.
func registerCustomer(fs *flag.FlagSet, idFlag string) customerFlags {
	return customerFlags{fs: fs, idFlag: idFlag,
		id:    fs.String(idFlag, "", "customer id"),
		email: fs.String("email", "", "customer email (instead of --"+idFlag+")")}
}

// given checks that the command was given a customer, and not two: the
// email was ignored beside an id, and keys create --customer A --email
// B gave A a key meant for B.
func (f customerFlags) given() error {
	switch {
	case *f.id == "" && *f.email == "":
		return fmt.Errorf("%s: give --%s or --email", f.fs.Name(), f.idFlag)
	case *f.id != "" && *f.email != "":
		return fmt.Errorf("%s: give --%s or --email, not both: they may name two customers", f.fs.Name(), f.idFlag)
	}
	return nil
}

// customerStore is adminStore for a command naming a customer (cf's flag
// set), the customer checked for last, and the customer found in the
// store.
func customerStore(ctx context.Context, cf customerFlags, args []string, checks ...func() error) (*postgres.Store, store.Customer, error) {
	st, err := adminStore(ctx, cf.fs, args, append(checks[:len(checks):len(checks)], cf.given)...)
	if err != nil {
		return nil, store.Customer{}, err
	}
	c, err := findCustomer(ctx, st, *cf.id, *cf.email)
	if err != nil {
		st.Close()
		return nil, store.Customer{}, err
	}
	return st, c, nil
}

// databaseURLFlag registers an administration command's --database-url.
func databaseURLFlag(fs *flag.FlagSet) *string {
	return urlFlag(fs, "database-url", envOr("DATABASE_URL", ""), "Postgres `URL` (env DATABASE_URL)")
}

// openAdminStore opens the database at url for an administration command,
// migrated, unless MIGRATE_ON_START=false: an operator who leaves
// migrating to `updown migrate` had the schema migrated by any export,
// import, customers list or keys command, older processes still running
// on it. Then a schema older than this build's is refused, naming
// `updown migrate`, and a current or newer one is used as it is.
func openAdminStore(ctx context.Context, url string) (*postgres.Store, error) {
	if url == "" {
		return nil, errors.New("DATABASE_URL must be set")
	}
	migrate, _ := strconv.ParseBool(envOr("MIGRATE_ON_START", "true")) // checkEnv took its form
	st, err := openPostgres(ctx, url, migrate)
	if err != nil || migrate {
		return st, err
	}
	want, err := postgres.LatestSchemaVersion()
	if err == nil {
		var have int
		if have, err = st.SchemaVersion(ctx); err == nil && have < want {
			err = fmt.Errorf("the database's schema is at version %d and this build's at %d, and MIGRATE_ON_START=false leaves migrating to `updown migrate`: run it first", have, want)
		}
	}
	if err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := databaseURLFlag(fs)
	fs.Usage = commandUsage(fs, "updown migrate [flags]\n\nApplies the migrations to DATABASE_URL, whatever MIGRATE_ON_START says, and prints the schema's version.",
		adminEnv[:1])
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *url == "" {
		return errors.New("DATABASE_URL must be set")
	}
	// Migrating is this command's job, whatever MIGRATE_ON_START says.
	st, err := openPostgres(ctx, *url, true)
	if err != nil {
		return err
	}
	defer st.Close()
	have, want, err := schemaVersions(ctx, st)
	if err != nil {
		return err
	}
	if have > want {
		// A newer build migrated it (this one rolled back): nothing is
		// applied, and saying "applied" would hide that.
		fmt.Fprintf(stdout, "schema at version %d, newer than this build's %d: left as it is\n", have, want)
		return nil
	}
	fmt.Fprintln(stdout, migratedMessage(have))
	return nil
}

func runSeed(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("seed", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = commandUsage(fs, "updown seed [flags]\n\nWrites generated data up to the present (markets of every coin and type, live ones included, their snapshots,\n"+
		"trades and gaps, and exchange depth history) into DATABASE_URL: to try the service out, on a database of its own.", adminEnv)
	seed := fs.Int64("seed", 1, "generator seed (same seed, same data)")
	perMarket := fs.Int("snapshots-per-market", 1000, "at most this many snapshots per market (coarser cadence for long markets); 0: the real 300 ms cadence")
	st, err := adminStore(ctx, fs, args, func() error { return checkPerMarket(*perMarket) })
	if err != nil {
		return err
	}
	defer st.Close()
	start := time.Now()
	stats, err := gen.Seed(ctx, genConfig(*seed, *perMarket, start), st)
	if err != nil {
		// What was written stays: say so, and how to finish or redo it
		// (the next run says it too).
		return fmt.Errorf("seed: %w; the database holds part of the generated data: run updown seed again "+
			"(--seed %d --snapshots-per-market %d) to finish it, or drop and recreate the database to start over", err, *seed, *perMarket)
	}
	elapsed := time.Since(start)
	return writeJSON(stdout, map[string]any{
		"markets": stats.Markets, "snapshots": stats.Snapshots, "trades": stats.Trades, "gaps": stats.Gaps, "depth_snapshots": stats.Depth,
		"seconds": elapsed.Seconds(), "snapshots_per_second": float64(stats.Snapshots) / elapsed.Seconds(),
	})
}

// checkPerMarket refuses a --snapshots-per-market below 0 (seed, dev),
// naming it, before anything is opened or generated: it was told as the
// generator's "MaxSnapshotsPerMarket -1 is negative", after the database
// was opened or the address taken.
func checkPerMarket(n int) error {
	if n < 0 {
		return fmt.Errorf("--snapshots-per-market %d: want a number of snapshots above 0, or 0 for the real 300 ms cadence", n)
	}
	return nil
}

// genConfig is the generator's default data set ending at now.
func genConfig(seed int64, perMarket int, now time.Time) gen.Config {
	cfg := gen.DefaultConfig(now)
	cfg.Seed = seed
	cfg.MaxSnapshotsPerMarket = perMarket
	return cfg
}

func runCustomers(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || isHelp(args[0]) {
		return subcommandHelp("customers", args, customersUsage, stdout, stderr)
	}
	fs := adminFlagSet("customers "+args[0], stderr)
	switch args[0] {
	case "create":
		email := fs.String("email", "", "customer email (required)")
		name := fs.String("name", "", "customer name")
		tier := fs.String("tier", string(store.Starter), "plan: STARTER, PRO, PRO_TRIAL, SUITE, ENTERPRISE")
		url := databaseURLFlag(fs)
		if err := parseFlags(fs, args[1:]); err != nil {
			return err
		}
		// The tier and email are checked before the database is opened
		// (and migrated): a typo is told as itself, not as a database's
		// error.
		t, err := parseTier(*tier)
		if err != nil {
			return err
		}
		if err := validateEmail(*email); err != nil {
			return fmt.Errorf("customers create: %w", err)
		}
		st, err := openAdminStore(ctx, *url)
		if err != nil {
			return err
		}
		defer st.Close()
		c, err := st.CreateCustomer(ctx, store.Customer{Email: strings.TrimSpace(*email), Name: *name, Tier: t})
		if errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("a customer with email %s exists already", *email)
		}
		if err != nil {
			return fmt.Errorf("create customer: %w", err)
		}
		plain, k := api.NewKey(c.ID)
		if k, err = st.CreateAPIKey(ctx, k); err != nil {
			// The customer is stored: a second create would find its
			// email taken. Say how to finish instead.
			return fmt.Errorf("customer %s (%s) was created, but its API key was not: %w; give it one with: updown keys create --customer %s",
				c.ID, c.Email, err, c.ID)
		}
		return writeJSON(stdout, map[string]string{"customer_id": c.ID, "key_id": k.ID, "api_key": plain})
	case "list":
		st, err := adminStore(ctx, fs, args[1:])
		if err != nil {
			return err
		}
		defer st.Close()
		cs, err := st.ListCustomers(ctx)
		if err != nil {
			return fmt.Errorf("list customers: %w", err)
		}
		byHand, err := st.TiersSetByHand(ctx)
		if err != nil {
			return fmt.Errorf("list customers: %w", err)
		}
		// tier_set_by_hand: the plan is the one `customers set-tier
		// --tier` set, which billing events of the customer's
		// subscriptions of before do not change (set-tier --billing hands
		// it back).
		out := make([]map[string]any, len(cs))
		for i, c := range cs {
			out[i] = map[string]any{"customer_id": c.ID, "email": c.Email, "name": c.Name, "tier": string(c.Tier),
				"created_at": c.CreatedAt.UTC().Format(time.RFC3339), "tier_set_by_hand": byHand[c.ID]}
		}
		return writeJSON(stdout, out)
	case "set-tier":
		cf := registerCustomer(fs, "id")
		tier := fs.String("tier", "", "new plan")
		billing := fs.Bool("billing", false, "instead of --tier: undo setting the plan by hand, back to the plan the customer's billing events leave")
		redisURL := redisURLFlag(fs)
		var t store.Tier
		st, c, err := customerStore(ctx, cf, args[1:], func() (err error) {
			switch {
			case *billing && *tier != "":
				return errors.New("customers set-tier: give --tier or --billing, not both")
			case *billing:
				return nil
			case *tier == "":
				return errors.New("customers set-tier: --tier is required (STARTER, PRO, PRO_TRIAL, SUITE or ENTERPRISE), or --billing to hand the plan back to billing")
			}
			t, err = parseTier(*tier)
			return err
		})
		if err != nil {
			return err
		}
		defer st.Close()
		if *billing {
			c, err = st.ReturnTierToBilling(ctx, c.ID)
		} else {
			c, err = st.SetCustomerTier(ctx, c.ID, t)
		}
		if err != nil {
			return fmt.Errorf("set tier: %w", err)
		}
		// A tier change starts the customer's rate limits from nothing, as
		// a billing webhook's does (SPEC 3.2).
		tellAPIs(ctx, *redisURL, c.ID, true, stderr)
		// A plan without sweeps, or with smaller ones, stops the
		// customer's running sweeps it could not have started, as the
		// billing webhook does.
		if n, err := api.StopSweepsOffPlan(ctx, st, c); err != nil {
			return fmt.Errorf("tier set to %s, but the customer's sweeps could not be cancelled: %w", c.Tier, err)
		} else if n > 0 {
			fmt.Fprintf(stderr, "cancelled %d running sweep(s): the %s plan could not have started them\n", n, c.Tier)
		}
		return writeJSON(stdout, map[string]string{"customer_id": c.ID, "tier": string(c.Tier)})
	case "set-limits":
		cf := registerCustomer(fs, "id")
		// The ENTERPRISE plan's custom limits (store.Limits), each 0 for
		// the plan's default.
		flags := []limitFlag{
			{"per-minute", "requests allowed per UTC minute (0: the plan's default, 10000)", func(l *store.Limits) *int { return &l.PerMinute }, nil},
			{"per-day", "requests allowed per UTC day (0: the plan's default, 1000000)", func(l *store.Limits) *int { return &l.PerDay }, nil},
			{"ai-generations", "Backtest AI generations allowed per calendar month (0: the plan's default, unlimited)",
				func(l *store.Limits) *int { return &l.AIGenerationsPerMonth }, nil},
			{"sweep-trials", "trials allowed in one sweep (0: the plan's default, 10000)", func(l *store.Limits) *int { return &l.SweepTrials }, nil},
			{"sweep-markets", "markets allowed in one sweep (0: the plan's default, 5000)", func(l *store.Limits) *int { return &l.SweepMarkets }, nil},
			{"sweep-replays", "replays (trials × markets) allowed in one sweep (0: the plan's default, 2000000)",
				func(l *store.Limits) *int { return &l.SweepReplays }, nil},
		}
		for i := range flags {
			flags[i].value = fs.Int(flags[i].name, 0, flags[i].usage)
		}
		redisURL := redisURLFlag(fs)
		given := map[string]bool{}
		st, c, err := customerStore(ctx, cf, args[1:], func() error {
			fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
			var names []string
			anyGiven := false
			for _, f := range flags {
				names = append(names, "--"+f.name)
				anyGiven = anyGiven || given[f.name]
				if *f.value < 0 {
					return fmt.Errorf("customers set-limits: --%s is 0 (the plan's default) or more", f.name)
				}
				// The database keeps each limit in 32 bits: a larger one
				// was told as the driver's failure to encode it.
				if *f.value > math.MaxInt32 {
					return fmt.Errorf("customers set-limits: --%s %d: at most %d (0 is the plan's default)", f.name, *f.value, math.MaxInt32)
				}
			}
			if !anyGiven {
				return fmt.Errorf("customers set-limits: give one or more of %s (a limit not given keeps its value; 0 is the plan's default)", strings.Join(names, ", "))
			}
			return nil
		})
		if err != nil {
			return err
		}
		defer st.Close()
		if c.Tier != store.Enterprise {
			return fmt.Errorf("customer %s is on the %s plan: limits per customer are an ENTERPRISE feature (set-tier first)", c.ID, c.Tier)
		}
		// A limit not given keeps its value.
		l := c.Limits
		for _, f := range flags {
			if given[f.name] {
				*f.field(&l) = *f.value
			}
		}
		if c, err = st.SetCustomerLimits(ctx, c.ID, l); err != nil {
			return fmt.Errorf("set limits: %w", err)
		}
		tellAPIs(ctx, *redisURL, c.ID, false, stderr)
		// Sweep sizes lowered stop the customer's running sweeps over them,
		// as a plan change does.
		if n, err := api.StopSweepsOffPlan(ctx, st, c); err != nil {
			return fmt.Errorf("limits set, but the customer's sweeps over them could not be cancelled: %w", err)
		} else if n > 0 {
			fmt.Fprintf(stderr, "cancelled %d running sweep(s) larger than the new sweep sizes\n", n)
		}
		return writeJSON(stdout, map[string]any{"customer_id": c.ID, "tier": string(c.Tier),
			"rate_limits":              map[string]int{"per_minute": c.Limits.PerMinute, "per_day": c.Limits.PerDay},
			"ai_generations_per_month": c.Limits.AIGenerationsPerMonth,
			"sweeps":                   map[string]int{"max_trials": c.Limits.SweepTrials, "max_markets": c.Limits.SweepMarkets, "max_replays": c.Limits.SweepReplays}})
	default:
		return fmt.Errorf("customers: unknown subcommand %q (want create, list, set-tier or set-limits)", args[0])
	}
}

// limitFlag is a flag of `customers set-limits`: one of store.Limits'
// allowances.
type limitFlag struct {
	name, usage string
	field       func(*store.Limits) *int
	value       *int
}

func runKeys(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || isHelp(args[0]) {
		return subcommandHelp("keys", args, keysUsage, stdout, stderr)
	}
	fs := adminFlagSet("keys "+args[0], stderr)
	switch args[0] {
	case "create":
		st, c, err := customerStore(ctx, registerCustomer(fs, "customer"), args[1:])
		if err != nil {
			return err
		}
		defer st.Close()
		plain, k := api.NewKey(c.ID)
		k, err = st.CreateAPIKey(ctx, k)
		if err != nil {
			return fmt.Errorf("create API key: %w", err)
		}
		return writeJSON(stdout, map[string]string{"key_id": k.ID, "customer_id": c.ID, "api_key": plain})
	case "list":
		return listKeys(ctx, fs, args[1:], stdout)
	case "revoke":
		id := fs.String("id", "", "key id (from keys create or keys list)")
		redisURL := redisURLFlag(fs)
		st, err := adminStore(ctx, fs, args[1:], func() error {
			if *id == "" {
				return errors.New("keys revoke: --id is required")
			}
			return nil
		})
		if err != nil {
			return err
		}
		defer st.Close()
		if err := st.RevokeAPIKey(ctx, *id); errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("no key with id %s", *id)
		} else if err != nil {
			return fmt.Errorf("revoke key: %w", err)
		}
		owner, err := keyOwner(ctx, st, *id)
		if err != nil {
			return err
		}
		tellAPIs(ctx, *redisURL, owner, false, stderr)
		return writeJSON(stdout, map[string]string{"key_id": *id, "status": "revoked"})
	default:
		return fmt.Errorf("keys: unknown subcommand %q (want create, list or revoke)", args[0])
	}
}

// redisURLFlag registers --redis-url, which the commands that change a
// customer use to tell the api processes at once.
func redisURLFlag(fs *flag.FlagSet) *string {
	return urlFlag(fs, "redis-url", envOr("REDIS_URL", ""), "Redis `URL` of the api processes, told of the change at once (env REDIS_URL)")
}

// tellAPIs tells the api processes sharing the Redis at redisURL that the
// customer changed, so that its next request is authenticated and limited
// afresh everywhere (api.InvalidateCustomer); with resetLimits (a tier
// change) it also clears the customer's rate-limit counters
// (api.ResetRateLimits). The change is stored already: without Redis, or
// when Redis fails, it says so and when the processes see the change
// anyway (their auth cache's lifetime).
func tellAPIs(ctx context.Context, redisURL, customerID string, resetLimits bool, stderr io.Writer) {
	const later = "running api processes apply the change within 5 s (their key cache) rather than at once"
	if redisURL == "" {
		fmt.Fprintln(stderr, "note: REDIS_URL is not set: "+later)
		return
	}
	// What the Redis client reports on its own (a pool that cannot dial)
	// is said once, in the warning below, not as its raw log lines.
	routeRedisLog(slog.New(slog.DiscardHandler))
	conn, err := parseRedisURL(redisURL)
	var rdb redis.UniversalClient
	if err == nil {
		rdb, err = openRedis(ctx, conn)
	}
	if err == nil {
		if resetLimits {
			err = api.ResetRateLimits(ctx, rdb, customerID, time.Now())
		} else {
			err = api.InvalidateCustomer(ctx, rdb, customerID)
		}
		_ = rdb.Close()
	}
	if err != nil {
		fmt.Fprintf(stderr, "warning: the change is stored, but the api processes could not be told (%v): %s\n", err, later)
	}
}

// keyOwner finds the customer a key belongs to.
func keyOwner(ctx context.Context, st store.CustomerStore, keyID string) (string, error) {
	cs, err := st.ListCustomers(ctx)
	if err != nil {
		return "", fmt.Errorf("find the key's customer: %w", err)
	}
	for _, c := range cs {
		keys, err := st.ListAPIKeys(ctx, c.ID)
		if err != nil {
			return "", fmt.Errorf("find the key's customer: %w", err)
		}
		for _, k := range keys {
			if k.ID == keyID {
				return c.ID, nil
			}
		}
	}
	return "", fmt.Errorf("no key with id %s", keyID)
}

func parseTier(s string) (store.Tier, error) {
	t := store.Tier(strings.ToUpper(strings.TrimSpace(s)))
	if !t.Valid() {
		return "", fmt.Errorf("unknown tier %q: want one of STARTER, PRO, PRO_TRIAL, SUITE, ENTERPRISE", s)
	}
	return t, nil
}

// findCustomer is the customer of id, else of email: one of them, as
// customerFlags.given checked before the store was opened.
func findCustomer(ctx context.Context, st store.CustomerStore, id, email string) (store.Customer, error) {
	var c store.Customer
	var err error
	if id != "" {
		c, err = st.GetCustomer(ctx, id)
	} else {
		c, err = st.GetCustomerByEmail(ctx, email)
	}
	if errors.Is(err, store.ErrNotFound) {
		// Named, and where to look: "no such customer" said neither which
		// one was looked for nor how to find the right one.
		if id != "" {
			return c, fmt.Errorf("no customer with id %q (updown customers list shows every customer's customer_id)", id)
		}
		return c, fmt.Errorf("no customer with email %q (updown customers list shows every customer's email)", email)
	}
	if err != nil {
		return c, fmt.Errorf("find customer: %w", err)
	}
	return c, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
