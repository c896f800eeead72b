// Package store holds updown's domain types and the storage interfaces that
// every backend (Postgres, memory) implements. It imports only the standard
// library; implementations live in the sub-packages named after what they adapt.
package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Errors every implementation returns (possibly wrapped) so callers can test
// with errors.Is.
var (
	// ErrNotFound means the requested row does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict means a unique key (slug, market_id, email, key hash) is taken.
	ErrConflict = errors.New("conflict")
	// ErrInvalid means the input cannot be stored as given (for example
	// snapshots for a market that does not exist are ErrNotFound, but a
	// market without a slug is ErrInvalid).
	ErrInvalid = errors.New("invalid")
	// ErrUnavailable means the backend cannot be reached (connection
	// refused, pool closed, timeout): the API answers 503 and clients retry.
	ErrUnavailable = errors.New("store unavailable")
)

// Store is everything the service keeps durably.
//
// Every implementation keeps times to the microsecond (Postgres's precision)
// and returns them in UTC, so that a value read back from any store compares
// equal with time.Time.Equal to what was written after Truncate(time.Microsecond).
type Store interface {
	MarketStore
	SnapshotStore
	CustomerStore
	ExchangeStore
	QuotaStore
	BillingStore
	MarketActivityStore
	SweepStore
	// Ping reports whether the backend is reachable.
	Ping(ctx context.Context) error
	// Close releases the backend's resources.
	Close()
}

// MarketStore keeps market records.
type MarketStore interface {
	// UpsertMarkets inserts markets or, for an existing slug, updates every
	// field but CreatedAt. CreatedAt/UpdatedAt are set by the store when zero.
	// A market_id that belongs to another slug is ErrConflict; an empty
	// one (a market without an upstream id) is not indexed, and any
	// number of markets may have it.
	UpsertMarkets(ctx context.Context, markets []Market) error
	// UpsertMarketsNewer is UpsertMarkets leaving as it is every market
	// stored with a later UpdatedAt than the one given (one without is
	// written), decided as it writes, so that nothing written meanwhile is
	// undone (an import of an older export). It returns how many it wrote.
	UpsertMarketsNewer(ctx context.Context, markets []Market) (int, error)
	// SwapMarket writes m over the stored market with m's slug if that
	// market's UpdatedAt is still was (as GetMarket read it), and answers
	// the market as stored, or false, writing nothing, when another writer
	// came between: the write of a read-modify-write that undoes no one's
	// (EditMarket). It stamps UpdatedAt later than was and keeps CreatedAt;
	// m's own are ignored. A market that is not stored is ErrNotFound.
	SwapMarket(ctx context.Context, m Market, was time.Time) (Market, bool, error)
	// GetMarket returns the market with the slug, or ErrNotFound.
	GetMarket(ctx context.Context, slug string) (Market, error)
	// GetMarketByMarketID returns the market with the external market id, or ErrNotFound
	// (always for the empty id).
	GetMarketByMarketID(ctx context.Context, marketID string) (Market, error)
	// ListMarkets returns one page of markets matching f, sorted by
	// start_time descending (slug ascending on ties), and the number of
	// markets matching f regardless of Limit and Offset.
	ListMarkets(ctx context.Context, f MarketFilter) ([]Market, int, error)
	// CountMarkets returns the number of markets matching f (Limit and
	// Offset are ignored).
	CountMarkets(ctx context.Context, f MarketFilter) (int, error)
	// NthNewestStart returns the start_time of the n-th newest market (n ≥ 1)
	// of the coin and type, by start_time, among those starting at or
	// before startedBy (a market listed ahead of its window has not
	// started). ok is false when fewer than n markets do.
	NthNewestStart(ctx context.Context, coin Coin, mt MarketType, n int, startedBy time.Time) (t time.Time, ok bool, err error)
}

// SeriesCount is a market's number of snapshots and the number of its
// snapshots that drops of old months took (part of its DataVersion). With the market's record it versions the market's snapshots
// for a cache: every append raises N, and a drop lowers N and raises
// Dropped as much, so that a drop followed by as many snapshots appended
// (a re-import) leaves N as it was but not Dropped. A store that drops
// nothing has Dropped 0.
type SeriesCount struct {
	N, Dropped int
}

// MarketSeriesCounter is a store that reads a market's record and its
// SeriesCount in one round trip: what a replay checks before it is
// queued. Use GetMarketSeries, which asks a store without it both
// questions side by side.
type MarketSeriesCounter interface {
	GetMarketSeries(ctx context.Context, slug string) (Market, SeriesCount, error)
}

// GetMarketSeries returns the market with the slug and its SeriesCount, or
// ErrNotFound: in one round trip from a MarketSeriesCounter, else from
// GetMarket and CountSeries asked side by side.
func GetMarketSeries(ctx context.Context, st Store, slug string) (Market, SeriesCount, error) {
	if mc, ok := st.(MarketSeriesCounter); ok {
		return mc.GetMarketSeries(ctx, slug)
	}
	return withMarket(ctx, st, slug, func() (SeriesCount, error) { return CountSeries(ctx, st, slug) })
}

