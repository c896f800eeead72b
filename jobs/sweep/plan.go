package sweep

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/jobs/strategy"
	"github.com/updown/updown/store"
)

// Plan is a validated sweep: the normalized request, each parameter's
// values, and its trials in order.
type Plan struct {
	Request Request
	Trials  []Trial
	// gridSize is the number of combinations of the parameters' values.
	gridSize uint64
}

// Trial is one combination of the parameters' values, with the strategy it
// makes. Index is its place in the plan; Grid its value indices, one a
// parameter.
type Trial struct {
	Index    int
	Values   []any
	Grid     []int
	Strategy replay.Strategy
}

// Normalize validates r and expands it into a plan: defaults applied,
// ranges expanded, the trials checked against lim (the markets and
// replays are checked once the markets are found: Limits.CheckFound),
// every trial built and validated by the replay validator. A problem is a
// *replay.Error with code VALIDATION_ERROR (or the replay code of a bad
// strategy) naming its path.
func (r Request) Normalize(lim Limits) (Plan, error) {
	st := r.Strategy
	if err := st.Normalize(); err != nil {
		return Plan{}, prefixed("strategy", err)
	}
	r.Strategy = st
	switch n := len(r.Parameters); {
	case n == 0:
		return Plan{}, invalid("parameters", "parameters is empty: give 1 to %d of {path, values} or {path, range: {from, to, step}}", MaxParameters)
	case n > MaxParameters:
		return Plan{}, invalid("parameters", "parameters has %d entries: at most %d are allowed", n, MaxParameters)
	}
	base, err := strategyJSON(st)
	if err != nil {
		return Plan{}, err
	}
	params := make([]Parameter, len(r.Parameters))
	seen := map[string]int{}
	for i, p := range r.Parameters {
		at := fmt.Sprintf("parameters[%d]", i)
		if j, dup := seen[p.Path]; dup {
			return Plan{}, invalid(at+".path", "%s.path %q is swept twice (also parameters[%d])", at, replay.ClipEcho(p.Path), j)
		}
		seen[p.Path] = i
		kind, err := pathKind(base, p.Path, at+".path")
		if err != nil {
			return Plan{}, err
		}
		values, err := expand(p, kind, at)
		if err != nil {
			return Plan{}, err
		}
		params[i] = Parameter{Path: p.Path, Values: values}
	}
	r.Parameters = params
	if err := r.normalizeRest(); err != nil {
		return Plan{}, err
	}
	plan := Plan{Request: r, gridSize: 1}
	for _, p := range params {
		plan.gridSize = satMul(plan.gridSize, uint64(len(p.Values)))
	}
	if err := lim.check(&plan); err != nil {
		return Plan{}, err
	}
	for k, idx := range plan.indices() {
		t := Trial{Index: k, Grid: idx, Values: make([]any, len(idx))}
		for j, v := range idx {
			t.Values[j] = params[j].Values[v]
		}
		s, err := Apply(st, paths(params), t.Values)
		if err != nil {
			code, msg := replay.CodeValidation, err.Error()
			if re, ok := err.(*replay.Error); ok {
				code = re.Code
			}
			return Plan{}, &replay.Error{Code: code, Field: "parameters",
				Message: fmt.Sprintf("trial %d (%s) is not a valid strategy: %s", k, describe(params, t.Values), msg)}
		}
		t.Strategy = s
		plan.Trials = append(plan.Trials, t)
	}
	return plan, nil
}

func paths(ps []Parameter) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Path
	}
	return out
}

func describe(ps []Parameter, values []any) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		b, _ := json.Marshal(values[i])
		parts[i] = p.Path + "=" + string(b)
	}
	return strings.Join(parts, ", ")
}

// satMul multiplies without wrapping: a product past MaxUint64 stays there.
func satMul(a, b uint64) uint64 {
	if a != 0 && b > math.MaxUint64/a {
		return math.MaxUint64
	}
	return a * b
}

