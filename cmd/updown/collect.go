package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/updown/updown/api"
	"github.com/updown/updown/jobs/collect"
	"github.com/updown/updown/store"
	redislive "github.com/updown/updown/store/redis"
	"github.com/updown/updown/worker"
)

// runCollect is `updown collect`: it records markets, snapshots and
// exchange data from the upstreams into DATABASE_URL and REDIS_URL, and
// schedules each market's resolution for the workers.
func runCollect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("collect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f serviceFlags
	f.registerBackends(fs)
	up := collect.UpstreamsFromEnv(os.LookupEnv)
	urlFlagVar(fs, &up.Gamma, "gamma-url", up.Gamma, "Polymarket Gamma API base `URL` (env "+collect.EnvGammaURL+")")
	urlFlagVar(fs, &up.CLOB, "clob-url", up.CLOB, "Polymarket CLOB API base `URL` (env "+collect.EnvCLOBURL+")")
	urlFlagVar(fs, &up.PolymarketWS, "ws-url", up.PolymarketWS, "Polymarket CLOB websocket market channel `URL`, the first source of books; empty polls --clob-url only (env "+collect.EnvPolymarketWSURL+")")
	urlFlagVar(fs, &up.PolymarketData, "data-url", up.PolymarketData, "Polymarket Data API base `URL`, asked for the trades a websocket outage missed; empty leaves such trades gaps as recorded (env "+collect.EnvPolymarketDataURL+")")
	urlFlagVar(fs, &up.BinanceSpot, "binance-spot-url", up.BinanceSpot, "Binance spot API base `URL` (env "+collect.EnvBinanceSpotURL+")")
	urlFlagVar(fs, &up.BinanceFutures, "binance-futures-url", up.BinanceFutures, "Binance USDⓈ-M futures API base `URL` (env "+collect.EnvBinanceFuturesURL+")")
	interval := fs.Duration("interval", envDuration("COLLECT_INTERVAL", store.SnapshotCadence), "snapshot cadence, at most 3s (env COLLECT_INTERVAL)")
	bookLevels := fs.Int("book-levels", 10, "levels of each side of each book a snapshot keeps")
	seriesList := fs.String("series", envOr("COLLECT_SERIES", "all"), "series to record: all, or a list such as btc:5m,btc:15m,eth:1hr (env COLLECT_SERIES)")
	exchangeList := fs.String("exchange", envOr("COLLECT_EXCHANGE", "all"), "coins whose Binance depth and trades this collector keeps: all, none, or a list such as btc,eth (env COLLECT_EXCHANGE). "+
		"Collectors split by --series behind one address should leave them to one: each keeping all of them asks Binance for about 4,000 of the 6,000 spot request weight it allows an address a minute")
	fs.String("health-addr", opsAddrOf("COLLECT_HEALTH_ADDR", ":9091"), "serve /healthz, /readyz (the store, Redis and every upstream) and /metrics at this address "+
		"(env COLLECT_HEALTH_ADDR, else :$PORT, else :9091; \"off\" disables); without this flag or COLLECT_HEALTH_ADDR, a collector whose address is taken serves none")
	unhealthy := fs.Duration("unhealthy-after", envDuration("COLLECT_UNHEALTHY_AFTER", 30*time.Second), "an upstream failing this long without a good answer makes /readyz fail (env COLLECT_UNHEALTHY_AFTER)")
	discovery := fs.Duration("discovery-interval", envDuration("COLLECT_DISCOVERY_INTERVAL", 20*time.Second), "how often the current and next market of every series are looked up; under --quick-windows at most a quarter window (env COLLECT_DISCOVERY_INTERVAL)")
	resolveDelay := fs.Duration("resolve-delay", envDuration("COLLECT_RESOLVE_DELAY", 30*time.Second), "how long after a market's end its resolution first runs, unless Polymarket's market_resolved comes first (env COLLECT_RESOLVE_DELAY)")
	booksVersion := booksVersionFlag(fs)
	quick := fs.Duration("quick-windows", envDuration("COLLECT_QUICK_WINDOWS", 0), "tests and demos against a fake upstream only: every series' windows last this long, named <coin>-quick-<type>-<unix ms> upstream (env COLLECT_QUICK_WINDOWS); 0 follows Polymarket's series")
	fs.Usage = commandUsage(fs, "updown collect [flags]\n\nRecords Polymarket's up/down markets (snapshots, books, trades) and Binance's exchange data.", collectEnv)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	// The collector takes 0 for its defaults; given here, 0 or less is a
	// mistake to say, not a default to fall back to in silence.
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"interval (COLLECT_INTERVAL)", *interval}, {"unhealthy-after (COLLECT_UNHEALTHY_AFTER)", *unhealthy},
		{"discovery-interval (COLLECT_DISCOVERY_INTERVAL)", *discovery}, {"resolve-delay (COLLECT_RESOLVE_DELAY)", *resolveDelay}} {
		if d.v <= 0 {
			return fmt.Errorf("--%s: %v is not a positive duration", d.name, d.v)
		}
	}
	// A live market's stretch of over 3 s without a snapshot is a
	// recording gap (DESIGN 9): at a coarser cadence every stretch between
	// two snapshots was one, and the whole market was served as a gap.
	if *interval > maxInterval {
		return fmt.Errorf("--interval (COLLECT_INTERVAL): %v is longer than %v, the longest stretch without a snapshot that is not a recording gap: "+
			"every stretch between two snapshots would be stored as a gap (the default is %v)", *interval, maxInterval, store.SnapshotCadence)
	}
	if *quick < 0 {
		// Read as 0 (Polymarket's series) in silence, where its variable's
		// negative value is refused.
		return fmt.Errorf("--quick-windows: %v is negative: want a window of 1s or more, or 0 for Polymarket's series", *quick)
	}
	if *bookLevels <= 0 {
		return fmt.Errorf("--book-levels: %d; a snapshot keeps 1 or more levels of each side", *bookLevels)
	}
	if err := checkBooksVersion(*booksVersion); err != nil {
		return err
	}
	rconn, err := f.require()
	if err != nil {
		return err
	}
	series, err := parseSeries(*seriesList)
	if err != nil {
		return err
	}
	exchangeCoins, err := parseExchangeCoins(*exchangeList)
	if err != nil {
		return err
	}
	var scheme collect.SlugScheme
	if *quick > 0 {
		if *quick < time.Second {
			return fmt.Errorf("--quick-windows: %v is under a second", *quick)
		}
		scheme = collect.QuickScheme{Length: *quick}
		*discovery = min(*discovery, *quick/4)
	}
	log := newLogger(stderr, "json")
	// The ops address is taken before anything connects: one that cannot
	// be had stops the process at once, naming the setting, rather than
	// after the collector began (and logged its start); and a collector
	// waiting for the schema (or its backends) is alive, and says so on
	// /healthz, while /readyz answers 503 until it records (waitingOps).
	opsLn, err := listenOps(fs, "health-addr", "collector", "COLLECT_HEALTH_ADDR", log)
	if err != nil {
		return fmt.Errorf("--health-addr (COLLECT_HEALTH_ADDR): %w", err)
	}
	return runWithOps(ctx, "collector", opsLn, log, func(gctx context.Context, ops *swapHandler) error {
		b, closeBackends, err := openBackends(gctx, f.databaseURL, rconn, false, log)
		if err != nil {
			return err
		}
		defer closeBackends()
		st, rdb := b.store, b.rdb
		if err := st.WriteBooksVersion(*booksVersion); err != nil {
			return fmt.Errorf("--books-version: %w", err)
		}

		c, err := collect.New(collect.Config{
			Upstreams: up,
			Store:     st,
			Live:      redislive.New(rdb, redislive.DefaultPrefix),
			Scheduler: worker.NewResolutionScheduler(rdb),
			Scheme:    scheme,
			Logger:    log,

			UnhealthyAfter:    *unhealthy,
			DiscoveryInterval: *discovery,
			ResolveDelay:      *resolveDelay,
			Series:            series,
			ExchangeCoins:     exchangeCoins,
			Interval:          *interval,
			BookLevels:        *bookLevels,
		})
		if err != nil {
			return err
		}
		reg := newRegistry(rdb, log)
		reg.MustRegister(collectorMetrics{c})
		checks := b.checks()
		checks["upstreams"] = c.Ready
		ops.set(api.OpsHandler(reg, checks, log))
		return c.Run(gctx)
	})
}

