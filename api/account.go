package api

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
)

// accountRateLimits are the caller's allowances; null fields are unlimited.
type accountRateLimits struct {
	PerMinute *int `json:"per_minute" nullable:"true" doc:"Requests allowed per UTC minute; null: unlimited."`
	PerDay    *int `json:"per_day" nullable:"true" doc:"Requests allowed per UTC day (resets at 00:00 UTC); null: unlimited."`
}

// accountUsage counts the caller's requests in the current windows.
type accountUsage struct {
	Today      *int64 `json:"today" nullable:"true" doc:"Requests counted today (UTC), this one included; null when rate limiting is off on this server."`
	ThisMinute *int64 `json:"this_minute" nullable:"true" doc:"Requests counted in the current UTC minute, this one included; null when rate limiting is off."`
	ResetsAt   string `json:"resets_at" format:"date-time" doc:"When today's count resets (next 00:00 UTC)."`
}

// aiQuotaJSON is the Backtest AI generation quota of the calendar month
// (UTC), as DESIGN 8's quota object.
type aiQuotaJSON struct {
	Used      int    `json:"used" doc:"Generations used this calendar month (UTC)."`
	Limit     *int   `json:"limit" nullable:"true" doc:"Generations allowed per month; null: unlimited."`
	Remaining *int   `json:"remaining" nullable:"true" doc:"Generations left this month; null: unlimited."`
	ResetsAt  string `json:"resets_at" format:"date-time" doc:"Start of the next calendar month (UTC)."`
}

// accountJSON is the key owner's account.
type accountJSON struct {
	CustomerID string            `json:"customer_id" format:"uuid"`
	Email      string            `json:"email"`
	Name       string            `json:"name"`
	Tier       string            `json:"tier" enum:"STARTER,PRO,PRO_TRIAL,SUITE,ENTERPRISE"`
	RateLimits accountRateLimits `json:"rate_limits"`
	Usage      accountUsage      `json:"usage"`
	AIQuota    aiQuotaJSON       `json:"ai_quota"`
}

type accountBody struct {
	Success   bool        `json:"success"`
	Data      accountJSON `json:"data"`
	Timestamp string      `json:"timestamp" format:"date-time"`
}

type accountOutput struct{ Body accountBody }

func (s *Server) registerAccount() {
	huma.Register(s.api, huma.Operation{
		OperationID: opGetAccount,
		Method:      http.MethodGet,
		Path:        "/v1/account",
		Summary:     "The API key owner's account, plan, limits and usage",
		Description: "The customer the X-API-Key belongs to: tier, rate limits (null: unlimited), requests counted in the current UTC minute and day " +
			"(null when rate limiting is off), and the Backtest AI generation quota of the calendar month (limit and remaining null: unlimited).",
		Tags:     []string{"Account"},
		Security: []map[string][]string{{schemeAPIKey: {}}},
		Errors:   []int{401, 429, 500, 503},
	}, s.account)
}

func (s *Server) account(ctx context.Context, _ *struct{}) (*accountOutput, error) {
	p := principalFrom(ctx)
	now := s.now().UTC()
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	used, err := s.store.AIGenerationsUsed(ctx, p.Customer.ID, month)
	if err != nil {
		return nil, s.storeFailure(ctx, "count AI generations", err)
	}
	quota := aiQuotaJSON{Used: used, ResetsAt: formatTime(month.AddDate(0, 1, 0))}
	if limit := p.Plan.AIGenerationsPerMonth; limit >= 0 {
		remaining := max(limit-used, 0)
		quota.Limit, quota.Remaining = &limit, &remaining
	}
	u := p.Usage
	usage := accountUsage{ResetsAt: formatTime(u.DayReset)}
	if u.Counted {
		usage.Today, usage.ThisMinute = &u.Day, &u.Minute
	}
	limits := accountRateLimits{}
	if u.Limit.PerMinute > 0 {
		limits.PerMinute = &u.Limit.PerMinute
	}
	if u.Limit.PerDay > 0 {
		limits.PerDay = &u.Limit.PerDay
	}
	c := p.Customer
	return &accountOutput{Body: accountBody{Success: true, Timestamp: formatTime(s.now()), Data: accountJSON{
		CustomerID: c.ID, Email: c.Email, Name: c.Name, Tier: string(p.Plan.Tier),
		RateLimits: limits, Usage: usage, AIQuota: quota,
	}}}, nil
}
