package collect

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	// Embedded zone data: the default scheme names hourly and daily markets
	// in US Eastern time, which must not depend on the host's tzdata.
	_ "time/tzdata"

	"github.com/updown/updown/store"
)

// Slug is a market's identifier as SPEC shapes it:
// <coin lowercase>-updown-<market_type>-<epoch seconds of the window start>.
func Slug(c store.Coin, mt store.MarketType, start time.Time) string {
	return strings.ToLower(string(c)) + "-updown-" + string(mt) + "-" + strconv.FormatInt(start.Unix(), 10)
}

// SlugScheme lays out a series' windows and names their markets upstream.
//
// Polymarket names 5m and 15m up/down markets by the Unix start of their
// window ({coin}-updown-15m-1777467600), but longer windows by other forms,
// which have changed over time; a deployment that meets another form
// supplies its own scheme instead of changing the collector.
type SlugScheme interface {
	// Window returns the window [start, end) of the market of coin c and
	// type mt that contains t.
	Window(c store.Coin, mt store.MarketType, t time.Time) (start, end time.Time)
	// Slugs returns the upstream slugs to look the market of the window
	// starting at start up by, in order of preference.
	Slugs(c store.Coin, mt store.MarketType, start time.Time) []string
}

// PolymarketScheme is the default SlugScheme: what Polymarket was seen to
// use. Only the 5m and 15m forms are documented facts (REFERENCE.md); the
// others are assumptions, checked at run time against Gamma's eventStartTime
// and endDate (a disagreement is logged):
//
//   - 5m, 15m: {coin}-updown-{5m|15m}-{unix start}, windows aligned to
//     their length (fact).
//   - 1hr: {name}-up-or-down-{month}-{day}-{hour}{am|pm}-et, naming the US
//     Eastern hour the window starts, e.g.
//     bitcoin-up-or-down-january-20-5pm-et for 17:00–18:00 ET; windows on
//     whole hours.
//   - 4hr: {coin}-updown-4h-{unix start}, windows aligned to four hours of
//     Unix time (00:00, 04:00, … UTC).
//   - 24hr: {name}-up-or-down-on-{month}-{day}, the window from 12:00 ET the
//     day before to 12:00 ET on the named day.
//
// {coin} is btc, eth or sol and {name} bitcoin, ethereum or solana.
type PolymarketScheme struct {
	et *time.Location
}

// NewPolymarketScheme returns the default scheme.
func NewPolymarketScheme() *PolymarketScheme {
	et, err := time.LoadLocation("America/New_York")
	if err != nil { // cannot happen: time/tzdata is embedded
		panic(fmt.Sprintf("collect: load US Eastern time: %v", err))
	}
	return &PolymarketScheme{et: et}
}

// Window implements SlugScheme.
func (s *PolymarketScheme) Window(_ store.Coin, mt store.MarketType, t time.Time) (start, end time.Time) {
	t = t.UTC()
	if mt != store.H24 {
		start = t.Truncate(mt.Duration())
		return start, start.Add(mt.Duration())
	}
	local := t.In(s.et)
	noon := time.Date(local.Year(), local.Month(), local.Day(), 12, 0, 0, 0, s.et)
	if local.Before(noon) {
		return noon.AddDate(0, 0, -1).UTC(), noon.UTC()
	}
	return noon.UTC(), noon.AddDate(0, 0, 1).UTC()
}

// Slugs implements SlugScheme.
func (s *PolymarketScheme) Slugs(c store.Coin, mt store.MarketType, start time.Time) []string {
	coin := strings.ToLower(string(c))
	unix := strconv.FormatInt(start.Unix(), 10)
	switch mt {
	case store.M5, store.M15:
		return []string{coin + "-updown-" + string(mt) + "-" + unix}
	case store.H4:
		return []string{coin + "-updown-4h-" + unix}
	case store.H1:
		local := start.In(s.et)
		h, half := local.Hour()%12, "am"
		if local.Hour() >= 12 {
			half = "pm"
		}
		if h == 0 {
			h = 12
		}
		return []string{fmt.Sprintf("%s-up-or-down-%s-%d-%d%s-et", coinName(c),
			strings.ToLower(local.Month().String()), local.Day(), h, half)}
	case store.H24:
		_, end := s.Window(c, mt, start)
		local := end.In(s.et)
		return []string{fmt.Sprintf("%s-up-or-down-on-%s-%d", coinName(c),
			strings.ToLower(local.Month().String()), local.Day())}
	}
	return nil
}

// coinName is the coin's name as Polymarket's longer slugs spell it.
func coinName(c store.Coin) string {
	switch c {
	case store.BTC:
		return "bitcoin"
	case store.ETH:
		return "ethereum"
	case store.SOL:
		return "solana"
	}
	return strings.ToLower(string(c))
}
