package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/updown/updown/jobs/replay"
)

// body is a valid sweep with two thresholds over 200 BTC 15m markets.
func body(mutate func(map[string]any)) []byte {
	b := map[string]any{
		"strategy": map[string]any{
			"side":            "UP",
			"entryConditions": []any{map[string]any{"field": "price_up", "operator": "<", "value": 0.4}},
			"exitConditions":  []any{map[string]any{"field": "price_up", "operator": ">=", "value": 0.6}},
			"positionSize":    100,
		},
		"parameters": []any{
			map[string]any{"path": "/entryConditions/0/value", "range": map[string]any{"from": 0.3, "to": 0.5, "step": 0.1}},
			map[string]any{"path": "/exitConditions/0/value", "values": []any{0.6, 0.7}},
		},
		"search":  map[string]any{"kind": "GRID"},
		"markets": map[string]any{"coin": "BTC", "market_type": "15m", "count": 200},
		"split":   map[string]any{"kind": "HOLDOUT"},
	}
	if mutate != nil {
		mutate(b)
	}
	out, _ := json.Marshal(b)
	return out
}

func plan(t *testing.T, b []byte, lim Limits) (Plan, error) {
	t.Helper()
	r, err := Decode(b)
	if err != nil {
		return Plan{}, err
	}
	return r.Normalize(lim)
}

func TestPlanGrid(t *testing.T) {
	t.Parallel()
	p, err := plan(t, body(nil), ProLimits)
	if err != nil {
		t.Fatal(err)
	}
	// The first parameter slowest; 0.1 steps are decimal-exact.
	want := [][]any{{0.3, 0.6}, {0.3, 0.7}, {0.4, 0.6}, {0.4, 0.7}, {0.5, 0.6}, {0.5, 0.7}}
	if len(p.Trials) != len(want) {
		t.Fatalf("%d trials, want %d", len(p.Trials), len(want))
	}
	for i, tr := range p.Trials {
		if !reflect.DeepEqual(tr.Values, want[i]) || tr.Index != i {
			t.Errorf("trial %d: %v, want %v", i, tr.Values, want[i])
		}
		if got := tr.Strategy.EntryConditions[0].Value; got != want[i][0] {
			t.Errorf("trial %d: entry threshold %v", i, got)
		}
		if got := tr.Strategy.ExitConditions[0].Value; got != want[i][1] {
			t.Errorf("trial %d: exit threshold %v", i, got)
		}
	}
	r := p.Request
	if r.Objective != ObjectiveTotalPnL || r.Split.TestFraction != 0.3 || r.Split.EmbargoMarkets != 1 || r.Strategy.MaxLossPercent != 50 {
		t.Errorf("defaults: %+v", r)
	}
	// Neighbours of (0.4, 0.6): (0.3, 0.6), (0.5, 0.6), (0.4, 0.7).
	if got := p.Neighbours(2); !reflect.DeepEqual(got, []int{0, 3, 4}) {
		t.Errorf("neighbours of trial 2: %v", got)
	}
}

// A step in a parameter listed out of order is to the next value up or
// down, as the heatmap lays the values out, not to the next in the list:
// the neighbours of 0.7 in [0.6, 0.8, 0.7] are 0.6 and 0.8, and 0.8's is
// 0.7 alone.
func TestNeighboursOfUnorderedValues(t *testing.T) {
	t.Parallel()
	p, err := plan(t, body(func(b map[string]any) {
		b["parameters"] = []any{
			map[string]any{"path": "/exitConditions/0/value", "values": []any{0.6, 0.8, 0.7}},
			map[string]any{"path": "/side", "values": []any{"UP", "DOWN"}},
		}
	}), ProLimits)
	if err != nil {
		t.Fatal(err)
	}
	// Trials: 0 (0.6 UP), 1 (0.6 DOWN), 2 (0.8 UP), 3 (0.8 DOWN), 4 (0.7 UP), 5 (0.7 DOWN).
	for k, want := range map[int][]int{0: {1, 4}, 2: {3, 4}, 4: {0, 2, 5}, 5: {1, 3, 4}} {
		if got := p.Neighbours(k); !reflect.DeepEqual(got, want) {
			t.Errorf("neighbours of trial %d (%v): %v, want %v", k, p.Trials[k].Values, got, want)
		}
	}
}

