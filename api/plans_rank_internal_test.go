package api

import (
	"testing"

	"github.com/updown/updown/store"
)

// TestTierRankFollowsThePlanTable: store.TierRank, the order billing
// compares tiers by (whether an event would lower a customer's tier), is
// the plan table's (planFor, DESIGN 4): every tier has its own rank, and a
// tier whose plan allows all that another's does, and more, ranks above
// it.
func TestTierRankFollowsThePlanTable(t *testing.T) {
	t.Parallel()
	// window orders data windows: the newest N markets, then N days (the
	// more the wider), then unlimited.
	window := func(p Plan) int {
		switch {
		case p.LastN != nil:
			return 0
		case p.WindowDays > 0:
			return p.WindowDays
		}
		return 1 << 30
	}
	generations := func(p Plan) int {
		if p.AIGenerationsPerMonth < 0 {
			return 1 << 30
		}
		return p.AIGenerationsPerMonth
	}
	// allows reports whether plan a allows all that plan b does.
	allows := func(a, b Plan) bool {
		for _, f := range [][2]bool{
			{a.AltCoins, b.AltCoins}, {a.Exchange, b.Exchange}, {a.Replay, b.Replay},
			{a.BacktestAI, b.BacktestAI}, {a.SweepsInFlight > 0, b.SweepsInFlight > 0},
		} {
			if f[1] && !f[0] {
				return false
			}
		}
		return window(a) >= window(b) && generations(a) >= generations(b) && a.PerMinute >= b.PerMinute && a.PerDay >= b.PerDay
	}
	ranks := map[int]store.Tier{}
	for _, tier := range store.Tiers {
		r := store.TierRank(tier)
		if r < 0 {
			t.Errorf("TierRank(%s) = %d: every tier is ranked", tier, r)
		}
		if other, taken := ranks[r]; taken {
			t.Errorf("TierRank(%s) = TierRank(%s) = %d: each tier has its own rank", tier, other, r)
		}
		ranks[r] = tier
	}
	if r := store.TierRank("GOLD"); r != -1 {
		t.Errorf("TierRank(GOLD) = %d, want -1", r)
	}
	for _, a := range store.Tiers {
		for _, b := range store.Tiers {
			if allows(planFor(a), planFor(b)) && !allows(planFor(b), planFor(a)) && store.TierRank(a) <= store.TierRank(b) {
				t.Errorf("%s's plan allows all that %s's does and more, but ranks %d, not above %d", a, b, store.TierRank(a), store.TierRank(b))
			}
		}
	}
}
