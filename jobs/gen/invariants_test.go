package gen

import (
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/series"
	"github.com/updown/updown/store"
)

var (
	conditionIDRe = regexp.MustCompile(`^0x[0-9a-f]{64}$`)
	decimalRe     = regexp.MustCompile(`^[1-9][0-9]*$`)
)

// checkMarkets checks every market on its own and ids across them.
func checkMarkets(t *testing.T, g *Generator, ms []store.Market) {
	t.Helper()
	now := g.Config().Now
	unique := map[string]map[string]string{} // field → value → slug
	for _, m := range ms {
		d := m.MarketType.Duration()
		for _, id := range []struct{ field, v string }{
			{"slug", m.Slug}, {"market id", m.MarketID}, {"condition id", m.ConditionID},
			{"clob token", m.ClobTokenUp}, {"clob token", m.ClobTokenDown}, // one namespace for both
		} {
			if unique[id.field] == nil {
				unique[id.field] = map[string]string{}
			}
			if other, ok := unique[id.field][id.v]; ok {
				t.Errorf("%s: %s %q also belongs to %s", m.Slug, id.field, id.v, other)
			}
			unique[id.field][id.v] = m.Slug
		}
		if want := Slug(m.Coin, m.MarketType, m.StartTime); m.Slug != want ||
			!strings.HasPrefix(m.Slug, strings.ToLower(string(m.Coin))+"-updown-"+string(m.MarketType)+"-") {
			t.Errorf("slug %q, want %q", m.Slug, want)
		}
		if !m.MarketType.AvailableFor(m.Coin) {
			t.Errorf("%s: %s markets do not exist for %s", m.Slug, m.MarketType, m.Coin)
		}
		if !decimalRe.MatchString(m.MarketID) || !decimalRe.MatchString(m.EventID) {
			t.Errorf("%s: market id %q / event id %q are not decimal numbers", m.Slug, m.MarketID, m.EventID)
		}
		if !conditionIDRe.MatchString(m.ConditionID) {
			t.Errorf("%s: condition id %q is not 0x + 64 hex", m.Slug, m.ConditionID)
		}
		for _, tok := range []string{m.ClobTokenUp, m.ClobTokenDown} {
			if !decimalRe.MatchString(tok) || len(tok) < 70 {
				t.Errorf("%s: clob token %q is not a 256-bit decimal", m.Slug, tok)
			}
		}
		// Windows fall as Polymarket's do: 4hr and 24hr ones in US Eastern
		// time, an hour shorter or longer on a daylight-saving day.
		if !series.Start(m.MarketType, m.StartTime).Equal(m.StartTime) || !m.EndTime.Equal(series.End(m.MarketType, m.StartTime)) {
			t.Errorf("%s: window %v–%v is not the series' window", m.Slug, m.StartTime, m.EndTime)
		}
		if l := m.EndTime.Sub(m.StartTime); l != d && !(m.MarketType == store.H4 || m.MarketType == store.H24) || l < d-time.Hour || l > d+time.Hour {
			t.Errorf("%s: window lasts %v", m.Slug, l)
		}
		checkUpstreamFields(t, now, m)
		if m.StartTime.After(now) {
			t.Errorf("%s starts after Now", m.Slug)
		}
		if !(m.CreatedAt.Before(m.StartTime) && !m.UpdatedAt.Before(m.StartTime) && !m.UpdatedAt.After(now)) {
			t.Errorf("%s: created %v, updated %v: want created before start %v ≤ updated ≤ now %v",
				m.Slug, m.CreatedAt, m.UpdatedAt, m.StartTime, now)
		}
		for _, ts := range []time.Time{m.CreatedAt, m.UpdatedAt, m.StartTime} {
			if ts.Location() != time.UTC || !ts.Truncate(time.Microsecond).Equal(ts) {
				t.Errorf("%s: time %v is not UTC to the microsecond", m.Slug, ts)
			}
		}
		if m.CoinPriceStart == nil || *m.CoinPriceStart <= 0 {
			t.Errorf("%s: coin_price_start %v", m.Slug, m.CoinPriceStart)
		}
		if m.Resolved() {
			checkResolved(t, now, m)
		} else {
			if m.CoinPriceEnd != nil || m.FinalVolume != nil || m.FinalLiquidity != nil || m.ResolvedAt != nil {
				t.Errorf("%s is unresolved but has an end price, volume, liquidity or resolved_at", m.Slug)
			}
			// Unresolved means live, or ended so recently that resolution
			// is pending.
			if now.Sub(m.EndTime) > maxResolutionDelay {
				t.Errorf("%s ended at %v and is still unresolved at %v", m.Slug, m.EndTime, now)
			}
		}
	}
}

