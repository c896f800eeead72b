package transfer

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/updown/updown/store"
)

// Parquet (DESIGN 13): flat columns that pandas/pyarrow, polars and DuckDB
// read as they are. Times are timestamps in microseconds, UTC; prices and
// sizes doubles; an order book side a list of {price, size} structs (empty
// when no book was recorded), and book_up_recorded and book_down_recorded
// tell a book without levels from none. Columns are zstd-compressed. A file holds one
// kind of record: snapshots (with or without books), markets, market trades,
// recording gaps, or depth snapshots.

// ParquetMediaType is Parquet's media type, for Accept and Content-Type.
const ParquetMediaType = "application/vnd.apache.parquet"

// parquetRowGroup is the most rows a writer holds before it writes them
// out as a row group: what bounds its memory (a snapshot with two books of
// 20 levels a side is about 1.4 KB decoded).
const parquetRowGroup = 8192

// ParquetLevel is one order-book level.
type ParquetLevel struct {
	Price float64 `parquet:"price"`
	Size  float64 `parquet:"size"`
}

// ParquetSnapshot is a snapshot row without books.
type ParquetSnapshot struct {
	Slug      string    `parquet:"slug,dict"`
	Time      time.Time `parquet:"time,timestamp(microsecond:utc),delta"`
	CoinPrice float64   `parquet:"coin_price"`
	PriceUp   float64   `parquet:"price_up"`
	PriceDown float64   `parquet:"price_down"`
}

// ParquetBookSnapshot is a snapshot row with its two books.
type ParquetBookSnapshot struct {
	Slug         string         `parquet:"slug,dict"`
	Time         time.Time      `parquet:"time,timestamp(microsecond:utc),delta"`
	CoinPrice    float64        `parquet:"coin_price"`
	PriceUp      float64        `parquet:"price_up"`
	PriceDown    float64        `parquet:"price_down"`
	BookUpBids   []ParquetLevel `parquet:"book_up_bids,list"`
	BookUpAsks   []ParquetLevel `parquet:"book_up_asks,list"`
	BookDownBids []ParquetLevel `parquet:"book_down_bids,list"`
	BookDownAsks []ParquetLevel `parquet:"book_down_asks,list"`
	// BookUpRecorded and BookDownRecorded say whether the snapshot has
	// that book: a book recorded without levels has empty lists, as no
	// book has. Null in files written before they were.
	BookUpRecorded   *bool `parquet:"book_up_recorded,optional"`
	BookDownRecorded *bool `parquet:"book_down_recorded,optional"`
}

// ParquetTickSizeChange is one change of a market's tick size.
type ParquetTickSizeChange struct {
	Time     time.Time `parquet:"time,timestamp(microsecond:utc)"`
	TickSize float64   `parquet:"tick_size"`
}

