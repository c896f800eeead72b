package strategy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
)

// Rules are a strategy ready to run: the replay rules and the markets they
// are meant for. They are what a strategy code carries, so
// ParseCode(FormatCode(r)) == r for every normalized r.
type Rules struct {
	// Coin and MarketType choose the markets a backtest runs on. A code may
	// leave them out (DESIGN 8's example does); Normalize requires them.
	Coin       store.Coin
	MarketType store.MarketType
	// Strategy is the replay request without its market.
	Strategy replay.Strategy
}

// Spec is generated_strategy (DESIGN 8): the normalized replay request
// minus the market, plus the coin and market type and a short explanation.
// Its JSON is one flat object:
//
//	{"side","entryConditions","exitConditions","positionSize","maxLossPercent",
//	 "orderType","feeModel"?,"feeRate"?,"feeExponent"?,"latencyMs"?,
//	 "reentryCooldownMs"?,"maxEntriesPerMarket"?,"postOnly"?,"limitOffsetTicks"?,
//	 "cancelAfterMs"?,"queueModel"?,"includeRebates"?,
//	 "coin","marketType","explanation"}
//
// The cost fields, re-entry control and the resting-order fields (DESIGN
// 6) appear when set, as in a replay request: an absent one is the
// replay's default (no cooldown, no entry limit, and so on).
type Spec struct {
	Rules
	// Explanation says in a sentence or two what the rules do (and what a
	// generator had to assume). A strategy code does not carry it.
	Explanation string
}

// specJSON is Spec's wire shape.
type specJSON struct {
	Side            string             `json:"side"`
	EntryConditions []replay.Condition `json:"entryConditions"`
	ExitConditions  []replay.Condition `json:"exitConditions"`
	PositionSize    float64            `json:"positionSize"`
	MaxLossPercent  float64            `json:"maxLossPercent"`
	OrderType       string             `json:"orderType"`
	FeeModel        string             `json:"feeModel,omitempty"`
	FeeRate         *float64           `json:"feeRate,omitempty"`
	FeeExponent     int                `json:"feeExponent,omitempty"`
	LatencyMs       int                `json:"latencyMs,omitempty"`

	ReentryCooldownMs   int    `json:"reentryCooldownMs,omitempty"`
	MaxEntriesPerMarket int    `json:"maxEntriesPerMarket,omitempty"`
	PostOnly            bool   `json:"postOnly,omitempty"`
	LimitOffsetTicks    int    `json:"limitOffsetTicks,omitempty"`
	CancelAfterMs       int    `json:"cancelAfterMs,omitempty"`
	QueueModel          string `json:"queueModel,omitempty"`
	IncludeRebates      bool   `json:"includeRebates,omitempty"`

	Coin        store.Coin       `json:"coin"`
	MarketType  store.MarketType `json:"marketType"`
	Explanation string           `json:"explanation"`
}

// MarshalJSON writes the flat generated_strategy object. It does not
// escape < and > itself (operators are full of them); an encoder that
// escapes HTML still does.
func (s Spec) MarshalJSON() ([]byte, error) {
	st := s.Strategy
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(specJSON{
		Side: st.Side, EntryConditions: nonNil(st.EntryConditions), ExitConditions: nonNil(st.ExitConditions),
		PositionSize: st.PositionSize, MaxLossPercent: st.MaxLossPercent, OrderType: st.OrderType,
		FeeModel: st.FeeModel, FeeRate: st.FeeRate, FeeExponent: st.FeeExponent, LatencyMs: st.LatencyMs,
		ReentryCooldownMs: st.ReentryCooldownMs, MaxEntriesPerMarket: st.MaxEntriesPerMarket,
		PostOnly: st.PostOnly, LimitOffsetTicks: st.LimitOffsetTicks, CancelAfterMs: st.CancelAfterMs,
		QueueModel: st.QueueModel, IncludeRebates: st.IncludeRebates,
		Coin: s.Coin, MarketType: s.MarketType, Explanation: s.Explanation,
	})
	return bytes.TrimRight(buf.Bytes(), "\n"), err
}