func TestRandomSearchIsSeeded(t *testing.T) {
	t.Parallel()
	random := func(seed, trials int) Plan {
		p, err := plan(t, body(func(b map[string]any) {
			b["parameters"] = []any{
				map[string]any{"path": "/entryConditions/0/value", "range": map[string]any{"from": 0.01, "to": 0.99, "step": 0.01}},
				map[string]any{"path": "/maxLossPercent", "range": map[string]any{"from": 5, "to": 100, "step": 5}},
			}
			b["search"] = map[string]any{"kind": "RANDOM", "trials": trials, "seed": seed}
			b["markets"] = map[string]any{"coin": "BTC", "market_type": "15m", "count": 10}
		}), EnterpriseLimits)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b, c := random(42, 50), random(42, 50), random(43, 50)
	seen := map[string]bool{}
	for i := range a.Trials {
		if !reflect.DeepEqual(a.Trials[i].Values, b.Trials[i].Values) {
			t.Fatalf("the same seed drew %v and %v", a.Trials[i].Values, b.Trials[i].Values)
		}
		k := fmt.Sprint(a.Trials[i].Values)
		if seen[k] {
			t.Fatalf("trial %v drawn twice", k)
		}
		seen[k] = true
	}
	if reflect.DeepEqual(a.Trials[0].Values, c.Trials[0].Values) && reflect.DeepEqual(a.Trials[1].Values, c.Trials[1].Values) {
		t.Error("another seed drew the same trials")
	}
	// Pinned: PCG with the seed is the same on every machine.
	if got := fmt.Sprint(a.Trials[0].Values, a.Trials[1].Values, a.Trials[2].Values); got != pinnedRandom {
		t.Errorf("seed 42 drew %s, pinned %s", got, pinnedRandom)
	}
	// Asking for the whole grid or more gives the grid in order.
	if all := random(1, 5000); len(all.Trials) != 99*20 || all.Trials[0].Values[0] != 0.01 || all.Trials[1].Values[1] != 10.0 {
		t.Errorf("the whole grid: %d trials, first %v %v", len(all.Trials), all.Trials[0].Values, all.Trials[1].Values)
	}
}

const pinnedRandom = "[0.32 70] [0.13 30] [0.58 10]"

func TestSweepValidation(t *testing.T) {
	t.Parallel()
	set := func(kv ...any) func(map[string]any) {
		return func(b map[string]any) {
			for i := 0; i < len(kv); i += 2 {
				b[kv[i].(string)] = kv[i+1]
			}
		}
	}
	param := func(p ...any) []any { return p }
	tests := []struct {
		name   string
		body   []byte
		lim    Limits
		field  string
		within string
	}{
		{"an array for the body", []byte(`[]`), ProLimits, "", "the body must be a JSON object, not a JSON array"},
		{"a string for the body", []byte(`"x"`), ProLimits, "", "the body must be a JSON object, not a JSON string"},
		{"a string for search", body(set("search", "GRID")), ProLimits, "search", "search must be a JSON object, not string"},
		{"unknown key", body(set("foo", 1)), ProLimits, "foo", "unknown field"},
		{"unknown key in a range", body(set("parameters", param(map[string]any{"path": "/maxLossPercent", "range": map[string]any{"from": 1, "to": 2, "stp": 1}}))), ProLimits, "parameters[0].range.stp", "unknown field"},
		{"no strategy", body(set("strategy", nil)), ProLimits, "strategy", "missing"},
		{"marketSlug in the strategy", body(set("strategy", map[string]any{"marketSlug": "x", "side": "UP"})), ProLimits, "strategy.marketSlug", "unknown field"},
		{"bad strategy", body(func(b map[string]any) { b["strategy"].(map[string]any)["positionSize"] = 0 }), ProLimits, "strategy.positionSize", "positionSize"},
		{"no parameters", body(set("parameters", []any{})), ProLimits, "parameters", "empty"},
		{"five parameters", body(set("parameters", param(
			map[string]any{"path": "/maxLossPercent", "values": []any{10}}, map[string]any{"path": "/positionSize", "values": []any{10}},
			map[string]any{"path": "/latencyMs", "values": []any{10}}, map[string]any{"path": "/side", "values": []any{"UP"}},
			map[string]any{"path": "/orderType", "values": []any{"LIMIT"}}))), ProLimits, "parameters", "at most 4"},
		{"not a pointer", body(set("parameters", param(map[string]any{"path": "maxLossPercent", "values": []any{10}}))), ProLimits, "parameters[0].path", "JSON Pointer"},
		{"bad escape", body(set("parameters", param(map[string]any{"path": "/a~2b", "values": []any{10}}))), ProLimits, "parameters[0].path", "JSON Pointer"},
		{"not sweepable", body(set("parameters", param(map[string]any{"path": "/marketSlug", "values": []any{10}}))), ProLimits, "parameters[0].path", "not a sweepable"},
		{"no such condition", body(set("parameters", param(map[string]any{"path": "/entryConditions/3/value", "values": []any{10}}))), ProLimits, "parameters[0].path", "has 1 entryConditions"},
		{"swept twice", body(set("parameters", param(map[string]any{"path": "/maxLossPercent", "values": []any{10}}, map[string]any{"path": "/maxLossPercent", "values": []any{20}}))), ProLimits, "parameters[1].path", "twice"},
		{"values and range", body(set("parameters", param(map[string]any{"path": "/maxLossPercent", "values": []any{10}, "range": map[string]any{"from": 1, "to": 2, "step": 1}}))), ProLimits, "parameters[0]", "both"},
		{"no values", body(set("parameters", param(map[string]any{"path": "/maxLossPercent"}))), ProLimits, "parameters[0].values", "needs values"},
		{"string for a number", body(set("parameters", param(map[string]any{"path": "/maxLossPercent", "values": []any{"10"}}))), ProLimits, "parameters[0].values[0]", "must be a number"},
		{"unknown enum value", body(set("parameters", param(map[string]any{"path": "/orderType", "values": []any{"FOK"}}))), ProLimits, "parameters[0].values[0]", "MARKET, LIMIT, GTC"},
		{"repeated value", body(set("parameters", param(map[string]any{"path": "/maxLossPercent", "values": []any{10, 10}}))), ProLimits, "parameters[0].values[1]", "repeats"},
		{"zero and minus zero", body(set("parameters", param(map[string]any{"path": "/entryConditions/0/value", "values": []any{0, math.Copysign(0, -1)}}))), ProLimits, "parameters[0].values[1]", "repeats"},
		{"zero step", body(set("parameters", param(map[string]any{"path": "/maxLossPercent", "range": map[string]any{"from": 1, "to": 2, "step": 0}}))), ProLimits, "parameters[0].range.step", "above 0"},
		// A step finer than the 12 decimals a range is counted in rounds
		// to 0: it once looped forever on from = to, and said "expands to
		// 9,223,372,036,854,775,808 values" on from < to.
		{"step below 1e-12, from = to", body(set("parameters", param(map[string]any{"path": "/maxLossPercent", "range": map[string]any{"from": 5, "to": 5, "step": 1e-13}}))), ProLimits, "parameters[0].range.step", "1e-12"},
		{"step below 1e-12", body(set("parameters", param(map[string]any{"path": "/maxLossPercent", "range": map[string]any{"from": 5, "to": 6, "step": 4e-13}}))), ProLimits, "parameters[0].range.step", "1e-12"},
		// uint64 of a float past 2^64 is 2^63 on amd64: the count said 9.2e18.
		{"a range past 2^64 values", body(set("parameters", param(map[string]any{"path": "/maxLossPercent", "range": map[string]any{"from": 0, "to": 1e300, "step": 1}}))), ProLimits, "parameters[0].range", "expands to more than 10^19 values"},
		{"from above to", body(set("parameters", param(map[string]any{"path": "/maxLossPercent", "range": map[string]any{"from": 3, "to": 2, "step": 1}}))), ProLimits, "parameters[0].range.from", "above to"},
		{"range on an enum", body(set("parameters", param(map[string]any{"path": "/side", "range": map[string]any{"from": 1, "to": 2, "step": 1}}))), ProLimits, "parameters[0].range", "not a number"},
		{"too many values", body(set("parameters", param(map[string]any{"path": "/maxLossPercent", "range": map[string]any{"from": 0, "to": 100, "step": 0.001}}))), EnterpriseLimits, "parameters[0].range", "100,001 values"},
		{"an invalid trial", body(set("parameters", param(map[string]any{"path": "/maxLossPercent", "values": []any{50, 0}}))), ProLimits, "parameters", "trial 1 (/maxLossPercent=0)"},
		{"GTC fields with MARKET", body(set("parameters", param(map[string]any{"path": "/limitOffsetTicks", "values": []any{1, 2}}))), ProLimits, "parameters", "only with orderType GTC"},
		{"no search kind", body(set("search", map[string]any{})), ProLimits, "search.kind", "missing"},
		{"random without trials", body(set("search", map[string]any{"kind": "RANDOM"})), ProLimits, "search.trials", "RANDOM draws"},
		{"fractional trials", body(set("search", map[string]any{"kind": "RANDOM", "trials": 1.5})), ProLimits, "search.trials", "whole number"},
		// A whole number past 2^31 was "not a whole number".
		{"a huge count", body(set("markets", map[string]any{"coin": "BTC", "market_type": "15m", "count": 5e9})), ProLimits, "markets.count", "5000000000 is out of range"},
		{"huge trials", body(set("search", map[string]any{"kind": "RANDOM", "trials": 5e9})), ProLimits, "search.trials", "5000000000 is out of range"},
		{"no coin", body(set("markets", map[string]any{"market_type": "15m", "count": 5})), ProLimits, "markets.coin", "missing"},
		{"4hr for ETH", body(set("markets", map[string]any{"coin": "ETH", "market_type": "4hr", "count": 5})), ProLimits, "markets.market_type", "BTC only"},
		{"no count", body(set("markets", map[string]any{"coin": "BTC", "market_type": "15m"})), ProLimits, "markets.count", "missing"},
		{"bad time", body(set("markets", map[string]any{"coin": "BTC", "market_type": "15m", "count": 5, "start_time": "yesterday"})), ProLimits, "markets.start_time", "RFC 3339"},
		// Epoch seconds read as milliseconds were days of January 1970:
		// a start_time was no filter at all, an end_time left no market
		// (404 NO_BACKTEST_MARKETS), where GET /v1/markets refuses them.
		{"epoch seconds for start_time", body(set("markets", map[string]any{"coin": "BTC", "market_type": "15m", "count": 5, "start_time": 1795990000})), ProLimits, "markets.start_time", "1795990000 looks like epoch seconds (2026-11-29T22:06:40Z): times are epoch milliseconds, 1795990000000"},
		{"epoch seconds for end_time", body(set("markets", map[string]any{"coin": "BTC", "market_type": "15m", "count": 5, "end_time": 17959900000})), ProLimits, "markets.end_time", "looks like epoch seconds"},
		{"a time before the epoch", body(set("markets", map[string]any{"coin": "BTC", "market_type": "15m", "count": 5, "start_time": -1})), ProLimits, "markets.start_time", "between 0 and 253402300799999"},
		{"a time past year 9999", body(set("markets", map[string]any{"coin": "BTC", "market_type": "15m", "count": 5, "end_time": 253402300800000})), ProLimits, "markets.end_time", "between 0 and 253402300799999"},
		{"test fraction", body(set("split", map[string]any{"kind": "HOLDOUT", "testFraction": 0.6})), ProLimits, "split.testFraction", "between 0.1 and 0.5"},
		{"one fold", body(set("split", map[string]any{"kind": "WALK_FORWARD", "folds": 1})), ProLimits, "split.folds", "2 to 10"},
		// Without folds it said "split.folds 0 is out of range", a 0 the body never held.
		{"no folds", body(set("split", map[string]any{"kind": "WALK_FORWARD"})), ProLimits, "split.folds", "split.folds is missing or 0: WALK_FORWARD needs 2 to 10 folds"},
		{"folds with HOLDOUT", body(set("split", map[string]any{"kind": "HOLDOUT", "folds": 3})), ProLimits, "split.folds", "WALK_FORWARD"},
		// −1 once stood for an explicit 0 inside the decoder, and passed.
		{"embargo -1", body(set("split", map[string]any{"kind": "HOLDOUT", "embargoMarkets": -1})), ProLimits, "split.embargoMarkets", "0 to 1000"},
		{"embargo -1 with NONE", body(set("split", map[string]any{"kind": "NONE", "embargoMarkets": -1})), ProLimits, "split.embargoMarkets", "0 to 1000"},
		{"embargo -5", body(set("split", map[string]any{"kind": "WALK_FORWARD", "folds": 3, "embargoMarkets": -5})), ProLimits, "split.embargoMarkets", "0 to 1000"},
		{"embargo 1001", body(set("split", map[string]any{"kind": "HOLDOUT", "embargoMarkets": 1001})), ProLimits, "split.embargoMarkets", "0 to 1000"},
		{"unknown objective", body(set("objective", "profit")), ProLimits, "objective", "total_pnl, ev_per_trade"},
		{"over PRO's trials", body(set("parameters", param(map[string]any{"path": "/maxLossPercent", "range": map[string]any{"from": 1, "to": 100, "step": 0.25}}))), ProLimits, "parameters", "397 trials: PRO allows 200"},
		// A RANDOM draw over a larger grid has search.trials trials: that is the value over the limit.
		{"RANDOM over PRO's trials", body(set("search", map[string]any{"kind": "RANDOM", "trials": 300, "seed": 1},
			"parameters", param(map[string]any{"path": "/maxLossPercent", "range": map[string]any{"from": 1, "to": 100, "step": 0.01}}))), ProLimits, "search.trials", "search.trials 300 is over the limit: PRO allows 200"},
		// Asking for more than the grid draws the whole grid: its size is
		// what counts, and lowering search.trials is the way under the
		// limit (it once advised a RANDOM search to "use RANDOM search").
		{"RANDOM of a grid over PRO's trials", body(set("search", map[string]any{"kind": "RANDOM", "trials": 5000, "seed": 1},
			"parameters", param(map[string]any{"path": "/maxLossPercent", "range": map[string]any{"from": 1, "to": 100, "step": 0.25}}))), ProLimits, "parameters",
			"397 trials: search.trials 5000 draws the whole grid of 397 combinations, and PRO allows 200 a sweep (set search.trials to 200 or fewer, or narrow the ranges)"},
	}
	for _, tt := range tests {
		_, err := plan(t, tt.body, tt.lim)
		var re *replay.Error
		if !errors.As(err, &re) {
			t.Errorf("%s: %v, want a *replay.Error", tt.name, err)
			continue
		}
		if re.Field != tt.field || !strings.Contains(re.Message, tt.within) {
			t.Errorf("%s: %s %q, want field %s containing %q", tt.name, re.Field, re.Message, tt.field, tt.within)
		}
	}
}

// TestReplaysLimit: a sweep's replays are its trials × the markets it
// runs, which may be fewer than markets.count; the message says both
// counts where they differ.
func TestReplaysLimit(t *testing.T) {
	t.Parallel()
	// 101 trials (latencyMs 0, 10, …, 1000) over markets.count 200.
	p, err := plan(t, body(func(b map[string]any) {
		b["parameters"] = []any{map[string]any{"path": "/latencyMs", "range": map[string]any{"from": 0, "to": 1000, "step": 10}}}
	}), ProLimits)
	if err != nil {
		t.Fatalf("101 trials over 200 markets asked: %v; the replays wait for the markets found", err)
	}
	for _, tt := range []struct {
		markets int
		want    string // "" fits
	}{
		{200, "this sweep is 101 trials × 200 markets = 20,200 replays: PRO allows 20,000 a sweep"},
		{199, "this sweep is 101 trials × 199 markets (200 asked, 199 exist) = 20,099 replays: PRO allows 20,000 a sweep"},
		{198, ""}, // 19,998
		{60, ""},
	} {
		err := ProLimits.CheckReplays(&p, tt.markets)
		var re *replay.Error
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%d markets found: %v, want it to fit", tt.markets, err)
		case tt.want == "":
		case !errors.As(err, &re) || re.Field != "parameters" || re.Message != tt.want:
			t.Errorf("%d markets found: %v, want field parameters %q", tt.markets, err, tt.want)
		}
	}
}