// ParquetMarket is a market row: SPEC 2.1's fields, the coin and the
// upstream's fields of DESIGN 9.
type ParquetMarket struct {
	Slug           string     `parquet:"slug"`
	MarketID       string     `parquet:"market_id"`
	EventID        string     `parquet:"event_id"`
	Coin           string     `parquet:"coin,dict"`
	MarketType     string     `parquet:"market_type,dict"`
	StartTime      time.Time  `parquet:"start_time,timestamp(microsecond:utc)"`
	EndTime        time.Time  `parquet:"end_time,timestamp(microsecond:utc)"`
	CoinPriceStart *float64   `parquet:"coin_price_start,optional"`
	CoinPriceEnd   *float64   `parquet:"coin_price_end,optional"`
	ConditionID    string     `parquet:"condition_id"`
	ClobTokenUp    string     `parquet:"clob_token_up"`
	ClobTokenDown  string     `parquet:"clob_token_down"`
	Winner         *string    `parquet:"winner,optional,dict"`
	FinalVolume    *float64   `parquet:"final_volume,optional"`
	FinalLiquidity *float64   `parquet:"final_liquidity,optional"`
	ResolvedAt     *time.Time `parquet:"resolved_at,optional,timestamp(microsecond:utc)"`
	CreatedAt      time.Time  `parquet:"created_at,timestamp(microsecond:utc)"`
	UpdatedAt      time.Time  `parquet:"updated_at,timestamp(microsecond:utc)"`
	// DESIGN 9: the upstream's slug, fee schedule, order rules, and where
	// the winner and reference prices came from. upstream_slug, fee_type
	// and resolution_source are null where unknown, as in the JSON answer
	// and the JSON Lines export (files written before they were read "").
	UpstreamSlug     *string                 `parquet:"upstream_slug,optional"`
	TakerFeeRate     *float64                `parquet:"taker_fee_rate,optional"`
	FeeExponent      *int64                  `parquet:"fee_exponent,optional"`
	FeeType          *string                 `parquet:"fee_type,optional,dict"`
	MakerRebateRate  *float64                `parquet:"maker_rebate_rate,optional"`
	TickSize         *float64                `parquet:"tick_size,optional"`
	TickSizeChanges  []ParquetTickSizeChange `parquet:"tick_size_changes,list"`
	MinOrderSize     *float64                `parquet:"min_order_size,optional"`
	ResolutionSource *string                 `parquet:"resolution_source,optional,dict"`
	PriceToBeat      *float64                `parquet:"price_to_beat,optional"`
	FinalPrice       *float64                `parquet:"final_price,optional"`
	// DataSources says where the market's data came from (store.Market).
	DataSources []string `parquet:"data_sources,list"`
}

// ParquetDepthLevel is one exchange order-book level.
type ParquetDepthLevel struct {
	Price    float64 `parquet:"price"`
	Quantity float64 `parquet:"quantity"`
}

// ParquetDepth is an exchange depth snapshot row.
type ParquetDepth struct {
	Symbol       string              `parquet:"symbol,dict"`
	Time         time.Time           `parquet:"time,timestamp(microsecond:utc),delta"`
	CoinPrice    float64             `parquet:"coin_price"`
	Bids         []ParquetDepthLevel `parquet:"bids,list"`
	Asks         []ParquetDepthLevel `parquet:"asks,list"`
	LastUpdateID int64               `parquet:"last_update_id,delta"`
}

// ParquetTrade is a market trade row.
type ParquetTrade struct {
	Slug       string    `parquet:"slug,dict"`
	Time       time.Time `parquet:"time,timestamp(microsecond:utc),delta"`
	Outcome    string    `parquet:"outcome,dict"`
	Side       string    `parquet:"side,dict"`
	Price      float64   `parquet:"price"`
	Size       float64   `parquet:"size"`
	FeeRateBps float64   `parquet:"fee_rate_bps"`
	TxHash     string    `parquet:"tx_hash"`
}

// ParquetTradeRow is the row of a market trade.
func ParquetTradeRow(slug string, t *store.MarketTrade) ParquetTrade {
	return ParquetTrade{Slug: slug, Time: t.Time.UTC(), Outcome: t.Outcome, Side: t.Side, Price: t.Price, Size: t.Size,
		FeeRateBps: t.FeeRateBps, TxHash: t.TxHash}
}

// ParquetWriter writes rows of T to a Parquet file, a row group at a time.
// Close writes the footer: the file is complete only then.
type ParquetWriter[T any] struct {
	w   *parquet.GenericWriter[T]
	buf []T
}

// NewParquetWriter starts a Parquet file of rows of T on w.
func NewParquetWriter[T any](w io.Writer) *ParquetWriter[T] {
	return &ParquetWriter[T]{
		w: parquet.NewGenericWriter[T](w, parquet.MaxRowsPerRowGroup(parquetRowGroup),
			parquet.Compression(&parquet.Zstd), createdBy()),
		buf: make([]T, 0, 256),
	}
}

// Write adds a row.
func (p *ParquetWriter[T]) Write(row T) error {
	p.buf = append(p.buf, row)
	if len(p.buf) == cap(p.buf) {
		return p.flush()
	}
	return nil
}

