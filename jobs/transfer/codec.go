package transfer

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/updown/updown/store"
)

// TimeLayout writes a record's times (markets, snapshots, trades, gaps)
// as stores keep them: UTC, to the microsecond, six fraction digits always.
// The api's JSON answers write them with it too, so that a row reads the
// same in JSON, CSV and JSON Lines (and Parquet's microsecond timestamps).
const TimeLayout = "2006-01-02T15:04:05.000000Z07:00"

// AppendTime appends t in TimeLayout.
func AppendTime(b []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(b, TimeLayout)
}

// parseTime reads an RFC 3339 time, with any fraction and offset, as UTC.
func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("not an RFC 3339 time: %q", s)
	}
	return t.UTC(), nil
}

// errNotFinite is a NaN or an infinity, which neither JSON nor a store
// means.
var errNotFinite = errors.New("not a finite number")

// appendNum writes v in the shortest decimal that reads back as v, without
// an exponent (CSV readers and spreadsheets take it as it is).
func appendNum(b []byte, v float64) ([]byte, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return b, errNotFinite
	}
	return strconv.AppendFloat(b, v, 'f', -1, 64), nil
}

func parseNum(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("not a number: %q", s)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%w: %q", errNotFinite, s)
	}
	return v, nil
}

// Check reports what makes r unfit for a store, as a JSON Lines or CSV
// import refuses it (a NaN or an infinity, a market without a coin, a
// trade without a side, ...), and puts its books' sides best first. A
// reader of another format (the Parquet of an export) calls it on each
// record it makes.
func Check(r *Record) error {
	switch {
	case r.Market != nil:
		return checkMarket(r.Market)
	case r.Snapshot != nil:
		return checkSnapshot(r.Slug, r.Snapshot)
	case r.Trade != nil:
		return checkTrade(r.Slug, r.Trade)
	case r.Gap != nil:
		return checkGap(r.Slug, r.Gap)
	}
	return errors.New("an empty record")
}

// checkMarket reports what makes m unfit for a store.
func checkMarket(m *store.Market) error {
	switch {
	case m.Slug == "":
		return errors.New("market without a slug")
	case !m.Coin.Valid():
		return fmt.Errorf("market %s: coin %q is not BTC, ETH or SOL", m.Slug, m.Coin)
	case !m.MarketType.Valid():
		return fmt.Errorf("market %s: unknown market_type %q", m.Slug, m.MarketType)
	case m.StartTime.IsZero() || m.EndTime.IsZero():
		return fmt.Errorf("market %s: start_time and end_time are required", m.Slug)
	case !m.EndTime.After(m.StartTime):
		return fmt.Errorf("market %s: end_time %s is not after start_time %s", m.Slug,
			m.EndTime.Format(time.RFC3339Nano), m.StartTime.Format(time.RFC3339Nano))
	case m.Winner != nil && *m.Winner != store.OutcomeUp && *m.Winner != store.OutcomeDown && *m.Winner != store.OutcomeFiftyFifty:
		return fmt.Errorf("market %s: winner %q is not Up, Down or 50-50", m.Slug, *m.Winner)
	}
	nf := m.FirstNonFinite()
	if nf.Field != "" && nf.Field != "tick_size_changes" {
		return fmt.Errorf("market %s: %s: %w", m.Slug, nf.Field, errNotFinite)
	}
	for _, src := range m.DataSources {
		// A CSV cell holds the sources space-separated.
		if src == "" || strings.ContainsFunc(src, func(r rune) bool { return unicode.IsSpace(r) || r == 0 }) {
			return fmt.Errorf("market %s: data source %q: want a name without spaces", m.Slug, src)
		}
	}
	for i, c := range m.TickSizeChanges {
		if c.Time.IsZero() {
			return fmt.Errorf("market %s: a tick size change without a time", m.Slug)
		}
		if nf.Field == "tick_size_changes" && nf.Index == i {
			return fmt.Errorf("market %s: tick size change at %s: %w", m.Slug, c.Time.Format(time.RFC3339Nano), errNotFinite)
		}
	}
	return nil
}

// checkTrade reports what makes t, a trade of the market with the slug,
// unfit for a store.
func checkTrade(slug string, t *store.MarketTrade) error {
	if slug == "" {
		return errors.New("trade without a slug")
	}
	if err := t.Check(); err != nil {
		return fmt.Errorf("trade of %s: %w", slug, err)
	}
	return nil
}

// checkGap reports what makes g, a gap of the market with the slug, unfit
// for a store.
func checkGap(slug string, g *store.Gap) error {
	if slug == "" {
		return errors.New("gap without a slug")
	}
	if err := g.Check(); err != nil {
		return fmt.Errorf("gap of %s: %w", slug, err)
	}
	return nil
}

// checkSnapshot reports what makes s unfit for a store.
func checkSnapshot(slug string, s *store.Snapshot) error {
	if slug == "" {
		return errors.New("snapshot without a slug")
	}
	if s.Time.IsZero() {
		return fmt.Errorf("snapshot of %s without a time", slug)
	}
	if nf := s.FirstNonFinite(); nf.Field != "" {
		where := ""
		if nf.Field == "orderbook_up" || nf.Field == "orderbook_down" {
			where = "book level: "
		}
		return fmt.Errorf("snapshot of %s at %s: %s%w", slug, s.Time.Format(time.RFC3339Nano), where, errNotFinite)
	}
	for _, b := range []*store.Book{s.BookUp, s.BookDown} {
		if b == nil {
			continue
		}
		// Best first, as store.Book keeps them, where a file has them
		// otherwise: Polymarket's REST book, for one, lists both sides
		// worst first, and the replay engine reads a side's first level as
		// its best.
		store.SortSide(b.Bids, true)
		store.SortSide(b.Asks, false)
	}
	return nil
}

// checkFinite refuses a record with a NaN or an infinity, which no format
// of an export carries back (JSON has neither, and an import refuses
// them), naming the record and the field. It allocates only to say so.
func checkFinite(r Record) error {
	switch {
	case r.Market != nil:
		if nf := r.Market.FirstNonFinite(); nf.Field != "" {
			return fmt.Errorf("transfer: export market %s: %s: %w: %v", r.Market.Slug, nf.Field, errNotFinite, nf.Value)
		}
	case r.Snapshot != nil:
		if nf := r.Snapshot.FirstNonFinite(); nf.Field != "" {
			return fmt.Errorf("transfer: export snapshot of %s at %s: %s: %w: %v", r.Slug, AppendTime(nil, r.Snapshot.Time), nf.Field, errNotFinite, nf.Value)
		}
	case r.Trade != nil:
		if nf := r.Trade.FirstNonFinite(); nf.Field != "" {
			return fmt.Errorf("transfer: export trade of %s at %s: %s: %w: %v", r.Slug, AppendTime(nil, r.Trade.Time), nf.Field, errNotFinite, nf.Value)
		}
	}
	return nil
}