// UnmarshalJSON reads a generated_strategy object. The rules are decoded by
// replay.DecodeStrategy, so that an explicit maxLossPercent of 0 is told
// from an absent one, and an unknown key refused, exactly as POST
// /v1/replay does; Normalize judges what was decoded.
func (s *Spec) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var extra struct {
		Coin        store.Coin       `json:"coin"`
		MarketType  store.MarketType `json:"marketType"`
		Explanation string           `json:"explanation"`
	}
	if err := json.Unmarshal(b, &extra); err != nil {
		return err
	}
	st, err := replay.DecodeStrategy(b, "coin", "marketType", "explanation")
	if err != nil {
		return err
	}
	*s = Spec{Rules: Rules{Coin: extra.Coin, MarketType: extra.MarketType, Strategy: st}, Explanation: extra.Explanation}
	return nil
}

func nonNil(cs []replay.Condition) []replay.Condition {
	if cs == nil {
		return []replay.Condition{}
	}
	return cs
}

// Normalize validates the rules with the replay validator and checks the
// coin and market type, then puts everything in canonical form: replay's
// defaults applied, coin upper case, market type in the market_type
// vocabulary (1hr, not 1h). An *Error names the first problem.
func (r *Rules) Normalize() error { return r.normalize(true) }

// normalize is Normalize; with requireMarket false an empty coin or market
// type is left empty (a strategy code may omit them).
func (r *Rules) normalize(requireMarket bool) error {
	st := r.Strategy // a failed normalization leaves r as it was
	if err := st.Normalize(); err != nil {
		return fromReplay(err)
	}
	coin, err := parseCoin(string(r.Coin), requireMarket)
	if err != nil {
		return err
	}
	mt, err := parseMarketTypeField(string(r.MarketType), requireMarket)
	if err != nil {
		return err
	}
	if coin != "" && mt != "" && !mt.AvailableFor(coin) {
		return invalid("marketType", fmt.Sprintf("%s markets exist for BTC only; %s has 5m, 15m and 1hr markets", mt, coin))
	}
	r.Strategy, r.Coin, r.MarketType = st, coin, mt
	return nil
}

// Normalize is Rules.Normalize; the explanation is kept as given.
func (s *Spec) Normalize() error { return s.Rules.Normalize() }

// parseCoin reads a coin case-insensitively, as GET /v1/markets does.
func parseCoin(s string, required bool) (store.Coin, error) {
	if s == "" {
		if required {
			return "", invalid("coin", "coin is missing: it must be one of BTC, ETH, SOL")
		}
		return "", nil
	}
	c, ok := store.ParseCoin(s)
	if !ok {
		return "", invalid("coin", fmt.Sprintf("coin %q is not one of BTC, ETH, SOL", s))
	}
	return c, nil
}

func parseMarketTypeField(s string, required bool) (store.MarketType, error) {
	if s == "" {
		if required {
			return "", invalid("marketType", "marketType is missing: it must be one of 5m, 15m, 1h, 4h, 24h")
		}
		return "", nil
	}
	mt, ok := ParseMarketType(s)
	if !ok {
		return "", invalid("marketType", fmt.Sprintf("marketType %q is not one of 5m, 15m, 1h, 4h, 24h", s))
	}
	return mt, nil
}

// ParseMarketType reads a market type in either vocabulary: the agent's
// (5m, 15m, 1h, 4h, 24h, as the reference dashboard sends it) or the
// markets' market_type (1hr, 4hr, 24hr), case-insensitively. It returns the
// market_type form, which every answer uses.
func ParseMarketType(s string) (store.MarketType, bool) {
	switch strings.ToLower(s) {
	case "5m":
		return store.M5, true
	case "15m":
		return store.M15, true
	case "1h", "1hr":
		return store.H1, true
	case "4h", "4hr":
		return store.H4, true
	case "24h", "24hr":
		return store.H24, true
	}
	return "", false
}
