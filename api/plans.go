package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/updown/updown/jobs/sweep"
	"github.com/updown/updown/store"
)

// Plan is everything a tier decides. planFor is the one table in code that
// answers plan questions (DESIGN 4); nothing else compares tier names.
type Plan struct {
	Tier store.Tier
	// LastN, when non-nil, limits market data to the newest N markets of
	// each type (Starter); types absent from the map are not available.
	LastN map[store.MarketType]int
	// WindowDays limits data to markets starting within the last N days
	// (0 with LastN nil: unlimited).
	WindowDays int
	// AltCoins allows ETH and SOL prediction markets.
	AltCoins bool
	// Exchange allows the exchange spot and futures endpoints.
	Exchange bool
	// Replay allows POST /v1/replay.
	Replay bool
	// BacktestAI allows the Backtest AI agent.
	BacktestAI bool
	// AIGenerationsPerMonth is the monthly generation quota (-1 unlimited).
	AIGenerationsPerMonth int
	// PerMinute and PerDay are the default rate limits (0 unlimited).
	PerMinute, PerDay int
	// JobsInFlight caps the customer's jobs (replays, backtests,
	// generations) running at once (0: no cap).
	JobsInFlight int
	// ReadsInFlight caps the customer's heavy reads (chart series,
	// snapshot pages with books, CSV and Parquet exports, depth history)
	// answering at once (readcap.go; 0: no cap).
	ReadsInFlight int
	// SweepSizes bound one sweep (DESIGN 14); zero on a plan without
	// sweeps.
	SweepSizes sweep.Limits
	// SweepsInFlight caps a customer's sweeps queued or running at once
	// (DESIGN 14); 0 on a plan without sweeps.
	SweepsInFlight int
	// CustomLimits: a customer's own limits (`updown customers
	// set-limits`, store.Limits) replace PerMinute and PerDay, the AI
	// generation quota and the sweep sizes (customerPlan).
	CustomLimits bool
}

// starterLastN is the Starter window: the newest markets per type (BTC only).
func starterLastN() map[store.MarketType]int {
	return map[store.MarketType]int{store.M5: 50, store.M15: 50, store.H1: 24, store.H4: 24, store.H24: 5}
}

// planFor returns the plan of a tier. Unknown tiers get Starter's plan, the
// safe default.
func planFor(t store.Tier) Plan {
	switch t {
	case store.Pro:
		return Plan{Tier: t, WindowDays: 31, AltCoins: true, Exchange: true, Replay: true, BacktestAI: true,
			AIGenerationsPerMonth: 5, PerMinute: 300, PerDay: 50_000, JobsInFlight: 4, ReadsInFlight: 4, SweepSizes: sweep.ProLimits,
			SweepsInFlight: 1}
	case store.ProTrial:
		return Plan{Tier: t, WindowDays: 31, AltCoins: true, Replay: true, PerMinute: 300, PerDay: 50_000, JobsInFlight: 4, ReadsInFlight: 4}
	case store.Suite:
		return Plan{Tier: t, WindowDays: 31, AltCoins: true, Exchange: true, PerMinute: 300, PerDay: 50_000, ReadsInFlight: 4}
	case store.Enterprise:
		return Plan{Tier: t, AltCoins: true, Exchange: true, Replay: true, BacktestAI: true,
			AIGenerationsPerMonth: -1, PerMinute: 10_000, PerDay: 1_000_000, CustomLimits: true, JobsInFlight: 16, ReadsInFlight: 16,
			SweepSizes: sweep.EnterpriseLimits, SweepsInFlight: 4}
	default:
		return Plan{Tier: store.Starter, LastN: starterLastN(), PerMinute: 60, PerDay: 1_000, ReadsInFlight: 2}
	}
}

// customerPlan returns the plan of c: its tier's, with c's own limits
// where the plan takes them (CustomLimits; rate limits apart, in
// rateLimitFor). A limit c has not set (0) keeps the plan's.
func customerPlan(c store.Customer) Plan {
	p := planFor(c.Tier)
	if !p.CustomLimits {
		return p
	}
	l := c.Limits
	if l.AIGenerationsPerMonth > 0 {
		p.AIGenerationsPerMonth = l.AIGenerationsPerMonth
	}
	if sweepsIn(p) {
		if l.SweepTrials > 0 {
			p.SweepSizes.Trials = uint64(l.SweepTrials)
		}
		if l.SweepMarkets > 0 {
			p.SweepSizes.Markets = uint64(l.SweepMarkets)
		}
		if l.SweepReplays > 0 {
			p.SweepSizes.Replays = uint64(l.SweepReplays)
		}
		if l.SweepTrials > 0 || l.SweepMarkets > 0 || l.SweepReplays > 0 {
			p.SweepSizes.Plan = "your " + string(p.Tier) + " plan"
		}
	}
	return p
}

// upgradeURL is where tier errors send the customer.
const upgradeURL = "/v1/account/billing"