// A range of numbers past 2^53, where a step of 1 is below a float's
// spacing, is counted from from rather than summed: summed, from + 1 was
// from again, the loop never reached to, and POST /v1/sweeps appended to
// its values until the api ran out of memory.
func TestRangeBeyondFloatSpacing(t *testing.T) {
	t.Parallel()
	got, err := expandRange(Range{From: 1e17, To: 1e17, Step: 1}, "parameters[0].range")
	if err != nil || !reflect.DeepEqual(got, []any{1e17}) {
		t.Errorf("1e17 to 1e17: %v, %v; want [1e17]", got, err)
	}
	got, err = expandRange(Range{From: 1e17, To: 1e17 + 64, Step: 16}, "parameters[0].range")
	if want := []any{1e17, 1e17 + 16, 1e17 + 32, 1e17 + 48, 1e17 + 64}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("1e17 to 1e17+64 by 16: %v, %v; want %v", got, err, want)
	}
	for _, r := range []Range{
		{From: 1e17, To: 1e17 + 256, Step: 1},        // values 16 apart: they repeat
		{From: 1.7e308, To: 1.7e308, Step: 0.5},      // scaled by 10: infinite
		{From: -1.7e308, To: 1.7e308, Step: 1.7e308}, // to − from is infinite
	} {
		got, err := expandRange(r, "parameters[0].range")
		var re *replay.Error
		if !errors.As(err, &re) || re.Code != replay.CodeValidation {
			t.Errorf("%+v: %v (%d values), want a VALIDATION_ERROR", r, err, len(got))
		}
	}
}

