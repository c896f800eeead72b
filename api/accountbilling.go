package api

import (
	"context"
	"net/http"
	"strconv"

	"github.com/danielgtaylor/huma/v2"

	"github.com/updown/updown/store"
)

// planJSON is one plan of the catalogue, read off planFor: the one table
// that decides plan questions (DESIGN 4).
type planJSON struct {
	Tier string `json:"tier" enum:"STARTER,PRO,PRO_TRIAL,SUITE,ENTERPRISE"`
	// MarketsWindow says the window in words, for people.
	MarketsWindow string            `json:"markets_window" doc:"The prediction-market data window, in words."`
	WindowDays    *int              `json:"window_days" nullable:"true" doc:"Markets starting within the last N days; null with last_n set, or unlimited."`
	LastN         map[string]int    `json:"last_n" nullable:"true" doc:"The newest N BTC markets per market type (Starter); null otherwise."`
	AltCoins      bool              `json:"eth_sol_markets" doc:"ETH and SOL prediction markets."`
	Exchange      bool              `json:"exchange_data" doc:"Exchange spot and futures endpoints."`
	Replay        bool              `json:"replay" doc:"POST /v1/replay."`
	BacktestAI    bool              `json:"backtest_ai" doc:"The Backtest AI agent."`
	AIGenerations *int              `json:"ai_generations_per_month" nullable:"true" doc:"Backtest AI generations per calendar month; null: unlimited."`
	Sweeps        *planSweeps       `json:"sweeps" doc:"Parameter sweeps (POST /v1/sweeps); null: not in the plan."`
	RateLimits    accountRateLimits `json:"rate_limits"`
}

// planSweeps is what a plan allows of sweeps (DESIGN 14).
type planSweeps struct {
	MaxTrials  uint64 `json:"max_trials" doc:"Trials (parameter combinations) in one sweep."`
	MaxMarkets uint64 `json:"max_markets" doc:"Markets in one sweep."`
	MaxReplays uint64 `json:"max_replays" doc:"Trials × markets in one sweep."`
	Concurrent int    `json:"concurrent" doc:"Sweeps queued or running at once per customer."`
}

// planJSON describes p; c is the customer whose own limits apply (a zero
// Customer: the plan's defaults, as the catalogue shows them).
func (s *Server) planJSON(p Plan, c store.Customer) planJSON {
	out := planJSON{Tier: string(p.Tier), AltCoins: p.AltCoins, Exchange: p.Exchange, Replay: p.Replay, BacktestAI: p.BacktestAI}
	switch {
	case p.LastN != nil:
		out.MarketsWindow = "BTC only: the newest 50 5m and 15m, 24 1hr and 4hr, and 5 24hr markets"
		out.LastN = make(map[string]int, len(p.LastN))
		for mt, n := range p.LastN {
			out.LastN[string(mt)] = n
		}
	case p.WindowDays > 0:
		d := p.WindowDays
		out.WindowDays = &d
		out.MarketsWindow = "markets that started in the last " + strconv.Itoa(d) + " days"
	default:
		out.MarketsWindow = "unlimited"
	}
	if n := p.AIGenerationsPerMonth; n >= 0 {
		out.AIGenerations = &n
	}
	if sweepsIn(p) {
		l := sweepLimits(p)
		out.Sweeps = &planSweeps{MaxTrials: l.Trials, MaxMarkets: l.Markets, MaxReplays: l.Replays, Concurrent: p.SweepsInFlight}
	}
	l := s.rateLimitFor(p, c)
	if l.PerMinute > 0 {
		out.RateLimits.PerMinute = &l.PerMinute
	}
	if l.PerDay > 0 {
		out.RateLimits.PerDay = &l.PerDay
	}
	return out
}

type billingJSON struct {
	CurrentTier string     `json:"current_tier" enum:"STARTER,PRO,PRO_TRIAL,SUITE,ENTERPRISE"`
	Plans       []planJSON `json:"plans" doc:"Every plan, cheapest first."`
	CheckoutURL *string    `json:"checkout_url" nullable:"true" doc:"Where to change plan (BILLING_URL); null when this server has none configured."`
}

type billingBody struct {
	Success   bool        `json:"success"`
	Data      billingJSON `json:"data"`
	Timestamp string      `json:"timestamp" format:"date-time"`
}

type billingOutput struct{ Body billingBody }

func (s *Server) registerAccountBilling() {
	huma.Register(s.api, huma.Operation{
		OperationID: opGetBilling,
		Method:      http.MethodGet,
		Path:        upgradeURL,
		Summary:     "Plans, the caller's plan and where to upgrade",
		Description: "The plan catalogue (data windows, features, rate limits, AI quota per plan), the caller's tier and the checkout link " +
			"(BILLING_URL) when the server has one. Every TIER_ACCESS_DENIED points here.",
		Tags:     []string{"Account"},
		Security: []map[string][]string{{schemeAPIKey: {}}},
		Errors:   []int{401, 429, 500, 503},
	}, s.billing)
}

func (s *Server) billing(ctx context.Context, _ *struct{}) (*billingOutput, error) {
	p := principalFrom(ctx)
	out := billingJSON{CurrentTier: string(p.Plan.Tier), Plans: make([]planJSON, 0, len(store.Tiers))}
	for _, t := range store.Tiers {
		out.Plans = append(out.Plans, s.planJSON(planFor(t), store.Customer{}))
	}
	if s.cfg.BillingURL != "" {
		u := s.cfg.BillingURL
		out.CheckoutURL = &u
	}
	return &billingOutput{Body: billingBody{Success: true, Data: out, Timestamp: formatTime(s.now())}}, nil
}