// withMarket asks st for the market with the slug and, side by side,
// read: the market and read's answer, or the first of their errors (the
// market's first: ErrNotFound of a slug of no market).
func withMarket[T any](ctx context.Context, st Store, slug string, read func() (T, error)) (Market, T, error) {
	var v T
	var readErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		v, readErr = read()
	}()
	m, err := st.GetMarket(ctx, slug)
	<-done
	var zero T
	if err != nil {
		return m, zero, err
	}
	if readErr != nil {
		return m, zero, readErr
	}
	return m, v, nil
}

// SeriesCounter is a store that reads a market's SeriesCount in one round
// trip, as cheap as CountSnapshots of the whole market. Use CountSeries.
type SeriesCounter interface {
	CountSeries(ctx context.Context, slug string) (SeriesCount, error)
}

// CountSeries returns the SeriesCount of the market with the slug: from a
// SeriesCounter, else CountSnapshots of the whole market with Dropped 0.
func CountSeries(ctx context.Context, st Store, slug string) (SeriesCount, error) {
	if sc, ok := st.(SeriesCounter); ok {
		return sc.CountSeries(ctx, slug)
	}
	n, err := st.CountSnapshots(ctx, slug, SnapshotQuery{})
	return SeriesCount{N: n}, err
}

// SnapshotStore keeps the time series of each market.
type SnapshotStore interface {
	// AppendSnapshots stores snapshots of the market with the slug
	// (ErrNotFound if there is no such market). Snapshots need not be
	// sorted. A snapshot whose time equals one already stored for the
	// market is ignored, so a repeated write stores nothing twice. It
	// returns how many of snaps it stored: the rest the market had
	// already (or the call had at an earlier index).
	AppendSnapshots(ctx context.Context, slug string, snaps []Snapshot) (int, error)
	// ListSnapshots returns snapshots of the market per q and the number of
	// snapshots the market has in all. A market with no snapshots returns
	// an empty slice and 0; an unknown slug is ErrNotFound.
	ListSnapshots(ctx context.Context, slug string, q SnapshotQuery) ([]Snapshot, int, error)
	// CountSnapshots returns how many of the market's snapshots fall in q's
	// time range (From, To); After, Limit and Offset are ignored, so the
	// count stays the same along a cursor walk. An unknown slug is
	// ErrNotFound.
	CountSnapshots(ctx context.Context, slug string, q SnapshotQuery) (int, error)
	// ReadTape returns all the market's snapshots, oldest first, with the
	// books of outcome (OutcomeUp or OutcomeDown): what a replay reads,
	// packed without pointers. A market with no snapshots is an empty
	// tape; an unknown slug is ErrNotFound.
	ReadTape(ctx context.Context, slug, outcome string) (*Tape, error)
}

