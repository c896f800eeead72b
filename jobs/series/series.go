// Package series knows the market series as Polymarket runs them
// (REFERENCE.md, "Polymarket"): where their windows fall, in UTC for 5m,
// 15m and 1hr markets and in US Eastern time for 4hr (00/04/08/12/16/20 ET)
// and 24hr (12:00 ET to 12:00 ET) markets, and the upstream slugs of their
// markets. On a daylight-saving change day an Eastern window lasts an hour
// more or less than its type's length.
package series

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // Eastern time without relying on the host's zone files

	"github.com/updown/updown/store"
)

// eastern is US Eastern time (EST/EDT).
var eastern = func() *time.Location {
	loc, err := time.LoadLocation("America/New_York")
	if err != nil { // cannot happen: time/tzdata embeds the zone
		panic(fmt.Sprintf("series: load US Eastern time: %v", err))
	}
	return loc
}()

// Eastern returns US Eastern time, the zone of the 4hr and 24hr windows and
// of the hourly and daily upstream slugs.
func Eastern() *time.Location { return eastern }

// Start returns the start (in UTC) of the window of type mt that contains t,
// or the zero time for an unknown type.
func Start(mt store.MarketType, t time.Time) time.Time {
	switch mt {
	case store.M5, store.M15, store.H1:
		return t.UTC().Truncate(mt.Duration())
	case store.H4:
		e := t.In(eastern)
		return time.Date(e.Year(), e.Month(), e.Day(), e.Hour()-e.Hour()%4, 0, 0, 0, eastern).UTC()
	case store.H24:
		e := t.In(eastern)
		day := e.Day()
		if e.Hour() < 12 {
			day--
		}
		return time.Date(e.Year(), e.Month(), day, 12, 0, 0, 0, eastern).UTC()
	}
	return time.Time{}
}

// End returns the end (in UTC) of the window of type mt that starts at
// start, a window start (see Start).
func End(mt store.MarketType, start time.Time) time.Time {
	switch mt {
	case store.H4:
		e := start.In(eastern)
		return time.Date(e.Year(), e.Month(), e.Day(), e.Hour()+4, 0, 0, 0, eastern).UTC()
	case store.H24:
		e := start.In(eastern)
		return time.Date(e.Year(), e.Month(), e.Day()+1, 12, 0, 0, 0, eastern).UTC()
	}
	return start.UTC().Add(mt.Duration())
}

// Previous returns the start of the window of type mt just before the one
// starting at start.
func Previous(mt store.MarketType, start time.Time) time.Time {
	return Start(mt, start.Add(-time.Nanosecond))
}

// names are the coins as the hourly and daily upstream slugs spell them.
var names = map[store.Coin]string{store.BTC: "bitcoin", store.ETH: "ethereum", store.SOL: "solana"}

// UpstreamSlug returns Polymarket's slug, in its 2026 form, of the market of
// coin c and type mt whose window starts at start:
//
//	5m, 15m  btc-updown-5m-1764000000 (unix start)
//	4hr      btc-updown-4h-1764000000
//	1hr      bitcoin-up-or-down-november-24-2026-1am-et (the Eastern hour it starts)
//	24hr     bitcoin-up-or-down-on-november-24-2026 (the Eastern day it ends)
func UpstreamSlug(c store.Coin, mt store.MarketType, start time.Time) string {
	coin := strings.ToLower(string(c))
	switch mt {
	case store.M5, store.M15:
		return coin + "-updown-" + string(mt) + "-" + strconv.FormatInt(start.Unix(), 10)
	case store.H4:
		return coin + "-updown-4h-" + strconv.FormatInt(start.Unix(), 10)
	case store.H1:
		e := start.In(eastern)
		h, half := e.Hour()%12, "am"
		if e.Hour() >= 12 {
			half = "pm"
		}
		if h == 0 {
			h = 12
		}
		return fmt.Sprintf("%s-up-or-down-%s-%d-%d-%d%s-et", names[c], strings.ToLower(e.Month().String()), e.Day(), e.Year(), h, half)
	case store.H24:
		e := End(mt, start).In(eastern)
		return fmt.Sprintf("%s-up-or-down-on-%s-%d-%d", names[c], strings.ToLower(e.Month().String()), e.Day(), e.Year())
	}
	return ""
}

// SettlementSource is where Polymarket settles markets of type mt
// (REFERENCE.md): the Binance 1h candle for hourly markets, the Binance 1m
// close at noon Eastern for daily ones, Chainlink's stream for the rest.
// It is the resolution_source of a market settled by the series' rule.
func SettlementSource(mt store.MarketType) string {
	switch mt {
	case store.H1:
		return store.SourceBinance1h
	case store.H24:
		return store.SourceBinance1mNoonET
	}
	return store.SourceChainlink
}