func checkResolved(t *testing.T, now time.Time, m store.Market) {
	t.Helper()
	if m.CoinPriceEnd == nil || m.FinalVolume == nil || m.FinalLiquidity == nil || m.ResolvedAt == nil {
		t.Errorf("%s is resolved but lacks an end price, volume, liquidity or resolved_at", m.Slug)
		return
	}
	want := store.OutcomeDown
	switch {
	case m.MarketType == store.H24 && *m.CoinPriceEnd == *m.CoinPriceStart:
		want = store.OutcomeFiftyFifty // the daily rule
	case *m.CoinPriceEnd >= *m.CoinPriceStart:
		want = store.OutcomeUp
	}
	if *m.Winner != want {
		t.Errorf("%s: winner %s with start %v and end %v", m.Slug, *m.Winner, *m.CoinPriceStart, *m.CoinPriceEnd)
	}
	if r := *m.ResolvedAt; !r.After(m.EndTime) || r.Sub(m.EndTime) > maxResolutionDelay || r.After(now) || m.UpdatedAt.Before(r) {
		t.Errorf("%s: resolved_at %v (updated %v) for a market ending %v", m.Slug, r, m.UpdatedAt, m.EndTime)
	}
	if *m.FinalVolume <= 0 || *m.FinalLiquidity <= 0 || *m.FinalLiquidity > *m.FinalVolume*2 {
		t.Errorf("%s: volume %v, liquidity %v", m.Slug, *m.FinalVolume, *m.FinalLiquidity)
	}
	for _, x := range []float64{*m.CoinPriceStart, *m.CoinPriceEnd, *m.FinalVolume, *m.FinalLiquidity} {
		if roundTo(x, 6) != x {
			t.Errorf("%s: %v has more than six decimals", m.Slug, x)
		}
	}
}

// snapshotChecker checks the snapshots of one market as they arrive, in one
// or more batches.
type snapshotChecker struct {
	g      *Generator
	m      store.Market
	levels int
	n      int
	last   time.Time
}