// CustomerStore keeps customers and their API keys.
type CustomerStore interface {
	// CreateCustomer stores c; the store assigns ID (a UUID) when empty and
	// the timestamps. Emails are kept and matched in NormalizeEmail's form,
	// so they match case-insensitively; a taken email is ErrConflict.
	CreateCustomer(ctx context.Context, c Customer) (Customer, error)
	GetCustomer(ctx context.Context, id string) (Customer, error)
	GetCustomerByEmail(ctx context.Context, email string) (Customer, error)
	// ListCustomers returns all customers ordered by CreatedAt, then ID.
	ListCustomers(ctx context.Context) ([]Customer, error)
	// SetCustomerTier changes the customer's tier by hand (ErrNotFound if
	// absent) and returns the updated customer. The store keeps when, so
	// that billing events judge against it (BillingOutcomeOf): from then
	// on no event of a subscription the customer had before (a
	// cancellation, a late activation) takes the tier set by hand away.
	SetCustomerTier(ctx context.Context, id string, tier Tier) (Customer, error)
	// ReturnTierToBilling undoes SetCustomerTier (ErrNotFound if the
	// customer is absent): the store forgets the tier set by hand and
	// sets the tier the customer's billing events leave (BillingTier over
	// every tier-setting event recorded for the customer, those judged
	// while the tier was set by hand included; STARTER when none sets a
	// tier, a customer without a subscription), and returns the updated
	// customer. From then on every event is judged as if the tier had
	// never been set by hand. It takes the lock RecordBillingEvent takes,
	// so no event is judged between the two.
	ReturnTierToBilling(ctx context.Context, id string) (Customer, error)
	// TiersSetByHand returns, by id, the customers whose tier is the one
	// set by hand (SetCustomerTier), each true: set by hand and since
	// neither handed back to billing (ReturnTierToBilling) nor set by a
	// billing event (a subscription new since: TierSetByHand). Customers
	// on the tier their billing events leave (or STARTER, never set) are
	// absent.
	TiersSetByHand(ctx context.Context) (map[string]bool, error)
	// SetCustomerLimits sets the customer's own allowances (each 0: the
	// plan's default; a negative one is ErrInvalid) and returns the
	// updated customer (ErrNotFound if absent).
	SetCustomerLimits(ctx context.Context, id string, l Limits) (Customer, error)

	// CreateAPIKey stores a key of the customer. Only the hash of the key is
	// kept; Prefix is a short, non-secret label for listings. The store
	// assigns ID and CreatedAt. A taken hash is ErrConflict; an empty one
	// ErrInvalid; an unknown customer is ErrNotFound.
	CreateAPIKey(ctx context.Context, k APIKey) (APIKey, error)
	// LookupAPIKey finds an unrevoked key by its hash and returns it with
	// its owner; a revoked or unknown key is ErrNotFound.
	LookupAPIKey(ctx context.Context, hash []byte) (APIKey, Customer, error)
	// ListAPIKeys returns the customer's keys, revoked ones included,
	// ordered by CreatedAt, then ID.
	ListAPIKeys(ctx context.Context, customerID string) ([]APIKey, error)
	// RevokeAPIKey marks the key revoked (ErrNotFound if absent). Revoking
	// twice keeps the first revocation time.
	RevokeAPIKey(ctx context.Context, id string) error
	// GetAPIKey returns the key with the id, revoked or not; an unknown id
	// is ErrNotFound. Sessions and bearer tokens name their key by id: the
	// look-up costs the same however many keys the customer has revoked.
	GetAPIKey(ctx context.Context, id string) (APIKey, error)
	// PageAPIKeys returns a page of the customer's keys, unrevoked ones
	// first, then revoked ones, each newest first (CreatedAt, then ID,
	// descending), with the customer's counts. A limit of 0 answers the
	// counts only; a negative limit or offset is ErrInvalid. An unknown
	// customer has no keys.
	PageAPIKeys(ctx context.Context, customerID string, limit, offset int) (APIKeyPage, error)
}

// APIKeyPage is a page of a customer's keys (PageAPIKeys).
type APIKeyPage struct {
	Keys []APIKey
	// Live counts the customer's unrevoked keys, Total all its keys.
	Live, Total int
}

// ExchangeStore keeps exchange depth history (BTC/USDT spot and futures).
// Latest depth and recent trades are hot data kept in Redis, not here.
type ExchangeStore interface {
	// AppendDepth stores depth snapshots. A snapshot whose (Symbol, Kind,
	// Time) is already stored is ignored.
	AppendDepth(ctx context.Context, snaps []DepthSnapshot) error
	// ListDepth returns depth snapshots per f, newest first, and the number
	// matching f regardless of Limit and Offset.
	ListDepth(ctx context.Context, f DepthFilter) ([]DepthSnapshot, int, error)
}

// Coin is a prediction-market underlying: BTC, ETH or SOL.
type Coin string

// Coins SPEC allows.
const (
	BTC Coin = "BTC"
	ETH Coin = "ETH"
	SOL Coin = "SOL"
)

// Coins lists every coin in a fixed order.
var Coins = []Coin{BTC, ETH, SOL}

// Valid reports whether c is one of BTC, ETH, SOL.
func (c Coin) Valid() bool { return c == BTC || c == ETH || c == SOL }

// ParseCoin reads a coin in any ASCII case ("btc", "Eth", "SOL").
// strings.ToUpper alone would also take letters outside ASCII that it maps
// onto ASCII ones (ſ, the long s, onto S), and "ſol" names no coin.
func ParseCoin(s string) (Coin, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return "", false
		}
	}
	c := Coin(strings.ToUpper(s))
	return c, c.Valid()
}

// MarketType is the length of a market's window.
type MarketType string

// Market types SPEC allows: 5m, 15m and 1hr for all coins; 4hr and 24hr for BTC only.
const (
	M5  MarketType = "5m"
	M15 MarketType = "15m"
	H1  MarketType = "1hr"
	H4  MarketType = "4hr"
	H24 MarketType = "24hr"
)

// MarketTypes lists every market type, shortest first.
var MarketTypes = []MarketType{M5, M15, H1, H4, H24}

// Valid reports whether t is a known market type.
func (t MarketType) Valid() bool { return t.Duration() > 0 }

// SnapshotCadence is how often a market is recorded: the collector's
// default interval, and what a market of a given window is sized by.
const SnapshotCadence = 300 * time.Millisecond

// Duration is the length of the market's window, or 0 for an unknown type.
func (t MarketType) Duration() time.Duration {
	switch t {
	case M5:
		return 5 * time.Minute
	case M15:
		return 15 * time.Minute
	case H1:
		return time.Hour
	case H4:
		return 4 * time.Hour
	case H24:
		return 24 * time.Hour
	}
	return 0
}