func (p *ParquetWriter[T]) flush() error {
	if len(p.buf) == 0 {
		return nil
	}
	_, err := p.w.Write(p.buf)
	clear(p.buf) // drop references to books already written
	p.buf = p.buf[:0]
	if err != nil {
		return fmt.Errorf("transfer: write parquet: %w", err)
	}
	return nil
}

// Close writes what is buffered and the file's footer.
func (p *ParquetWriter[T]) Close() error {
	if err := p.flush(); err != nil {
		return err
	}
	if err := p.w.Close(); err != nil {
		return fmt.Errorf("transfer: close parquet: %w", err)
	}
	return nil
}

// ParquetSnapshotRow is the row of a snapshot without books.
func ParquetSnapshotRow(slug string, s *store.Snapshot) ParquetSnapshot {
	return ParquetSnapshot{Slug: slug, Time: s.Time.UTC(), CoinPrice: s.CoinPrice, PriceUp: s.PriceUp, PriceDown: s.PriceDown}
}

// ParquetBookSnapshotRow is the row of a snapshot with its books.
func ParquetBookSnapshotRow(slug string, s *store.Snapshot) ParquetBookSnapshot {
	r := ParquetBookSnapshot{Slug: slug, Time: s.Time.UTC(), CoinPrice: s.CoinPrice, PriceUp: s.PriceUp, PriceDown: s.PriceDown}
	up, down := s.BookUp != nil, s.BookDown != nil
	r.BookUpRecorded, r.BookDownRecorded = &up, &down
	if up {
		r.BookUpBids, r.BookUpAsks = parquetLevels(s.BookUp.Bids), parquetLevels(s.BookUp.Asks)
	}
	if down {
		r.BookDownBids, r.BookDownAsks = parquetLevels(s.BookDown.Bids), parquetLevels(s.BookDown.Asks)
	}
	return r
}

func parquetLevels(ls []store.Level) []ParquetLevel {
	out := make([]ParquetLevel, len(ls))
	for i, l := range ls {
		out[i] = ParquetLevel{Price: l.Price, Size: l.Size}
	}
	return out
}

// ParquetMarketRow is the row of a market.
func ParquetMarketRow(m *store.Market) ParquetMarket {
	r := ParquetMarket{
		Slug: m.Slug, MarketID: m.MarketID, EventID: m.EventID, Coin: string(m.Coin), MarketType: string(m.MarketType),
		StartTime: m.StartTime.UTC(), EndTime: m.EndTime.UTC(),
		CoinPriceStart: m.CoinPriceStart, CoinPriceEnd: m.CoinPriceEnd,
		ConditionID: m.ConditionID, ClobTokenUp: m.ClobTokenUp, ClobTokenDown: m.ClobTokenDown,
		Winner: m.Winner, FinalVolume: m.FinalVolume, FinalLiquidity: m.FinalLiquidity,
		CreatedAt: m.CreatedAt.UTC(), UpdatedAt: m.UpdatedAt.UTC(),
		UpstreamSlug: nonEmpty(m.UpstreamSlug), TakerFeeRate: m.TakerFeeRate, MakerRebateRate: m.MakerRebateRate,
		FeeType: nonEmpty(m.FeeType), TickSize: m.TickSize, MinOrderSize: m.MinOrderSize,
		ResolutionSource: nonEmpty(m.ResolutionSource), PriceToBeat: m.PriceToBeat, FinalPrice: m.FinalPrice,
		TickSizeChanges: make([]ParquetTickSizeChange, len(m.TickSizeChanges)),
		DataSources:     m.DataSources,
	}
	if m.ResolvedAt != nil {
		t := m.ResolvedAt.UTC()
		r.ResolvedAt = &t
	}
	if m.FeeExponent != nil {
		e := int64(*m.FeeExponent)
		r.FeeExponent = &e
	}
	for i, c := range m.TickSizeChanges {
		r.TickSizeChanges[i] = ParquetTickSizeChange{Time: c.Time.UTC(), TickSize: c.TickSize}
	}
	return r
}