func (c *snapshotChecker) check(t *testing.T, snaps []store.Snapshot) {
	t.Helper()
	m, now := c.m, c.g.Config().Now
	from, to, _ := c.g.Outage()
	for _, s := range snaps {
		where := m.Slug + " at " + s.Time.Format(time.RFC3339Nano)
		switch {
		case s.Time.Before(m.StartTime) || !s.Time.Before(m.EndTime) || s.Time.After(now):
			t.Errorf("%s: outside [start %v, end %v) or after now", where, m.StartTime, m.EndTime)
		case c.n > 0 && !s.Time.After(c.last):
			t.Errorf("%s: not after the previous snapshot %v", where, c.last)
		case !s.Time.Before(from) && s.Time.Before(to):
			t.Errorf("%s: recorded during the outage", where)
		case s.Time.Location() != time.UTC || !s.Time.Truncate(time.Microsecond).Equal(s.Time):
			t.Errorf("%s: time not UTC to the microsecond", where)
		}
		if c.n == 0 {
			startLost := !m.StartTime.Before(from) && m.StartTime.Before(to)
			if !startLost && !s.Time.Equal(m.StartTime) || startLost && s.Time.Before(to) {
				t.Errorf("%s: the first snapshot is not at the start %v (outage %v–%v)", where, m.StartTime, from, to)
			}
		}
		c.n++
		c.last = s.Time

		if want, _ := c.g.CoinPrice(m.Coin, s.Time); s.CoinPrice != roundTo(want, 2) {
			t.Errorf("%s: coin price %v, want the path's %v", where, s.CoinPrice, roundTo(want, 2))
		}
		if c.n == 1 && s.Time.Equal(m.StartTime) && s.CoinPrice != *m.CoinPriceStart {
			t.Errorf("%s: first coin price %v, coin_price_start %v", where, s.CoinPrice, *m.CoinPriceStart)
		}
		for _, p := range []float64{s.PriceUp, s.PriceDown} {
			if p < 0.01 || p > 0.99 || !onCent(p) {
				t.Errorf("%s: price %v off the 0.01 tick in [0.01, 0.99]", where, p)
			}
		}
		if sum := s.PriceUp + s.PriceDown; sum < 1.005 || sum > 1.035 {
			t.Errorf("%s: price_up %v + price_down %v = %v, want 1.01 to 1.03", where, s.PriceUp, s.PriceDown, sum)
		}
		if c.levels == 0 {
			if s.BookUp != nil || s.BookDown != nil {
				t.Errorf("%s: books recorded with BookLevels 0", where)
			}
			continue
		}
		if s.BookUp == nil || s.BookDown == nil {
			t.Errorf("%s: no books", where)
			continue
		}
		checkBook(t, where+" up", *s.BookUp, c.levels)
		checkBook(t, where+" down", *s.BookDown, c.levels)
		up, down := *s.BookUp, *s.BookDown
		if len(up.Asks) == 0 || len(down.Asks) == 0 || len(up.Bids) == 0 || len(down.Bids) == 0 {
			t.Errorf("%s: a side is empty", where)
			continue
		}
		if up.Asks[0].Price != s.PriceUp || down.Asks[0].Price != s.PriceDown {
			t.Errorf("%s: prices %v/%v are not the best asks %v/%v", where, s.PriceUp, s.PriceDown, up.Asks[0].Price, down.Asks[0].Price)
		}
		if cents(100-int(math.Round(up.Asks[0].Price*100))) != down.Bids[0].Price ||
			cents(100-int(math.Round(up.Bids[0].Price*100))) != down.Asks[0].Price {
			t.Errorf("%s: the Down book's top does not mirror the Up book's", where)
		}
	}
}

// checkBook checks one outcome book: on the tick, inside (0, 1), best first,
// uncrossed, sizes in range with two decimals.
func checkBook(t *testing.T, where string, b store.Book, levels int) {
	t.Helper()
	if len(b.Bids) > levels || len(b.Asks) > levels {
		t.Errorf("%s: %d bids, %d asks, want at most %d", where, len(b.Bids), len(b.Asks), levels)
	}
	for side, lv := range map[string][]store.Level{"bids": b.Bids, "asks": b.Asks} {
		for i, l := range lv {
			if l.Price <= 0 || l.Price >= 1 || !onCent(l.Price) {
				t.Errorf("%s: %s[%d] price %v off the 0.01 tick in (0, 1)", where, side, i, l.Price)
			}
			if l.Size < minLevelSize || l.Size > maxLevelSize || roundTo(l.Size, 2) != l.Size {
				t.Errorf("%s: %s[%d] size %v", where, side, i, l.Size)
			}
			if i > 0 && (side == "bids" && l.Price >= lv[i-1].Price || side == "asks" && l.Price <= lv[i-1].Price) {
				t.Errorf("%s: %s not best first at %d: %v", where, side, i, lv)
			}
		}
	}
	if len(b.Bids) > 0 && len(b.Asks) > 0 && b.Bids[0].Price >= b.Asks[0].Price {
		t.Errorf("%s: crossed book, bid %v ≥ ask %v", where, b.Bids[0].Price, b.Asks[0].Price)
	}
	// A full side stops short of its levels only at the edge of (0, 1).
	if len(b.Bids) < levels && len(b.Bids) > 0 && b.Bids[len(b.Bids)-1].Price > 0.02 {
		t.Errorf("%s: only %d bids down to %v", where, len(b.Bids), b.Bids[len(b.Bids)-1].Price)
	}
	if len(b.Asks) < levels && len(b.Asks) > 0 && b.Asks[len(b.Asks)-1].Price < 0.98 {
		t.Errorf("%s: only %d asks up to %v", where, len(b.Asks), b.Asks[len(b.Asks)-1].Price)
	}
}

