package collect

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/updown/updown/jobs/series"
	"github.com/updown/updown/store"
)

// Slug is a market's identifier as SPEC shapes it:
// <coin lowercase>-updown-<market_type>-<epoch seconds of the window start>.
func Slug(c store.Coin, mt store.MarketType, start time.Time) string {
	return strings.ToLower(string(c)) + "-updown-" + string(mt) + "-" + strconv.FormatInt(start.Unix(), 10)
}

// SlugScheme lays out a series' windows and names their markets upstream.
type SlugScheme interface {
	// Window returns the window [start, end) of the market of coin c and
	// type mt that contains t.
	Window(c store.Coin, mt store.MarketType, t time.Time) (start, end time.Time)
	// Slugs returns the upstream slugs to look the market of the window
	// starting at start up by, in order of preference.
	Slugs(c store.Coin, mt store.MarketType, start time.Time) []string
}

// PolymarketScheme is the default SlugScheme: Polymarket's series as
// REFERENCE.md's table gives them (2026), with the older forms as
// fallbacks:
//
//   - 5m, 15m: {coin}-updown-{5m|15m}-{unix start}, windows aligned to
//     their length in UTC.
//   - 1hr: {name}-up-or-down-{month}-{day}-{year}-{h}{am|pm}-et, naming the
//     US Eastern hour the window starts (12am for midnight, 12pm for noon),
//     e.g. bitcoin-up-or-down-november-24-2026-1am-et; before March 2026
//     the same without the year.
//   - 4hr: {coin}-updown-4h-{unix start}, windows aligned to US Eastern
//     00/04/08/12/16/20 (not UTC): on the days summer time starts or ends
//     the window holding the change lasts 3 or 5 hours.
//   - 24hr: {name}-up-or-down-on-{month}-{day}-{year}, the window from 12:00
//     ET the day before to 12:00 ET on the named day (23 or 25 hours across
//     a change of summer time); before 2026 the same without the year.
//
// {coin} is btc, eth or sol and {name} bitcoin, ethereum or solana.
// Discovery checks every window against Gamma's eventStartTime and endDate
// and keeps Gamma's when they differ (and logs it).
type PolymarketScheme struct {
	et *time.Location
}

// NewPolymarketScheme returns the default scheme.
func NewPolymarketScheme() *PolymarketScheme {
	return &PolymarketScheme{et: series.Eastern()}
}

// Eastern returns US Eastern time, the zone the hourly, 4-hour and daily
// series are laid out in.
func (s *PolymarketScheme) Eastern() *time.Location { return s.et }

// Window implements SlugScheme, by package series' arithmetic (shared with
// the generator).
func (s *PolymarketScheme) Window(_ store.Coin, mt store.MarketType, t time.Time) (start, end time.Time) {
	start = series.Start(mt, t)
	return start, series.End(mt, start)
}

// Slugs implements SlugScheme: the 2026 form (package series), then for
// hourly and daily markets the older form without the year.
func (s *PolymarketScheme) Slugs(c store.Coin, mt store.MarketType, start time.Time) []string {
	now := series.UpstreamSlug(c, mt, start)
	switch mt {
	case store.H1:
		year := strconv.Itoa(start.In(s.et).Year())
		if i := strings.LastIndex(now, "-"+year+"-"); i >= 0 {
			return []string{now, now[:i] + now[i+len(year)+1:]}
		}
	case store.H24:
		year := strconv.Itoa(series.End(mt, start).In(s.et).Year())
		if old, ok := strings.CutSuffix(now, "-"+year); ok {
			return []string{now, old}
		}
	}
	return []string{now}
}

// QuickScheme is a SlugScheme of short windows, for tests and demos in
// which markets start, end and resolve within seconds: every series'
// windows are Length long from Origin (the Unix epoch when zero), named
// upstream {coin}-quick-{type}-{unix ms of start}. Length must be at least
// a second, so that slugs, which carry the start in seconds, stay unique.
type QuickScheme struct {
	Origin time.Time
	Length time.Duration
}

// Window implements SlugScheme.
func (q QuickScheme) Window(_ store.Coin, _ store.MarketType, t time.Time) (start, end time.Time) {
	origin := q.Origin
	if origin.IsZero() {
		origin = time.Unix(0, 0)
	}
	k := t.Sub(origin) / q.Length
	if t.Before(origin.Add(k * q.Length)) {
		k--
	}
	start = origin.Add(k * q.Length).UTC()
	return start, start.Add(q.Length)
}

// Slugs implements SlugScheme.
func (q QuickScheme) Slugs(c store.Coin, mt store.MarketType, start time.Time) []string {
	return []string{fmt.Sprintf("%s-quick-%s-%d", strings.ToLower(string(c)), mt, start.UnixMilli())}
}