// AvailableFor reports whether markets of type t exist for coin c
// (4hr and 24hr are BTC only).
func (t MarketType) AvailableFor(c Coin) bool {
	switch t {
	case M5, M15, H1:
		return c.Valid()
	case H4, H24:
		return c == BTC
	}
	return false
}

// Outcome names as the upstream spells them. OutcomeFiftyFifty is the
// winner of a market that resolved as a tie (outcomePrices ["0.5","0.5"],
// a daily market whose close equals its open): each share settles at 0.5.
const (
	OutcomeUp         = "Up"
	OutcomeDown       = "Down"
	OutcomeFiftyFifty = "50-50"
)

// Resolution sources: where a market's winner and reference prices came from.
const (
	// SourceChainlink is Polymarket's verdict for the Chainlink-settled series
	// (5m, 15m, 4h), with its priceToBeat/finalPrice.
	SourceChainlink = "chainlink"
	// SourceBinance1h is the hourly series' rule: the Binance 1h candle's
	// open and close.
	SourceBinance1h = "binance-1h"
	// SourceBinance1mNoonET is the daily series' rule: the Binance 1m candle
	// close at 12:00 US Eastern, day over day.
	SourceBinance1mNoonET = "binance-1m-noon-et"
	// SourceRecorded is the fallback from the collector's own recorded
	// reference prices at the window's start and end.
	SourceRecorded = "recorded"
)

// OpeningTickSize is the tick a market opens at (REFERENCE): the tick in
// force before its first TickSizeChange, or without any.
const OpeningTickSize = 0.01

// Fee types: Gamma's feeType, the curve of a market's taker fee schedule
// (REFERENCE.md).
const (
	// FeeTypeCrypto is the curve of Polymarket's first crypto fees (early
	// 2026): shares × rate × p × (p(1−p))^exponent, a factor p beyond the
	// later curve's. Gamma gave its markets no feeSchedule: its rate was
	// FeeTypeCryptoRate and its exponent FeeTypeCryptoExponent.
	FeeTypeCrypto         = "crypto_fees"
	FeeTypeCryptoRate     = 0.25
	FeeTypeCryptoExponent = 2
	// FeeTypeCryptoV2 is the curve since: shares × rate × (p(1−p))^exponent,
	// with the schedule Gamma gives (rate 0.07, exponent 1 on crypto markets).
	FeeTypeCryptoV2 = "crypto_fees_v2"
)

// TickSizeChange is a change of a market's minimum price increment.
type TickSizeChange struct {
	Time     time.Time
	TickSize float64
}

// AppendTickChange is the rule by which a tick heard of is recorded as a
// change: it returns changes with the change to tick at at (in UTC)
// appended and true, or changes as they are and false when it is no change
// to record: the tick in force, cur (nil when unknown), is tick already
// (the other outcome's news of it, or heard before), or at is not after the
// last change (older news, which would put the changes out of time order).
func AppendTickChange(changes []TickSizeChange, cur *float64, tick float64, at time.Time) ([]TickSizeChange, bool) {
	if cur != nil && *cur == tick {
		return changes, false
	}
	if n := len(changes); n > 0 && !at.After(changes[n-1].Time) {
		return changes, false
	}
	return append(changes, TickSizeChange{Time: at.UTC(), TickSize: tick}), true
}

// tickChangeTime orders tick changes by their instants.
func tickChangeTime(a, b TickSizeChange) int { return a.Time.Compare(b.Time) }

// SortTickChanges returns changes as a stored market keeps them
// (Market.TickSizeChanges): oldest first, and of the changes at one
// instant only the first listed, as MergeTickChanges keeps them. It
// returns changes itself when they are so already (at the cost of one
// pass), else a sorted copy: changes is never modified. A store applies it
// to times as it keeps them (to the microsecond), so that two changes
// within one microsecond are one.
func SortTickChanges(changes []TickSizeChange) []TickSizeChange {
	sorted := true
	for i := 1; i < len(changes) && sorted; i++ {
		sorted = changes[i].Time.After(changes[i-1].Time)
	}
	if sorted {
		return changes
	}
	out := slices.Clone(changes)
	slices.SortStableFunc(out, tickChangeTime)
	return slices.CompactFunc(out, func(a, b TickSizeChange) bool { return a.Time.Equal(b.Time) })
}

