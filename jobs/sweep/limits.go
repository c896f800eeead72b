package sweep

import "fmt"

// Limits bound one sweep (DESIGN 14): its trials, its markets, and its
// replays (trials × markets). Plan is the plan's name in messages.
type Limits struct {
	Plan                     string
	Trials, Markets, Replays uint64
}

// Plan sizes per DESIGN 14; an operator may configure others.
var (
	ProLimits        = Limits{Plan: "PRO", Trials: 200, Markets: 200, Replays: 20_000}
	EnterpriseLimits = Limits{Plan: "ENTERPRISE", Trials: 10_000, Markets: 5_000, Replays: 2_000_000}
)

// check refuses a plan larger than l in trials, naming the limit it
// passes, before its trials are built. Its markets and replays depend on
// the markets the sweep finds: CheckFound.
func (l Limits) check(p *Plan) error {
	trials := p.TrialCount()
	random := p.Request.Search.Kind == SearchRandom && trials < p.gridSize
	switch {
	case trials > l.Trials && random:
		// RANDOM's trials are search.trials, not the grid's size: the
		// value to lower is that one.
		return invalid("search.trials", "search.trials %d is over the limit: %s allows %d trials a sweep", trials, l.Plan, l.Trials)
	case trials > l.Trials && p.Request.Search.Kind == SearchRandom:
		// search.trials at or above the grid's size draws the whole grid:
		// "use RANDOM search" told a RANDOM search what it already was.
		return invalid("parameters", "this sweep has %s trials: search.trials %d draws the whole grid of %s combinations, and %s allows %d a sweep (set search.trials to %d or fewer, or narrow the ranges)",
			count(trials), p.Request.Search.Trials, count(p.gridSize), l.Plan, l.Trials, l.Trials)
	case trials > l.Trials:
		return invalid("parameters", "this sweep has %s trials: %s allows %d a sweep (narrow the ranges or use RANDOM search)", count(trials), l.Plan, l.Trials)
	}
	return nil
}

// MarketsToFind is how many markets to look for to run a sweep of count
// markets: count, or one past l's markets a sweep where count is over
// them, so that a count over the limit that enough markets meet is
// refused (CheckFound) rather than cut, and one that fewer markets meet
// runs on those.
func (l Limits) MarketsToFind(count int) int {
	if uint64(count) > l.Markets {
		return int(l.Markets) + 1 // l.Markets < count: no overflow
	}
	return count
}

// CheckFound refuses a plan that runs more markets than l allows, or more
// replays (CheckReplays), over the markets found for it: markets.count,
// or fewer where fewer exist.
func (l Limits) CheckFound(p *Plan, markets int) error {
	if uint64(markets) > l.Markets {
		return invalid("markets.count", "markets.count %d is over the limit: %s allows %d markets a sweep", p.Request.Markets.Count, l.Plan, l.Markets)
	}
	return l.CheckReplays(p, markets)
}

// CheckReplays refuses a plan whose replays, its trials × the markets it
// runs (found for it: markets.count, or fewer where fewer exist), are
// more than l allows. The message names both counts when they differ.
func (l Limits) CheckReplays(p *Plan, markets int) error {
	trials, n := p.TrialCount(), uint64(markets)
	if satMul(trials, n) <= l.Replays {
		return nil
	}
	found := fmt.Sprintf("%d markets", n)
	if asked := p.Request.Markets.Count; asked != markets {
		found += fmt.Sprintf(" (%d asked, %d exist)", asked, n)
	}
	return invalid("parameters", "this sweep is %s trials × %s = %s replays: %s allows %s a sweep",
		count(trials), found, count(satMul(trials, n)), l.Plan, count(l.Replays))
}

// count writes n with thousands separators, or "more than 10^19".
func count(n uint64) string {
	if n == ^uint64(0) {
		return "more than 10^19"
	}
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
