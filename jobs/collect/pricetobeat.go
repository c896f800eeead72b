package collect

import (
	"context"
	"time"

	"github.com/updown/updown/store"
)

// refreshPriceToBeat looks up again, on Gamma, the live markets still
// without price_to_beat: Gamma publishes it about a minute after a
// window starts, after discovery has stored the market, and discovery
// never rewrites a stored market. Each round asks once per such market,
// until it appears or the window ends (resolution then records it with
// the final price).
func (c *Collector) refreshPriceToBeat(ctx context.Context, now time.Time) {
	c.mu.Lock()
	var todo []store.Market
	for _, m := range c.markets {
		if m.PriceToBeat == nil && m.UpstreamSlug != "" && !now.Before(m.StartTime) && now.Before(m.EndTime) && !m.Resolved() {
			todo = append(todo, m)
		}
	}
	c.mu.Unlock()
	for _, m := range todo {
		if ctx.Err() != nil {
			return
		}
		f, found, err := c.gamma.bySlug(ctx, m.UpstreamSlug)
		if err != nil || !found {
			if err != nil && ctx.Err() == nil {
				c.warn.warn(ctx, "price to beat", "price_to_beat: Gamma lookup failed; retrying next round", "market", m.Slug, "err", err)
			}
			continue
		}
		p := f.event.EventMetadata.PriceToBeat
		if !p.Set {
			continue // not published yet
		}
		c.setPriceToBeat(ctx, m.Slug, p.V)
	}
}

// setPriceToBeat stores the market's price_to_beat unless it has one.
func (c *Collector) setPriceToBeat(ctx context.Context, slug string, p float64) {
	_, changed, ok := c.updateMarket(ctx, slug, "store", "price_to_beat", func(m *store.Market) bool {
		if m.PriceToBeat != nil || m.Resolved() {
			return false
		}
		m.PriceToBeat = &p
		return true
	})
	if ok && changed {
		c.log.InfoContext(ctx, "price_to_beat published", "market", slug, "price_to_beat", p)
	}
}