func TestPointerEscapes(t *testing.T) {
	t.Parallel()
	for p, want := range map[string][]string{
		"/a~1b":   {"a/b"},
		"/a~0b":   {"a~b"},
		"/~01":    {"~1"},
		"/x/0/y":  {"x", "0", "y"},
		"/":       {""},
		"/a~":     nil,
		"a":       nil,
		"":        nil,
		"/a~2":    nil,
		"/~1~0~1": {"/~/"},
	} {
		got, ok := splitPointer(p)
		if ok != (want != nil) || ok && !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %q %v, want %q", p, got, ok, want)
		}
	}
}

// TestSplitsRespectTime cuts random market counts every way and checks
// that each fold trains on markets before its test markets, with exactly
// the embargo between them, and that no market trains and tests at once.
func TestSplitsRespectTime(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 9))
	for range 2000 {
		n := 1 + rng.IntN(400)
		s := Split{Kind: []string{SplitHoldout, SplitWalkForward}[rng.IntN(2)], EmbargoMarkets: rng.IntN(4)}
		if s.Kind == SplitHoldout {
			s.TestFraction = 0.1 + float64(rng.IntN(41))/100
		} else {
			s.Folds = 2 + rng.IntN(9)
		}
		folds, err := s.Cut(n)
		if err != nil {
			continue // too few markets: said so
		}
		covered := 0
		for k, f := range folds {
			if len(f.Train) == 0 || len(f.Test) == 0 {
				t.Fatalf("%+v of %d: fold %d is empty: %+v", s, n, k, f)
			}
			last, first := f.Train[len(f.Train)-1], f.Test[0]
			if first-last-1 != s.EmbargoMarkets {
				t.Fatalf("%+v of %d: fold %d has %d markets between train and test", s, n, k, first-last-1)
			}
			for i := 1; i < len(f.Train); i++ {
				if f.Train[i] != f.Train[i-1]+1 || f.Train[0] != 0 {
					t.Fatalf("%+v of %d: train not the oldest markets in order", s, n)
				}
			}
			for i := 1; i < len(f.Test); i++ {
				if f.Test[i] != f.Test[i-1]+1 {
					t.Fatalf("%+v of %d: test not contiguous", s, n)
				}
			}
			covered += len(f.Test)
		}
		if s.Kind == SplitHoldout && folds[0].Test[len(folds[0].Test)-1] != n-1 {
			t.Fatalf("holdout of %d does not test the newest markets", n)
		}
		if s.Kind == SplitWalkForward && folds[len(folds)-1].Test[len(folds[len(folds)-1].Test)-1] != n-1 {
			t.Fatalf("walk-forward of %d does not end with the newest market", n)
		}
	}
	// Hand-worked: 10 markets, a 0.3 holdout with one embargoed: train
	// 0-5, embargo 6, test 7-9.
	f, err := Split{Kind: SplitHoldout, TestFraction: 0.3, EmbargoMarkets: 1}.Cut(10)
	if err != nil || !reflect.DeepEqual(f[0].Train, []int{0, 1, 2, 3, 4, 5}) || !reflect.DeepEqual(f[0].Test, []int{7, 8, 9}) {
		t.Errorf("holdout: %+v %v", f, err)
	}
	// 11 markets in 3 blocks of 4, 4, 3; two folds, no embargo.
	f, err = Split{Kind: SplitWalkForward, Folds: 2}.Cut(11)
	if err != nil || !reflect.DeepEqual(f[0].Train, []int{0, 1, 2, 3}) || !reflect.DeepEqual(f[0].Test, []int{4, 5, 6, 7}) ||
		!reflect.DeepEqual(f[1].Train, []int{0, 1, 2, 3, 4, 5, 6, 7}) || !reflect.DeepEqual(f[1].Test, []int{8, 9, 10}) {
		t.Errorf("walk-forward: %+v %v", f, err)
	}
	if _, err := (Split{Kind: SplitWalkForward, Folds: 4, EmbargoMarkets: 1}).Cut(9); err == nil || !strings.Contains(err.Error(), "at least 10 markets") {
		t.Errorf("too few for a walk-forward: %v", err)
	}
}