// nonEmpty is s, or nil (a Parquet null) when s is empty: an unknown
// text field is null in every format of the market.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// TextOf is a nullable text column's value: "" for null.
func TextOf(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ParquetGap is a market's recording gap.
type ParquetGap struct {
	Slug string    `parquet:"slug,dict"`
	From time.Time `parquet:"from,timestamp(microsecond:utc)"`
	To   time.Time `parquet:"to,timestamp(microsecond:utc)"`
	// Kind is store.GapKind's Name: "snapshots" or "trades".
	Kind string `parquet:"kind,dict"`
}

// ParquetGapRow is the row of a recording gap.
func ParquetGapRow(slug string, g *store.Gap) ParquetGap {
	return ParquetGap{Slug: slug, From: g.From.UTC(), To: g.To.UTC(), Kind: g.Kind.Name()}
}

// ParquetDepthRow is the row of an exchange depth snapshot.
func ParquetDepthRow(d *store.DepthSnapshot) ParquetDepth {
	side := func(ls []store.DepthLevel) []ParquetDepthLevel {
		out := make([]ParquetDepthLevel, len(ls))
		for i, l := range ls {
			out[i] = ParquetDepthLevel{Price: l.Price, Quantity: l.Quantity}
		}
		return out
	}
	return ParquetDepth{Symbol: d.Symbol, Time: d.Time.UTC(), CoinPrice: d.CoinPrice, Bids: side(d.Bids), Asks: side(d.Asks), LastUpdateID: d.LastUpdateID}
}

// parquetEncoder is the Encoder of a Parquet export: one kind of record a
// file. Flush completes the file, so it is called once, at the end.
type parquetEncoder struct {
	what    What
	books   bool
	markets *ParquetWriter[ParquetMarket]
	snaps   *ParquetWriter[ParquetSnapshot]
	booked  *ParquetWriter[ParquetBookSnapshot]
	trades  *ParquetWriter[ParquetTrade]
	gaps    *ParquetWriter[ParquetGap]
}

// NewParquetEncoder returns an encoder of markets, snapshots (with their
// books when books is set), market trades or recording gaps as one Parquet
// file.
func NewParquetEncoder(w io.Writer, what What, books bool) (Encoder, error) {
	e := &parquetEncoder{what: what, books: books}
	switch {
	case what == Markets:
		e.markets = NewParquetWriter[ParquetMarket](w)
	case what == Snapshots && books:
		e.booked = NewParquetWriter[ParquetBookSnapshot](w)
	case what == Snapshots:
		e.snaps = NewParquetWriter[ParquetSnapshot](w)
	case what == Trades:
		e.trades = NewParquetWriter[ParquetTrade](w)
	case what == Gaps:
		e.gaps = NewParquetWriter[ParquetGap](w)
	default:
		return nil, errors.New("transfer: a Parquet file holds one kind of record: export markets, snapshots, trades or gaps")
	}
	return e, nil
}

func (e *parquetEncoder) Encode(r Record) error {
	if err := checkFinite(r); err != nil {
		return err
	}
	switch {
	case r.Market != nil && e.markets != nil:
		return e.markets.Write(ParquetMarketRow(r.Market))
	case r.Snapshot != nil && e.booked != nil:
		return e.booked.Write(ParquetBookSnapshotRow(r.Slug, r.Snapshot))
	case r.Snapshot != nil && e.snaps != nil:
		return e.snaps.Write(ParquetSnapshotRow(r.Slug, r.Snapshot))
	case r.Trade != nil && e.trades != nil:
		return e.trades.Write(ParquetTradeRow(r.Slug, r.Trade))
	case r.Gap != nil && e.gaps != nil:
		return e.gaps.Write(ParquetGapRow(r.Slug, r.Gap))
	}
	return fmt.Errorf("transfer: this Parquet file holds %s only", e.what)
}

func (e *parquetEncoder) Flush() error {
	switch {
	case e.markets != nil:
		return e.markets.Close()
	case e.booked != nil:
		return e.booked.Close()
	case e.trades != nil:
		return e.trades.Close()
	case e.gaps != nil:
		return e.gaps.Close()
	}
	return e.snaps.Close()
}