// normalizeRest checks and defaults search, markets, split and objective.
func (r *Request) normalizeRest() error {
	switch r.Search.Kind {
	case SearchGrid:
		if r.Search.Trials != 0 || r.Search.Seed != 0 {
			return invalid("search", "search.trials and search.seed belong to kind RANDOM; GRID tries every combination")
		}
	case SearchRandom:
		if r.Search.Trials < 1 {
			return invalid("search.trials", "search.trials is missing or below 1: RANDOM draws this many distinct combinations")
		}
	case "":
		return invalid("search.kind", "search.kind is missing: it must be GRID or RANDOM")
	default:
		return invalid("search.kind", "search.kind %q is not one of GRID, RANDOM", r.Search.Kind)
	}
	m := &r.Markets
	switch m.Coin {
	case store.BTC, store.ETH, store.SOL:
	case "":
		return invalid("markets.coin", "markets.coin is missing: it must be BTC, ETH or SOL")
	default:
		return invalid("markets.coin", "markets.coin %q is not one of BTC, ETH, SOL", m.Coin)
	}
	mt, ok := strategy.ParseMarketType(string(m.MarketType))
	switch {
	case m.MarketType == "":
		return invalid("markets.market_type", "markets.market_type is missing: it must be one of 5m, 15m, 1hr, 4hr, 24hr")
	case !ok:
		return invalid("markets.market_type", "markets.market_type %q is not one of 5m, 15m, 1hr, 4hr, 24hr", m.MarketType)
	case !mt.AvailableFor(m.Coin):
		return invalid("markets.market_type", "%s markets exist for BTC only; %s has 5m, 15m and 1hr markets", mt, m.Coin)
	}
	m.MarketType = mt
	if m.Count < 1 {
		return invalid("markets.count", "markets.count is missing or below 1: how many of the newest resolved markets to sweep")
	}
	if m.StartTime != nil && m.EndTime != nil && !m.EndTime.After(*m.StartTime) {
		return invalid("markets.end_time", "markets.end_time must be after markets.start_time")
	}
	s := &r.Split
	switch s.Kind {
	case "", SplitNone:
		s.Kind = SplitNone
		if s.TestFraction != 0 || s.EmbargoMarkets > 0 || s.Folds != 0 {
			return invalid("split", "split NONE takes no testFraction, embargoMarkets or folds")
		}
		s.EmbargoMarkets = 0
	case SplitHoldout:
		if s.Folds != 0 {
			return invalid("split.folds", "split.folds belongs to WALK_FORWARD")
		}
		if s.TestFraction == 0 {
			s.TestFraction = DefaultTestFraction
		}
		if math.IsNaN(s.TestFraction) || s.TestFraction < MinTestFraction || s.TestFraction > MaxTestFraction {
			return invalid("split.testFraction", "split.testFraction %s is out of range: it must be between 0.1 and 0.5 (default 0.3)", replay.FormatNum(s.TestFraction))
		}
	case SplitWalkForward:
		if s.TestFraction != 0 {
			return invalid("split.testFraction", "split.testFraction belongs to HOLDOUT")
		}
		if s.Folds == 0 {
			// Absent (whole reads it as 0): there is no default to say 0 of.
			return invalid("split.folds", "split.folds is missing or 0: WALK_FORWARD needs 2 to 10 folds")
		}
		if s.Folds < MinFolds || s.Folds > MaxFolds {
			return invalid("split.folds", "split.folds %d is out of range: WALK_FORWARD needs 2 to 10 folds", s.Folds)
		}
	default:
		return invalid("split.kind", "split.kind %q is not one of NONE, HOLDOUT, WALK_FORWARD", s.Kind)
	}
	if s.Kind != SplitNone {
		switch {
		case s.EmbargoMarkets == noEmbargo:
			s.EmbargoMarkets = 0
		case s.EmbargoMarkets == 0:
			s.EmbargoMarkets = DefaultEmbargoMarkets
		case s.EmbargoMarkets < 0 || s.EmbargoMarkets > 1000:
			return invalid("split.embargoMarkets", "split.embargoMarkets %d is out of range: 0 to 1000 markets", s.EmbargoMarkets)
		}
	}
	switch r.Objective {
	case "":
		r.Objective = ObjectiveTotalPnL
	case ObjectiveTotalPnL, ObjectiveEVPerTrade, ObjectiveSharpePerMarket, ObjectiveSQN:
	default:
		return invalid("objective", "objective %q is not one of %s", r.Objective, strings.Join(Objectives(), ", "))
	}
	return nil
}