// onCent reports whether p is exactly the float64 of a whole number of cents.
func onCent(p float64) bool { return cents(int(math.Round(p*100))) == p }

// checkDepth checks one exchange book.
func checkDepth(t *testing.T, d store.DepthSnapshot, c store.Coin, k store.ExchangeKind, levels int) {
	t.Helper()
	in := instrumentOf(c, k)
	where := d.Symbol + " " + string(d.Kind) + " at " + d.Time.Format(time.RFC3339Nano)
	if d.Symbol != Symbol(c) || d.Kind != k {
		t.Errorf("%s: want %s %s", where, Symbol(c), k)
	}
	if !d.Time.Truncate(time.Millisecond).Equal(d.Time) || d.Time.Location() != time.UTC {
		t.Errorf("%s: time not UTC to the millisecond", where)
	}
	if len(d.Bids) != levels || len(d.Asks) != levels {
		t.Errorf("%s: %d bids, %d asks, want %d", where, len(d.Bids), len(d.Asks), levels)
		return
	}
	for side, lv := range map[string][]store.DepthLevel{"bids": d.Bids, "asks": d.Asks} {
		for i, l := range lv {
			if l.Price <= 0 || roundTo(l.Price, in.priceDec) != l.Price {
				t.Errorf("%s: %s[%d] price %v off the %v tick", where, side, i, l.Price, in.tick())
			}
			if l.Quantity <= 0 || roundTo(l.Quantity, in.qtyDec) != l.Quantity {
				t.Errorf("%s: %s[%d] quantity %v off the lot", where, side, i, l.Quantity)
			}
			if i > 0 && (side == "bids" && l.Price >= lv[i-1].Price || side == "asks" && l.Price <= lv[i-1].Price) {
				t.Errorf("%s: %s not best first at %d", where, side, i)
			}
		}
	}
	bid, ask := d.Bids[0].Price, d.Asks[0].Price
	if bid >= ask || ask-bid > 1.5*in.tick() {
		t.Errorf("%s: top of book %v / %v is crossed or wider than a tick", where, bid, ask)
	}
	if d.CoinPrice < bid-in.tick() || d.CoinPrice > ask+in.tick() || roundTo(d.CoinPrice, 2) != d.CoinPrice {
		t.Errorf("%s: coin price %v outside the top of book %v / %v", where, d.CoinPrice, bid, ask)
	}
	if d.LastUpdateID <= 0 {
		t.Errorf("%s: last update id %d", where, d.LastUpdateID)
	}
}