func TestShardRoundTrip(t *testing.T) {
	t.Parallel()
	p, err := plan(t, body(nil), ProLimits)
	if err != nil {
		t.Fatal(err)
	}
	shards := p.Shards("sw_1", []string{"btc-updown-15m-1", "btc-updown-15m-2"})
	b, err := json.Marshal(shards[1])
	if err != nil {
		t.Fatal(err)
	}
	var back Shard
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	strategies, err := back.Strategies()
	if err != nil {
		t.Fatal(err)
	}
	if back.Market != "btc-updown-15m-2" || len(strategies) != len(p.Trials) {
		t.Fatalf("shard %+v", back)
	}
	for i, s := range strategies {
		if got, want := mustJSON(t, s), mustJSON(t, p.Trials[i].Strategy); got != want {
			t.Errorf("trial %d: %s, want %s", i, got, want)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// FuzzDecode: no body makes the decoder or the planner panic, and every
// refusal is a *replay.Error.
func FuzzDecode(f *testing.F) {
	f.Add(body(nil))
	f.Add([]byte(`{"parameters":[{"path":"/~","values":[1]}]}`))
	f.Add([]byte(`{"strategy":{"side":"UP"},"split":{"kind":"WALK_FORWARD","folds":3}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decode(b)
		if err == nil {
			_, err = r.Normalize(ProLimits)
		}
		if err == nil {
			return
		}
		var re *replay.Error
		if !errors.As(err, &re) {
			t.Fatalf("%T %v", err, err)
		}
	})
}

// TestTestFractionZeroOutsideHoldout: an explicit testFraction of 0 is
// refused as out of range only by HOLDOUT, the kind it belongs to; under
// NONE and WALK_FORWARD it is as absent (as folds 0 is under HOLDOUT),
// where it was told "out of range: between 0.1 and 0.5", advice that a
// WALK_FORWARD sweep then heard "belongs to HOLDOUT" for.
func TestTestFractionZeroOutsideHoldout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		split        map[string]any
		field, error string // field and message part of the refusal; "" plans
	}{
		{"WALK_FORWARD, 0", map[string]any{"kind": "WALK_FORWARD", "folds": 3, "testFraction": 0}, "", ""},
		{"NONE, 0", map[string]any{"kind": "NONE", "testFraction": 0}, "", ""},
		{"no kind, 0", map[string]any{"testFraction": 0}, "", ""},
		{"HOLDOUT, 0", map[string]any{"kind": "HOLDOUT", "testFraction": 0}, "split.testFraction", "between 0.1 and 0.5"},
		{"WALK_FORWARD, 0.3", map[string]any{"kind": "WALK_FORWARD", "folds": 3, "testFraction": 0.3}, "split.testFraction", "belongs to HOLDOUT"},
		{"NONE, 0.3", map[string]any{"kind": "NONE", "testFraction": 0.3}, "split", "takes no testFraction"},
	} {
		p, err := plan(t, body(func(b map[string]any) { b["split"] = tc.split }), ProLimits)
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s: %v, want it planned", tc.name, err)
			} else if p.Request.Split.TestFraction != 0 {
				t.Errorf("%s: testFraction %v, want none", tc.name, p.Request.Split.TestFraction)
			}
			continue
		}
		var re *replay.Error
		if !errors.As(err, &re) || re.Field != tc.field || !strings.Contains(re.Message, tc.error) {
			t.Errorf("%s: %v, want field %s saying %q", tc.name, err, tc.field, tc.error)
		}
	}
}