// Market is one up/down prediction market.
type Market struct {
	Slug           string
	MarketID       string
	EventID        string
	Coin           Coin
	MarketType     MarketType
	StartTime      time.Time
	EndTime        time.Time
	CoinPriceStart *float64
	CoinPriceEnd   *float64
	ConditionID    string
	ClobTokenUp    string
	ClobTokenDown  string
	Winner         *string // OutcomeUp or OutcomeDown; nil while unresolved
	FinalVolume    *float64
	FinalLiquidity *float64
	ResolvedAt     *time.Time
	CreatedAt      time.Time
	UpdatedAt      time.Time

	// What the upstream records beside SPEC's fields (DESIGN 9). The API
	// serves them as extra fields of the market object.

	// UpstreamSlug is Polymarket's own slug ("" when unknown).
	UpstreamSlug string
	// TakerFeeRate and FeeExponent are the market's taker fee schedule:
	// fee = shares × rate × (p(1−p))^exponent, times p under the fee type
	// FeeTypeCrypto. nil where it has none.
	TakerFeeRate *float64
	FeeExponent  *int
	// FeeType names the schedule's curve as Gamma's feeType does
	// (FeeTypeCrypto, FeeTypeCryptoV2, ...); "" when unknown.
	FeeType string
	// MakerRebateRate is the share of the taker fee a maker's filled volume
	// would have paid that Polymarket pays back to makers (Gamma's
	// feeSchedule.rebateRate, 0.2 on crypto markets in 2026). nil where the
	// schedule has none.
	MakerRebateRate *float64
	// TickSize is the latest minimum price increment; TickSizeChanges the
	// changes seen while recording. Every store keeps TickSizeChanges
	// oldest first with no two at one instant (SortTickChanges), whatever
	// order a writer gave them in, and reads them back so: the tick in force
	// at t is the last change at or before t.
	TickSize        *float64
	TickSizeChanges []TickSizeChange
	// MinOrderSize is the smallest order in shares.
	MinOrderSize *float64
	// ResolutionSource says where the winner and reference prices came from
	// (one of the Source constants; "" while unresolved or unknown).
	ResolutionSource string
	// PriceToBeat and FinalPrice are the start and end reference prices as
	// Polymarket published them (nil until published).
	PriceToBeat *float64
	FinalPrice  *float64
	// DataSources says where the market's data came from: DataRecorder
	// and the archive formats imported (Import.Source), e.g. ["recorder",
	// "pmxt-v2"]. UpsertMarkets keeps a stored market's sources when it is
	// given none, and gives a new market ["recorder"].
	DataSources []string
}

// Resolved reports whether the market has a winner.
func (m Market) Resolved() bool { return m.Winner != nil }

// FeeTimesPrice reports whether m's fee curve multiplies the fee by the
// fill's price once more (FeeTypeCrypto).
func (m Market) FeeTimesPrice() bool { return m.FeeType == FeeTypeCrypto }

// SettleFrom returns m with src's settlement (winner, resolved_at and
// resolution source, the coin and reference prices, final volume and
// liquidity) when m is unresolved and src is resolved; the prices src has
// none of stay m's. Otherwise m as it is.
func (m Market) SettleFrom(src Market) Market {
	if m.Resolved() || !src.Resolved() {
		return m
	}
	or := func(a, b *float64) *float64 {
		if a != nil {
			return a
		}
		return b
	}
	m.Winner, m.ResolvedAt, m.ResolutionSource = src.Winner, src.ResolvedAt, src.ResolutionSource
	m.CoinPriceStart, m.CoinPriceEnd = or(src.CoinPriceStart, m.CoinPriceStart), or(src.CoinPriceEnd, m.CoinPriceEnd)
	m.PriceToBeat, m.FinalPrice = or(src.PriceToBeat, m.PriceToBeat), or(src.FinalPrice, m.FinalPrice)
	m.FinalVolume, m.FinalLiquidity = or(src.FinalVolume, m.FinalVolume), or(src.FinalLiquidity, m.FinalLiquidity)
	return m
}

// MarketFilter selects markets. Zero fields do not filter.
type MarketFilter struct {
	Coin       Coin       // required by the API; "" matches every coin
	MarketType MarketType // "" matches every type
	Resolved   *bool      // nil matches both
	// StartAfter keeps markets with start_time strictly after it.
	StartAfter *time.Time
	// StartBefore keeps markets with start_time strictly before it.
	StartBefore *time.Time
	// Window, when non-nil, is a plan's data window (see Window).
	Window *Window
	Limit  int // 0 means no limit
	Offset int
}

// Window is a plan's data window over markets.
type Window struct {
	// MinStart keeps markets with start_time at or after it (zero: no bound).
	MinStart time.Time
	// MinStartByType, when non-nil, keeps only markets whose type is a key
	// and whose start_time is at or after that key's time. Types that are not
	// keys are excluded entirely.
	MinStartByType map[MarketType]time.Time
}

// Contains reports whether the window lets m through.
func (w *Window) Contains(m Market) bool {
	if w == nil {
		return true
	}
	if !w.MinStart.IsZero() && m.StartTime.Before(w.MinStart) {
		return false
	}
	if w.MinStartByType != nil {
		min, ok := w.MinStartByType[m.MarketType]
		if !ok || m.StartTime.Before(min) {
			return false
		}
	}
	return true
}