// indices lists the trials' value indices: every combination in grid
// order (the first parameter slowest) for GRID, or for RANDOM that many
// distinct combinations drawn with the seed (the whole grid, in grid
// order, when it asks for as many or more).
func (p *Plan) indices() [][]int {
	ps := p.Request.Parameters
	decode := func(code uint64) []int {
		idx := make([]int, len(ps))
		for j := len(ps) - 1; j >= 0; j-- {
			n := uint64(len(ps[j].Values))
			idx[j] = int(code % n)
			code /= n
		}
		return idx
	}
	s := p.Request.Search
	if s.Kind == SearchGrid || uint64(s.Trials) >= p.gridSize {
		// Limits.check bounded the grid before it is expanded.
		out := make([][]int, 0, p.gridSize)
		for code := range p.gridSize {
			out = append(out, decode(code))
		}
		return out
	}
	rng := rand.New(rand.NewPCG(s.Seed, 0x5eed5eed))
	seen := make(map[uint64]bool, s.Trials)
	out := make([][]int, 0, s.Trials)
	for len(out) < s.Trials {
		code := rng.Uint64N(p.gridSize)
		if seen[code] {
			continue
		}
		seen[code] = true
		out = append(out, decode(code))
	}
	return out
}

// TrialCount is how many trials the plan runs.
func (p *Plan) TrialCount() uint64 {
	if s := p.Request.Search; s.Kind == SearchRandom && uint64(s.Trials) < p.gridSize {
		return uint64(s.Trials)
	}
	return p.gridSize
}

// GridSize is the number of combinations of the parameters' values.
func (p *Plan) GridSize() uint64 { return p.gridSize }

// Neighbours returns the trials one step from trial k in one parameter,
// either way (DESIGN 14's stability), among the plan's trials. A step is
// to the next value in the parameter's order: numbers ascending whatever
// order the values were listed in (as the dashboard's heatmap lays them
// out), other values as listed.
func (p *Plan) Neighbours(k int) []int {
	at := map[string]int{}
	key := func(idx []int) string {
		parts := make([]string, len(idx))
		for i, v := range idx {
			parts[i] = strconv.Itoa(v)
		}
		return strings.Join(parts, ",")
	}
	for _, t := range p.Trials {
		at[key(t.Grid)] = t.Index
	}
	var out []int
	g := p.Trials[k].Grid
	for j, pr := range p.Request.Parameters {
		order := valueOrder(pr.Values)
		pos := slices.Index(order, g[j])
		for _, d := range []int{-1, 1} {
			if pos+d < 0 || pos+d >= len(order) {
				continue
			}
			n := slices.Clone(g)
			n[j] = order[pos+d]
			if i, ok := at[key(n)]; ok {
				out = append(out, i)
			}
		}
	}
	slices.Sort(out)
	return out
}

// valueOrder lists the indices of a parameter's values in its order:
// numbers ascending, any other values as listed.
func valueOrder(values []any) []int {
	order := make([]int, len(values))
	for i := range order {
		order[i] = i
	}
	for _, v := range values {
		if _, ok := v.(float64); !ok {
			return order
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(values[a].(float64), values[b].(float64)) })
	return order
}