// maxInterval is the coarsest snapshot cadence collect takes: the
// collector's gap threshold (collect.Config.GapAfter's default, DESIGN 9).
const maxInterval = 3 * time.Second

// parseSeries reads "all" or a comma-separated list of coin:type.
func parseSeries(v string) ([]collect.Series, error) {
	if strings.TrimSpace(v) == "" || strings.EqualFold(strings.TrimSpace(v), "all") {
		return nil, nil
	}
	var out []collect.Series
	for item := range strings.SplitSeq(v, ",") {
		coin, mt, ok := strings.Cut(strings.TrimSpace(item), ":")
		s := collect.Series{Coin: store.Coin(strings.ToUpper(coin)), MarketType: store.MarketType(strings.ToLower(mt))}
		if !ok || !s.MarketType.AvailableFor(s.Coin) {
			return nil, fmt.Errorf("--series: %q is not a coin:type SPEC allows (btc, eth, sol with 5m, 15m, 1hr; btc with 4hr, 24hr)", item)
		}
		if !slices.Contains(out, s) { // named twice: collected once
			out = append(out, s)
		}
	}
	return out, nil
}

// parseExchangeCoins reads --exchange: all (or empty) is nil, every coin;
// none is an empty list; else coins separated by commas, in any case, each
// kept once.
func parseExchangeCoins(v string) ([]store.Coin, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "all":
		return nil, nil
	case "none":
		return []store.Coin{}, nil
	}
	var out []store.Coin
	for item := range strings.SplitSeq(v, ",") {
		c := store.Coin(strings.ToUpper(strings.TrimSpace(item)))
		if !c.Valid() {
			return nil, fmt.Errorf("--exchange (COLLECT_EXCHANGE): %q is not a coin: want all, none, or a list of btc, eth and sol", item)
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// collectorMetrics exports a collector's upstream health and what it has
// written, read at scrape time.
type collectorMetrics struct{ c *collect.Collector }

var (
	descUpstreamRequests = prometheus.NewDesc("updown_collector_upstream_requests_total",
		"Requests to an upstream, retries included.", []string{"upstream"}, nil)
	descUpstreamErrors = prometheus.NewDesc("updown_collector_upstream_errors_total",
		"Failed requests to an upstream, retries included.", []string{"upstream"}, nil)
	descUpstreamLastOK = prometheus.NewDesc("updown_collector_upstream_last_success_timestamp_seconds",
		"Unix time of an upstream's last good answer (0: none since start).", []string{"upstream"}, nil)
	descUpstreamUp = prometheus.NewDesc("updown_collector_upstream_up",
		"1 while an upstream answers, 0 once it has failed without a good answer for a while.", []string{"upstream"}, nil)
	descNotFound = prometheus.NewDesc("updown_collector_windows_not_found_total",
		"Windows that started without their market being found upstream.", nil, nil)
	descWritten = prometheus.NewDesc("updown_collector_written_total",
		"Records the store accepted, by kind (snapshots, depth, trades, gaps).", []string{"kind"}, nil)
	descBackfilled = prometheus.NewDesc("updown_collector_backfilled_total",
		"Trades recorded from the trades source (the Data API) after a websocket outage (kind trades), and the trades gaps it covered, which were removed (kind gaps).", []string{"kind"}, nil)
	descDropped = prometheus.NewDesc("updown_collector_instants_dropped_total",
		"Instants of the snapshot grid at which markets were live and none was recorded, by reason (stalled, backoff, busy, upstream, late), or (partial) at which the REST books failed for some markets, whose books the websocket could not vouch for, while at least one other was recorded; each instant under one reason at most.", []string{"reason"}, nil)
)

func (m collectorMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUpstreamRequests, descUpstreamErrors, descUpstreamLastOK, descUpstreamUp, descNotFound, descWritten, descBackfilled, descDropped} {
		ch <- d
	}
}

func (m collectorMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, u := range m.c.Health() {
		ch <- prometheus.MustNewConstMetric(descUpstreamRequests, prometheus.CounterValue, float64(u.Requests), u.Name)
		ch <- prometheus.MustNewConstMetric(descUpstreamErrors, prometheus.CounterValue, float64(u.Errors), u.Name)
		last := 0.0
		if !u.LastSuccess.IsZero() {
			last = float64(u.LastSuccess.UnixMilli()) / 1000
		}
		ch <- prometheus.MustNewConstMetric(descUpstreamLastOK, prometheus.GaugeValue, last, u.Name)
		up := 0.0
		if u.Healthy {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(descUpstreamUp, prometheus.GaugeValue, up, u.Name)
	}
	ch <- prometheus.MustNewConstMetric(descNotFound, prometheus.CounterValue, float64(m.c.MissingWindows()))
	st := m.c.Stats()
	for kind, n := range map[string]int64{"snapshots": st.Snapshots, "depth": st.Depth, "trades": st.Trades, "gaps": st.Gaps} {
		ch <- prometheus.MustNewConstMetric(descWritten, prometheus.CounterValue, float64(n), kind)
	}
	ch <- prometheus.MustNewConstMetric(descBackfilled, prometheus.CounterValue, float64(st.BackfilledTrades), "trades")
	ch <- prometheus.MustNewConstMetric(descBackfilled, prometheus.CounterValue, float64(st.GapsBackfilled), "gaps")
	for reason, n := range m.c.DroppedInstants() {
		ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(n), reason)
	}
}

// checkBooksVersion refuses a --books-version (or SNAPSHOT_BOOKS_VERSION)
// this build does not write, before anything connects: the store said so
// only once the database was open, migrated, or its schema waited for.
func checkBooksVersion(v int) error {
	if v != 1 && v != 2 {
		return fmt.Errorf("--books-version %d (env SNAPSHOT_BOOKS_VERSION): want 2, or 1 while you may roll back past books version 2", v)
	}
	return nil
}

// booksVersionFlag registers --books-version, the layout of the order
// books a command that writes snapshots (collect, import) writes.
func booksVersionFlag(fs *flag.FlagSet) *int {
	return fs.Int("books-version", int(envInt64("SNAPSHOT_BOOKS_VERSION", 2)),
		"layout of the order books written: 2, each outcome's books a section of their own, or 1, which builds before version 2 read too: write 1 while you may roll back past it (env SNAPSHOT_BOOKS_VERSION)")
}
