// Package collect records real data from the upstreams: up/down markets,
// their outcome prices and order books from Polymarket, and exchange depth
// and trades from Binance. It also resolves markets once they have ended.
//
// The package is the work itself, free of transport (DESIGN 2): it speaks
// HTTP to the upstreams and writes through the store interfaces; the
// process wiring lives in cmd/updown (`updown collect`) and the resolution
// task's queue handling in package worker.
//
// # What a Collector does
//
//   - Discovery: for every series (coin × market type SPEC allows) it looks
//     up the market of the current window and of the next on Gamma
//     (/events?slug=, then /markets?slug=, with closed=true too), by the
//     upstream slugs a SlugScheme gives (PolymarketScheme: today's forms,
//     then the older ones), and stores it under SPEC's slug,
//     <coin>-updown-<market_type>-<epoch seconds of the window start>, with
//     the upstream slug, fee schedule, tick and minimum order beside it.
//     Gamma's outcomes[i] is paired with clobTokenIds[i]; Gamma's
//     eventStartTime and endDate win over the scheme's window. A started
//     window not found is warned of once and counted (MissingWindows).
//   - Snapshots: every Interval (300 ms), for every market whose window
//     contains the instant, the books of both outcomes (from the websocket
//     when it serves them, see below, otherwise one POST /books to the
//     CLOB for all live markets) and one Binance ticker request for the
//     coin prices, made together. price_up and price_down are the best
//     asks of the two books (what buying the outcome costs, the convention
//     jobs/gen follows), or, for a book without asks, the last trade price
//     the CLOB sends with it; books keep their top BookLevels levels a
//     side, best first. Snapshots are written in batches (see
//     Config.FlushInterval).
//   - Exchange: the depth of every coin on spot and futures each
//     DepthInterval, kept as the latest depth in a store.LiveExchange and,
//     for BTCUSDT, appended to the depth history; an answer older than the
//     book last recorded (a lower lastUpdateId: another Binance server,
//     behind) is not recorded. Recent trades each TradesInterval into the
//     LiveExchange.
//   - Resolution: each market, once discovered, gets a resolution task
//     scheduled for a little after its end (Config.Scheduler), moved
//     forward when the websocket says market_resolved; a sweep schedules
//     it again for any ended market still unresolved. The task runs
//     Resolver.Resolve on a worker, which settles as Polymarket does
//     (outcomePrices, 50-50 ties, eventMetadata's reference prices) or,
//     when Polymarket is late, by the series' own rule until its verdict
//     comes (AwaitsVerdict).
//   - Activity: Polymarket's trades (last_trade_price) and the recording
//     gaps (over GapAfter, 3 s, without a snapshot in a live market; or
//     without the websocket's trades, kind trades) go to Config.Activity
//     (a store.MarketActivityStore); tick size changes are kept on the
//     market with their times. A trades gap is backfilled from the Data
//     API (Upstreams.PolymarketData) once the socket is back, and removed
//     when the API answered for all of it (backfill.go). The stretch of a
//     market no collector ran in (before a restart, or before a market
//     found after its window opened) is a trades gap too, from its last
//     stored snapshot, backfilled the same way.
//
// # Gaps, restarts and several collectors
//
// A snapshot is taken at an instant of a fixed grid (the multiples of
// Interval; for an Interval that divides a day, counted from the Unix
// epoch) and keyed by it, not by when its answer came; depth likewise on
// its own grid. When an
// upstream fails, answers late, or a book or price is missing, nothing is
// recorded for that instant: a gap is a gap, never filled with invented
// data. Stores ignore a snapshot whose (market, time), or a depth snapshot
// whose (symbol, kind, time), they hold already, so a collector restarted
// after a crash resumes on the same grid and loses only the instants it
// was down (plus at most one unflushed batch), and two collectors running
// at once write each instant once: whichever arrives second is ignored.
// Resolution tasks carry a deterministic task id, so they are never queued
// twice either.
//
// # Websocket
//
// Books come first from the CLOB's websocket market channel
// (Upstreams.PolymarketWS), REST polling of POST /books being the
// fallback. One connection subscribes to the tokens of every known market
// that has not ended (the live ones and the next, so a market's books are
// there when its window opens), and follows changes of that set with
// subscribe and unsubscribe operations. Each token's book is kept from its
// `book` events (a full book) and `price_change` events (the new size of
// a level, 0 removing it); a change after which upstream's best bid or ask
// is not the book's means a missed event, so that book is dropped and
// asked for again. PING goes every WSPingInterval (10 s).
//
// A book is used only while its connection is up and has said something
// within WSStaleAfter (PONGs count; a quiet connection is pinged before it
// goes stale). Otherwise, and for a token without a book yet, the tick
// polls REST for what the socket lacks, so a dropped socket costs no
// instant; a tick that neither source can serve is a gap, as before. A
// book that has not changed for BookStaleAfter (5 s) is not trusted either,
// even on a connection that answers PING: it is polled from REST and
// subscribed again, and a connection that sends no market data while its
// books go stale is made again (see bookAges), so a mute feed is recorded
// from REST or as a gap, never as frozen books. The
// books die with their connection: it is made again with backoff and full
// jitter (Config.Backoff), silent past WSPingInterval+WSStaleAfter counts
// as dropped, and a new subscription brings fresh `book` events. An empty
// Upstreams.PolymarketWS turns the websocket off.
package collect