// Level is one price level of an order book.
type Level struct {
	Price float64
	Size  float64
}

// Book is an order book of one outcome token: bids best (highest) first,
// asks best (lowest) first.
type Book struct {
	Bids []Level
	Asks []Level
}

// SortSide puts a side's levels best first, as Book keeps them (bids by
// price descending, asks ascending), keeping the order of equal prices; a
// side in order already, as nearly every one is, is only read.
func SortSide(ls []Level, bids bool) {
	better := func(x, y Level) int { return cmp.Compare(x.Price, y.Price) }
	if bids {
		better = func(x, y Level) int { return cmp.Compare(y.Price, x.Price) }
	}
	for i := 1; i < len(ls); i++ {
		if better(ls[i-1], ls[i]) > 0 {
			slices.SortStableFunc(ls, better)
			return
		}
	}
}

// Snapshot is the state of a market at one instant.
type Snapshot struct {
	Time      time.Time
	CoinPrice float64
	PriceUp   float64
	PriceDown float64
	// BookUp and BookDown are nil when no book was recorded or the query
	// did not ask for books.
	BookUp   *Book
	BookDown *Book
}

// Check reports why s cannot be stored (an error matching ErrInvalid), or
// nil: its prices, and its books' prices and sizes, are finite numbers.
// No export carries a NaN or an infinity back (JSON has neither, and an
// import refuses them), so every store refuses them as it writes, as it
// does a trade's (MarketTrade.Check).
func (s Snapshot) Check() error {
	why := ""
	switch s.FirstNonFinite().Field {
	case "":
		return nil
	case "orderbook_up":
		why = "the Up book has a price or size that is not finite"
	case "orderbook_down":
		why = "the Down book has a price or size that is not finite"
	default:
		why = fmt.Sprintf("coin price %v, price up %v, price down %v: not all finite", s.CoinPrice, s.PriceUp, s.PriceDown)
	}
	return fmt.Errorf("snapshot at %s: %s: %w", s.Time.UTC().Format(time.RFC3339Nano), why, ErrInvalid)
}

// CheckSnapshots is Check of each of snaps: the first refusal, or nil.
func CheckSnapshots(snaps []Snapshot) error {
	for i := range snaps {
		if err := snaps[i].Check(); err != nil {
			return err
		}
	}
	return nil
}

// SnapshotQuery selects a page of one market's snapshots. Its times
// (From, To, After) are compared at the stores' precision: each is
// truncated to the microsecond.
type SnapshotQuery struct {
	Limit     int  // 0 means all
	Offset    int  // counted in the chosen order
	Ascending bool // false: newest first (the API's order); true: oldest first
	WithBooks bool // false: BookUp/BookDown are left nil
	// From keeps snapshots at or after it, To those strictly before it
	// (nil: no bound).
	From, To *time.Time
	// After is a keyset position: only snapshots strictly past it in the
	// chosen order are listed (later when Ascending, earlier otherwise), so
	// a walk that passes each page's last time goes on where it stopped
	// however many snapshots arrive meanwhile. nil: from the first.
	After *time.Time
}

// Tier is a customer's plan, by its wire name.
type Tier string

// Plans SPEC names.
const (
	Starter    Tier = "STARTER"
	Pro        Tier = "PRO"
	ProTrial   Tier = "PRO_TRIAL"
	Suite      Tier = "SUITE"
	Enterprise Tier = "ENTERPRISE"
)

// Tiers lists every tier, cheapest first.
var Tiers = []Tier{Starter, Pro, ProTrial, Suite, Enterprise}

// TierRank is t's place (-1: unknown) in the order of what the tiers'
// plans allow, the one order tiers are compared by (billing: whether an
// event would lower a customer's tier, BillingOutcomeOf), not Tiers'
// price order. The plans themselves are the api's plan table (DESIGN 4),
// which a test holds this order to: each tier's plan allows all that the
// ones ranked before it do, except that neither of PRO_TRIAL (replay, no
// exchange data) and SUITE (exchange data, no replay) allows all the
// other does; SUITE, limited as PRO is (REFERENCE), comes after.
func TierRank(t Tier) int {
	switch t {
	case Starter:
		return 0
	case ProTrial:
		return 1
	case Suite:
		return 2
	case Pro:
		return 3
	case Enterprise:
		return 4
	}
	return -1
}

// Valid reports whether t is a known tier.
func (t Tier) Valid() bool {
	for _, k := range Tiers {
		if t == k {
			return true
		}
	}
	return false
}