// checkUpstreamFields checks what real markets carry beside SPEC's fields
// (DESIGN 3, 9): the fee schedule, tick, minimum order, upstream slug, and
// once resolved the reference prices it settled on and their source.
func checkUpstreamFields(t *testing.T, now time.Time, m store.Market) {
	t.Helper()
	if m.UpstreamSlug != series.UpstreamSlug(m.Coin, m.MarketType, m.StartTime) || m.UpstreamSlug == "" {
		t.Errorf("%s: upstream slug %q", m.Slug, m.UpstreamSlug)
	}
	if m.TakerFeeRate == nil || *m.TakerFeeRate != 0.07 || m.FeeExponent == nil || *m.FeeExponent != 1 ||
		m.MakerRebateRate == nil || *m.MakerRebateRate != 0.2 || m.FeeType != store.FeeTypeCryptoV2 {
		t.Errorf("%s: fee schedule %v, %v, rebate %v, type %q; want 0.07, 1, 0.2, crypto_fees_v2", m.Slug, m.TakerFeeRate, m.FeeExponent, m.MakerRebateRate, m.FeeType)
	}
	if m.MinOrderSize == nil || *m.MinOrderSize != 5 {
		t.Errorf("%s: min order size %v", m.Slug, m.MinOrderSize)
	}
	switch len(m.TickSizeChanges) {
	case 0:
		if m.TickSize == nil || *m.TickSize != 0.01 {
			t.Errorf("%s: tick %v without changes, want 0.01", m.Slug, m.TickSize)
		}
	case 1:
		c := m.TickSizeChanges[0]
		if m.TickSize == nil || *m.TickSize != c.TickSize || c.TickSize != 0.001 ||
			c.Time.Before(m.StartTime) || !c.Time.Before(m.EndTime) || c.Time.After(now) {
			t.Errorf("%s: tick %v after change %+v", m.Slug, m.TickSize, c)
		}
	default:
		t.Errorf("%s: %d tick changes", m.Slug, len(m.TickSizeChanges))
	}
	if !m.Resolved() {
		if m.PriceToBeat != nil || m.FinalPrice != nil || m.ResolutionSource != "" {
			t.Errorf("%s is unresolved but has reference prices or a resolution source", m.Slug)
		}
		return
	}
	if m.PriceToBeat == nil || m.FinalPrice == nil || *m.PriceToBeat != *m.CoinPriceStart || *m.FinalPrice != *m.CoinPriceEnd {
		t.Errorf("%s: price to beat %v, final %v; want the settled prices %v, %v", m.Slug, m.PriceToBeat, m.FinalPrice, *m.CoinPriceStart, *m.CoinPriceEnd)
	}
	want := map[store.MarketType]string{store.M5: store.SourceChainlink, store.M15: store.SourceChainlink, store.H4: store.SourceChainlink,
		store.H1: store.SourceBinance1h, store.H24: store.SourceBinance1mNoonET}[m.MarketType]
	if m.ResolutionSource != want {
		t.Errorf("%s: resolution source %q, want %q", m.Slug, m.ResolutionSource, want)
	}
}

// checkMarketTrades checks one batch of a market's trades.
func checkMarketTrades(t *testing.T, g *Generator, m store.Market, trades []store.MarketTrade) {
	t.Helper()
	now := g.Config().Now
	from, to, _ := g.Outage()
	for i, tr := range trades {
		where := m.Slug + " trade at " + tr.Time.Format(time.RFC3339Nano)
		switch {
		case tr.Time.Before(m.StartTime) || !tr.Time.Before(m.EndTime) || tr.Time.After(now):
			t.Errorf("%s: outside the window or after now", where)
		case !tr.Time.Before(from) && tr.Time.Before(to):
			t.Errorf("%s: recorded during the outage", where)
		case tr.Time.Location() != time.UTC || !tr.Time.Truncate(time.Millisecond).Equal(tr.Time):
			t.Errorf("%s: time not UTC to the millisecond", where)
		case i > 0 && tr.Time.Before(trades[i-1].Time):
			t.Errorf("%s: not oldest first", where)
		case tr.Check() != nil:
			t.Errorf("%s: %v", where, tr.Check())
		case tr.Price < 0.01 || tr.Price > 0.99 || !onCent(tr.Price):
			t.Errorf("%s: price %v off the 0.01 tick in [0.01, 0.99]", where, tr.Price)
		case tr.Size < 5 || roundTo(tr.Size, 2) != tr.Size:
			t.Errorf("%s: size %v, want at least the minimum order, two decimals", where, tr.Size)
		case !strings.HasPrefix(tr.TxHash, "0x") || len(tr.TxHash) != 66:
			t.Errorf("%s: tx hash %q", where, tr.TxHash)
		}
	}
}

// checkGaps checks a market's gaps: the part of its window in the outage.
func checkGaps(t *testing.T, g *Generator, m store.Market, gaps []store.Gap) {
	t.Helper()
	from, to, _ := g.Outage()
	for _, gp := range gaps {
		if !gp.To.After(gp.From) || gp.From.Before(m.StartTime) || gp.To.After(m.EndTime) ||
			gp.From.Before(from) || gp.To.After(to) || gp.To.After(g.Config().Now) {
			t.Errorf("%s: gap %v–%v outside its window %v–%v or the outage %v–%v", m.Slug, gp.From, gp.To, m.StartTime, m.EndTime, from, to)
		}
	}
}