// tierDenied is 403 TIER_ACCESS_DENIED with SPEC 7's details.
func tierDenied(p Plan, required store.Tier, format string, args ...any) *Error {
	return &Error{
		Status:  http.StatusForbidden,
		Code:    CodeTierAccessDenied,
		Message: fmt.Sprintf(format, args...),
		Details: map[string]any{
			"required_tier": string(required),
			"current_tier":  string(p.Tier),
			"upgrade_url":   upgradeURL,
		},
	}
}

// marketWindow returns the plan's window over markets of coin (nil when
// unlimited), or a tier error when the plan has no access to the coin.
// A caller that needs one market type only names it (mt), so a last-N
// window costs the look-ups of one type rather than of every type; "" means
// every type.
// dataWindow says, for a message, which markets the plan reads: "in the
// last 31 days (the PRO plan's data window)", "in your plan's data window"
// (the newest markets of each type), or "recorded" on a plan without a
// window, whose every market counts.
func (p Plan) dataWindow() string {
	switch {
	case p.WindowDays > 0:
		return fmt.Sprintf("in the last %d days (the %s plan's data window)", p.WindowDays, p.Tier)
	case p.LastN != nil:
		return "in your plan's data window"
	}
	return "recorded"
}

func (s *Server) marketWindow(ctx context.Context, p Plan, coin store.Coin, mt store.MarketType) (*store.Window, error) {
	if coin != store.BTC && !p.AltCoins {
		return nil, tierDenied(p, store.Pro, "%s prediction markets need the PRO plan; the %s plan covers BTC markets only", coin, p.Tier)
	}
	if p.LastN != nil {
		w := &store.Window{MinStartByType: make(map[store.MarketType]time.Time, len(p.LastN))}
		for typ, n := range p.LastN {
			if mt != "" && typ != mt {
				continue // excluded from the window, as the caller looks at mt only
			}
			// The collector stores the next window's market before it
			// starts (and, on new_market, windows further ahead): a market
			// without data yet takes none of the window's places.
			t, ok, err := s.store.NthNewestStart(ctx, coin, typ, n, s.now())
			if err != nil {
				return nil, s.storeFailure(ctx, "compute data window", err)
			}
			if ok {
				w.MinStartByType[typ] = t
			} else {
				w.MinStartByType[typ] = time.Time{}
			}
		}
		return w, nil
	}
	if p.WindowDays > 0 {
		return &store.Window{MinStart: s.now().Add(-time.Duration(p.WindowDays) * 24 * time.Hour)}, nil
	}
	return nil, nil
}

// checkMarketAccess answers 403 TIER_ACCESS_DENIED when m is outside the
// plan's data window. Its required_tier is a plan that has m: PRO, or
// ENTERPRISE when m started before PRO's window too (a Starter key was sent
// to PRO for a market PRO's key is refused as well).
func (s *Server) checkMarketAccess(ctx context.Context, p Plan, m store.Market) error {
	pro := planFor(store.Pro)
	proHasIt := pro.WindowDays == 0 || !m.StartTime.Before(s.now().Add(-time.Duration(pro.WindowDays)*24*time.Hour))
	if m.Coin != store.BTC && !p.AltCoins && !proHasIt {
		return tierDenied(p, store.Enterprise, "market %s is of %s, and the %s plan covers BTC markets only; it started more than %d days ago, outside the PRO plan's data window too: ENTERPRISE has it",
			m.Slug, m.Coin, p.Tier, pro.WindowDays)
	}
	w, err := s.marketWindow(ctx, p, m.Coin, m.MarketType)
	if err != nil {
		return err
	}
	if w.Contains(m) {
		return nil
	}
	if p.LastN != nil && !proHasIt {
		return tierDenied(p, store.Enterprise, "market %s is outside the %s plan's data window (the newest %d %s %s markets) and started more than %d days ago, outside the PRO plan's data window too: ENTERPRISE has it",
			m.Slug, p.Tier, p.LastN[m.MarketType], m.Coin, m.MarketType, pro.WindowDays)
	}
	if p.LastN != nil {
		return tierDenied(p, store.Pro, "market %s is outside the %s plan's data window (the newest %d %s %s markets); upgrade for %d days of history",
			m.Slug, p.Tier, p.LastN[m.MarketType], m.Coin, m.MarketType, pro.WindowDays)
	}
	return tierDenied(p, store.Enterprise, "market %s started more than %d days ago, outside the %s plan's data window",
		m.Slug, p.WindowDays, p.Tier)
}

// windowWarning describes what the window hid from a list, for the
// response's warning field.
func windowWarning(p Plan, hidden int) string {
	if p.LastN != nil {
		return fmt.Sprintf("%d older market(s) matching this filter are outside the %s plan's data window (newest 50 5m and 15m, 24 1hr and 4hr, 5 24hr BTC markets); upgrade at %s",
			hidden, p.Tier, upgradeURL)
	}
	return fmt.Sprintf("%d market(s) matching this filter started more than %d days ago, outside the %s plan's data window; upgrade at %s",
		hidden, p.WindowDays, p.Tier, upgradeURL)
}