// Customer is an account holder.
type Customer struct {
	ID    string
	Email string
	Name  string
	Tier  Tier
	// Limits are the customer's own allowances (the ENTERPRISE plan's
	// custom limits); each 0 keeps the plan's default.
	Limits    Limits
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Limits are a customer's own allowances, the ENTERPRISE plan's custom
// limits (DESIGN 4 and 14), set with `updown customers set-limits`. Each
// 0 keeps the plan's default; none is negative.
type Limits struct {
	// PerMinute and PerDay are request allowances.
	PerMinute, PerDay int
	// AIGenerationsPerMonth is the monthly Backtest AI generation quota
	// (the plan's default: unlimited).
	AIGenerationsPerMonth int
	// SweepTrials, SweepMarkets and SweepReplays are the most trials,
	// markets and replays (trials × markets) of one sweep.
	SweepTrials, SweepMarkets, SweepReplays int
}

// Check reports a negative allowance (ErrInvalid), or nil.
func (l Limits) Check() error {
	if l.PerMinute < 0 || l.PerDay < 0 || l.AIGenerationsPerMonth < 0 || l.SweepTrials < 0 || l.SweepMarkets < 0 || l.SweepReplays < 0 {
		return fmt.Errorf("limits %+v: an allowance is 0 (the plan's default) or more: %w", l, ErrInvalid)
	}
	return nil
}

// APIKey is a customer's key as stored: its hash, never the key itself.
type APIKey struct {
	ID         string
	CustomerID string
	Prefix     string
	Hash       []byte
	CreatedAt  time.Time
	RevokedAt  *time.Time
}

// ExchangeKind is the exchange market an order book or trade belongs to.
type ExchangeKind string

// Exchange market kinds, as the API paths spell them.
const (
	Spot   ExchangeKind = "spot"
	Future ExchangeKind = "future"
)

// Valid reports whether k is spot or future.
func (k ExchangeKind) Valid() bool { return k == Spot || k == Future }

// DepthLevel is one level of an exchange order book.
type DepthLevel struct {
	Price    float64
	Quantity float64
}

// DepthSnapshot is an exchange order book at one instant.
type DepthSnapshot struct {
	Symbol       string // trading pair, e.g. BTCUSDT
	Kind         ExchangeKind
	Time         time.Time // millisecond precision
	CoinPrice    float64
	Bids         []DepthLevel
	Asks         []DepthLevel
	LastUpdateID int64
}

// DepthFilter selects depth snapshots of one symbol and kind.
type DepthFilter struct {
	Symbol string
	Kind   ExchangeKind
	From   *time.Time // at or after
	To     *time.Time // at or before
	// MinTime is a plan's data window: snapshots before it are excluded
	// (zero: no bound).
	MinTime time.Time
	Limit   int // 0 means no limit
	Offset  int
	// Ascending lists oldest first; false lists newest first.
	Ascending bool
	// After is a keyset position, as SnapshotQuery.After: only snapshots
	// strictly past it in the chosen order. The count ListDepth returns
	// ignores it.
	After *time.Time
}

// Trade is one exchange trade.
type Trade struct {
	ID           int64
	Price        float64
	Qty          float64
	QuoteQty     float64
	Time         time.Time // millisecond precision
	IsBuyerMaker bool
	IsBestMatch  *bool // spot only; nil on futures
}

// MarketTrade is one trade on a market's order book as Polymarket reported
// it (a last_trade_price event).
type MarketTrade struct {
	Time    time.Time // the upstream's timestamp (millisecond precision)
	Outcome string    // OutcomeUp or OutcomeDown: the token traded
	Price   float64
	Size    float64 // shares
	Side    string  // SideBuy or SideSell, the taker's side
	// FeeRateBps is the fee rate the upstream reported for the trade, in
	// basis points.
	FeeRateBps float64
	// TxHash is the settlement transaction when the upstream names it.
	TxHash string
}

// Taker sides of a MarketTrade, as the upstream spells them.
const (
	SideBuy  = "BUY"
	SideSell = "SELL"
)

// MarketTradeQuery selects a page of one market's trades.
//
// Oldest first, trades are ordered by Time, then (for trades at the same
// instant) by Outcome, Side, Price, Size, FeeRateBps and TxHash, strings
// compared bytewise (CompareMarketTrades); newest first is exactly the
// reverse, so a page is the same on every store.
type MarketTradeQuery struct {
	Limit     int  // 0 means all
	Offset    int  // counted in the chosen order
	Ascending bool // false: newest first (the API's order)
	// From keeps trades at or after it, To those strictly before it (nil:
	// no bound); both are truncated to the microsecond.
	From, To *time.Time
	// After is a keyset position, a whole trade key: only trades strictly
	// past it in the chosen order (CompareMarketTrades; later when
	// Ascending, earlier otherwise) are listed, so a walk that passes each
	// page's last trade goes on where it stopped, however many trades
	// arrive meanwhile and however many share an instant. nil: from the
	// first.
	After *MarketTrade
}

// Gap is a stretch of a live market the recorder lacks data of, for longer
// than its cadence allows (DESIGN 9: over 3 s). Its Kind says what is
// missing: snapshots (the zero Kind), or trade data alone.
type Gap struct {
	From time.Time // the last snapshot (or trade data) before the gap, or the window's start
	To   time.Time // the first snapshot (or trade data) after it, or the window's end
	Kind GapKind
}

// GapKind is what a gap lacks.
type GapKind string

// Gap kinds. A store keeps the gaps of each kind apart: a trades gap is
// merged only with trades gaps.
const (
	// GapSnapshots: no snapshot was recorded (the zero value, and the kind
	// of every gap recorded before gaps had kinds).
	GapSnapshots GapKind = ""
	// GapTrades: snapshots went on (from REST) but the trade feed was
	// down, so trades of the stretch may be missing. Resting orders fill on
	// trades (DESIGN 6), so a replay over one says so.
	GapTrades GapKind = "trades"
)

// MarketActivityStore keeps what happens on a market beside its snapshots:
// its trades and its recording gaps (DESIGN 9). Times are kept to the
// microsecond, as everywhere (see Store).
type MarketActivityStore interface {
	// AppendMarketTrades stores trades of the market with the slug
	// (ErrNotFound if there is no such market). Trades need not be sorted.
	// A trade equal in every field (its time to the microsecond) to one
	// already stored, or to an earlier one of the call, is ignored, so a
	// repeated write stores nothing twice. A trade that fails
	// MarketTrade.Check is ErrInvalid, and then nothing of the call is
	// stored. It returns how many of trades it stored: the rest the
	// market had already (or the call had at an earlier index).
	AppendMarketTrades(ctx context.Context, slug string, trades []MarketTrade) (int, error)
	// ListMarketTrades returns trades of the market per q (see
	// MarketTradeQuery for the order) and the number of trades the market
	// has in all; an unknown slug is ErrNotFound, a negative Limit or
	// Offset ErrInvalid.
	ListMarketTrades(ctx context.Context, slug string, q MarketTradeQuery) ([]MarketTrade, int, error)
	// CountMarketTrades returns how many of the market's trades fall in q's
	// time range (From, To); After, Limit and Offset are ignored, so the
	// count stays the same along a cursor walk. An unknown slug is
	// ErrNotFound.
	CountMarketTrades(ctx context.Context, slug string, q MarketTradeQuery) (int, error)
	// RecordGaps stores recording gaps of the market (ErrNotFound if there
	// is no such market). Gaps that overlap or touch one of the same kind
	// already stored (or one of the call) are merged with it (MergeGaps),
	// so recording the same gap twice keeps one. A gap whose To is not
	// after its From (to the microsecond), or of an unknown kind, is
	// ErrInvalid, and then nothing of the call is stored. It returns how
	// many of gaps changed what the market keeps, taken in order (NewGaps):
	// a gap within the stored gaps of its kind and the gaps before it in
	// the call, merged, is held already, so a gap given twice counts once.
	RecordGaps(ctx context.Context, slug string, gaps []Gap) (int, error)
	// RemoveGaps takes the stretches of the gaps out of the market's
	// stored gaps of their kind (SubtractGaps): data once missing there
	// has been recovered, as when a trades gap is backfilled from another
	// source. A stored gap inside one goes, one that overlaps one keeps
	// the parts outside it; a stretch with no stored gap changes nothing.
	// Unknown market and invalid gaps as RecordGaps.
	RemoveGaps(ctx context.Context, slug string, gaps []Gap) error
	// ListGaps returns the market's gaps of every kind, oldest first (at
	// an equal From, snapshots gaps first); an unknown slug is
	// ErrNotFound.
	ListGaps(ctx context.Context, slug string) ([]Gap, error)
	// ListGapsEndingAfter returns the gaps of kind, of every market, whose
	// To is after t: by market slug, then as ListGaps lists a market's. It
	// is one question where ListGaps would be one a market (a collector's
	// start looks for the trades gaps earlier runs left). A kind not
	// known is ErrInvalid.
	ListGapsEndingAfter(ctx context.Context, kind GapKind, t time.Time) ([]MarketGap, error)
}

// MarketGap is a gap of the market with the slug Market.
type MarketGap struct {
	Market string
	Gap
}

// MicroRange returns the Unix-microsecond range [lo, hi) that q selects,
// with its keyset position applied when keyset is true. Open ends are
// math.MinInt64 and math.MaxInt64; lo ≥ hi selects nothing.
func (q SnapshotQuery) MicroRange(keyset bool) (lo, hi int64) {
	lo, hi = math.MinInt64, math.MaxInt64
	if q.From != nil {
		lo = q.From.UnixMicro()
	}
	if q.To != nil {
		hi = q.To.UnixMicro()
	}
	if keyset && q.After != nil {
		if a := q.After.UnixMicro(); q.Ascending {
			lo = max(lo, a+1)
		} else {
			hi = min(hi, a)
		}
	}
	return lo, hi
}
